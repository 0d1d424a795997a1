/* cupti.c - the CUPTI activity source: GPU kernels, copies, sets, synchronizations, CUDA API calls
 * and device memory of each window, from libcupti loaded at run time (src/gpu/cupti.h).
 *
 * Life cycle: create loads libcupti; the first window subscribes (claiming CUPTI, so another
 * profiler cannot interleave: the first of them to record holds it) and registers the callbacks;
 * the window's activity kinds go on at WARMUP and off outside windows;
 * buffers come back on CUPTI's threads and are reduced into pending records at once; launches
 * made through the driver are caught by a callback on the launching thread (below); collect
 * flushes, waits briefly for kernels the window launched, and moves the window's records into the
 * model; while a streamed window records, collect_settled moves those whose place is final into
 * its segments (flushing every STREAM_FLUSH_MS), so they are not held the whole window. Failures
 * warn once and leave tprof CPU-only; nothing here aborts or blocks for long. */
#include "gpu/cupti.h"

#include "record/session.h"
#include "util/lock.h"
#include "util/log.h"
#include "util/vec.h"

#include "gpu/convert.h"
#include "gpu/cupti_api.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    BUFFER_BYTES = 4 << 20, /* one activity buffer */
    MAX_BUFFERS = 64,       /* held by CUPTI at once (256 MiB); beyond, CUPTI drops and counts */
    MAX_PENDING = 1 << 22,  /* reduced records waiting for their window */
    PRUNE_MIN = 4096,       /* the flight recorder's pruning starts at this many records */
    DRAIN_MS = 500,         /* how long collect waits for kernels its window launched */
    DRAIN_POLL_MS = 2,
    STREAM_FLUSH_MS = 100, /* a streamed window's flushes, at most this often (collect_settled) */
    STREAM_WAIT_MS = 2000, /* how long a launch waits there for its work before going without */
};

typedef struct kind_info {
    const char *name;
    CUpti_ActivityKind kind;
    int essential; /* without it there is no GPU timeline: the source gives up */
} kind_info;

/* On while a window records. */
static const kind_info window_kinds[] = {
    {"CONCURRENT_KERNEL", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, 1},
    {"RUNTIME", CUPTI_ACTIVITY_KIND_RUNTIME, 1},
    {"MEMCPY", CUPTI_ACTIVITY_KIND_MEMCPY, 0},
    {"MEMCPY2", CUPTI_ACTIVITY_KIND_MEMCPY2, 0},
    {"MEMSET", CUPTI_ACTIVITY_KIND_MEMSET, 0},
    {"SYNCHRONIZATION", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 0},
};
/* Launches made without the runtime (Triton's, cuBLASLt's) are caught by callbacks on the
 * driver's launch functions alone (driver_launch_called). Where CUPTI cannot call back, the whole
 * DRIVER kind records them instead, with every other driver call the program makes itself (58 a
 * step for 25 launches on an H200, the costliest of tprof's kinds: BENCHMARKS.md), the reduction
 * keeping the launches. (The kind limited to the launch functions, cuptiActivityEnableDriverApi,
 * gave no records on an H100 with CUDA 13.0: docs/GPU.md.) */
static const kind_info driver_kind[] = {{"DRIVER", CUPTI_ACTIVITY_KIND_DRIVER, 0}};
/* With cuda_graphs: graph, on with the window kinds: one record per graph launch, and none for
 * the kernels, copies and sets inside it (CUPTI traces a graph at one level or the other). */
static const kind_info graph_kinds[] = {
    {"GRAPH_TRACE", CUPTI_ACTIVITY_KIND_GRAPH_TRACE, 0},
};
/* On with the window kinds where CUPTI has the push and pop calls: ops' external ids (record/api.c
 * pushes them while tp_opts.ext_corr is set), each tied to the correlation id of the launches
 * made under it. Kineto's kind for the ids of torch's ops; tprof's ops are the same. */
static const CUpti_ExternalCorrelationKind ext_kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
/* On from the first window to shutdown: memory totals must see every allocation and free, and
 * contexts are announced once. Both are rare events, so they cost nothing between windows. */
static const kind_info session_kinds[] = {
    {"MEMORY2", CUPTI_ACTIVITY_KIND_MEMORY2, 0},
    {"CONTEXT", CUPTI_ACTIVITY_KIND_CONTEXT, 0},
};
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The process's one CUPTI source. Static and never freed: CUPTI calls back from its own threads,
 * possibly after the session ended, and must always find valid memory.
 * Locks: `ctl` serialises the control paths (on_action, collect, shutdown, exit) and is held
 * across CUPTI calls; `lock` guards the data the buffer callbacks touch and is never held across
 * a CUPTI call that may call back (enable, disable, flush), so callbacks cannot deadlock;
 * `launch_lock` guards the launches the driver callbacks caught, taken on the program's threads
 * for one append (never the reduction's longer hold of `lock`). Order: ctl, lock, launch_lock. */
static struct {
    pthread_mutex_t ctl, lock;
    tp_cupti_api api; /* loaded once per process (never unloaded) */
    int loaded;
    int created; /* between create and shutdown: the process's one source (ctl) */
    int alive;   /* subscribed, from the first window to shutdown (ctl and lock to write, either
                    to read) */
    int enabled; /* the window kinds are on (ctl to write; read atomically without it) */
    int held;    /* the session kinds are on (ctl) */
    int exiting; /* exit() began: CUDA may be torn down, so CUPTI is called no more (ctl; atomic) */
    int broken;  /* enabling failed: nothing more is enabled this session (ctl) */
    int devices_known; /* ctl */
    int required;      /* gpu: on (ctl) */
    int graph_level;   /* cuda_graphs: graph (ctl) */
    int ext_on;        /* EXTERNAL_CORRELATION is on: ops push ids (ctl) */
    CUpti_SubscriberHandle sub;
    /* lock: */
    tp_cupti_conv conv;
    tp_cupti_pending pending;
    uint64_t cupti_dropped, reported_dropped;
    int buffers_out;        /* handed to CUPTI, not yet back */
    int64_t retain_from_ns; /* the flight recorder keeps nothing before (atomic; 0: all) */
    size_t prune_at;        /* pending records at which the next prune runs */
    int exit_hooked;        /* exit_flush is registered, after CUDA's own exit teardown */
    size_t max_pending;     /* of `pending` (ctl) */
    /* a streamed window's segments (collect_settled; ctl, and lock for the first two): */
    tp_cupti_emitted emitted; /* its launches already in a segment */
    int64_t (*seg_tracks)[2]; /* the (pid, tid) tracks its segments' events went on */
    size_t nseg_tracks, cap_seg_tracks;
    int64_t stream_start_ns; /* the window being streamed (its start) */
    int64_t flushed_at_ns;   /* when the last flush for it began (session clock; 0: none) */
    int64_t settled_ns;      /* what the last take found settled */
    /* launch_lock: */
    pthread_mutex_t launch_lock;
    tp_cupti_pending called; /* driver launches caught, until moved into `pending` */
    /* the callbacks are on and their launches kept (a window records), in place of the DRIVER
     * kind; written with ctl and launch_lock held, so read under either */
    int calls_kept;
} S = {.ctl = PTHREAD_MUTEX_INITIALIZER,
       .lock = PTHREAD_MUTEX_INITIALIZER,
       .launch_lock = PTHREAD_MUTEX_INITIALIZER};

static int64_t (*session_clock)(void); /* set before CUPTI can call clock_cb */

static int64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- callbacks from CUPTI -------------------------------------------------------------------- */

static uint64_t CUPTIAPI clock_cb(void) {
    return (uint64_t)session_clock();
}

static void exit_flush(void);

/* exit_flush must run before CUDA's exit teardown, which CUDA registers when it starts; exit
 * handlers run in reverse order of registration, so it is registered once CUDA is known to run
 * (CUDA registers only once, so once is enough). Called with `lock` held. */
static void hook_exit_if(int cuda_runs) {
    if (S.exit_hooked || !cuda_runs) return;
    atexit(exit_flush);
    S.exit_hooked = 1;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
    *max_records = 0;
    tp_lock(&S.lock);
    hook_exit_if(1); /* CUPTI asks for a buffer when CUDA activity is recorded: CUDA runs */
    int ok = S.buffers_out < MAX_BUFFERS;
    S.buffers_out += ok;
    tp_unlock(&S.lock);
    *buf = ok ? aligned_alloc(8, BUFFER_BYTES) : NULL; /* CUPTI needs 8-byte alignment */
    *size = *buf ? BUFFER_BYTES : 0;
    if (ok && !*buf) {
        tp_lock(&S.lock);
        S.buffers_out--;
        tp_unlock(&S.lock);
    }
}

/* The flight recorder's ring moved on: drop what it will never ask for, here on CUPTI's thread
 * rather than the training thread's, once the pending records doubled since the last prune
 * (amortised: each record is looked at a bounded number of times). S.lock held. */
static void prune_pending(void) {
    int64_t from = __atomic_load_n(&S.retain_from_ns, __ATOMIC_RELAXED);
    if (!from || S.pending.n < S.prune_at) return;
    tp_cupti_pending_prune(&S.pending, &S.conv, from);
    S.prune_at = 2 * S.pending.n > PRUNE_MIN ? 2 * S.pending.n : PRUNE_MIN;
}

static void cupti_retain(void *ctx, int64_t from_ns) {
    (void)ctx;
    __atomic_store_n(&S.retain_from_ns, from_ns, __ATOMIC_RELAXED);
}

/* Moves the driver launches the callbacks caught into the pending records. S.lock held. */
static void take_called(void) {
    tp_lock(&S.launch_lock);
    for (size_t i = 0; i < S.called.n; i++)
        tp_cupti_pending_add(&S.pending, &S.called.recs[i]);
    S.pending.dropped += S.called.dropped;
    S.called.n = 0;
    S.called.dropped = 0;
    tp_unlock(&S.launch_lock);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
    (void)size;
    if (!buf) return;
    tp_lock(&S.lock);
    if (S.alive) {
        CUpti_Activity *raw = NULL;
        tp_cupti_rec r;
        while (S.api.ActivityGetNextRecord(buf, valid, &raw) == CUPTI_SUCCESS)
            if (tp_cupti_reduce(&S.conv, raw, &r)) tp_cupti_pending_add(&S.pending, &r);
        take_called();
        prune_pending();
        size_t dropped = 0;
        if (S.api.ActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS)
            S.cupti_dropped += dropped;
    }
    S.buffers_out--;
    tp_unlock(&S.lock);
    free(buf);
}

/* The external ids this thread pushed (tp_gpu_ext_push), innermost last: CUPTI ties a call's
 * correlation id to the innermost in a record of its own only for the API kinds that are on, so
 * the driver callbacks tie their launches to it themselves. Deeper than EXT_DEPTH, the deepest
 * kept stands for those below it. */
enum { EXT_DEPTH = 64 };
static _Thread_local uint64_t ext_ids[EXT_DEPTH];
static _Thread_local int ext_depth;

static _Thread_local int64_t launch_begin_ns;    /* the thread's driver launch, at its entry */
static _Thread_local uint32_t launch_begin_corr; /* and its correlation id */

/* The launching thread's process and OS thread ids, read once a thread: getpid and gettid are
 * system calls, and every kernel launch is called back (the runtime's too: cudaLaunchKernel
 * calls cuLaunchKernel), so reading them at each would cost two system calls a launch. A fork
 * gives the child new ids: the cache is kept per fork generation (forked_child, at load). */
static unsigned fork_generation;
static _Thread_local struct {
    uint32_t pid, tid;
    unsigned generation; /* fork_generation + 1 when read; 0: never read */
} self_ids;

static void forked_child(void) {
    __atomic_add_fetch(&fork_generation, 1, __ATOMIC_RELAXED);
}

static void launching_thread(uint32_t *pid, uint32_t *tid) {
    unsigned now = __atomic_load_n(&fork_generation, __ATOMIC_RELAXED) + 1;
    if (self_ids.generation != now) {
        self_ids.pid = (uint32_t)getpid();
        self_ids.tid = (uint32_t)gettid();
        self_ids.generation = now;
    }
    *pid = self_ids.pid;
    *tid = self_ids.tid;
}

/* A driver launch function, called back on the launching thread at its entry and exit: the record
 * CUPTI's DRIVER kind would give (the session clock, the OS thread, the correlation id that its
 * kernel's record and an op's external id carry), at the cost of two clock readings. */
static void driver_launch_called(CUpti_CallbackId cbid, const CUpti_CallbackData *cb) {
    if (cb->callbackSite == CUPTI_API_ENTER) {
        launch_begin_ns = session_clock();
        launch_begin_corr = cb->correlationId;
        return;
    }
    if (launch_begin_corr != cb->correlationId) return; /* entered before the callbacks were on */
    tp_cupti_rec r = {.kind = TP_CUPTI_DRIVER,
                      .start = launch_begin_ns,
                      .end = session_clock(),
                      .corr = cb->correlationId};
    r.u.api.cbid = cbid;
    launching_thread(&r.u.api.pid, &r.u.api.tid);
    tp_cupti_rec ext = {
        .kind = TP_CUPTI_EXTERNAL, .start = INT64_MAX, .end = INT64_MAX, .corr = cb->correlationId};
    if (ext_depth) ext.ext = ext_ids[(ext_depth < EXT_DEPTH ? ext_depth : EXT_DEPTH) - 1];
    tp_lock(&S.launch_lock);
    if (S.calls_kept) {
        tp_cupti_pending_add(&S.called, &r);
        if (ext.ext) tp_cupti_pending_add(&S.called, &ext);
    }
    tp_unlock(&S.launch_lock);
}

/* Subscribed to hold CUPTI, and called back on the driver's launch functions while a window
 * records (set_driver_calls). */
static void CUPTIAPI subscriber_cb(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                                   const void *data) {
    (void)user;
    if (domain == CUPTI_CB_DOMAIN_DRIVER_API) driver_launch_called(cbid, data);
}

static const char *api_name(int driver, uint32_t cbid) {
    const char *name = NULL;
    CUpti_CallbackDomain d = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    return S.api.GetCallbackName && S.api.GetCallbackName(d, cbid, &name) == CUPTI_SUCCESS ? name
                                                                                           : NULL;
}

/* ---- enabling -------------------------------------------------------------------------------- */

static const char *result_str(CUptiResult r) {
    static char buf[32]; /* only for codes CUPTI cannot name; callers hold ctl */
    return tp_cupti_result_str(&S.api, r, buf, sizeof(buf));
}

/* One line naming the cause. With gpu: auto, a machine without the NVIDIA driver has nothing to
 * profile and nothing to fix (a CPU-only host, a CI runner with the CUDA toolkit): no line. */
static void warn_unavailable(int required, const char *cause) {
    if (required)
        tp_log_warn("gpu: on, but GPU profiling is unavailable: %s; continuing CPU-only", cause);
    else if (tp_cuda_driver_present())
        tp_log_warn("GPU profiling off: %s; continuing CPU-only", cause);
}

static void set_kinds(const kind_info *k, size_t n, int on) {
    for (size_t i = 0; i < n; i++)
        (on ? S.api.ActivityEnable : S.api.ActivityDisable)(k[i].kind);
}

/* Runtime calls that neither launch, copy, allocate nor wait (cudaGetDevice, cudaGetLastError:
 * hundreds a step under PyTorch) are left out at CUPTI where it can filter them by function
 * (each record costs the call time), and by the reduction anyway (convert.c). */
static void leave_out_runtime_queries(void) {
    if (!S.api.ActivityEnableRuntimeApi) return;
    for (size_t i = 0; i < tp_cupti_nruntime_queries; i++)
        S.api.ActivityEnableRuntimeApi(tp_cupti_runtime_queries[i], 0);
}

/* The callbacks on the driver's launch functions on or off; on: 0, or -1 (none left on) where
 * CUPTI has no cuptiEnableCallback or refuses one. */
static int set_driver_calls(int on) {
    size_t n = tp_cupti_ndriver_launches, i = 0;
    while (S.api.EnableCallback && i < n &&
           S.api.EnableCallback((uint32_t)on, S.sub, CUPTI_CB_DOMAIN_DRIVER_API,
                                tp_cupti_driver_launches[i]) == CUPTI_SUCCESS)
        i++;
    if (on && i < n)
        while (i--)
            S.api.EnableCallback(0, S.sub, CUPTI_CB_DOMAIN_DRIVER_API, tp_cupti_driver_launches[i]);
    int ok = !on || i == n;
    tp_lock(&S.launch_lock);
    S.calls_kept = on && ok;
    tp_unlock(&S.launch_lock);
    return ok ? 0 : -1;
}

/* Turns kinds on; an essential one failing turns them all back off. 0 or -1. */
static int enable_kinds(const kind_info *k, size_t n) {
    char missing[256] = "";
    for (size_t i = 0; i < n; i++) {
        CUptiResult r = S.api.ActivityEnable(k[i].kind);
        if (r == CUPTI_SUCCESS) continue;
        if (k[i].essential) {
            set_kinds(k, i, 0);
            char cause[256];
            snprintf(cause, sizeof(cause), "%scuptiActivityEnable(%s) failed with %s",
                     r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                         ? "another profiler holds CUPTI: "
                         : "",
                     k[i].name, result_str(r));
            warn_unavailable(S.required, cause);
            return -1;
        }
        size_t len = strlen(missing);
        snprintf(missing + len, sizeof(missing) - len, "%s%s (%s)", len ? ", " : "", k[i].name,
                 result_str(r));
    }
    if (missing[0]) tp_log_warn("GPU activity without %s: CUPTI refused them", missing);
    return 0;
}

static void start_window_kinds(void) {
    /* the program usually runs CUDA before its first window: its driver is loaded then */
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (driver) dlclose(driver); /* drops the reference RTLD_NOLOAD took */
    tp_lock(&S.lock);
    hook_exit_if(driver != NULL);
    tp_unlock(&S.lock);
    if (!S.held) {
        if (enable_kinds(session_kinds, COUNT(session_kinds))) goto broken;
        S.held = 1;
    }
    if (enable_kinds(window_kinds, COUNT(window_kinds))) goto broken;
    if (set_driver_calls(1)) enable_kinds(driver_kind, COUNT(driver_kind));
    if (S.graph_level) enable_kinds(graph_kinds, COUNT(graph_kinds)); /* refused: per node */
    S.ext_on = S.api.ActivityPushExternalCorrelationId && S.api.ActivityPopExternalCorrelationId &&
               S.api.ActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) == CUPTI_SUCCESS;
    tp_session_set_ext_corr(S.ext_on);
    leave_out_runtime_queries();
    __atomic_store_n(&S.enabled, 1, __ATOMIC_RELAXED); /* read without ctl: on_action */
    return;
broken:
    if (S.held) set_kinds(session_kinds, COUNT(session_kinds), 0);
    S.held = 0;
    S.broken = 1;
}

static void stop_window_kinds(void) {
    set_kinds(window_kinds, COUNT(window_kinds), 0);
    if (S.calls_kept)
        set_driver_calls(0);
    else
        set_kinds(driver_kind, COUNT(driver_kind), 0);
    if (S.graph_level) set_kinds(graph_kinds, COUNT(graph_kinds), 0);
    if (S.ext_on) {
        tp_session_set_ext_corr(0); /* ops already pushed still pop theirs */
        S.api.ActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
        S.ext_on = 0;
    }
    __atomic_store_n(&S.enabled, 0, __ATOMIC_RELAXED);
}

/* record/gpu_calls.h: on the op's thread, without a lock (CUPTI's stack of ids is per thread). The
 * calls are resolved once per process and never unloaded; after exit() began CUDA may be gone,
 * and CUPTI is called no more. */
void tp_gpu_ext_push(uint64_t id) {
    if (ext_depth < EXT_DEPTH) ext_ids[ext_depth] = id;
    ext_depth++;
    if (S.api.ActivityPushExternalCorrelationId && !__atomic_load_n(&S.exiting, __ATOMIC_RELAXED))
        S.api.ActivityPushExternalCorrelationId(ext_kind, id);
}

void tp_gpu_ext_pop(void) {
    uint64_t last;
    ext_depth -= ext_depth > 0;
    if (S.api.ActivityPopExternalCorrelationId && !__atomic_load_n(&S.exiting, __ATOMIC_RELAXED))
        S.api.ActivityPopExternalCorrelationId(ext_kind, &last);
}

/* ---- the tp_source --------------------------------------------------------------------------- */

static int start_cupti(char *cause, size_t n);

/* CUPTI is claimed (subscribed) when the first window starts recording, not when the session
 * starts: another profiler of the process that starts recording before it (torch.profiler's
 * Kineto subscribes when its schedule first warms up) keeps CUPTI, and tprof says so then. */
static int claim_cupti(void) {
    char cause[1024];
    if (S.alive) return 0;
    if (!start_cupti(cause, sizeof(cause))) return 0;
    warn_unavailable(S.required, cause);
    S.broken = 1;
    return -1;
}

/* On the stepping thread at every step: when the kinds already are as the step wants them, it
 * returns without taking ctl, which the writer holds across a streamed window's flushes. */
static void cupti_on_action(void *ctx, tp_action action) {
    (void)ctx;
    int want = action != TP_ACTION_NONE;
    if (__atomic_load_n(&S.enabled, __ATOMIC_RELAXED) == want) return;
    tp_lock(&S.ctl);
    if (S.created && !S.exiting && !S.broken) {
        if (want && !S.enabled && !claim_cupti()) start_window_kinds();
        if (!want && S.enabled) stop_window_kinds();
    }
    tp_unlock(&S.ctl);
}

static int64_t elapsed_ms(const struct timespec *t0) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* Flushes, then waits (bounded) until every kernel launched in the window has its record: the
 * GPU usually runs behind the CPU, and its last kernels finish after the window closed. A default
 * flush holds back every buffer with a record still incomplete, so when the wait ends without
 * them (work that never yields a kernel, or back-to-back windows keeping the GPU busy), a forced
 * flush takes what there is; records still incomplete then are lost, and counted by CUPTI. */
static void flush_and_drain(const tp_window_info *w) {
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        S.api.ActivityFlushAll(0);
        tp_lock(&S.lock);
        take_called(); /* the driver's launches wait for their kernels too */
        size_t missing = tp_cupti_pending_unfinished(&S.pending, w->start_ns, w->end_ns);
        int held = S.buffers_out;
        tp_unlock(&S.lock);
        /* with the kinds off, CUPTI owes nothing once every buffer is back; with the next window
         * recording, its buffers stay out, and the window's own launches are what counts */
        if (!missing && (S.enabled || !held)) return;
        if (elapsed_ms(&t0) >= DRAIN_MS) {
            S.api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
            return;
        }
        nanosleep(&(struct timespec){0, DRAIN_POLL_MS * 1000000L}, NULL);
    }
}

/* Device properties come from the program's driver once it has loaded one (outside `lock`: the
 * driver calls may make CUPTI ask for a buffer). */
static void learn_devices(void) {
    tp_cupti_dev *devs;
    size_t n;
    if (S.devices_known || tp_cuda_devices(&devs, &n)) return;
    tp_lock(&S.lock);
    tp_cupti_conv_set_devices(&S.conv, devs, n);
    tp_unlock(&S.lock);
    S.devices_known = 1;
}

/* ---- a streamed window's segments ----------------------------------------------------------- */

/* Notes the tracks of m's events from `first` on: the window's last model must have them all,
 * for their names in the trace's metadata, as without streaming. S.lock held. */
static void note_segment_tracks(const tp_model *m, size_t first) {
    uint32_t last = UINT32_MAX;
    for (size_t i = first; i < m->nevents; i++) {
        uint32_t t = m->events[i].track;
        if (t == last || t >= m->ntracks) continue;
        last = t;
        int64_t pid = m->tracks[t].pid, tid = m->tracks[t].tid;
        size_t k = 0;
        while (k < S.nseg_tracks && (S.seg_tracks[k][0] != pid || S.seg_tracks[k][1] != tid))
            k++;
        if (k < S.nseg_tracks || TP_GROW(S.seg_tracks, S.cap_seg_tracks, S.nseg_tracks + 1))
            continue; /* out of memory: that track goes unnamed */
        S.seg_tracks[S.nseg_tracks][0] = pid;
        S.seg_tracks[S.nseg_tracks++][1] = tid;
    }
}

/* The window's last model gets the tracks its segments' events went on. S.lock held. */
static void add_segment_tracks(tp_model *m) {
    for (size_t k = 0; k < S.nseg_tracks; k++)
        tp_model_track(m, S.seg_tracks[k][0], 0, S.seg_tracks[k][1], 0);
    S.nseg_tracks = 0;
}

/* While a streamed window records: at most every STREAM_FLUSH_MS, a flush, and the records whose
 * place is final into the segment (gpu_window.c). CUPTI hands API records over at a flush once
 * the call has returned (in a buffer apart from GPU work, which a default flush holds back while
 * a kernel runs); a call still running as a flush begins is handed over at a later one. So the
 * records are taken as settled up to when the flush before began: a call that started before it
 * has had a whole period to return. A launch whose work has not come STREAM_WAIT_MS after it
 * goes without it (its work may never come; a later segment takes it when it does). Between
 * flushes the segment gets nothing, and the time settled stays. A flush costs a lock and the buffer
 * callbacks on the writer thread (in the fake CUPTI, a thread per buffer handed over); at 10 a
 * second it stays off the training threads. */
static int64_t cupti_collect_settled(void *ctx, tp_model *m, const tp_window_info *w) {
    (void)ctx;
    tp_lock(&S.ctl);
    int64_t settled = INT64_MAX; /* a source that records nothing holds nothing back */
    if (!S.alive) goto out;
    if (S.stream_start_ns != w->start_ns) { /* a new window */
        S.stream_start_ns = w->start_ns;
        S.settled_ns = w->start_ns;
        S.nseg_tracks = 0;
    }
    int64_t now = session_clock(), upto = S.flushed_at_ns;
    if (!S.exiting && (!upto || now - upto >= (int64_t)STREAM_FLUSH_MS * 1000000)) {
        S.flushed_at_ns = now;
        S.api.ActivityFlushAll(0);
        if (upto) {
            long n;
            size_t first = m->nevents;
            tp_lock(&S.lock);
            take_called();
            S.settled_ns = tp_cupti_pending_take_settled(&S.pending, &S.conv, m, w, upto,
                                                         now - (int64_t)STREAM_WAIT_MS * 1000000,
                                                         &S.emitted, &n);
            note_segment_tracks(m, first);
            tp_unlock(&S.lock);
        }
    }
    settled = S.settled_ns;
out:
    tp_unlock(&S.ctl);
    return settled;
}

static void cupti_collect(void *ctx, tp_model *m, const tp_window_info *w) {
    (void)ctx;
    tp_lock(&S.ctl);
    if (!S.alive) goto out;
    if (!S.exiting) {
        flush_and_drain(w);
        learn_devices();
    }
    tp_lock(&S.lock);
    tp_cupti_add_devices(&S.conv, m);
    take_called();
    /* out of memory shows as m->failed */
    tp_cupti_pending_take(&S.pending, &S.conv, m, w, &S.emitted);
    add_segment_tracks(m);
    uint64_t dropped = S.cupti_dropped + S.pending.dropped - S.reported_dropped;
    S.reported_dropped += dropped;
    tp_unlock(&S.lock);
    if (dropped) {
        m->dropped_events += dropped;
        tp_log_warn("%llu GPU activity records were dropped (buffers full); the GPU timeline of "
                    "window %s is incomplete",
                    (unsigned long long)dropped, w->name ? w->name : "?");
    }
out:
    tp_unlock(&S.ctl);
}

static void release(void) {
    tp_lock(&S.lock);
    S.alive = 0;
    tp_cupti_conv_free(&S.conv);
    tp_cupti_pending_free(&S.pending);
    tp_cupti_emitted_free(&S.emitted);
    free(S.seg_tracks);
    S.seg_tracks = NULL;
    S.nseg_tracks = S.cap_seg_tracks = 0;
    S.stream_start_ns = S.flushed_at_ns = 0;
    tp_lock(&S.launch_lock);
    S.calls_kept = 0;
    tp_cupti_pending_free(&S.called);
    tp_unlock(&S.launch_lock);
    tp_unlock(&S.lock);
}

/* Turns every kind off and takes back every buffer (forced: those still being filled too). Only
 * what is on is turned off, so a source that never recorded does not call CUPTI here. */
static void stop_all(void) {
    if (S.enabled) stop_window_kinds();
    if (S.held) set_kinds(session_kinds, COUNT(session_kinds), 0);
    S.held = 0;
    tp_lock(&S.lock);
    int out = S.buffers_out;
    tp_unlock(&S.lock);
    if (out) S.api.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

static void cupti_shutdown(void *ctx) {
    (void)ctx;
    tp_lock(&S.ctl);
    if (S.alive) {
        if (!S.exiting) {
            stop_all();
            S.api.Unsubscribe(S.sub);
        }
        release();
    }
    S.created = S.broken = S.devices_known = 0;
    tp_unlock(&S.ctl);
}

/* exit() with a live source: stop and flush while CUDA still works, then never call CUPTI again
 * (a later tprof_shutdown from an earlier atexit handler would otherwise hang in a torn-down
 * driver). The records flushed here are still written by that shutdown's last collect. */
static void exit_flush(void) {
    tp_lock(&S.ctl);
    if (S.alive && !S.exiting) stop_all();
    __atomic_store_n(&S.exiting, 1, __ATOMIC_RELAXED); /* read by tp_gpu_ext_push/pop too */
    tp_unlock(&S.ctl);
}

/* ---- creation -------------------------------------------------------------------------------- */

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* The C++ runtime's demangler: the program's own if it has one, else libstdc++ (kernel names
 * come mangled; traces show them as C++ declarations, as Kineto does). */
static demangle_fn find_demangler(void) {
    demangle_fn f = NULL;
    if (!tp_dlsym_fn(RTLD_DEFAULT, "__cxa_demangle", &f)) return f;
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    return h && !tp_dlsym_fn(h, "__cxa_demangle", &f) ? f : NULL;
}

/* The name CUPTI gave the subscriber holding it, or the usual suspects where it gave none: an
 * older CUPTI says nothing, and a holder that subscribed without a name (Nsight Systems 2025.3
 * on an H100) comes as "CUPTI for <not provided>". */
static const char *holder_name(const char *holder) {
    return holder[0] && !strstr(holder, "<not provided>")
               ? holder
               : "Nsight Systems, Nsight Compute, torch.profiler or similar";
}

/* Why cuptiSubscribe failed, as one clause. */
static void subscribe_cause(CUptiResult r, const char *holder, char *cause, size_t n) {
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) {
        snprintf(cause, n, "another profiler holds CUPTI (%s): cuptiSubscribe returned %s",
                 holder_name(holder), result_str(r));
        return;
    }
    char driver[320];
    tp_cuda_diagnose(driver, sizeof(driver));
    if (driver[0])
        snprintf(cause, n, "CUPTI (%s) cannot start: %s", S.api.path, driver);
    else
        snprintf(cause, n, "CUPTI (%s) cannot start: cuptiSubscribe returned %s", S.api.path,
                 result_str(r));
}

/* cuptiSubscribe_v2's parameters as CUPTI 13.2 and later declare them: those of the headers tprof
 * builds against (13.0), then `allowMultipleSubscribers`. With it set, a CUPTI of 13.3 or later
 * on an r610 or later driver lets tprof record beside another subscriber that allows it too
 * (Nsight Systems, DCGM, torch.profiler built on such a CUPTI). structSize tells CUPTI which
 * fields are there. */
typedef struct subscriber_params {
    size_t structSize;
    const char *subscriberName;
    char *oldSubscriberName;
    size_t oldSubscriberSize;
    uint8_t allowMultipleSubscribers;
} subscriber_params;
_Static_assert(offsetof(subscriber_params, oldSubscriberSize) ==
                   offsetof(CUpti_SubscriberParams, oldSubscriberSize),
               "the first fields are CUPTI's own");
enum { MULTI_PARAMS_SIZE = offsetof(subscriber_params, allowMultipleSubscribers) + 1 };

/* cuptiSubscribe_v2 asking to share CUPTI where the library exports it; a CUPTI that refuses the
 * longer struct (one older than the field) is asked again with the fields it knows, and one
 * without cuptiSubscribe_v2 gets cuptiSubscribe: then another subscriber locks tprof out. */
static CUptiResult subscribe(char *holder, size_t n) {
    holder[0] = '\0';
    if (!S.api.Subscribe_v2) return S.api.Subscribe(&S.sub, subscriber_cb, NULL);
    subscriber_params p = {.structSize = MULTI_PARAMS_SIZE,
                           .subscriberName = "tprof",
                           .oldSubscriberName = holder,
                           .oldSubscriberSize = n,
                           .allowMultipleSubscribers = 1};
    CUptiResult r = S.api.Subscribe_v2(&S.sub, subscriber_cb, NULL, (CUpti_SubscriberParams *)&p);
    if (r != CUPTI_ERROR_INVALID_PARAMETER) return r;
    p.structSize = CUpti_SubscriberParams_STRUCT_SIZE;
    return S.api.Subscribe_v2(&S.sub, subscriber_cb, NULL, (CUpti_SubscriberParams *)&p);
}

/* Subscribes and registers the callbacks. 0, or -1 with cause filled. */
static int start_cupti(char *cause, size_t n) {
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN + 1];
    CUptiResult r = subscribe(holder, sizeof(holder) - 1);
    if (r != CUPTI_SUCCESS) {
        subscribe_cause(r, holder, cause, n);
        return -1;
    }
    /* API records name the OS thread (gettid), as tprof's host tracks do */
    if (S.api.SetThreadIdType) S.api.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    int64_t delta = 0;
    uint64_t cupti_now = 0;
    if ((!S.api.ActivityRegisterTimestampCallback ||
         S.api.ActivityRegisterTimestampCallback(clock_cb) != CUPTI_SUCCESS) &&
        S.api.GetTimestamp && S.api.GetTimestamp(&cupti_now) == CUPTI_SUCCESS)
        delta = session_clock() - (int64_t)cupti_now; /* older CUPTI: map its clock by offset */
    r = S.api.ActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS) {
        snprintf(cause, n, "CUPTI (%s) refused its buffer callbacks: %s", S.api.path,
                 result_str(r));
        S.api.Unsubscribe(S.sub);
        return -1;
    }
    tp_lock(&S.lock);
    tp_cupti_conv_init(&S.conv);
    S.conv.api_name = api_name;
    S.conv.demangle = find_demangler();
    S.conv.clock_delta_ns = delta;
    tp_cupti_pending_init(&S.pending, S.max_pending);
    tp_lock(&S.launch_lock);
    tp_cupti_pending_init(&S.called, S.max_pending);
    tp_unlock(&S.launch_lock);
    S.cupti_dropped = S.reported_dropped = 0;
    S.retain_from_ns = 0;
    S.prune_at = PRUNE_MIN;
    S.alive = 1;
    tp_unlock(&S.lock);
    return 0;
}

/* The first CUPTI API version whose graph-level trace tprof enables. With CUPTI 13.0 (API
 * 130000-130001) on an H100 and driver 580, a cudaGraphLaunch crashed inside libcupti once
 * GRAPH_TRACE was on beside tprof's other kinds (bench/gpu/check.sh, docs/GPU.md); later CUPTIs
 * are untried. */
enum { GRAPH_TRACE_MIN_VERSION = 130100 };

/* cuda_graphs: graph where the loaded CUPTI can take it; else per node, said once. */
static int graph_level_usable(void) {
    uint32_t version = 0;
    if (S.api.GetVersion && S.api.GetVersion(&version) == CUPTI_SUCCESS &&
        version >= GRAPH_TRACE_MIN_VERSION)
        return 1;
    tp_log_warn("cuda_graphs: graph needs CUPTI 13.1 or later (this one: API version %u, where "
                "graph-level tracing crashed in cudaGraphLaunch); recording every node instead",
                version);
    return 0;
}

int tp_cupti_source_create(const tp_gpu_opts *o, tp_source *src) {
    char cause[1024];
    int rc = -1;
    tp_lock(&S.ctl);
    if (S.created) {
        tp_log_warn("GPU profiling: a CUPTI source is already active in this process");
        goto out;
    }
    if (S.exiting) goto out;
    /* gpu: auto without the NVIDIA driver: nothing to profile, nothing to say (warn_unavailable) */
    if (!o->required && !tp_cuda_driver_present()) goto out;
    if (!S.loaded) {
        tp_cupti_load_status st =
            tp_cupti_load(&S.api, o->library, o->extra_dirs, cause, sizeof(cause));
        if (st != TP_CUPTI_LOADED) {
            warn_unavailable(o->required, cause);
            goto out;
        }
        S.loaded = 1;
        pthread_atfork(NULL, NULL, forked_child); /* once: libcupti is never unloaded */
    }
    session_clock = o->now_ns ? o->now_ns : monotonic_ns;
    S.required = o->required;
    S.graph_level = o->graph_level && graph_level_usable();
    S.max_pending = o->max_pending ? o->max_pending : MAX_PENDING;
    S.created = 1; /* CUPTI itself is claimed at the first window (claim_cupti) */
    *src = (tp_source){.name = "cupti",
                       .on_action = cupti_on_action,
                       .collect = cupti_collect,
                       .collect_settled = cupti_collect_settled,
                       .retain = cupti_retain,
                       .shutdown = cupti_shutdown};
    rc = 0;
out:
    tp_unlock(&S.ctl);
    return rc;
}
