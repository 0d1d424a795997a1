/* state.h - one run directory as its files show it now: its traces (one per window), whether
 * summary.json is there yet, symbolic links among its files, and a change key that moves
 * whenever one of its run files (runfiles.h) is added, removed, renamed or rewritten. What
 * `tprof serve` lists and caches by (src/serve/runs.c). */
#ifndef TP_RUN_STATE_H
#define TP_RUN_STATE_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_run_state {
    int64_t mtime_ns; /* the newest modification among the directory and its files */
    uint64_t key;     /* the change key */
    size_t windows;   /* traces */
    int partial;      /* no summary.json yet: being written, or stopped before its end */
    int has_link;     /* a symbolic link among its run files */
} tp_run_state;

/* Reads the open directory dfd (closed here, whatever the result) into out: its tprof/ folder
 * when it has one (runfiles.h). 0, or -1 when it
 * cannot be read or holds no run file. */
int tp_run_state_read(int dfd, tp_run_state *out);

#endif
