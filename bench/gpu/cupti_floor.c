/* cupti_floor.c - CUPTI's own cost, without tprof: a CUDA injection library that turns on the
 * activity kinds named in $TPROF_FLOOR_KINDS and does the least a tracer can do with the records
 * (step over each one, count it, free the buffer), so that bench/gpu/check.sh can time an
 * unmodified program with CUPTI at its floor next to the same program under tprof (issue 26).
 *
 *   CUDA_INJECTION64_PATH=build/bench/libcupti_floor.so TPROF_FLOOR_KINDS=kernel,runtime prog
 *
 * The CUDA driver loads the library named by CUDA_INJECTION64_PATH at cuInit and calls its
 * InitializeInjection (the mechanism Nsight's own injection uses). Kinds: `kernel`
 * (CONCURRENT_KERNEL), `runtime`, `memcpy`, `memcpy2`, `memset`, `sync`, `memory` (MEMORY2),
 * `context`, `driver`, `graph` (GRAPH_TRACE), `clock` (a timestamp callback on CLOCK_MONOTONIC,
 * as tprof registers one), `runtime_launch` (the RUNTIME kind with every function but the kernel
 * and graph launches turned off one by one: does CUPTI's cost follow the records or the kind?),
 * `launch_callback` (no activity kind: a callback on the runtime's kernel and graph launches,
 * which takes two clock readings and the correlation id into a per-thread array, as a tracer
 * that ties kernel records to launches by itself would), `driver_launch_callback` (the same
 * callback on the driver's launch functions, which the runtime's launches call too, as tprof
 * catches Triton's launches), `queries_off` (the runtime's queries, cudaGetDevice and the like,
 * turned off one by one, as tprof does: does CUPTI's cost rise once functions are filtered?).
 * `all` is tprof's former set (the whole DRIVER kind); `tprof` its set now (src/gpu/cupti.c).
 * At exit
 * it prints one line to stderr: the kinds and the records CUPTI handed back by then.
 *
 * libcupti is found as tprof finds it ($TPROF_FLOOR_CUPTI, else libcupti.so.13/.12 on the
 * loader's path, where CUDA's lib64 is) and loaded with dlopen: nothing links CUDA. */
#include <cupti.h>

#include "gpu/cupti_ids.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { BUFFER_BYTES = 4 << 20 }; /* tprof's buffer size (src/gpu/cupti.c) */

/* The CUPTI calls used, resolved once. */
static struct {
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*register_clock)(CUpti_TimestampCallbackFunc);
    CUptiResult (*enable_runtime_api)(CUpti_CallbackId, uint8_t);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                   CUpti_CallbackId);
} C;

/* What launch_callback keeps of a launch: its correlation id and when it began and ended. */
typedef struct launch_mark {
    uint32_t correlation;
    uint64_t begin_ns, end_ns;
} launch_mark;
enum { MARKS = 1 << 16 }; /* per thread, reused round: the cost of the store, not a trace */
static _Thread_local launch_mark marks[MARKS];
static _Thread_local size_t nmarks;
static unsigned long long launches; /* launch callbacks taken */

static unsigned long long records; /* counted on CUPTI's thread; read once at exit */
static char kinds_named[256];

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records) {
    *buf = aligned_alloc(8, BUFFER_BYTES);
    *size = *buf ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid) {
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *r = NULL;
    while (C.next_record(buf, valid, &r) == CUPTI_SUCCESS)
        __atomic_add_fetch(&records, 1, 0);
    free(buf);
}

static uint64_t CUPTIAPI monotonic_clock(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* No flush here: CUDA may already be torn down at exit, and a CUPTI call then can hang (see
 * docs/GPU.md, "exit() without tprof_shutdown"); the count is a sign of life, not a total. */
static void report(void) {
    const launch_mark *last = nmarks ? &marks[(nmarks - 1) % MARKS] : NULL; /* keeps the stores */
    fprintf(stderr, "cupti_floor: kinds %s: %llu records, %llu launch callbacks (last %llu ns)\n",
            kinds_named, __atomic_load_n(&records, 0), __atomic_load_n(&launches, 0),
            last ? (unsigned long long)(last->end_ns - last->begin_ns) : 0ULL);
}

static int load(void) {
    const char *path = getenv("TPROF_FLOOR_CUPTI");
    const char *names[] = {path, "libcupti.so.13", "libcupti.so.12", "libcupti.so"};
    void *h = NULL;
    for (size_t i = path ? 0 : 1; !h && i < sizeof(names) / sizeof(names[0]); i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) return -1;
    *(void **)&C.register_callbacks = dlsym(h, "cuptiActivityRegisterCallbacks");
    *(void **)&C.enable = dlsym(h, "cuptiActivityEnable");
    *(void **)&C.next_record = dlsym(h, "cuptiActivityGetNextRecord");
    *(void **)&C.register_clock = dlsym(h, "cuptiActivityRegisterTimestampCallback");
    *(void **)&C.enable_runtime_api = dlsym(h, "cuptiActivityEnableRuntimeApi");
    *(void **)&C.subscribe = dlsym(h, "cuptiSubscribe");
    *(void **)&C.enable_callback = dlsym(h, "cuptiEnableCallback");
    return C.register_callbacks && C.enable && C.next_record ? 0 : -1;
}

/* The runtime's kernel and graph launches. */
static const CUpti_CallbackId launch_ids[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
    CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
};
enum { NLAUNCH_IDS = sizeof(launch_ids) / sizeof(launch_ids[0]) };

/* The RUNTIME kind on, then every runtime function but the launches off. */
static int enable_runtime_launches(void) {
    if (!C.enable_runtime_api || C.enable(CUPTI_ACTIVITY_KIND_RUNTIME) != CUPTI_SUCCESS) return -1;
    for (CUpti_CallbackId id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; id++) {
        int keep = 0;
        for (size_t i = 0; i < NLAUNCH_IDS; i++)
            keep |= id == launch_ids[i];
        if (!keep) C.enable_runtime_api(id, 0);
    }
    return 0;
}

/* A launch's callback, at its entry and exit, on the launching thread. */
static void CUPTIAPI on_launch(void *user, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                               const void *info) {
    (void)user, (void)domain, (void)id;
    const CUpti_CallbackData *cb = info;
    launch_mark *m = &marks[nmarks % MARKS];
    if (cb->callbackSite == CUPTI_API_ENTER) {
        m->correlation = cb->correlationId;
        m->begin_ns = monotonic_clock();
        return;
    }
    m->end_ns = monotonic_clock();
    nmarks++;
    __atomic_add_fetch(&launches, 1, __ATOMIC_RELAXED);
}

/* The driver's launch functions, tprof's (src/gpu/cupti_ids.h). */
static const CUpti_CallbackId driver_launch_ids[] = {TP_CUPTI_DRIVER_LAUNCH_IDS};

/* The one subscriber the launch callbacks share (CUPTI takes one per process). */
static CUpti_SubscriberHandle subscriber(void) {
    static CUpti_SubscriberHandle sub;
    static int tried;
    if (!tried && C.subscribe && C.enable_callback &&
        C.subscribe(&sub, on_launch, NULL) != CUPTI_SUCCESS)
        sub = NULL;
    tried = 1;
    return C.enable_callback ? sub : NULL;
}

/* Callbacks on the n launch functions ids of domain, no activity kind. */
static int enable_launch_callbacks(CUpti_CallbackDomain domain, const CUpti_CallbackId *ids,
                                   size_t n) {
    CUpti_SubscriberHandle sub = subscriber();
    if (!sub) return -1;
    for (size_t i = 0; i < n; i++)
        if (C.enable_callback(1, sub, domain, ids[i]) != CUPTI_SUCCESS) return -1;
    return 0;
}

/* The runtime's queries off, tprof's (src/gpu/cupti_ids.h). */
static int turn_queries_off(void) {
    static const CUpti_CallbackId queries[] = {TP_CUPTI_RUNTIME_QUERY_IDS};
    if (!C.enable_runtime_api) return -1;
    for (size_t i = 0; i < sizeof(queries) / sizeof(queries[0]); i++)
        if (C.enable_runtime_api(queries[i], 0) != CUPTI_SUCCESS) return -1;
    return 0;
}

/* One named kind turned on; -1 for a name it does not know or CUPTI refuses. */
static int enable_named(const char *name) {
    static const struct {
        const char *name;
        CUpti_ActivityKind kind;
    } kinds[] = {
        {"kernel", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL},
        {"runtime", CUPTI_ACTIVITY_KIND_RUNTIME},
        {"memcpy", CUPTI_ACTIVITY_KIND_MEMCPY},
        {"memcpy2", CUPTI_ACTIVITY_KIND_MEMCPY2},
        {"memset", CUPTI_ACTIVITY_KIND_MEMSET},
        {"sync", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION},
        {"memory", CUPTI_ACTIVITY_KIND_MEMORY2},
        {"context", CUPTI_ACTIVITY_KIND_CONTEXT},
        {"driver", CUPTI_ACTIVITY_KIND_DRIVER},
        {"graph", CUPTI_ACTIVITY_KIND_GRAPH_TRACE},
    };
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (!strcmp(name, kinds[i].name)) return C.enable(kinds[i].kind) == CUPTI_SUCCESS ? 0 : -1;
    if (!strcmp(name, "runtime_launch")) return enable_runtime_launches();
    if (!strcmp(name, "launch_callback"))
        return enable_launch_callbacks(CUPTI_CB_DOMAIN_RUNTIME_API, launch_ids, NLAUNCH_IDS);
    if (!strcmp(name, "driver_launch_callback"))
        return enable_launch_callbacks(CUPTI_CB_DOMAIN_DRIVER_API, driver_launch_ids,
                                       sizeof(driver_launch_ids) / sizeof(driver_launch_ids[0]));
    if (!strcmp(name, "queries_off")) return turn_queries_off();
    if (!strcmp(name, "clock"))
        return C.register_clock && C.register_clock(monotonic_clock) == CUPTI_SUCCESS ? 0 : -1;
    return -1;
}

/* Called by the CUDA driver, once, at cuInit; 1 tells it the injection succeeded. The one symbol
 * exported (the build hides the rest). */
__attribute__((visibility("default"))) int InitializeInjection(void);

int InitializeInjection(void) {
    const char *want = getenv("TPROF_FLOOR_KINDS");
    if (!want || !*want) return 1;
    if (!strcmp(want, "all"))
        want = "kernel,runtime,memcpy,memcpy2,memset,sync,memory,context,driver,clock";
    else if (!strcmp(want, "tprof"))
        want = "kernel,runtime,queries_off,memcpy,memcpy2,memset,sync,memory,context,clock,"
               "driver_launch_callback";
    snprintf(kinds_named, sizeof(kinds_named), "%s", want);
    if (load() || C.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) {
        fprintf(stderr, "cupti_floor: cannot load or start libcupti\n");
        return 0;
    }
    char list[256];
    snprintf(list, sizeof(list), "%s", want);
    for (char *save = NULL, *k = strtok_r(list, ",", &save); k; k = strtok_r(NULL, ",", &save))
        if (enable_named(k)) fprintf(stderr, "cupti_floor: kind %s refused or unknown\n", k);
    atexit(report);
    return 1;
}
