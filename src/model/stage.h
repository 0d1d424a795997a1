/* stage.h - a training stage as a name and the range names that belong to it.
 *
 * Shared by the recorder (the `stages` configuration key, handed to its sink) and the analysis
 * (which assigns each range to a stage): a definition only, with the default stages of
 * docs/METRICS.md and the parser of the "name=pattern|pattern" form. Matching is the analysis'. */
#ifndef TP_MODEL_STAGE_H
#define TP_MODEL_STAGE_H

#include <stddef.h>

/* A stage: a name and case-insensitive glob patterns (`*` any run, `?` one character). */
typedef struct tp_stage_def {
    const char *name;
    const char *const *patterns;
    size_t npatterns;
} tp_stage_def;

/* The stages of SEMANTICS.md §3: dataloader, forward, backward, optimizer. */
const tp_stage_def *tp_default_stages(size_t *n);

/* A stage written as "name" (one pattern, the name itself) or "name=pattern|pattern", the form
 * of the stages configuration key and of `tprof analyze --stage`. spec is split in place: the
 * name and patterns point into it, and out->patterns is allocated (the caller frees it).
 * 0, or -1 when the name or a pattern is empty, or out of memory. */
int tp_stage_parse(char *spec, tp_stage_def *out);

#endif
