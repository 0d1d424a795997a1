/* recommend.c - what to change, each with its evidence in numbers and one concrete action,
 * ranked by the step time it could save.
 *
 * Every rule fires when its figure is strictly beyond its threshold (the TP_RECO_* constants of
 * analysis.h) and never when the figure does not apply (no steps, no GPU). Each carries the most
 * step time the change could save (saving_ns; docs/METRICS.md says how each is estimated), and
 * the list is sorted by it, so the first recommendation is the one to try first. */
#include "analysis/internal.h"
#include "analysis/ranks.h"

#include "util/vec.h"

#include <assert.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct reco_list {
    tp_analysis *a;
    size_t cap;
} reco_list;

static void add(reco_list *l, const char *id, int64_t saving_ns, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add(reco_list *l, const char *id, int64_t saving_ns, const char *fmt, ...) {
    tp_analysis *a = l->a;
    char msg[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    char *i = strdup(id), *m = strdup(msg);
    if (!i || !m || tp_grow((void **)&a->recos, &l->cap, a->nrecos + 1, sizeof(*a->recos))) {
        free(i);
        free(m);
        a->failed = 1;
        return;
    }
    a->recos[a->nrecos++] = (tp_reco){.id = i, .message = m, .saving_ns = saving_ns};
}

static double ms(int64_t ns) {
    return (double)ns / 1e6;
}

/* part as a percentage of the total step time; -1 without steps. */
static double step_pct(const tp_analysis *a, int64_t part) {
    return a->steps_total_ns > 0 ? 100.0 * (double)part / (double)a->steps_total_ns : -1;
}

static const tp_stage_row *stage_named(const tp_analysis *a, const char *name) {
    for (size_t st = 0; st < a->nstages; st++)
        if (strcmp(a->stages[st].name, name) == 0) return &a->stages[st];
    return NULL;
}

static const tp_op_row *op_named(const tp_analysis *a, const char *pattern) {
    for (size_t i = 0; i < a->nops; i++)
        if (tp_glob_match(pattern, a->ops[i].name)) return &a->ops[i];
    return NULL;
}

/* The loading time the steps would still wait for with `target` workers instead of w. The
 * model: a worker loads a batch as fast as the training process loaded it, in parallel with the
 * rest of the step (rest_ns), and the process waits only for what the workers cannot hide
 * behind it. With w = 0 the process did all the loading (load_ns) itself; with w workers it
 * waited load_ns while they worked all the step, w x (load_ns + rest_ns) of loading. A bound:
 * a worker's start and its batches' hand-over cost more (the example's loop, 2 CPUs: 0 -> 1
 * worker saved 286 ms of the 539 ms this gives, 1 -> 2 workers 1147 of 1215). */
static int64_t loading_left(int64_t load_ns, int64_t rest_ns, int64_t w, int64_t target) {
    double work = w > 0 ? (double)w * (double)(load_ns + rest_ns) : (double)load_ns;
    double left = work / (double)target - (double)rest_ns;
    assert(target > w);
    return left > 0 ? (int64_t)left : 0;
}

/* The CPUs the process and its DataLoader workers kept busy over the intervals tprof.torch read
 * (python/tprof/torch/loader_cpu.py), and the workers' part of it; -1 without a reading. */
static double cpus_busy(const tp_setup *su, double *workers) {
    double wall = (double)su->reading_ns;
    *workers = wall > 0 ? (double)su->loader_cpu_ns / wall : -1;
    return wall > 0 ? (double)tp_add_sat(su->loader_cpu_ns, su->process_cpu_ns) / wall : -1;
}

/* The loading time of the steps, split: the fetches that started and stopped the DataLoader's
 * workers (cycle_ns: tprof.torch.dataloader's setup pairs, with workers only), which more
 * workers lengthen and persistent_workers removes, and the steady fetches of batches. */
typedef struct loading {
    int64_t ns, steady_ns, cycle_ns;
    int64_t rest_ns; /* the rest of the steps: what the workers can load beside */
    char of[96];     /* " of the X ms" the estimates are of */
} loading;

static loading loading_of(const tp_analysis *a, int64_t ns) {
    const tp_setup *su = &a->setup;
    loading ld = {.ns = ns, .rest_ns = a->steps_total_ns > ns ? a->steps_total_ns - ns : 0};
    if (su->num_workers > 0) ld.cycle_ns = tp_add_sat(su->loader_start_ns, su->loader_stop_ns);
    if (ld.cycle_ns > ns) ld.cycle_ns = ns;
    ld.steady_ns = ns - ld.cycle_ns;
    snprintf(ld.of, sizeof(ld.of),
             ld.cycle_ns ? "of the %.1f ms of steady fetches" : "of the %.1f ms", ms(ld.steady_ns));
    return ld;
}

/* As many workers as CPUs or more: the CPU is the limit, unless the readings show CPUs idle
 * while the steps wait for batches. Workers the CPU limits would keep every CPU busy then; when
 * more than TP_RECO_LOADER_IDLE of the CPUs the waiting could have used (loading share x CPUs)
 * sat idle, the workers wait on storage, the network or a lock, which more workers hide
 * (estimated as loading_left's, doubling them). Returns the saving. */
static int64_t loader_at_cpus(const tp_analysis *a, const loading *ld, int64_t w, int64_t cpus,
                              char *out, size_t size) {
    double workers, busy = cpus_busy(&a->setup, &workers), idle = (double)cpus - busy;
    double share = step_pct(a, ld->ns) / 100.0;
    assert(a->steps_total_ns > 0); /* dataloader() fired on the loading's share of the steps */
    if (busy >= 0 && idle > TP_RECO_LOADER_IDLE * share * (double)cpus) {
        int64_t more = 2 * w;
        int64_t saving = ld->steady_ns - loading_left(ld->steady_ns, ld->rest_ns, w, more);
        snprintf(out, size,
                 "the DataLoader has %lld workers for %lld CPUs, yet %.1f of the CPUs sat idle "
                 "on average (the process and its workers kept %.1f busy, the workers %.1f) "
                 "while the steps waited for batches: the workers wait on something other than "
                 "the CPU (storage, the network, a lock). Raise num_workers to %lld (or "
                 "prefetch_factor) to hide that wait: could save up to %.1f ms %s, less what "
                 "starting workers and handing batches over costs; faster storage or a local "
                 "copy of the data removes it",
                 (long long)w, (long long)cpus, idle, busy, workers, (long long)more, ms(saving),
                 ld->of);
        return saving;
    }
    int n = snprintf(out, size,
                     "the DataLoader's %lld workers already use all %lld CPUs, so more workers "
                     "will not help: the CPU is the limit",
                     (long long)w, (long long)cpus);
    if (busy >= 0 && n >= 0 && (size_t)n < size)
        n += snprintf(out + n, size - (size_t)n,
                      " (the process and its workers kept %.1f of them busy, the workers %.1f)",
                      busy, workers);
    if (n >= 0 && (size_t)n < size)
        snprintf(out + n, size - (size_t)n,
                 ". Make each batch cheaper to load (decode and augment once and cache, lighter "
                 "transforms, augment on the GPU, pre-processed shards) or run on a machine with "
                 "more CPUs");
    return ld->ns;
}

/* persistent_workers=True, with what starting and stopping the workers cost when the setup
 * says; appended to out at n. Persistent workers start once: the window keeps one start (their
 * mean) and no stop. Returns what that saves. */
static int64_t loader_persist(const tp_setup *su, const loading *ld, char *out, size_t size,
                              int n) {
    if (n < 0 || (size_t)n >= size) return 0;
    if (!ld->cycle_ns || su->loader_starts <= 0) {
        snprintf(out + n, size - (size_t)n,
                 "; persistent_workers=True (workers now restart every epoch)");
        return 0;
    }
    int64_t once = su->loader_start_ns / su->loader_starts;
    int64_t saving = ld->cycle_ns > once ? ld->cycle_ns - once : 0;
    snprintf(out + n, size - (size_t)n,
             "; persistent_workers=True: starting the workers (%lld times, at each epoch) and "
             "stopping them took %.1f ms of the loading, about %.1f ms more than starting them "
             "once",
             (long long)su->loader_starts, ms(ld->cycle_ns), ms(saving));
    return saving;
}

/* What to change in the DataLoader, from the setup tprof.torch recorded (tp_setup; -1 unknown):
 * its workers against the CPUs, then pinning and persistence. ns is the loading time; returns
 * what the changes could save (loading_left's estimate where workers are to be added, else ns;
 * plus what persistent workers save, at most ns in all). */
static int64_t loader_action(const tp_analysis *a, int64_t ns, char *out, size_t size) {
    const tp_setup *su = &a->setup;
    int64_t w = su->num_workers, cpus = su->cpu_count, saving = ns;
    loading ld = loading_of(a, ns);
    int n = 0;
    if (w > 0 && cpus > 0 && w >= cpus) {
        saving = loader_at_cpus(a, &ld, w, cpus, out, size);
        n = (int)strlen(out);
    } else if (w >= 0 && cpus > 0) {
        int64_t target = cpus > 1 && w < cpus - 1 ? cpus - 1 : cpus;
        saving = ld.steady_ns - loading_left(ld.steady_ns, ld.rest_ns, w, target);
        n = snprintf(out, size,
                     "raise DataLoader(num_workers=%lld) to num_workers=%lld (this machine has "
                     "%lld CPUs): loading in %lld worker%s beside the step could save up to "
                     "%.1f ms %s, less what starting workers and handing batches over costs",
                     (long long)w, (long long)target, (long long)cpus, (long long)target,
                     target == 1 ? "" : "s", ms(saving), ld.of);
    } else if (w >= 0)
        n = snprintf(out, size,
                     "DataLoader(num_workers=%lld): raise it up to the CPUs the process may use "
                     "(len(os.sched_getaffinity(0))); when it is there already, the CPU is the "
                     "limit: make __getitem__ cheaper (decode and augment once, cache)",
                     (long long)w);
    else
        n = snprintf(out, size,
                     "load batches in parallel workers (DataLoader num_workers up to the CPUs "
                     "the process may use; when it is there already, the CPU is the limit), and "
                     "make __getitem__ cheaper (decode and augment once, cache)");
    if (n < 0 || (size_t)n >= size) return saving;
    if (su->pin_memory == 0 && strcmp(su->device, "cuda") == 0)
        n += snprintf(out + n, size - (size_t)n, "; pin_memory=True");
    if (su->persistent_workers == 0 && w > 0)
        saving = tp_add_sat(saving, loader_persist(su, &ld, out, size, n));
    return saving > ns ? ns : saving;
}

/* Loading batches: the dataloader stage, or, when no range marks the loader, the lead of each
 * step (what `for batch in loader` spends before the step's first range). The iterator's name
 * tells a loader running in the training process (num_workers=0). */
static void dataloader(reco_list *l) {
    const tp_analysis *a = l->a;
    const tp_stage_row *dl = stage_named(a, "dataloader");
    if (!dl) return;
    int measured = dl->count > 0;
    int64_t ns = measured ? dl->total_ns : a->lead_ns;
    double pct = step_pct(a, ns);
    if (!(pct > TP_RECO_DATALOADER_PCT)) return;
    const char *what = measured ? "Data loading takes"
                                : "No range marks the data loader, but the start of each step "
                                  "before its first range (where `for batch in loader` fetches) "
                                  "takes";
    char action[1024];
    int64_t saving = loader_action(a, ns, action, sizeof(action));
    if (op_named(a, "*_SingleProcessDataLoaderIter*") && a->setup.num_workers < 0)
        add(l, "dataloader", ns,
            "%s %.1f%% of step time (%.1f ms of %.1f ms), and the DataLoader loads in the "
            "training process (_SingleProcessDataLoaderIter: num_workers=0); set "
            "DataLoader(num_workers=N) with N up to the CPUs the process may use, "
            "pin_memory=True, persistent_workers=True.",
            what, pct, ms(ns), ms(a->steps_total_ns));
    else
        add(l, "dataloader", saving, "%s %.1f%% of step time (%.1f ms of %.1f ms); %s.", what, pct,
            ms(ns), ms(a->steps_total_ns), action);
}

/* The mean idle time of one device: what the step could lose if the GPU were never starved. */
static int64_t idle_per_device(const tp_analysis *a) {
    int64_t idle = a->gpu_capacity_ns - a->gpu_busy_ns;
    return a->gpu_devices && idle > 0 ? idle / (int64_t)a->gpu_devices : 0;
}

static void gpu_idle(reco_list *l) {
    const tp_analysis *a = l->a;
    double util = a->gpu_utilization_pct;
    if (!(util >= 0 && util < TP_RECO_GPU_IDLE_PCT)) return;
    int64_t idle = 0, host = 0, sync = 0, launch = 0;
    for (size_t i = 0; i < a->nidle; i++) {
        idle = tp_add_sat(idle, a->idle[i].idle_ns);
        host = tp_add_sat(host, a->idle[i].host_ns);
        sync = tp_add_sat(sync, a->idle[i].sync_ns);
        launch = tp_add_sat(launch, a->idle[i].launch_ns);
    }
    double whole = idle > 0 ? (double)idle / 100.0 : 1;
    add(l, "gpu_idle", idle_per_device(a),
        "GPU utilization is %.1f%% (busy %.1f ms of %.1f ms on %zu device%s); of the streams' "
        "idle time %.0f%% waits for the host to launch, %.0f%% follows a synchronization, "
        "%.0f%% is launch gaps: %s",
        util, ms(a->gpu_busy_ns), ms(a->gpu_capacity_ns), a->gpu_devices,
        a->gpu_devices == 1 ? "" : "s", (double)host / whole, (double)sync / whole,
        (double)launch / whole,
        sync > host ? "remove the synchronizations (.item(), .cpu()) from the step."
                    : "give the GPU more work per launch (larger batches, torch.compile, CUDA "
                      "graphs) and keep the host ahead (no per-step Python work, async copies).");
    if (a->kernel_count >= TP_RECO_LAUNCH_MIN_KERNELS &&
        (double)a->kernel_total_ns < (double)TP_RECO_LAUNCH_MEAN_NS * (double)a->kernel_count)
        add(l, "launch_bound", idle_per_device(a),
            "%llu kernels average %.2f us with GPU utilization at %.1f%%: the step is "
            "launch-bound; capture it with CUDA graphs or fuse kernels with torch.compile.",
            (unsigned long long)a->kernel_count,
            (double)a->kernel_total_ns / 1e3 / (double)a->kernel_count, util);
}

static void memory_pressure(reco_list *l) {
    const tp_analysis *a = l->a;
    const tp_mem_row *worst = NULL;
    for (size_t i = 0; i < a->nmemory; i++) {
        const tp_mem_row *r = &a->memory[i];
        if (r->capacity_pct > TP_RECO_MEMORY_PCT &&
            (!worst || r->capacity_pct > worst->capacity_pct))
            worst = r;
    }
    if (worst)
        add(l, "memory_pressure", 0,
            "Peak memory on device %lld is %.1f%% of its %.1f GiB (%.2f GiB); use activation "
            "checkpointing, mixed precision (bf16/fp16) or a smaller batch.",
            (long long)worst->device_id, worst->capacity_pct,
            (double)worst->capacity_bytes / 1073741824.0, (double)worst->peak_bytes / 1073741824.0);
}

static void nccl(reco_list *l) {
    const tp_analysis *a = l->a;
    int64_t ns = 0;
    for (size_t i = 0; i < a->nkernels; i++)
        if (tp_glob_match("*nccl*", a->kernels[i].name))
            ns = tp_add_sat(ns, a->kernels[i].total_ns);
    double pct = step_pct(a, ns);
    if (pct > TP_RECO_NCCL_PCT)
        add(l, "nccl", ns,
            "NCCL kernels take %.1f%% of step time (%.1f ms of %.1f ms); overlap communication "
            "with compute (gradient bucketing) or compress it (bf16/fp16 gradients).",
            pct, ms(ns), ms(a->steps_total_ns));
}

/* The Python call that usually stands behind an op that synchronizes. */
static const char *sync_source(const char *op) {
    if (tp_glob_match("*item*", op) || tp_glob_match("*_local_scalar_dense*", op))
        return "tensor.item() (or float(t), int(t), a tensor in an if)";
    if (tp_glob_match("aten::to", op) || tp_glob_match("*copy*", op))
        return ".cpu() / .to(\"cpu\") / .numpy() / .tolist()";
    if (tp_glob_match("*nonzero*", op) || tp_glob_match("*masked_select*", op))
        return "boolean-mask indexing or nonzero() (their output size needs the GPU's answer)";
    if (tp_glob_match("*is_nonzero*", op)) return "a tensor used as a bool (if t:, while t:)";
    return NULL;
}

static void sync(reco_list *l) {
    const tp_analysis *a = l->a;
    double pct = step_pct(a, a->sync_ns);
    if (!(pct > TP_RECO_SYNC_PCT)) return;
    const tp_op_row *caller = NULL;
    for (size_t i = 0; i < a->nops; i++)
        if (a->ops[i].sync_ns > 0 && (!caller || a->ops[i].sync_ns > caller->sync_ns))
            caller = &a->ops[i];
    const char *src = caller ? sync_source(caller->name) : NULL;
    add(l, "sync", a->sync_ns,
        "The host waits for the GPU %llu times inside steps, %.1f%% of step time (%.1f ms), "
        "most from %.60s (%llu calls, %.1f ms%s%s); %s",
        (unsigned long long)a->sync_calls, pct, ms(a->sync_ns), caller ? caller->name : "?",
        caller ? (unsigned long long)caller->sync_calls : 0ULL, caller ? ms(caller->sync_ns) : 0.0,
        src ? ": " : "", src ? src : "",
        src ? "keep the value on the GPU (accumulate losses and metrics as tensors) and read it "
              "every N steps, or after the step; up to that time per step could go."
            : "drop .item(), .cpu(), print(tensor) and torch.cuda.synchronize() from the "
              "step, or defer them to every N steps.");
}

static void pageable(reco_list *l) {
    const tp_analysis *a = l->a;
    double pct = step_pct(a, a->h2d_pageable_ns);
    if (pct > TP_RECO_PAGEABLE_PCT)
        add(l, "pageable_copy", a->h2d_pageable_ns,
            "%llu host-to-device copies from pageable memory take %.1f ms (%.1f%% of step time) "
            "and block the host; pin the source (DataLoader(pin_memory=True) or "
            "tensor.pin_memory()) and copy with .to(device, non_blocking=True).",
            (unsigned long long)a->h2d_pageable_count, ms(a->h2d_pageable_ns), pct);
}

/* An FP32 matrix kernel run on CUDA cores: cuBLAS's and cutlass's SIMT sgemm, cuDNN's sgemm
 * convolutions; tensor-core kernels (tensorop, xmma, tf32, s1688/s16816) are not. */
static int fp32_matrix(const char *name) {
    return tp_glob_match("*sgemm*", name) && !tp_glob_match("*tensorop*", name) &&
           !tp_glob_match("*xmma*", name) && !tp_glob_match("*tf32*", name);
}

/* The compute capability the trace shows: deviceProperties, else the architecture kernels are
 * named after (volta_sgemm..., ampere_..., sm80_..., cutlass_80_...). 0 when unknown. */
static int compute_major(const tp_analysis *a) {
    if (a->gpu_compute_major) return a->gpu_compute_major;
    static const struct {
        const char *pattern;
        int major;
    } arch[] = {{"*sm90*", 9},   {"*hopper*", 9},     {"*sm80*", 8},   {"*sm86*", 8},
                {"*ampere*", 8}, {"*cutlass_80*", 8}, {"*turing*", 7}, {"*sm75*", 7},
                {"*volta*", 7},  {"*sm70*", 7}};
    int best = 0;
    for (size_t i = 0; i < a->nkernels && i < 64; i++)
        for (size_t k = 0; k < sizeof(arch) / sizeof(arch[0]); k++)
            if (arch[k].major > best && tp_glob_match(arch[k].pattern, a->kernels[i].name))
                best = arch[k].major;
    return best;
}

/* The GPU time of matrix ops whose first input is fp32 ("Input type", Kineto's record_shapes
 * and tprof's observer): each op row's GPU time in proportion to its fp32 calls. */
static int64_t fp32_op_ns(const tp_analysis *a, const char **top) {
    int64_t ns = 0, best = 0;
    for (size_t i = 0; i < a->nops; i++) {
        const tp_op_row *r = &a->ops[i];
        if (!r->fp32_calls || !r->calls) continue;
        int64_t part = (int64_t)((double)r->gpu_ns * (double)r->fp32_calls / (double)r->calls);
        ns = tp_add_sat(ns, part);
        if (part > best) best = part, *top = r->name;
    }
    return ns;
}

/* The op-level view of fp32 matrix work: on a GPU with TF32 and bf16 tensor cores (compute
 * capability 8 and up: A100, H100, H200), matrix ops fed fp32 tensors. */
static void fp32_ops(reco_list *l, int major) {
    const tp_analysis *a = l->a;
    const char *top = NULL;
    int64_t ns = fp32_op_ns(a, &top);
    double pct = 100.0 * (double)ns / (double)a->kernel_total_ns;
    int amd = a->gpu_name &&
              (tp_glob_match("*AMD*", a->gpu_name) || tp_glob_match("*Radeon*", a->gpu_name) ||
               tp_glob_match("*Instinct*", a->gpu_name));
    if (major < 8 || amd || !(pct > TP_RECO_FP32_PCT)) return; /* ROCm: gfx9 is no Ampere */
    add(l, "fp32_matmul", ns / 2,
        "Matrix ops on fp32 inputs (Input type float) take %.1f%% of kernel time (%.1f ms; the "
        "most: %.60s) on %s (compute capability %d, tensor cores for TF32 and bf16)%s%s; train "
        "under torch.autocast(\"cuda\", dtype=torch.bfloat16), or allow TF32 "
        "(torch.set_float32_matmul_precision(\"high\"), i.e. "
        "torch.backends.cuda.matmul.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = "
        "True): up to half that time could go.",
        pct, ms(ns), top, a->gpu_name ? a->gpu_name : "a GPU", major,
        a->setup.param_dtype[0] ? ", parameters in " : "", a->setup.param_dtype);
}

static void fp32_gemm(reco_list *l) {
    const tp_analysis *a = l->a;
    int major = compute_major(a);
    if (major < 7 || a->kernel_total_ns <= 0) return; /* no tensor cores, or no kernels */
    int64_t ns = 0;
    const char *top = NULL;
    for (size_t i = 0; i < a->nkernels; i++)
        if (fp32_matrix(a->kernels[i].name)) {
            ns = tp_add_sat(ns, a->kernels[i].total_ns);
            if (!top) top = a->kernels[i].name; /* kernels are sorted by time */
        }
    double pct = 100.0 * (double)ns / (double)a->kernel_total_ns;
    if (!(pct > TP_RECO_FP32_PCT)) {
        fp32_ops(l, major); /* kernels named without sgemm (sm90_xmma_gemm_f32f32...) */
        return;
    }
    add(l, "fp32_matmul", ns / 2,
        "FP32 matrix kernels run on CUDA cores for %.1f%% of kernel time (%.1f ms; the most: "
        "%.60s) on a GPU with tensor cores (compute capability %d); %s",
        pct, ms(ns), top, major,
        major >= 8 ? "allow TF32 (torch.backends.cuda.matmul.allow_tf32 = True, "
                     "torch.backends.cudnn.allow_tf32 = True) or train under "
                     "torch.autocast(dtype=torch.bfloat16)."
                   : "train under torch.autocast(\"cuda\", dtype=torch.float16) with a "
                     "GradScaler (this GPU has no TF32).");
}

static void optimizer(reco_list *l) {
    const tp_analysis *a = l->a;
    if (!a->optim_steps || a->optim_multi_ops) return;
    double per_step = (double)a->optim_ops / (double)a->optim_steps, pct = step_pct(a, a->optim_ns);
    if (per_step < TP_RECO_OPTIM_OPS || !(pct > TP_RECO_OPTIM_PCT)) return;
    const tp_setup *su = &a->setup;
    char was[96] = "";
    if (su->optimizer[0])
        snprintf(was, sizeof(was), " (%s with foreach=%s, fused=%s)", su->optimizer,
                 su->foreach == 1 ? "True" : "False", su->fused == 1 ? "True" : "False");
    int cuda = strcmp(su->device, "cuda") == 0;
    add(l, "optimizer_foreach", a->optim_ns / 2,
        "Optimizer.step runs %.0f ops per step, none of them _foreach_ or _fused_, and takes "
        "%.1f%% of step time (%.1f ms): the optimizer%s updates one parameter at a time; %s: "
        "about half of that time could go.",
        per_step, pct, ms(a->optim_ns), was,
        cuda               ? "pass fused=True (Adam, AdamW, SGD on CUDA), else foreach=True"
        : su->optimizer[0] ? "pass foreach=True (one op for all parameters; fused=True needs "
                             "CUDA for most optimizers)"
                           : "pass foreach=True, or fused=True (Adam, AdamW, SGD), to the "
                             "optimizer");
}

static int cmp_i64(const void *pa, const void *pb) {
    int64_t x = *(const int64_t *)pa, y = *(const int64_t *)pb;
    return (x > y) - (x < y);
}

/* The median of the per-step values v[k * stride], k < n (n > 0); v's values are copied. */
static int64_t median_of(const int64_t *v, size_t n, size_t stride, int64_t *tmp) {
    for (size_t k = 0; k < n; k++)
        tmp[k] = v[k * stride];
    qsort(tmp, n, sizeof(*tmp), cmp_i64);
    return tmp[(n - 1) / 2];
}

/* The steps unstable_steps judges: all but a run's first (ProfilerStep#0, the warm-up: the
 * allocator's first blocks, lazy initialisation), as torch.profiler's users leave it out with
 * its schedule's wait and warmup. Indices into a->steps. */
static size_t steady_steps(const tp_analysis *a, size_t *idx) {
    size_t n = 0;
    for (size_t k = 0; k < a->nsteps; k++)
        if (a->steps[k].number != 0) idx[n++] = k;
    return n;
}

/* What made the slowest step slow: the stage (or "other") whose time in it exceeds its median
 * over the steps by the most. */
static void unstable_cause(const tp_analysis *a, const size_t *idx, size_t n, size_t slowest,
                           char *out, size_t size) {
    const tp_step_row *slow = &a->steps[slowest];
    int64_t *vals = malloc(n * sizeof(*vals)), *tmp = malloc(n * sizeof(*tmp));
    *out = '\0';
    if (!vals || !tmp) goto done;
    int64_t best = 0, best_med = 0, best_val = 0;
    const char *name = NULL;
    for (size_t st = 0; st <= a->nstages; st++) {
        for (size_t k = 0; k < n; k++)
            vals[k] = st < a->nstages ? a->steps[idx[k]].stage_ns[st] : a->steps[idx[k]].other_ns;
        int64_t med = median_of(vals, n, 1, tmp);
        int64_t val = st < a->nstages ? slow->stage_ns[st] : slow->other_ns;
        if (val - med > best) {
            best = val - med, best_med = med, best_val = val;
            name = st < a->nstages ? a->stages[st].name : "other (no stage)";
        }
    }
    if (name)
        snprintf(out, size,
                 "; in the slowest (%s, %.1f ms) most of the extra time is in %s "
                 "(%.1f ms against a median %.1f ms)",
                 slow->name, ms(slow->dur_ns), name, ms(best_val), ms(best_med));
done:
    free(vals);
    free(tmp);
}

/* What to do about unstable steps, from their cause. */
static const char *unstable_action(const char *cause, int gc, int has_loader) {
    if (gc) return ".";
    if (has_loader && strstr(cause, "in dataloader"))
        return "; the loader stalls: persistent_workers=True, a larger prefetch_factor, data "
               "on local disk.";
    if (strstr(cause, "in validation"))
        return "; validation runs inside those steps: run it less often (Lightning's "
               "val_check_interval, check_val_every_n_epoch) or on a smaller set.";
    return "; look at the slowest steps (tprof analyze lists them): a checkpoint, logging, a "
           "recompilation, or another process on the machine.";
}

/* Unstable steps: the p95 step well above the median, over the steps but a run's first
 * (steady_steps; idx and durs have room for every step). The saving is the time steps spend
 * above the median; the cause, the stage that grew in the slowest step, and Python's garbage
 * collections when tprof.torch recorded them ("gc" ranges). */
static void unstable_judged(reco_list *l, size_t *idx, int64_t *durs) {
    const tp_analysis *a = l->a;
    size_t n = steady_steps(a, idx);
    if (n < TP_RECO_UNSTABLE_MIN_STEPS) return;
    size_t first = 0; /* the slowest judged step, as the step table orders them */
    while (a->steps[a->steps_by_dur[first]].number == 0)
        first++;
    for (size_t k = 0; k < n; k++)
        durs[k] = a->steps[idx[k]].dur_ns;
    qsort(durs, n, sizeof(*durs), cmp_i64);
    int64_t p50 = tp_percentile(durs, n, 50), p95 = tp_percentile(durs, n, 95);
    double ratio = p50 > 0 ? (double)p95 / (double)p50 : 0;
    if (!(ratio > TP_RECO_UNSTABLE_RATIO)) return;
    int64_t over = 0;
    for (size_t k = 0; k < n; k++)
        if (durs[k] > p50) over = tp_add_sat(over, durs[k] - p50);
    char cause[320], gc[400] = "";
    unstable_cause(a, idx, n, a->steps_by_dur[first], cause, sizeof(cause));
    const tp_stage_row *dl = stage_named(a, "dataloader");
    if (a->gc_calls)
        snprintf(gc, sizeof(gc),
                 "; Python's garbage collector ran %llu times inside steps (%.1f ms, the longest "
                 "%.1f ms): call gc.freeze() once the model and data are built, or gc.disable() "
                 "and gc.collect() every N steps",
                 (unsigned long long)a->gc_calls, ms(a->gc_ns), ms(a->gc_max_ns));
    add(l, "unstable_steps", over,
        "Steps are unstable: the p95 step takes %.1f ms, %.1fx the median %.1f ms over %zu steps "
        "(%.1f ms in all above the median)%s%s%s",
        ms(p95), ratio, ms(p50), n, ms(over), cause, gc,
        unstable_action(cause, gc[0] != 0, dl != NULL));
}

static void unstable(reco_list *l) {
    const tp_analysis *a = l->a;
    if (a->nsteps < TP_RECO_UNSTABLE_MIN_STEPS || !a->steps_by_dur) return;
    size_t *idx = malloc(a->nsteps * sizeof(*idx));
    int64_t *durs = malloc(a->nsteps * sizeof(*durs));
    if (idx && durs) unstable_judged(l, idx, durs);
    free(idx);
    free(durs);
}

/* An op that may dominate the step: not a range the other rules explain (the loader's iterator,
 * the optimizer's step, validation, a range named as its stage, a collective), no Python frame
 * or framework wrapper (Lightning's [pl] actions), no runtime call (the sync and launch rules),
 * no garbage collection (unstable_steps names it). */
static int dominant_candidate(const tp_analysis *a, const char *name) {
    static const char *const explained[] = {"dataloader", "optimizer", "validation"};
    int st = tp_stage_of(a, name);
    for (size_t i = 0; st >= 0 && i < sizeof(explained) / sizeof(explained[0]); i++)
        if (strcmp(a->stages[st].name, explained[i]) == 0) return 0;
    if (st >= 0 && tp_glob_match(a->stages[st].name, name)) return 0;
    static const char *const others[] = {"*.py(*",  "<built-in*", "cuda*",
                                         "gc",      "hip*",       "*nccl*",
                                         "c10d::*", "[pl]*",      "record_param_comms"};
    for (size_t i = 0; i < sizeof(others) / sizeof(others[0]); i++)
        if (tp_glob_match(others[i], name)) return 0;
    return 1;
}

/* One op taking most of the step: its self time on a CPU-only run, its kernels' time where
 * there is GPU work. The CPU-only aten op is cpu_op_bound's (with the threads to check). */
static void dominant_op(reco_list *l, const tp_op_row *cpu_bound_op) {
    const tp_analysis *a = l->a;
    if (!a->nsteps) return;
    const tp_op_row *top = NULL;
    int64_t best = 0;
    for (size_t i = 0; i < a->nops; i++) {
        const tp_op_row *r = &a->ops[i];
        int64_t v = a->gpu_devices ? r->gpu_ns : r->self_ns;
        if (v > best && dominant_candidate(a, r->name)) best = v, top = r;
    }
    double pct = step_pct(a, best);
    if (!top || top == cpu_bound_op || !(pct > TP_RECO_DOMINANT_PCT)) return;
    add(l, "dominant_op", best / 2,
        "One op dominates: %.60s%s%.60s%s takes %.1f%% of step time %s (%.1f ms over %llu calls, "
        "%.2f ms a call); %s.",
        top->name, top->module ? " (in " : "", top->module ? top->module : "",
        top->module ? ")" : "", pct, a->gpu_devices ? "in its GPU kernels" : "in itself", ms(best),
        (unsigned long long)top->calls, ms(best) / (double)top->calls, tp_op_kind_hint(top->name));
}

/* A CPU-only run: the aten op with the most self time, when it dominates the step. */
static const tp_op_row *cpu_bound(reco_list *l) {
    const tp_analysis *a = l->a;
    if (a->gpu_devices || !a->nsteps) return NULL;
    const tp_op_row *top = op_named(a, "aten::*"); /* ops are sorted by self time */
    if (!top) return NULL;
    double pct = step_pct(a, top->self_ns);
    if (!(pct > TP_RECO_CPU_OP_PCT)) return NULL;
    char cpus[64] = "the physical cores";
    if (a->setup.cpu_count > 0)
        snprintf(cpus, sizeof(cpus), "the %lld CPUs", (long long)a->setup.cpu_count);
    add(l, "cpu_op_bound", top->self_ns / 2,
        "CPU-only run: %.60s%s%.60s%s takes %.1f%% of step time in itself (%.1f ms over %llu "
        "calls); check torch.get_num_threads() equals %s (torch.set_num_threads, "
        "OMP_NUM_THREADS); for this op: %s; or move the model to a GPU.",
        top->name, top->module ? " (in " : "", top->module ? top->module : "",
        top->module ? ")" : "", pct, ms(top->self_ns), (unsigned long long)top->calls, cpus,
        tp_op_kind_hint(top->name));
    return top;
}

static void python(reco_list *l) {
    const tp_analysis *a = l->a;
    double pct = step_pct(a, a->python_self_ns);
    if (pct > TP_RECO_PYTHON_PCT)
        add(l, "python_overhead", a->python_self_ns,
            "Python code itself (self time of %llu python_function ranges) takes %.1f%% of step "
            "time (%.1f ms); compile the model (torch.compile) or capture CUDA graphs, and move "
            "per-step Python work (logging, metrics) out of the loop.",
            (unsigned long long)a->python_ranges, pct, ms(a->python_self_ns));
}

static void other(reco_list *l) {
    const tp_analysis *a = l->a;
    if (a->other.pct > TP_RECO_OTHER_PCT)
        add(l, "other", 0,
            "%.1f%% of step time (%.1f ms) is in no stage; mark what the loop does there with "
            "tprof.stage / torch.profiler.record_function, or record with with_stack=True to "
            "see it.",
            a->other.pct, ms(a->other.total_ns));
}

/* Several ranks: the rank the others wait for at collectives (ranks.h, docs/DISTRIBUTED.md);
 * the saving is the others' waiting for it, per rank. */
static void straggler(reco_list *l) {
    const tp_ranks *r = l->a->ranks;
    if (!r || !r->has_straggler) return;
    int64_t others_ns = 0;
    for (size_t k = 0; k < r->n; k++)
        if (r->rows[k].rank != r->straggler.rank)
            others_ns = tp_add_sat(others_ns, r->rows[k].steps_total_ns);
    double wait = r->straggler.wait_share * (double)others_ns / (double)(r->n - 1);
    add(l, "straggler", (int64_t)wait, "%s.", r->straggler.message);
}

/* Several ranks on GPUs: the ranks whose communication kernels mostly run alone (overlap, as
 * HTA defines it) while communication is a sizeable part of their steps. The saving is the
 * largest exposed (not overlapped) communication of such a rank: at most what hiding it saves. */
static void overlap(reco_list *l) {
    const tp_ranks *r = l->a->ranks;
    if (!r) return;
    char list[256] = "";
    size_t used = 0, poor = 0;
    int64_t exposed_max = 0;
    for (size_t k = 0; k < r->n; k++) {
        const tp_rank_row *row = &r->rows[k];
        double comm_pct = row->steps_total_ns > 0
                              ? 100.0 * (double)row->communication_ns / (double)row->steps_total_ns
                              : 0;
        if (!row->gpu || row->overlap_pct < 0 || row->overlap_pct >= TP_RECO_OVERLAP_PCT ||
            comm_pct < TP_RECO_OVERLAP_COMM_PCT)
            continue;
        int64_t exposed =
            (int64_t)((double)row->communication_ns * (1.0 - row->overlap_pct / 100.0));
        if (exposed > exposed_max) exposed_max = exposed;
        poor++;
        int n = snprintf(list + used, sizeof(list) - used, "%srank %lld %.0f%% (%.1f ms exposed)",
                         used ? ", " : "", (long long)row->rank, row->overlap_pct, ms(exposed));
        if (n > 0 && (size_t)n < sizeof(list) - used) used += (size_t)n;
    }
    if (poor)
        add(l, "comm_overlap", exposed_max,
            "Communication overlaps compute poorly on %zu of %zu ranks (%s of communication "
            "kernel time overlapped, below %.0f%%); start the all-reduces earlier (DDP gradient "
            "buckets: a smaller bucket_cap_mb, no find_unused_parameters), overlap them with "
            "the backward pass, or put them on their own stream.",
            poor, r->n, list, TP_RECO_OVERLAP_PCT);
}

/* A flight recorder's trace: its triggering step, and where its extra time went. */
static void flight_step(reco_list *l) {
    const tp_analysis *a = l->a;
    for (size_t i = 0; i < a->nflights; i++) {
        const tp_flight_row *f = &a->flights[i];
        const tp_step_row *s = &a->steps[f->step];
        const char *stage = tp_flight_stage_name(a, f);
        char where[320] = "";
        if (stage)
            snprintf(where, sizeof(where),
                     "; most of the extra time went to stage %s (%.1f ms "
                     "against a median %.1f ms)%s%s",
                     stage, ms(f->stage_step_ns), ms(f->stage_median_ns), f->nops ? " and op " : "",
                     f->nops ? f->ops[0].name : "");
        if (f->ratio < 0) {
            add(l, "flight_step", 0,
                "%s was saved by the flight recorder (%s) with no other step to compare it "
                "with; open the trace to see what it did.",
                s->name, f->reason);
            continue;
        }
        add(l, "flight_step", s->dur_ns > f->median_ns ? s->dur_ns - f->median_ns : 0,
            "%s, saved by the flight recorder (%s), took %.1f ms, %.1fx the median %.1f ms of "
            "the other %zu steps%s: look at what happened there at that step (a stall in I/O, a "
            "garbage collection, a checkpoint, another process on the machine); the trace holds "
            "the steps before it to compare.",
            s->name, f->reason, ms(s->dur_ns), f->ratio, ms(f->median_ns), f->others, where);
    }
}

static int cmp_reco(const void *pa, const void *pb) {
    const tp_reco *x = pa, *y = pb;
    if (x->saving_ns != y->saving_ns) return x->saving_ns > y->saving_ns ? -1 : 1;
    return strcmp(x->id, y->id);
}

void tp_recommend(tp_analysis *a) {
    for (size_t i = 0; i < a->nrecos; i++) {
        free(a->recos[i].id);
        free(a->recos[i].message);
    }
    free(a->recos);
    a->recos = NULL;
    a->nrecos = 0;
    reco_list l = {.a = a};
    dataloader(&l);
    gpu_idle(&l);
    memory_pressure(&l);
    nccl(&l);
    sync(&l);
    pageable(&l);
    fp32_gemm(&l);
    optimizer(&l);
    dominant_op(&l, cpu_bound(&l));
    unstable(&l);
    python(&l);
    other(&l);
    straggler(&l);
    overlap(&l);
    flight_step(&l);
    if (a->nrecos) qsort(a->recos, a->nrecos, sizeof(*a->recos), cmp_reco);
}
