/* recommend.c - the five recommendations of docs/SEMANTICS.md §3, each with its evidence in
 * numbers.
 *
 * Thresholds are the TP_RECO_* constants of analysis.h (docs/METRICS.md explains them); each
 * recommendation fires when its figure is strictly beyond its threshold, and never when the
 * figure does not apply (no steps, no GPU). */
#include "analysis/internal.h"

#include "util/vec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void add(tp_analysis *a, size_t *cap, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(tp_analysis *a, size_t *cap, const char *id, const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char *i = strdup(id), *m = strdup(msg);
    if (!i || !m || tp_grow((void **)&a->recos, cap, a->nrecos + 1, sizeof(*a->recos))) {
        free(i);
        free(m);
        a->failed = 1;
        return;
    }
    a->recos[a->nrecos].id = i;
    a->recos[a->nrecos++].message = m;
}

static double ms(int64_t ns) {
    return (double)ns / 1e6;
}

static const tp_stage_row *stage_named(const tp_analysis *a, const char *name) {
    for (size_t st = 0; st < a->nstages; st++)
        if (strcmp(a->stages[st].name, name) == 0) return &a->stages[st];
    return NULL;
}

static void memory_pressure(tp_analysis *a, size_t *cap) {
    const tp_mem_row *worst = NULL;
    double worst_pct = 0;
    for (size_t i = 0; i < a->nmemory; i++) {
        const tp_mem_row *r = &a->memory[i];
        if (r->capacity_pct > TP_RECO_MEMORY_PCT && r->capacity_pct > worst_pct) {
            worst = r;
            worst_pct = r->capacity_pct;
        }
    }
    if (worst)
        add(a, cap, "memory_pressure",
            "Peak memory on device %lld is %.1f%% of its %.1f GiB (%.2f GiB); use activation "
            "checkpointing, mixed precision (bf16/fp16) or a smaller batch.",
            (long long)worst->device_id, worst_pct, (double)worst->capacity_bytes / 1073741824.0,
            (double)worst->peak_bytes / 1073741824.0);
}

void tp_recommend(tp_analysis *a) {
    for (size_t i = 0; i < a->nrecos; i++) {
        free(a->recos[i].id);
        free(a->recos[i].message);
    }
    free(a->recos);
    a->recos = NULL;
    a->nrecos = 0;
    size_t cap = 0;
    double util = a->gpu_utilization_pct;
    const tp_stage_row *dl = stage_named(a, "dataloader");
    if (dl && a->dataloader_pct > TP_RECO_DATALOADER_PCT)
        add(a, &cap, "dataloader",
            "Data loading takes %.1f%% of step time (%.1f ms of %.1f ms); load batches in "
            "parallel workers (DataLoader num_workers > 0), pin memory and prefetch.",
            a->dataloader_pct, ms(dl->total_ns), ms(a->steps_total_ns));
    if (util >= 0 && util < TP_RECO_GPU_IDLE_PCT)
        add(a, &cap, "gpu_idle",
            "GPU utilization is %.1f%% (busy %.1f ms of %.1f ms on %zu device%s); the GPU waits: "
            "use larger batches, fewer host-device synchronizations, and overlap data transfer "
            "with compute.",
            util, ms(a->gpu_busy_ns), ms(a->gpu_capacity_ns), a->gpu_devices,
            a->gpu_devices == 1 ? "" : "s");
    memory_pressure(a, &cap);
    int64_t nccl = 0;
    for (size_t i = 0; i < a->nkernels; i++)
        if (tp_glob_match("*nccl*", a->kernels[i].name))
            nccl = tp_add_sat(nccl, a->kernels[i].total_ns);
    double nccl_pct = a->steps_total_ns > 0 ? 100.0 * (double)nccl / (double)a->steps_total_ns : -1;
    if (nccl_pct > TP_RECO_NCCL_PCT)
        add(a, &cap, "nccl",
            "NCCL kernels take %.1f%% of step time (%.1f ms of %.1f ms); overlap communication "
            "with compute (gradient bucketing) or compress it (bf16/fp16 gradients).",
            nccl_pct, ms(nccl), ms(a->steps_total_ns));
    if (util >= 0 && util < TP_RECO_GPU_IDLE_PCT && a->kernel_count >= TP_RECO_LAUNCH_MIN_KERNELS &&
        (double)a->kernel_total_ns < (double)TP_RECO_LAUNCH_MEAN_NS * (double)a->kernel_count)
        add(a, &cap, "launch_bound",
            "%llu kernels average %.2f us with GPU utilization at %.1f%%: the step is "
            "launch-bound; capture it with CUDA graphs or fuse kernels with torch.compile.",
            (unsigned long long)a->kernel_count,
            (double)a->kernel_total_ns / 1e3 / (double)a->kernel_count, util);
}
