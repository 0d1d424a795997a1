/* analysis.h - every figure of docs/SEMANTICS.md §3, computed from event models.
 *
 * One implementation serves both the library (each closed window is added to the run's analysis,
 * whose report is the console summary and summary.json) and `tprof analyze` (each input file is
 * added). Models are added one at a time and may be freed right after: the analysis copies what
 * it keeps (names as strings, not model ids), so windows and files with different string tables
 * accumulate into one result. tp_analysis_finish then sorts tables, derives percentages and
 * writes the recommendations.
 *
 * Units: every *_ns field is integer nanoseconds; renderers print microseconds. A percentage or
 * figure that does not apply (no steps, no GPU work) is -1. docs/METRICS.md defines each figure. */
#ifndef TP_ANALYSIS_ANALYSIS_H
#define TP_ANALYSIS_ANALYSIS_H

#include "model/model.h"
#include "model/stage.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_analysis_opts {
    const tp_stage_def *stages; /* NULL: the default stages (stages.c) */
    size_t nstages;
    double peak_tflops; /* a device's peak for MFU; 0: the table of GPUs (mfu.c) */
    int per_rank;       /* TP_PER_RANK_*: also analyse each rank apart (ranks.h) */
    int threads;        /* 1: a big model is analysed on the calling thread alone (`tprof analyze
                           --threads 1`); otherwise with a helper thread (add_model.c) */
} tp_analysis_opts;

/* tp_analysis_opts.per_rank: off; only a trace `tprof merge` wrote is taken apart into its ranks
 * (cheap: one look at its process names); every model also goes to its rank's sub-analysis;
 * self: the models are one rank's (the library's own run), summarised into a->rank_summary for
 * summary.json, from which `tprof analyze --summaries` redoes the cross-rank analysis. */
enum { TP_PER_RANK_OFF = 0, TP_PER_RANK_MERGED = 1, TP_PER_RANK_ON = 2, TP_PER_RANK_SELF = 3 };

typedef struct tp_op_row {
    char *name;
    char *shapes; /* rows of ops_by_shape: the input shapes as torch.profiler's
                     key_averages(group_by_input_shape=True) keys them ("[[6, 3], []]"), "" for
                     ranges that recorded none; NULL in ops */
    char *dtypes; /* rows of ops_by_shape: the "Input type" array of the first call that had
                     one (["float", "c10::BFloat16", ...], as JSON), NULL when none did */
    uint64_t calls;
    int64_t total_ns, self_ns, min_ns, max_ns;
    double self_pct;       /* self / sum of self over all rows (set by finish) */
    double flops;          /* sum of "flops" args */
    int64_t flops_time_ns; /* total duration of this op's ranges that carry flops */
    double fcm_flops;      /* FlopCounterMode's FLOPs of its calls not inside a counted op */
    int64_t gpu_ns;        /* GPU work (kernels, copies, sets) launched from inside this op */
    uint64_t kernels;      /* device ranges launched from inside this op */
    double gpu_pct;        /* gpu_ns / the analysis' gpu_work_ns (set by finish) */
    int64_t sync_ns;       /* host synchronizations inside steps called from inside this op */
    uint64_t sync_calls;
    int64_t alloc_bytes; /* Σ Bytes of the allocations ([memory], Bytes > 0) it is the innermost
                            op of, on the allocating thread (torch's self memory) */
    uint64_t allocs;     /* their count */
    uint64_t fp32_calls; /* calls whose "Input type" starts with "float" (matrix ops only) */
    char *module; /* ops: the module range ("nn.Module: ..." or a tprof.torch path, modules.c)
                     around its longest call in the first input that had one; NULL none
                     (and in ops_by_shape) */
    /* for a window added in pieces (add_model.c's takes_module): module's call's duration,
     * whether it is a path, the input it came from; the longest call of input last_input */
    int64_t module_ns;
    int module_path;
    uint64_t module_input, last_input;
    int64_t last_input_max_ns;
} tp_op_row;

typedef struct tp_kernel_row {
    char *name;
    uint64_t calls;
    int64_t total_ns, min_ns, max_ns;
    double pct; /* total / sum over all kernels (set by finish) */
} tp_kernel_row;

typedef struct tp_step_row {
    char *name;       /* "ProfilerStep#12" */
    int64_t number;   /* 12 */
    int64_t start_ns; /* absolute (base_ns + ts) */
    int64_t dur_ns;
    int64_t *stage_ns;  /* per stage (parallel to tp_analysis.stages): time inside this step */
    int64_t other_ns;   /* the part of the step no stage range covers (on any thread) */
    int64_t lead_ns;    /* from the step's start to its first range on the step's thread */
    double flops;       /* flops of the ranges starting in this step */
    double mfu_pct;     /* flops / duration / peak x 100; -1 without a peak or flops (mfu.c) */
    double fcm_flops;   /* FlopCounterMode's FLOPs of the ops starting in this step */
    double fcm_mfu_pct; /* as mfu_pct, of fcm_flops */
} tp_step_row;

/* A flight recorder's trace (docs/FLIGHT.md): its triggering step beside the others of its
 * input, and where the extra time went (flight_step.c). */
enum { TP_FLIGHT_OPS = 3 };
typedef struct tp_flight_op {
    char *name;
    int64_t step_ns;    /* its self time in the triggering step */
    int64_t typical_ns; /* its mean self time in the other steps */
} tp_flight_op;

typedef struct tp_flight_row {
    char *reason;
    size_t step;       /* the triggering step: an index into tp_analysis.steps */
    size_t others;     /* the other steps of its input */
    int64_t median_ns; /* their median duration; -1 when there is none */
    double ratio;      /* the step's duration / median_ns; -1 when n/a */
    int stage;         /* the stage that grew most: an index into stages, -1 "other", -2 none */
    int64_t stage_step_ns, stage_median_ns; /* that stage in the step, and its median */
    tp_flight_op ops[TP_FLIGHT_OPS];        /* the ops that grew most, most first */
    size_t nops;
} tp_flight_row;

typedef struct tp_stage_row {
    char *name;
    uint64_t count; /* outermost matching ranges */
    int64_t total_ns, max_ns;
    int64_t min_ns, mean_ns, p50_ns, p95_ns; /* over the ranges' durations (set by finish) */
    double pct;                              /* total / total step time (set by finish) */
    int64_t *durs;                           /* every counted range's duration */
    size_t cap_durs;
} tp_stage_row;

typedef struct tp_mem_row {
    int64_t device_type; /* PyTorch's Device Type: 0 CPU, 1 CUDA, ... */
    int64_t device_id;
    int64_t peak_bytes;
    int64_t peak_ts_ns;      /* absolute */
    uint64_t capacity_bytes; /* totalGlobalMem of that device when the trace says; else 0 */
    double capacity_pct;     /* peak / capacity; -1 when the capacity is unknown (set by finish) */
} tp_mem_row;

/* GPU idle time of one device, explained as HTA does (idle.c, docs/METRICS.md). */
typedef struct tp_idle_row {
    int64_t device;    /* the pid of its tracks (Kineto: the device number) */
    int64_t idle_ns;   /* Σ over its streams of the gaps between consecutive work */
    int64_t host_ns;   /* the host launched the next work after the previous ended */
    int64_t sync_ns;   /* ... right after a synchronization drained the GPU */
    int64_t launch_ns; /* gaps below TP_IDLE_LAUNCH_NS: back-to-back launch overhead */
    int64_t other_ns;  /* the rest */
    int64_t busy_ns;   /* the union of its work inside the window (gpu.c), over every input */
    int64_t window_ns; /* the windows it was busy in, summed over inputs: busy <= window */
} tp_idle_row;

typedef struct tp_reco {
    char *id;          /* stable: dataloader, gpu_idle, memory_pressure, nccl, launch_bound, ... */
    char *message;     /* its evidence in numbers, then one concrete action */
    int64_t saving_ns; /* the step time it could save at most (docs/METRICS.md); recos are
                          sorted by it, largest first */
} tp_reco;

/* The run's setup as tprof.torch records it: "tprof.setup" args of "key=value;..." pairs
 * (python/tprof/torch/setup.py, docs/METRICS.md). A foreign trace has none: every integer is
 * then -1 and every string "", and the recommendations fall back to generic wording. */
typedef struct tp_setup {
    int64_t cpu_count;   /* CPUs the process may run on (os.sched_getaffinity) */
    int64_t num_workers; /* the DataLoader's, with pin_memory, persistent_workers (0/1), */
    int64_t pin_memory, persistent_workers, batch_size, prefetch_factor; /* batch_size */
    int64_t foreach, fused; /* the optimizer's, as it will run: 0/1 */
    char optimizer[32];     /* its class name */
    char param_dtype[24];   /* the model's parameters' dtype ("float32", "mixed") */
    char device[16];        /* where the parameters are ("cpu", "cuda") */
    /* CPU time over the intervals tprof.torch read (python/tprof/torch/loader_cpu.py), summed:
     * the DataLoader's workers', the training process's, and the intervals' wall time; all 0
     * when none was read */
    int64_t loader_cpu_ns, process_cpu_ns, reading_ns;
    /* The fetches that started the workers (iter()) and stopped them (the epoch's end), summed,
     * and the starts (python/tprof/torch/data.py); all 0 when none was recorded */
    int64_t loader_start_ns, loader_starts, loader_stop_ns;
} tp_setup;

typedef struct tp_analysis {
    /* inputs */
    size_t ninputs;
    char *input_path; /* the first input's path ("" for a recorded window) */
    uint64_t input_bytes, input_events;
    char **paths; /* every non-empty input path, in the order added */
    size_t npaths, cap_paths;
    int64_t window_ns; /* summed over inputs: first step start to last step end, or the
                          span of all events when an input has no steps */
    /* steps, in the order added; steps_total_ns is their summed duration */
    tp_step_row *steps;
    size_t nsteps, cap_steps;
    int64_t steps_total_ns;
    int64_t steps_mean_ns, steps_p50_ns, steps_p95_ns, steps_max_ns; /* set by finish */
    size_t *steps_by_dur; /* step indices, slowest first (set by finish) */
    /* ops: all host ranges except steps (sorted by self time, descending, by finish) */
    tp_op_row *ops;
    size_t nops, cap_ops;
    size_t *ops_by_gpu; /* indices of ops that launched GPU work, most first (finish) */
    size_t nops_by_gpu;
    size_t *ops_by_alloc; /* indices of ops that allocated, most bytes first (finish) */
    size_t nops_by_alloc;
    /* ops by (name, input shapes), when some input recorded shapes (shapes.c; else none): rows
     * in the order met, and their indices by self time, descending (set by finish) */
    tp_op_row *ops_by_shape;
    size_t nops_by_shape, cap_ops_by_shape;
    size_t *shapes_order;
    /* kernels (sorted by total, descending, by finish) */
    tp_kernel_row *kernels;
    size_t nkernels, cap_kernels;
    uint64_t kernel_count;
    int64_t kernel_total_ns; /* summed duration of all kernels */
    /* GPU busy: union of kernel/memcpy/memset intervals per device, summed */
    int64_t gpu_busy_ns;
    int64_t gpu_capacity_ns;    /* window length x devices, summed over inputs */
    size_t gpu_devices;         /* most devices seen in one input */
    double gpu_utilization_pct; /* busy / capacity x 100; -1 when no device work (set by finish) */
    int64_t gpu_work_ns;        /* summed duration of all kernels, copies and sets */
    int64_t gpu_attributed_ns;  /* the part of gpu_work_ns charged to an op */
    /* stages in definition order */
    tp_stage_row *stages;
    size_t nstages;
    double dataloader_pct; /* -1 when no stage is named dataloader */
    tp_stage_row other;    /* "other": per step, the time no stage covers (count = steps) */
    int64_t lead_ns;       /* summed tp_step_row.lead_ns */
    /* memory peaks per (device type, device id) */
    tp_mem_row *memory;
    size_t nmemory, cap_memory;
    /* FLOPs */
    double flops;
    int64_t flops_time_ns;
    double flops_per_s; /* flops / flops_time; -1 when no range carries flops (finish) */
    /* MFU (mfu.c, set by finish) */
    double step_flops;           /* flops of the ranges starting inside steps */
    double achieved_flops_per_s; /* step_flops / total step time; -1 without flops or steps */
    double opt_peak_tflops;      /* tp_analysis_opts.peak_tflops */
    double peak_tflops;          /* the peak per device used, 0 when none is known */
    const char *peak_source;     /* "--peak-tflops", "table", or NULL */
    const char *peak_dtype;      /* with the table: "fp32", "tf32", "bf16/fp16"; else NULL */
    double mfu_pct;              /* achieved / (peak x devices) x 100; -1 when n/a */
    /* The same by FlopCounterMode's convention (docs/METRICS.md, "FLOPs by two conventions") */
    double fcm_flops;                /* Σ FlopCounterMode's FLOPs of every op */
    double step_fcm_flops;           /* ... of the ops starting inside steps */
    double achieved_fcm_flops_per_s; /* step_fcm_flops / total step time; -1 when n/a */
    double fcm_mfu_pct;              /* achieved_fcm / (peak x devices) x 100; -1 when n/a */
    /* run facts and warnings (dropped events, partial windows, ...) */
    uint64_t dropped_events;
    size_t windows, partial_windows;
    char **warnings;
    size_t nwarnings, cap_warnings;
    /* evidence for the recommendations (docs/METRICS.md), summed over inputs */
    int64_t sync_ns; /* host synchronizations (cudaStreamSynchronize, ...) in steps */
    uint64_t sync_calls;
    int64_t h2d_pageable_ns; /* host-to-device copies from pageable memory */
    uint64_t h2d_pageable_count;
    uint64_t optim_steps;     /* outermost Optimizer.step#... ranges */
    int64_t optim_ns;         /* their summed duration */
    uint64_t optim_ops;       /* op ranges inside them */
    uint64_t optim_multi_ops; /* of which _foreach_ / _fused_ ops */
    int64_t python_self_ns;   /* self time of python_function ranges starting in steps */
    uint64_t python_ranges;
    int64_t gc_ns; /* Python garbage collections ("gc" ranges) inside steps */
    uint64_t gc_calls;
    int64_t gc_max_ns; /* the longest of them */
    tp_setup setup;
    tp_idle_row *idle; /* per device, in order of appearance */
    size_t nidle, cap_idle;
    int gpu_compute_major; /* the highest compute capability among the devices, 0 unknown */
    char *gpu_name;        /* the first device's name (deviceProperties), NULL unknown */
    tp_reco *recos;
    size_t nrecos;
    /* several ranks (ranks.h): set by finish when per_rank was asked and two ranks or more
     * were added; NULL otherwise */
    struct tp_ranks *ranks;
    /* TP_PER_RANK_SELF: this one rank summarised (one row, no spread, no straggler) */
    struct tp_ranks *rank_summary;
    /* call stacks from python_function ranges (with_stack; stacks.h): NULL when no input had one */
    struct tp_stacks *stacks;
    struct tp_modules *modules; /* the module tree (modules.h); NULL when no input had modules */
    tp_flight_row *flights;     /* one per flight recorder's trace among the inputs */
    size_t nflights, cap_flights;
    /* private accumulation state */
    struct tp_analysis_priv *priv;
    int failed; /* an allocation failed: results are incomplete */
} tp_analysis;

/* Recommendation thresholds (docs/SEMANTICS.md §3; docs/METRICS.md). A recommendation fires when
 * its figure is strictly beyond the threshold. */
#define TP_RECO_DATALOADER_PCT     5.0   /* dataloader stage, % of step time */
#define TP_RECO_LOADER_IDLE        0.5   /* idle CPUs, share of loading share x CPUs */
#define TP_RECO_GPU_IDLE_PCT       50.0  /* GPU utilization below this */
#define TP_RECO_MEMORY_PCT         90.0  /* peak device memory, % of totalGlobalMem */
#define TP_RECO_NCCL_PCT           10.0  /* NCCL kernels, % of step time */
#define TP_RECO_LAUNCH_MEAN_NS     10000 /* mean kernel duration below this ... */
#define TP_RECO_LAUNCH_MIN_KERNELS 100   /* ... over at least this many kernels */
#define TP_RECO_SYNC_PCT           5.0   /* host synchronizations inside steps, % of step time */
#define TP_RECO_PAGEABLE_PCT       1.0   /* pageable host-to-device copies, % of step time */
#define TP_RECO_FP32_PCT           10.0  /* FP32 SIMT matrix kernels, % of kernel time */
#define TP_RECO_OPTIM_OPS          20.0  /* ops per Optimizer.step, none _foreach_/_fused_ ... */
#define TP_RECO_OPTIM_PCT          5.0   /* ... and Optimizer.step above this % of step time */
#define TP_RECO_CPU_OP_PCT         25.0  /* CPU-only: the top aten op's self time, % of step */
#define TP_RECO_PYTHON_PCT         10.0  /* python_function self time in steps, % of step */
#define TP_RECO_OTHER_PCT          30.0  /* step time in no stage, % */
#define TP_RECO_OVERLAP_PCT        50.0  /* a rank's comm/compute overlap below this ... */
#define TP_RECO_OVERLAP_COMM_PCT   5.0   /* ... with communication at least this % of its steps */
#define TP_RECO_UNSTABLE_RATIO     2.0   /* step p95 / p50 above this ... */
#define TP_RECO_UNSTABLE_MIN_STEPS 5     /* ... over at least this many steps */
#define TP_RECO_DOMINANT_PCT       30.0  /* one op's self (CPU) or GPU time, % of step time */
#define TP_RECO_SHOWN              3     /* recommendations the text report prints */
#define TP_IDLE_LAUNCH_NS                                                                          \
    30000 /* a gap below this is launch overhead: HTA's default 30, in                             \
           * the microseconds of Kineto traces */

/* The name of the stage a flight row says grew most: a stage's, "other", or NULL for none. */
static inline const char *tp_flight_stage_name(const tp_analysis *a, const tp_flight_row *f) {
    return f->stage >= 0 ? a->stages[f->stage].name : f->stage == -1 ? "other" : NULL;
}

tp_analysis *tp_analysis_new(const tp_analysis_opts *opts);
/* Accumulates one model (a window or an input file). path may be NULL. 0, or -1 out of memory. */
int tp_analysis_add_model(tp_analysis *a, const tp_model *m, const char *path);
/* A run-level warning shown by every renderer (copied). */
void tp_analysis_add_warning(tp_analysis *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Sorts the tables, derives percentiles and percentages, writes the recommendations.
 * Idempotent; adding models after it is allowed (call it again). */
void tp_analysis_finish(tp_analysis *a);
void tp_analysis_free(tp_analysis *a);

/* p-th percentile (0..100) of n values sorted ascending, by linear interpolation between the
 * closest ranks (numpy's default; Python's statistics.quantiles(method="inclusive")), rounded
 * to the nearest integer with halves up; 0 when n is 0. */
int64_t tp_percentile(const int64_t *sorted, size_t n, double p);
/* Sorts v[0..n) ascending. */
void tp_sort_i64(int64_t *v, size_t n);

/* total / count rounded to the nearest integer (halves away from zero); 0 when count is 0. */
int64_t tp_mean_ns(int64_t total, uint64_t count);

/* Case-insensitive glob match of a whole name: `*` matches any run, `?` one character. */
int tp_glob_match(const char *pattern, const char *name);

#endif
