/* mfu.c - model FLOPs utilization: the FLOP/s a run achieved over its steps against what its
 * devices could do at most.
 *
 * Achieved = Σ flops of the ranges starting in steps / Σ step durations (overall), or a step's
 * own flops / its duration; the same of FlopCounterMode's FLOPs (fcm_flops, forward and
 * backward), the second convention docs/METRICS.md describes. The peak is --peak-tflops
 * (tp_analysis_opts.peak_tflops) when given; else, for a GPU, the dense peak of its name in the
 * table below, at the widest math the trace's kernel names show (bf16/fp16 tensor cores, TF32, else
 * FP32); a CPU has none. The figures are vendors' datasheet numbers without sparsity;
 * docs/METRICS.md lists the table. */
#include "analysis/internal.h"

#include <string.h>

enum { DT_FP32, DT_TF32, DT_HALF, DT_COUNT };

static const char *const dtype_names[DT_COUNT] = {"fp32", "tf32", "bf16/fp16"};

/* Dense peak TFLOP/s by device name pattern (first match wins: longer names first); 0 where
 * the device lacks that math (a V100 has no TF32: its FP32 peak stands in). */
static const struct peak {
    const char *pattern;
    double tflops[DT_COUNT];
} peaks[] = {
    {"*H100*PCIe*", {51.2, 378.0, 756.0}},
    {"*H100*", {66.9, 494.7, 989.4}},
    {"*H200*", {66.9, 494.7, 989.4}},
    {"*GH200*", {66.9, 494.7, 989.4}},
    {"*B200*", {80.0, 1100.0, 2250.0}},
    {"*A100*", {19.5, 156.0, 312.0}},
    {"*A800*", {19.5, 156.0, 312.0}},
    {"*A10G*", {31.2, 62.5, 125.0}},
    {"*A10*", {31.2, 62.5, 125.0}},
    {"*L40S*", {91.6, 183.0, 362.0}},
    {"*L4*", {30.3, 60.0, 121.0}},
    {"*V100*", {15.7, 0, 125.0}},
    {"*T4*", {8.1, 0, 65.0}},
    {"*4090*", {82.6, 82.6, 165.2}},
    {"*3090*", {35.6, 35.6, 71.0}},
    {"*MI300X*", {163.4, 653.7, 1307.4}},
    {"*MI250*", {47.9, 0, 383.0}},
};

/* The widest math the kernels' names show. */
static int kernel_dtype(const tp_analysis *a) {
    int dt = DT_FP32;
    for (size_t i = 0; i < a->nkernels; i++) {
        const char *n = a->kernels[i].name;
        if (tp_glob_match("*bf16*", n) || tp_glob_match("*fp16*", n) ||
            tp_glob_match("*h1688*", n) || tp_glob_match("*h884*", n) ||
            tp_glob_match("*hmma*", n) || tp_glob_match("*f16f16*", n))
            return DT_HALF;
        if (tp_glob_match("*tf32*", n) || tp_glob_match("*s1688*", n) ||
            tp_glob_match("*s16816*", n))
            dt = DT_TF32;
    }
    return dt;
}

/* The peak of one device from the table, its dtype in *dtype; 0 when the name is unknown. */
static double table_peak(const tp_analysis *a, const char **dtype) {
    if (!a->gpu_name) return 0;
    for (size_t i = 0; i < sizeof(peaks) / sizeof(peaks[0]); i++) {
        if (!tp_glob_match(peaks[i].pattern, a->gpu_name)) continue;
        int dt = kernel_dtype(a);
        while (dt > DT_FP32 && peaks[i].tflops[dt] == 0)
            dt--;
        *dtype = dtype_names[dt];
        return peaks[i].tflops[dt];
    }
    return 0;
}

/* flops over dur ns as FLOP/s; -1 without either. */
static double rate(double flops, int64_t dur_ns) {
    return dur_ns > 0 && flops > 0 ? flops * 1e9 / (double)dur_ns : -1;
}

/* rate as a percentage of peak FLOP/s; -1 without either. */
static double pct_of(double rate, double peak) {
    return peak > 0 && rate >= 0 ? 100.0 * rate / peak : -1;
}

void tp_mfu(tp_analysis *a) {
    a->peak_tflops = 0;
    a->peak_source = NULL;
    a->peak_dtype = NULL;
    a->achieved_flops_per_s = rate(a->step_flops, a->steps_total_ns);
    a->achieved_fcm_flops_per_s = rate(a->step_fcm_flops, a->steps_total_ns);
    if (a->opt_peak_tflops > 0) {
        a->peak_tflops = a->opt_peak_tflops;
        a->peak_source = "given"; /* --peak-tflops, or the library's peak_tflops key */
    } else if (a->gpu_devices) {
        a->peak_tflops = table_peak(a, &a->peak_dtype);
        if (a->peak_tflops > 0) a->peak_source = "table";
    }
    /* every device of the run works on the steps: the peak scales with them */
    double devices = a->gpu_devices ? (double)a->gpu_devices : 1;
    double peak = a->peak_tflops * 1e12 * devices;
    a->mfu_pct = pct_of(a->achieved_flops_per_s, peak);
    a->fcm_mfu_pct = pct_of(a->achieved_fcm_flops_per_s, peak);
    for (size_t k = 0; k < a->nsteps; k++) {
        tp_step_row *s = &a->steps[k];
        s->mfu_pct = pct_of(rate(s->flops, s->dur_ns), peak);
        s->fcm_mfu_pct = pct_of(rate(s->fcm_flops, s->dur_ns), peak);
    }
}
