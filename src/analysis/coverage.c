/* coverage.c - "other": the part of each step that no stage range covers.
 *
 * A step's stage ranges may run on several threads at once (a DataLoader thread beside the
 * forward pass), so their sum can exceed the step; what they cover is the length of the union of
 * their intervals, each clipped to its step (nesting.c keeps them as spans). other = step
 * duration - covered, never below zero. docs/METRICS.md defines it. */
#include "analysis/internal.h"

#include <stdlib.h>

int tp_stage_other(tp_scan *s) {
    for (size_t k = 0; k < s->nsteps; k++)
        s->step_other[k] = tp_ev_dur(&s->m->events[s->steps[k]]);
    if (!s->nspans) return 0;
    uint32_t *idx = malloc(s->nspans * sizeof(*idx)), *grouped = malloc(s->nspans * sizeof(*idx));
    size_t *start = malloc((s->nsteps + 1) * sizeof(*start));
    tp_keyed *one = malloc(s->nspans * sizeof(*one));
    int rc = idx && grouped && start && one ? 0 : -1;
    if (rc == 0) {
        for (size_t i = 0; i < s->nspans; i++)
            idx[i] = (uint32_t)i;
        tp_group_by_key(idx, s->span_step, s->nspans, s->nsteps, grouped, start);
    }
    for (size_t k = 0; rc == 0 && k < s->nsteps; k++) {
        size_t n = start[k + 1] - start[k];
        for (size_t i = 0; i < n; i++)
            one[i] = s->spans[grouped[start[k] + i]];
        int64_t covered = 0; /* the union of intervals, as for GPU busy time */
        rc = tp_gpu_union(&s->order, one, n, &covered);
        s->step_other[k] = s->step_other[k] > covered ? s->step_other[k] - covered : 0;
    }
    free(idx);
    free(grouped);
    free(start);
    free(one);
    return rc;
}
