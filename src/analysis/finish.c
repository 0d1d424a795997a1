/* finish.c - turning accumulated sums into the figures reports show: sorted tables,
 * percentages, step and stage statistics, utilization, then the recommendations.
 *
 * Idempotent: everything here is recomputed from the sums, so models may be added after a
 * finish and finish called again. Ties in every ordering are broken by name (or start time),
 * so reports are deterministic. */
#include "analysis/internal.h"
#include "analysis/modules.h"

#include <stdlib.h>
#include <string.h>

static int cmp_i64_desc(int64_t a, int64_t b) {
    return (a < b) - (a > b);
}

static int cmp_op(const void *pa, const void *pb) {
    const tp_op_row *a = pa, *b = pb;
    int c = cmp_i64_desc(a->self_ns, b->self_ns);
    return c ? c : strcmp(a->name, b->name);
}

static int cmp_kernel(const void *pa, const void *pb) {
    const tp_kernel_row *a = pa, *b = pb;
    int c = cmp_i64_desc(a->total_ns, b->total_ns);
    return c ? c : strcmp(a->name, b->name);
}

static int cmp_op_gpu(const void *pa, const void *pb, void *ctx) {
    const tp_op_row *ops = ctx, *a = &ops[*(const size_t *)pa], *b = &ops[*(const size_t *)pb];
    int c = cmp_i64_desc(a->gpu_ns, b->gpu_ns);
    return c ? c : strcmp(a->name, b->name);
}

static int cmp_op_alloc(const void *pa, const void *pb, void *ctx) {
    const tp_op_row *ops = ctx, *a = &ops[*(const size_t *)pa], *b = &ops[*(const size_t *)pb];
    int c = cmp_i64_desc(a->alloc_bytes, b->alloc_bytes);
    return c ? c : strcmp(a->name, b->name);
}

static int launched_gpu_work(const tp_op_row *r) {
    return r->gpu_ns > 0 || r->kernels > 0;
}
static int allocated(const tp_op_row *r) {
    return r->allocs > 0;
}

/* *index: the indices of the ops that keep holds for, sorted by cmp; *n their count. Sets
 * failed when out of memory (the index is then empty). */
static void index_ops(tp_analysis *a, int (*keep)(const tp_op_row *),
                      int (*cmp)(const void *, const void *, void *), size_t **index, size_t *n) {
    free(*index);
    *n = 0;
    *index = malloc((a->nops ? a->nops : 1) * sizeof(**index));
    if (!*index) {
        a->failed = 1;
        return;
    }
    for (size_t i = 0; i < a->nops; i++)
        if (keep(&a->ops[i])) (*index)[(*n)++] = i;
    qsort_r(*index, *n, sizeof(size_t), cmp, a->ops);
}

static int cmp_step_dur(const void *pa, const void *pb, void *ctx) {
    const tp_step_row *steps = ctx;
    size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
    int c = cmp_i64_desc(steps[ia].dur_ns, steps[ib].dur_ns);
    if (!c)
        c = (steps[ia].start_ns > steps[ib].start_ns) - (steps[ia].start_ns < steps[ib].start_ns);
    return c ? c : (ia > ib) - (ia < ib);
}

static double pct_of(int64_t part, int64_t whole) {
    return whole > 0 ? 100.0 * (double)part / (double)whole : -1;
}

static void finish_tables(tp_analysis *a) {
    struct tp_analysis_priv *pv = a->priv;
    if (a->nops) qsort(a->ops, a->nops, sizeof(*a->ops), cmp_op);
    if (a->nkernels) qsort(a->kernels, a->nkernels, sizeof(*a->kernels), cmp_kernel);
    /* Sorting moved the rows: index them again. */
    tp_name_index_clear(&pv->ops_ix);
    tp_name_index_clear(&pv->kernels_ix);
    int64_t self_sum = 0;
    for (size_t i = 0; i < a->nops; i++) {
        if (tp_name_index_put(&pv->ops_ix, a->ops[i].name, (uint32_t)i)) a->failed = 1;
        self_sum = tp_add_sat(self_sum, a->ops[i].self_ns);
    }
    for (size_t i = 0; i < a->nops; i++) {
        double p = pct_of(a->ops[i].self_ns, self_sum),
               g = pct_of(a->ops[i].gpu_ns, a->gpu_work_ns);
        a->ops[i].self_pct = p < 0 ? 0 : p;
        a->ops[i].gpu_pct = g < 0 ? 0 : g;
    }
    for (size_t i = 0; i < a->nkernels; i++) {
        if (tp_name_index_put(&pv->kernels_ix, a->kernels[i].name, (uint32_t)i)) a->failed = 1;
        double p = pct_of(a->kernels[i].total_ns, a->kernel_total_ns);
        a->kernels[i].pct = p < 0 ? 0 : p;
    }
    tp_shapes_finish(a, self_sum);
    index_ops(a, launched_gpu_work, cmp_op_gpu, &a->ops_by_gpu, &a->nops_by_gpu);
    index_ops(a, allocated, cmp_op_alloc, &a->ops_by_alloc, &a->nops_by_alloc);
}

static void finish_steps(tp_analysis *a) {
    free(a->steps_by_dur);
    a->steps_by_dur = malloc((a->nsteps ? a->nsteps : 1) * sizeof(*a->steps_by_dur));
    int64_t *durs = malloc((a->nsteps ? a->nsteps : 1) * sizeof(*durs));
    if (!a->steps_by_dur || !durs) {
        free(durs);
        free(a->steps_by_dur);
        a->steps_by_dur = NULL;
        a->failed = 1;
        return;
    }
    for (size_t i = 0; i < a->nsteps; i++) {
        a->steps_by_dur[i] = i;
        durs[i] = a->steps[i].dur_ns;
    }
    qsort_r(a->steps_by_dur, a->nsteps, sizeof(size_t), cmp_step_dur, a->steps);
    tp_sort_i64(durs, a->nsteps);
    a->steps_mean_ns = tp_mean_ns(a->steps_total_ns, a->nsteps);
    a->steps_p50_ns = tp_percentile(durs, a->nsteps, 50);
    a->steps_p95_ns = tp_percentile(durs, a->nsteps, 95);
    a->steps_max_ns = a->nsteps ? durs[a->nsteps - 1] : 0;
    free(durs);
}

static void finish_stage(tp_stage_row *row, int64_t steps_total_ns) {
    tp_sort_i64(row->durs, row->count);
    row->min_ns = row->count ? row->durs[0] : 0;
    row->mean_ns = tp_mean_ns(row->total_ns, row->count);
    row->p50_ns = tp_percentile(row->durs, row->count, 50);
    row->p95_ns = tp_percentile(row->durs, row->count, 95);
    row->pct = pct_of(row->total_ns, steps_total_ns);
}

static void finish_stages(tp_analysis *a) {
    a->dataloader_pct = -1;
    for (size_t st = 0; st < a->nstages; st++) {
        tp_stage_row *row = &a->stages[st];
        finish_stage(row, a->steps_total_ns);
        if (strcmp(row->name, "dataloader") == 0) a->dataloader_pct = row->pct;
    }
    finish_stage(&a->other, a->steps_total_ns);
}

static int cmp_mem(const void *pa, const void *pb) {
    const tp_mem_row *a = pa, *b = pb;
    if (a->device_type != b->device_type)
        return (a->device_type > b->device_type) - (a->device_type < b->device_type);
    return (a->device_id > b->device_id) - (a->device_id < b->device_id);
}

/* The run facts every renderer shows among the warnings (text report, --json, summary.json). */
static void warn_run_facts(tp_analysis *a) {
    if (a->priv->told_run_facts) return;
    a->priv->told_run_facts = 1;
    if (a->dropped_events)
        tp_analysis_add_warning(a, "%llu events were dropped (buffers full): figures undercount",
                                (unsigned long long)a->dropped_events);
    if (a->partial_windows)
        tp_analysis_add_warning(a, "%zu window%s closed early (shutdown or signal)",
                                a->partial_windows, a->partial_windows == 1 ? "" : "s");
}

/* Sums that hit their ceiling (absurd input: a dur of 1e15 us, flops of 1e999) are shown
 * saturated rather than wrapped, inf or null; say so once. */
static void warn_saturated(tp_analysis *a) {
    int times = a->window_ns == INT64_MAX || a->steps_total_ns == INT64_MAX ||
                a->gpu_busy_ns == INT64_MAX || a->flops_time_ns == INT64_MAX;
    int flops = a->flops >= DBL_MAX || a->flops <= -DBL_MAX;
    for (size_t i = 0; i < a->nops; i++) {
        times |= a->ops[i].total_ns == INT64_MAX || a->ops[i].self_ns == INT64_MAX;
        flops |= a->ops[i].flops >= DBL_MAX || a->ops[i].flops <= -DBL_MAX;
    }
    for (size_t i = 0; i < a->nkernels; i++)
        times |= a->kernels[i].total_ns == INT64_MAX;
    if (times)
        tp_analysis_add_warning(a,
                                "a sum of durations overflowed: it is shown saturated at "
                                "%lld ns (the input holds absurd durations)",
                                (long long)INT64_MAX);
    if (flops)
        tp_analysis_add_warning(a,
                                "a FLOP count overflowed: it is shown saturated at %g (the "
                                "input holds absurd flops values)",
                                DBL_MAX);
}

void tp_analysis_finish(tp_analysis *a) {
    if (tp_modules_finish(a->modules)) a->failed = 1; /* told below, as any failure */
    warn_run_facts(a);
    if (a->failed && !a->priv->told_failed) {
        a->priv->told_failed = 1;
        tp_analysis_add_warning(a, "memory ran out during the analysis: results are incomplete");
    }
    finish_tables(a);
    finish_steps(a);
    finish_stages(a);
    a->gpu_utilization_pct = a->gpu_devices ? pct_of(a->gpu_busy_ns, a->gpu_capacity_ns) : -1;
    if (a->nmemory) qsort(a->memory, a->nmemory, sizeof(*a->memory), cmp_mem);
    for (size_t i = 0; i < a->nmemory; i++) {
        tp_mem_row *r = &a->memory[i];
        r->capacity_pct =
            r->capacity_bytes ? 100.0 * (double)r->peak_bytes / (double)r->capacity_bytes : -1;
    }
    a->flops_per_s = a->flops_time_ns > 0 ? a->flops * 1e9 / (double)a->flops_time_ns : -1;
    if (a->flops_per_s > DBL_MAX) a->flops_per_s = DBL_MAX;
    warn_saturated(a);
    tp_mfu(a);
    tp_ranks_finish(a);
    tp_recommend(a);
    if (a->stacks && tp_stacks_finish(a->stacks)) a->failed = 1;
}
