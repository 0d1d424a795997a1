/* compare.h - two finished analyses side by side (docs/SEMANTICS.md §5), for `tprof compare A B`.
 *
 * Mean step time of A and B and its change; per op the change in self time and per kernel the
 * change in total time, sorted by absolute change; names present on one side only are listed as
 * added (only in B) or removed (only in A). The comparison borrows both analyses: they must
 * outlive it. Changes that do not apply (no steps, nothing to compare against) are NaN. */
#ifndef TP_ANALYSIS_COMPARE_H
#define TP_ANALYSIS_COMPARE_H

#include "analysis/analysis.h"

#include <stddef.h>
#include <stdint.h>

typedef enum tp_delta_status {
    TP_DELTA_CHANGED, /* on both sides (the change may be zero) */
    TP_DELTA_ADDED,   /* only in B */
    TP_DELTA_REMOVED, /* only in A */
} tp_delta_status;

typedef struct tp_delta_row {
    const char *name; /* owned by A's or B's row */
    tp_delta_status status;
    uint64_t a_calls, b_calls;
    int64_t a_ns, b_ns; /* self time (ops) or total time (kernels); 0 on a missing side */
    int64_t delta_ns;   /* b_ns - a_ns */
    double delta_pct;   /* delta / a x 100; NaN when a_ns is 0 */
} tp_delta_row;

typedef struct tp_compare {
    const tp_analysis *a, *b;
    int64_t a_mean_ns, b_mean_ns; /* mean step time; 0 without steps */
    double step_change_pct;       /* (b - a) / a x 100; NaN when either side has no steps */
    tp_delta_row *ops;            /* sorted by |delta| descending, then name */
    size_t nops, ops_added, ops_removed;
    tp_delta_row *kernels;
    size_t nkernels, kernels_added, kernels_removed;
    tp_delta_row *stages; /* A's stages, then B's not in A, then other, in that order: time
                             per step (total / steps; the total when a side has no steps) */
    size_t nstages;
} tp_compare;

/* a and b must be finished (tp_analysis_finish). NULL when out of memory. */
tp_compare *tp_compare_new(const tp_analysis *a, const tp_analysis *b);
/* For --fail-above PCT: 1 when B's mean step time exceeds A's by more than pct percent, 0 when
 * not, -1 when either side has no steps (nothing to compare). */
int tp_compare_regressed(const tp_compare *c, double pct);
/* The change in percent of what target names: "step" (the mean step time), "stage:NAME" (that
 * stage's time per step), "op:NAME" (that op's self time per step). *found is 0 when target
 * names no such figure on either side. NaN when the change does not apply (A's figure is zero
 * and B's too, or a side has no steps for "step"); +inf when only B has it. */
double tp_compare_change(const tp_compare *c, const char *target, int *found);
void tp_compare_free(tp_compare *c);

#endif
