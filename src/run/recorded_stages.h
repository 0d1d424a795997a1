/* recorded_stages.h - the stages an analysis of inputs takes when the command names none: those
 * the runs were recorded with (the `stages` key, kept in each run's config.json), so that
 * `tprof analyze RUN` gives the stage times of the run's own summary.json and stage_times.json.
 *
 * An input's run: a run directory given, or the run a trace file lies in (a window's trace in
 * its tprof/ folder, the run's top-level trace beside that folder). An input of no run (a
 * torch.profiler trace, standard input) was recorded with the default stages. The inputs must
 * agree: given runs of other stages, or a run's and a foreign trace, or a config.json whose
 * stages do not read, the default stages are taken and the warning says why. */
#ifndef TP_RUN_RECORDED_STAGES_H
#define TP_RUN_RECORDED_STAGES_H

#include "model/stage.h"
#include "tprof.h"

#include <stddef.h>

typedef struct tp_recorded_stages {
    tp_stage_def *defs; /* NULL: the default stages */
    size_t n;
    tprof_config *cfg;  /* holds the strings defs point into */
    char warning[1024]; /* why the default stages were taken instead; "" when none */
} tp_recorded_stages;

/* The stages the inputs were recorded with, into out (freed by tp_recorded_stages_free whatever
 * the result). 0, or -1 when out of memory. */
int tp_recorded_stages_find(const char *const *inputs, size_t n, tp_recorded_stages *out);
void tp_recorded_stages_free(tp_recorded_stages *s);

#endif
