/* rank.h - the rank of this process in a distributed job, from the launcher's environment. */
#ifndef TP_RECORD_RANK_H
#define TP_RECORD_RANK_H

#include <stdint.h>

typedef struct tp_rank {
    int64_t rank;       /* 0 when not distributed */
    int64_t world_size; /* 1 when not distributed; -1 when distributed but not told */
    int distributed;    /* a rank variable was set, or a world size above 1 */
} tp_rank;

/* Reads the environment; a malformed variable is skipped with one warning. */
void tp_rank_detect(tp_rank *r);

#endif
