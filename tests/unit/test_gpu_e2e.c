/* test_gpu_e2e.c - the whole CUPTI path without a GPU: the fake libcupti (found through
 * CUDA_HOME) records activity of the enabled kinds into buffers from tprof's request callback,
 * hands them back on its own thread, and tprof flushes, waits for a kernel still running,
 * converts, and places each record in its window; the fake driver supplies device properties.
 *
 * The program re-executes itself once with LD_LIBRARY_PATH and CUDA_HOME pointing at the fakes,
 * since the loader reads LD_LIBRARY_PATH only at start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#ifdef TPROF_HAVE_CUPTI_HEADERS

#include "gpu/cupti.h"
#include "model/model.h"
#include "record/session.h"
#include "util/log.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int64_t now_ns;
static int64_t test_clock(void) {
    return now_ns;
}

static void *fake_sym(const char *name) {
    void *h = dlopen(TPROF_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    void *sym = dlsym(h, name);
    assert_non_null(sym);
    return sym;
}

static int push(const void *rec, size_t size) {
    int (*fn)(const void *, size_t);
    void *sym = fake_sym("fake_cupti_push");
    memcpy(&fn, &sym, sizeof(sym));
    return fn(rec, size);
}

static int push_late(const void *rec, size_t size, int flushes) {
    int (*fn)(const void *, size_t, int);
    void *sym = fake_sym("fake_cupti_push_late");
    memcpy(&fn, &sym, sizeof(sym));
    return fn(rec, size, flushes);
}

static uint64_t fake_now(void) {
    uint64_t (*fn)(void);
    void *sym = fake_sym("fake_cupti_now");
    memcpy(&fn, &sym, sizeof(sym));
    return fn();
}

/* The program calls the driver's launch function cbid: tprof's callback catches it, or, where
 * CUPTI calls nothing back, a DRIVER record lands (tests/tools/gpu/fake_cupti.c). */
static int driver_launch(uint32_t cbid, uint32_t corr) {
    int (*fn)(uint32_t, uint32_t);
    void *sym = fake_sym("fake_cupti_driver_launch");
    memcpy(&fn, &sym, sizeof(sym));
    return fn(cbid, corr);
}

static void fake_drop(size_t n) {
    void (*fn)(size_t);
    void *sym = fake_sym("fake_cupti_drop");
    memcpy(&fn, &sym, sizeof(sym));
    fn(n);
}

static CUpti_ActivityAPI api(CUpti_ActivityKind kind, uint32_t cbid, uint64_t start,
                             uint32_t corr) {
    return (CUpti_ActivityAPI){.kind = kind,
                               .cbid = cbid,
                               .start = start,
                               .end = start + 10,
                               .processId = 4242,
                               .threadId = 4243,
                               .correlationId = corr};
}

static CUpti_ActivityKernel10 kernel(uint64_t start, uint64_t end, uint32_t corr,
                                     const char *name) {
    return (CUpti_ActivityKernel10){.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                    .registersPerThread = 32,
                                    .start = start,
                                    .end = end,
                                    .deviceId = 0,
                                    .contextId = 1,
                                    .streamId = 7,
                                    .gridX = 564,
                                    .gridY = 1,
                                    .gridZ = 1,
                                    .blockX = 128,
                                    .blockY = 1,
                                    .blockZ = 1,
                                    .correlationId = corr,
                                    .name = name};
}

static const tp_event *find(const tp_model *m, int kind, uint64_t corr) {
    for (size_t i = 0; i < m->nevents; i++)
        if (m->events[i].kind == kind && m->events[i].corr == corr) return &m->events[i];
    return NULL;
}

static size_t count(const tp_model *m, int kind) {
    size_t n = 0;
    for (size_t i = 0; i < m->nevents; i++)
        n += m->events[i].kind == kind;
    return n;
}

static tp_source src;

static void create(void) {
    tp_gpu_opts o = {.required = 1, .now_ns = test_clock}; /* found through CUDA_HOME */
    assert_int_equal(tp_cupti_source_create(&o, &src), 0);
}

/* A failed test leaves no source behind for the next one. */
static int end_source(void **state) {
    (void)state;
    if (src.shutdown) src.shutdown(src.ctx);
    memset(&src, 0, sizeof(src));
    return 0;
}

static void test_found_through_cuda_home(void **state) {
    (void)state;
    tp_log_reset();
    create();
    assert_non_null(dlopen(TPROF_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD));
    assert_null(dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD)); /* the real one stayed out */
    src.on_action(src.ctx, TP_ACTION_WARMUP); /* CUPTI is claimed at the first window */
    now_ns = 12345;
    assert_int_equal(fake_now(), 12345); /* CUPTI timestamps come from the session clock */
    assert_int_equal(tp_log_count(), 0);
}

static void test_one_window(void **state) {
    (void)state;
    tp_log_reset();
    /* the program uses CUDA (it loads the driver), so tprof can ask it for device properties */
    assert_non_null(dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL));
    create();
    CUpti_ActivityAPI a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 10, 1);
    src.on_action(src.ctx, TP_ACTION_NONE);
    assert_int_equal(push(&a, sizeof(a)), 0); /* not recording: CUPTI keeps nothing */

    src.on_action(src.ctx, TP_ACTION_WARMUP);
    a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 100, 2);
    CUpti_ActivityKernel10 k = kernel(150, 180, 2, "_Z6warmupv");
    assert_true(push(&a, sizeof(a)) && push(&k, sizeof(k)));

    src.on_action(src.ctx, TP_ACTION_RECORD);
    a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 1000, 10);
    k = kernel(1100, 1200, 10, "_Z4stepPKfPfi");
    assert_true(push(&a, sizeof(a)) && push(&k, sizeof(k)));
    /* cudaLaunchKernel calls cuLaunchKernel, called back with the runtime call's correlation id
     * (as on an H100): the runtime's record stands for the pair, so no second launch */
    now_ns = 1005;
    assert_true(driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 10));
    a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 41, 1020, 11);
    CUpti_ActivityMemcpy6 mc = {.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
                                .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                                .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                .bytes = 4096,
                                .start = 1040,
                                .end = 1090,
                                .contextId = 1,
                                .streamId = 7,
                                .correlationId = 11};
    assert_true(push(&a, sizeof(a)) && push(&mc, sizeof(mc)));
    CUpti_ActivityMemset4 ms = {.kind = CUPTI_ACTIVITY_KIND_MEMSET,
                                .bytes = 64,
                                .start = 1300,
                                .end = 1310,
                                .contextId = 1,
                                .streamId = 7,
                                .correlationId = 12,
                                .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE};
    assert_true(push(&ms, sizeof(ms)));
    /* a driver launch (caught by the callback on cuLaunchKernel, at the session clock's 1400)
     * whose kernel still runs when the window closes: it completes only after three more
     * flushes, and starts after the window's end */
    now_ns = 1400;
    assert_true(driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 13));
    k = kernel(2100, 2300, 13, "_Z4tailv");
    assert_true(push_late(&k, sizeof(k), 3));
    CUpti_ActivitySynchronization2 sy = {.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                         .type =
                                             CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
                                         .start = 1500,
                                         .end = 1600,
                                         .correlationId = 14,
                                         .contextId = 1,
                                         .streamId = 7};
    assert_true(push(&sy, sizeof(sy)));
    CUpti_ActivityMemory4 mem = {.kind = CUPTI_ACTIVITY_KIND_MEMORY2,
                                 .memoryOperationType =
                                     CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                                 .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                 .address = 0x7000,
                                 .bytes = 1 << 20,
                                 .timestamp = 1700,
                                 .processId = 4242};
    assert_true(push(&mem, sizeof(mem)));
    src.on_action(src.ctx, TP_ACTION_RECORD_AND_SAVE);
    src.on_action(src.ctx, TP_ACTION_NONE);
    fake_drop(3);

    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "w1", .start_ns = 1000, .end_ns = 2000, .model_offset_ns = 1000};
    src.collect(src.ctx, &m, &w);
    assert_int_equal(count(&m, TP_KERNEL), 2);
    assert_int_equal(count(&m, TP_MEMCPY), 1);
    assert_int_equal(count(&m, TP_MEMSET), 1);
    assert_int_equal(count(&m, TP_MEMORY), 1);
    assert_int_equal(count(&m, TP_HOST_RANGE), 4); /* 2 runtime, 1 driver, 1 synchronization */
    assert_int_equal(m.nevents, 9);
    assert_null(find(&m, TP_KERNEL, 2)); /* warmup's */

    const tp_event *ev = find(&m, TP_KERNEL, 10);
    assert_non_null(ev);
    assert_string_equal(tp_model_str(&m, ev->name), "step(float const*, float*, int)");
    assert_int_equal(ev->ts, 100);
    assert_int_equal(ev->dur, 100);
    double occ;
    assert_int_equal(tp_event_arg_number(&m, ev, "est. achieved occupancy %", &occ), 0);
    assert_true(occ == 27); /* the fake driver's H100, as Kineto computed for this launch */
    ev = find(&m, TP_KERNEL, 13);
    assert_non_null(ev); /* collect waited for it */
    assert_int_equal(ev->ts, 1100);
    ev = find(&m, TP_HOST_RANGE, 13);
    assert_non_null(ev);
    assert_string_equal(tp_model_str(&m, ev->name), "cuLaunchKernel");
    assert_int_equal(ev->ts, 400);
    assert_int_equal(m.tracks[ev->track].pid, getpid()); /* the launching thread's */
    assert_int_equal(m.tracks[ev->track].tid, gettid());
    ev = find(&m, TP_HOST_RANGE, 11);
    assert_string_equal(tp_model_str(&m, ev->name), "cudaMemcpyAsync");
    ev = find(&m, TP_HOST_RANGE, 14);
    assert_string_equal(tp_model_str(&m, ev->name), "Stream Sync");

    assert_int_equal(m.ndevices, 1);
    assert_string_equal(tp_model_str(&m, m.devices[0].name), "Fake H100 #0");
    assert_int_equal(m.devices[0].total_mem, 85018279936u);
    assert_int_equal(m.devices[0].compute_major, 9);
    assert_int_equal(m.devices[0].num_sms, 132);
    assert_int_equal(m.dropped_events, 3);
    assert_int_equal(tp_log_count(), 1);
    assert_non_null(strstr(tp_log_get(0), "3 GPU activity records were dropped"));
    tp_model_free(&m);
}

/* The flight recorder keeps CUPTI on every step and tells the source where its ring begins
 * (retain): a save of the ring gets the ring's launches and kernels, not older ones, however
 * many buffers came back meanwhile (the pruning itself: test_gpu_convert's test_flight_prune). */
static void test_flight_ring(void **state) {
    (void)state;
    tp_log_reset();
    create();
    assert_non_null(src.retain);
    src.on_action(src.ctx, TP_ACTION_RECORD);
    for (uint32_t i = 0; i < 3000; i++) { /* steps that left the ring */
        CUpti_ActivityAPI a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 10 + i, 100 + i);
        CUpti_ActivityKernel10 k = kernel(11 + i, 12 + i, 100 + i, "old");
        assert_true(push(&a, sizeof(a)) && push(&k, sizeof(k)));
    }
    src.retain(src.ctx, 5000);
    CUpti_ActivityAPI a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 5100, 9000);
    CUpti_ActivityKernel10 k = kernel(5200, 5300, 9000, "_Z4ringv");
    assert_true(push(&a, sizeof(a)) && push(&k, sizeof(k)));
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "flight_slow_step_steps_1-2",
                        .start_ns = 5000,
                        .end_ns = 6000,
                        .model_offset_ns = 5000};
    src.collect(src.ctx, &m, &w);
    assert_int_equal(count(&m, TP_KERNEL), 1);
    assert_non_null(find(&m, TP_KERNEL, 9000));
    assert_int_equal(count(&m, TP_HOST_RANGE), 1);
    assert_int_equal(m.dropped_events, 0);
    tp_model_free(&m);
}

static void test_back_to_back_windows(void **state) {
    (void)state;
    tp_log_reset();
    create();
    src.on_action(src.ctx, TP_ACTION_RECORD);
    CUpti_ActivityAPI a1 = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 3000, 20);
    CUpti_ActivityAPI a2 = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 4100, 21);
    CUpti_ActivityKernel10 k1 = kernel(3100, 3200, 20, "k1"), k2 = kernel(4200, 4300, 21, "k2");
    assert_true(push(&a1, sizeof(a1)) && push(&k1, sizeof(k1)));
    assert_true(push(&a2, sizeof(a2)) && push(&k2, sizeof(k2)));
    tp_model m1, m2;
    tp_model_init(&m1);
    tp_model_init(&m2);
    tp_window_info w1 = {.name = "w1", .start_ns = 3000, .end_ns = 4000, .model_offset_ns = 3000};
    tp_window_info w2 = {.name = "w2", .start_ns = 4000, .end_ns = 5000, .model_offset_ns = 4000};
    src.collect(src.ctx, &m1, &w1); /* the next window already recorded: its records wait */
    src.collect(src.ctx, &m2, &w2);
    assert_int_equal(m1.nevents, 2);
    assert_int_equal(m2.nevents, 2);
    assert_non_null(find(&m1, TP_KERNEL, 20));
    assert_non_null(find(&m2, TP_KERNEL, 21));
    assert_int_equal(find(&m2, TP_KERNEL, 21)->ts, 200);
    tp_model_free(&m1);
    tp_model_free(&m2);
    assert_int_equal(tp_log_count(), 0);
}

/* A launch whose kernel never completes (in real life: back-to-back windows keeping the GPU
 * busy) holds back its buffer from default flushes; collect waits its bounded time, then a
 * forced flush delivers the rest of the window. */
static void test_kernel_never_completes(void **state) {
    (void)state;
    create();
    src.on_action(src.ctx, TP_ACTION_RECORD);
    CUpti_ActivityAPI a1 = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 6000, 40);
    CUpti_ActivityAPI a2 = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 6100, 41);
    CUpti_ActivityKernel10 k1 = kernel(6050, 6080, 40, "done"),
                           k2 = kernel(6200, 6300, 41, "stuck");
    assert_true(push(&a1, sizeof(a1)) && push(&k1, sizeof(k1)) && push(&a2, sizeof(a2)));
    assert_true(push_late(&k2, sizeof(k2), 1 << 30));
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "w", .start_ns = 6000, .end_ns = 7000, .model_offset_ns = 6000};
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    src.collect(src.ctx, &m, &w);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    assert_true(waited_ms >= 450 && waited_ms < 5000); /* the bounded wait, then no more */
    assert_int_equal(m.nevents, 3);                    /* both launches and the kernel that ran */
    assert_non_null(find(&m, TP_KERNEL, 40));
    assert_null(find(&m, TP_KERNEL, 41));
    tp_model_free(&m);
}

static CUpti_ActivityKernel10 node_kernel(uint64_t start, uint32_t corr, uint32_t graph,
                                          uint64_t node) {
    CUpti_ActivityKernel10 k = kernel(start, start + 50, corr, "_Z4nodev");
    k.graphId = graph;
    k.graphNodeId = node;
    return k;
}

static double arg_of(const tp_model *m, const tp_event *ev, const char *key) {
    double v = -1;
    assert_int_equal(tp_event_arg_number(m, ev, key, &v), 0);
    return v;
}

/* cuda_graphs: node. A graph launch runs its nodes under the launch's correlation id: each
 * kernel, copy and set becomes an event with its graph and node, and collect waits for a graph
 * launched in the window as for a kernel (its nodes here complete only after two flushes). */
static void test_graph_nodes(void **state) {
    (void)state;
    tp_log_reset();
    create();
    src.on_action(src.ctx, TP_ACTION_RECORD);
    CUpti_ActivityAPI launch = api(CUPTI_ACTIVITY_KIND_RUNTIME, 311, 8000, 50);
    CUpti_ActivityKernel10 k1 = node_kernel(8100, 50, 3, 101), k2 = node_kernel(8200, 50, 3, 103);
    CUpti_ActivityMemset4 ms = {.kind = CUPTI_ACTIVITY_KIND_MEMSET,
                                .bytes = 64,
                                .start = 8160,
                                .end = 8170,
                                .contextId = 1,
                                .streamId = 7,
                                .correlationId = 50,
                                .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                .graphNodeId = 102,
                                .graphId = 3};
    assert_true(push(&launch, sizeof(launch)));
    assert_true(push_late(&k1, sizeof(k1), 2) && push_late(&ms, sizeof(ms), 2) &&
                push_late(&k2, sizeof(k2), 2));
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "w", .start_ns = 8000, .end_ns = 9000, .model_offset_ns = 8000};
    src.collect(src.ctx, &m, &w);
    assert_int_equal(count(&m, TP_KERNEL), 2);
    assert_int_equal(count(&m, TP_MEMSET), 1);
    const tp_event *ev = find(&m, TP_HOST_RANGE, 50);
    assert_non_null(ev);
    assert_string_equal(tp_model_str(&m, ev->name), "cudaGraphLaunch");
    uint64_t nodes = 0;
    for (size_t i = 0; i < m.nevents; i++) {
        ev = &m.events[i];
        if (ev->kind == TP_HOST_RANGE) continue;
        assert_int_equal(ev->corr, 50);
        assert_true(arg_of(&m, ev, "graph id") == 3);
        nodes += (uint64_t)arg_of(&m, ev, "graph node id");
    }
    assert_int_equal(nodes, 101 + 102 + 103);
    assert_int_equal(tp_log_count(), 0);
    tp_model_free(&m);
}

static int fake_kind_enabled(int kind) {
    int (*fn)(int);
    void *sym = fake_sym("fake_cupti_kind_enabled");
    memcpy(&fn, &sym, sizeof(sym));
    return fn(kind);
}

/* cuda_graphs: graph. CUPTI's graph-level trace is on while windows record; a graph launch is
 * one record (its nodes yield none) and one kernel-like event, named after its graph, under the
 * launch's correlation id. */
static void test_graph_level(void **state) {
    (void)state;
    tp_log_reset();
    setenv("FAKE_CUPTI_VERSION", "130100", 1); /* 13.1: the first tprof takes graph traces of */
    tp_gpu_opts o = {.required = 1, .now_ns = test_clock, .graph_level = 1};
    assert_int_equal(tp_cupti_source_create(&o, &src), 0);
    unsetenv("FAKE_CUPTI_VERSION");
    assert_false(fake_kind_enabled(CUPTI_ACTIVITY_KIND_GRAPH_TRACE));
    src.on_action(src.ctx, TP_ACTION_RECORD);
    assert_true(fake_kind_enabled(CUPTI_ACTIVITY_KIND_GRAPH_TRACE));
    CUpti_ActivityAPI launch = api(CUPTI_ACTIVITY_KIND_RUNTIME, 311, 9100, 60);
    CUpti_ActivityKernel10 k = node_kernel(9200, 60, 4, 201);
    CUpti_ActivityGraphTrace2 g = {.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
                                   .correlationId = 60,
                                   .start = 9200,
                                   .end = 9500,
                                   .deviceId = 0,
                                   .graphId = 4,
                                   .contextId = 1,
                                   .streamId = 7};
    assert_true(push(&launch, sizeof(launch)));
    assert_false(push(&k, sizeof(k))); /* traced at the graph's level only */
    assert_true(push(&g, sizeof(g)));
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "w", .start_ns = 9000, .end_ns = 10000, .model_offset_ns = 9000};
    src.collect(src.ctx, &m, &w);
    assert_int_equal(m.nevents, 2);
    const tp_event *ev = find(&m, TP_KERNEL, 60);
    assert_non_null(ev);
    assert_string_equal(tp_model_str(&m, ev->name), "CUDA graph 4");
    assert_string_equal(tp_model_str(&m, ev->cat), "kernel");
    assert_int_equal(ev->ts, 200);
    assert_int_equal(ev->dur, 300);
    assert_true(arg_of(&m, ev, "graph id") == 4);
    assert_true(arg_of(&m, ev, "stream") == 7);
    src.on_action(src.ctx, TP_ACTION_NONE);
    assert_false(fake_kind_enabled(CUPTI_ACTIVITY_KIND_GRAPH_TRACE));
    assert_int_equal(tp_log_count(), 0);
    tp_model_free(&m);
}

/* cuda_graphs: graph with CUPTI 13.0, whose graph-level trace crashed in cudaGraphLaunch on an
 * H100: one warning, and every node recorded as without the key. */
static void test_graph_level_refused_by_old_cupti(void **state) {
    (void)state;
    tp_log_reset();
    setenv("FAKE_CUPTI_VERSION", "130001", 1);
    tp_gpu_opts o = {.required = 1, .now_ns = test_clock, .graph_level = 1};
    assert_int_equal(tp_cupti_source_create(&o, &src), 0);
    unsetenv("FAKE_CUPTI_VERSION");
    assert_int_equal(tp_log_count(), 1);
    src.on_action(src.ctx, TP_ACTION_RECORD);
    assert_false(fake_kind_enabled(CUPTI_ACTIVITY_KIND_GRAPH_TRACE));
    assert_true(fake_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    src.on_action(src.ctx, TP_ACTION_NONE);
    assert_int_equal(tp_log_count(), 1);
}

/* The External id the model keeps for ev (tp_event.ext), -1 for none. */
static int64_t external_id(const tp_event *ev) {
    return ev && ev->ext ? (int64_t)ev->ext : -1;
}

/* Ops push external ids while a window records (tp_opts.ext_corr, which the recorder's
 * tp_op_begin reads): CUPTI ties each call made under one to the innermost, and the call and
 * the GPU work it launched carry it as their first arg. */
static void test_external_ids(void **state) {
    (void)state;
    tp_log_reset();
    create();
    assert_int_equal(tp_opts.ext_corr, 0);
    src.on_action(src.ctx, TP_ACTION_RECORD);
    assert_int_equal(tp_opts.ext_corr, 1);
    assert_true(fake_kind_enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    static const struct {
        int push, pop; /* before the call: ids pushed (0: none), ops popped */
        uint32_t corr; /* the launch's */
        int driver;    /* through the driver (tprof's callback), not the runtime (CUPTI's record) */
        int64_t want;  /* its External id */
    } calls[] = {{41, 0, 70, 0, 41}, {0, 1, 71, 0, -1}, {42, 0, 72, 1, 42}, {43, 0, 73, 0, 43},
                 {0, 0, 76, 1, 43},  {0, 1, 74, 0, 42}, {0, 1, 75, 1, -1}};
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        for (int j = 0; j < calls[i].pop; j++)
            tp_gpu_ext_pop();
        if (calls[i].push) tp_gpu_ext_push((uint64_t)calls[i].push);
        CUpti_ActivityAPI a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, 11000 + 100 * i, calls[i].corr);
        now_ns = 11000 + 100 * (int64_t)i;
        assert_true(calls[i].driver
                        ? driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, calls[i].corr)
                        : push(&a, sizeof(a)));
        CUpti_ActivityKernel10 k = kernel(11050 + 100 * i, 11090 + 100 * i, calls[i].corr, "k");
        assert_true(push(&k, sizeof(k)));
    }
    tp_gpu_ext_pop();
    int (*depth)(void);
    void *sym = fake_sym("fake_cupti_ext_depth");
    memcpy(&depth, &sym, sizeof(sym));
    assert_int_equal(depth(), 0); /* every push popped, on this thread */
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "w", .start_ns = 11000, .end_ns = 12000, .model_offset_ns = 11000};
    src.collect(src.ctx, &m, &w);
    assert_int_equal(m.nevents, 14);
    for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
        assert_int_equal(external_id(find(&m, TP_HOST_RANGE, calls[i].corr)), calls[i].want);
        assert_int_equal(external_id(find(&m, TP_KERNEL, calls[i].corr)), calls[i].want);
    }
    src.on_action(src.ctx, TP_ACTION_NONE);
    assert_int_equal(tp_opts.ext_corr, 0);
    assert_false(fake_kind_enabled(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    assert_int_equal(tp_log_count(), 0);
    tp_model_free(&m);
}

/* Driver launches are caught by callbacks on the launch functions alone, with the DRIVER kind
 * (every driver call) off; a CUPTI that calls nothing back gets the kind instead, and the
 * launches come as its records. Either way the window has the launch, named, on its thread. */
static void test_driver_launches_with_and_without_callbacks(void **state) {
    (void)state;
    int (*called_back)(int);
    void *sym = fake_sym("fake_cupti_called_back");
    memcpy(&called_back, &sym, sizeof(sym));
    for (int refuse = 0; refuse <= 1; refuse++) {
        tp_log_reset();
        if (refuse) setenv("FAKE_CUPTI_NO_CALLBACKS", "1", 1);
        create();
        src.on_action(src.ctx, TP_ACTION_RECORD);
        assert_int_equal(fake_kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER), refuse);
        assert_int_equal(called_back(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel), !refuse);
        assert_int_equal(called_back(CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch), !refuse);
        now_ns = 13100;
        assert_true(driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 90));
        CUpti_ActivityKernel10 k = kernel(13200, 13300, 90, "k");
        assert_true(push(&k, sizeof(k)));
        src.on_action(src.ctx, TP_ACTION_NONE);
        unsetenv("FAKE_CUPTI_NO_CALLBACKS");
        assert_false(fake_kind_enabled(CUPTI_ACTIVITY_KIND_DRIVER));
        assert_false(called_back(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
        assert_false(driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 91)); /* no window */
        tp_model m;
        tp_model_init(&m);
        tp_window_info w = {
            .name = "w", .start_ns = 13000, .end_ns = 14000, .model_offset_ns = 13000};
        src.collect(src.ctx, &m, &w);
        assert_int_equal(m.nevents, 2);
        const tp_event *ev = find(&m, TP_HOST_RANGE, 90);
        assert_non_null(ev);
        assert_string_equal(tp_model_str(&m, ev->name), "cuLaunchKernel");
        assert_int_equal(ev->ts, 100);
        assert_int_equal(m.tracks[ev->track].tid, gettid());
        assert_int_equal(tp_log_count(), 0);
        tp_model_free(&m);
        src.shutdown(src.ctx);
        memset(&src, 0, sizeof(src));
    }
}

/* The process and OS thread of the driver launch `corr` in the window collected into m. */
static void collect_launches(tp_model *m) {
    tp_model_init(m);
    tp_window_info w = {.name = "w", .start_ns = 15000, .end_ns = 16000, .model_offset_ns = 15000};
    src.collect(src.ctx, m, &w);
}

static int launched_by(const tp_model *m, uint32_t corr, int64_t pid, int64_t tid) {
    const tp_event *ev = find(m, TP_HOST_RANGE, corr);
    return ev && m->tracks[ev->track].pid == pid && m->tracks[ev->track].tid == tid;
}

static void *launch_on_thread(void *corr) {
    driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, (uint32_t)(uintptr_t)corr);
    return (void *)(intptr_t)gettid();
}

/* The driver callbacks read the launching thread's ids once a thread (system calls otherwise at
 * every launch): each thread's launches still carry its own ids, and a forked child's its own,
 * not those its parent's thread had read before the fork. */
static void test_driver_launch_ids_per_thread_and_after_fork(void **state) {
    (void)state;
    create();
    src.on_action(src.ctx, TP_ACTION_RECORD);
    now_ns = 15100;
    assert_true(driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 95)); /* this thread read */
    pthread_t t;
    void *other = NULL;
    assert_int_equal(pthread_create(&t, NULL, launch_on_thread, (void *)(uintptr_t)96), 0);
    assert_int_equal(pthread_join(t, &other), 0);
    assert_true(driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 97)); /* read before */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) { /* launches again, and checks its record: the exit status says */
        driver_launch(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 98);
        src.on_action(src.ctx, TP_ACTION_NONE);
        tp_model m;
        collect_launches(&m);
        _exit(launched_by(&m, 98, getpid(), gettid()) ? 0 : 1);
    }
    int status = -1;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    src.on_action(src.ctx, TP_ACTION_NONE);
    tp_model m;
    collect_launches(&m);
    assert_true(launched_by(&m, 95, getpid(), gettid()));
    assert_true((int64_t)(intptr_t)other != gettid());
    assert_true(launched_by(&m, 96, getpid(), (int64_t)(intptr_t)other));
    assert_true(launched_by(&m, 97, getpid(), gettid()));
    assert_null(find(&m, TP_HOST_RANGE, 98)); /* the child's */
    tp_model_free(&m);
}

/* A CUPTI that cannot use the session clock: its own is mapped by the offset at start. */
static void test_clock_offset_without_callback(void **state) {
    (void)state;
    setenv("FAKE_CUPTI_NO_TS_CALLBACK", "1", 1);
    now_ns = 7000; /* the fake's cuptiGetTimestamp says 5000: CUPTI time + 2000 = session time */
    create();
    src.on_action(src.ctx, TP_ACTION_RECORD); /* CUPTI claimed, and its clock read, now */
    unsetenv("FAKE_CUPTI_NO_TS_CALLBACK");
    CUpti_ActivityAPI a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 20, 5100, 30);
    assert_true(push(&a, sizeof(a)));
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "w", .start_ns = 7000, .end_ns = 8000, .model_offset_ns = 7000};
    src.collect(src.ctx, &m, &w);
    assert_int_equal(m.nevents, 1);
    assert_int_equal(m.events[0].ts, 100);
    assert_string_equal(tp_model_str(&m, m.events[0].name), "cudaMalloc");
    tp_model_free(&m);
}

static void test_no_gpu(void **state) {
    (void)state;
    tp_log_reset();
    setenv("FAKE_CUDA_DEVICES", "0", 1);
    setenv("FAKE_CUPTI_SUBSCRIBE", "999", 1);
    tp_gpu_opts o = {.required = 0, .now_ns = test_clock};
    assert_int_equal(tp_cupti_source_create(&o, &src), 0);
    assert_int_equal(tp_log_count(), 0);
    src.on_action(src.ctx, TP_ACTION_WARMUP); /* claiming CUPTI fails: said once, CPU-only */
    src.on_action(src.ctx, TP_ACTION_RECORD);
    unsetenv("FAKE_CUPTI_SUBSCRIBE");
    unsetenv("FAKE_CUDA_DEVICES");
    assert_false(fake_kind_enabled(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    assert_int_equal(tp_log_count(), 1);
    assert_string_equal(tp_log_get(0), "GPU profiling off: CUPTI (" TPROF_FAKE_CUDA_HOME
                                       "/lib64/libcupti.so) cannot start: no CUDA-capable GPU "
                                       "(the driver reports CUDA_ERROR_NO_DEVICE); continuing "
                                       "CPU-only");
}

/* ---- a streamed window: records delivered segment by segment (source.h: collect_settled) ---- */

enum {
    NSTEPS = 40,
    STEP_NS = 60000000, /* 60 ms a step: a flush every other poll (the source flushes at most
                           every 100 ms) */
    LATE_STEP = 5,      /* its kernel completes three flushes late */
};
static const int64_t BASE_NS = 1000000000;

static uint32_t step_corr(int i) {
    return 100 + (uint32_t)i;
}

/* The same program, streamed (a poll at the end of each step, into segs[i]) or not (segs NULL),
 * the window's last model into `last`. Each step launches a kernel; step LATE_STEP's
 * completes late, and the last one's runs after the window's end. */
static void record_steps(size_t max_pending, tp_model *segs, tp_model *last, int64_t *settled) {
    tp_gpu_opts o = {.required = 1, .now_ns = test_clock, .max_pending = max_pending};
    assert_int_equal(tp_cupti_source_create(&o, &src), 0);
    now_ns = BASE_NS - STEP_NS;
    src.on_action(src.ctx, TP_ACTION_WARMUP);
    src.on_action(src.ctx, TP_ACTION_RECORD);
    tp_window_info w = {.start_ns = BASE_NS, .end_ns = INT64_MAX, .model_offset_ns = BASE_NS};
    int64_t end = BASE_NS + (int64_t)NSTEPS * STEP_NS;
    for (int i = 0; i < NSTEPS; i++) {
        int64_t t = BASE_NS + (int64_t)i * STEP_NS;
        now_ns = t;
        CUpti_ActivityAPI a =
            api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, (uint64_t)t + 1000, step_corr(i));
        int64_t ks = i == NSTEPS - 1 ? end + 1000 : t + 2000;
        CUpti_ActivityKernel10 k =
            kernel((uint64_t)ks, (uint64_t)ks + 1000, step_corr(i), "_Z4stepv");
        assert_true(push(&a, sizeof(a)));
        if (i == LATE_STEP || i == NSTEPS - 1)
            assert_true(push_late(&k, sizeof(k), 3));
        else
            assert_true(push(&k, sizeof(k)));
        now_ns = t + STEP_NS - 1000;
        if (segs) settled[i] = src.collect_settled(src.ctx, &segs[i], &w);
    }
    now_ns = end + 2000;
    w.end_ns = end;
    src.on_action(src.ctx, TP_ACTION_NONE);
    src.collect(src.ctx, last, &w);
}

/* The segment (index into segs) holding the event of this kind and correlation id; -1: none. */
static int segment_of(const tp_model *segs, size_t n, int kind, uint32_t corr) {
    for (size_t s = 0; s < n; s++)
        if (find(&segs[s], kind, corr)) return (int)s;
    return -1;
}

/* A kernel late by three flushes holds its launch, and every launch after it, back from the
 * segments (the time settled stays before it) until it arrives, then both go into one segment;
 * the window's last kernel, still running at its end, joins its launch in the last model; the
 * segments and the last model hold, between them, the events one collect at the window's end
 * gives the same program, each once; and the last model has the GPU stream's track, on which
 * the segments put every kernel but the last, for its name in the trace. */
static void test_streamed_window_segments(void **state) {
    (void)state;
    tp_log_reset();
    tp_model segs[NSTEPS + 1], whole;
    int64_t settled[NSTEPS];
    for (int i = 0; i <= NSTEPS; i++)
        tp_model_init(&segs[i]);
    tp_model_init(&whole);
    record_steps(0, segs, &segs[NSTEPS], settled);
    end_source(NULL);
    record_steps(0, NULL, &whole, NULL);
    end_source(NULL);

    size_t in_segments = 0;
    for (int i = 0; i < NSTEPS; i++)
        in_segments += segs[i].nevents;
    assert_true(in_segments >= (size_t)(NSTEPS - 4) * 2); /* most are out before the window ends */
    size_t total = in_segments + segs[NSTEPS].nevents;
    assert_int_equal(total, whole.nevents);
    assert_int_equal(count(&whole, TP_KERNEL), NSTEPS);
    for (int i = 0; i < NSTEPS; i++) {
        uint32_t corr = step_corr(i);
        int sk = segment_of(segs, NSTEPS + 1, TP_KERNEL, corr);
        assert_true(sk >= 0);
        assert_int_equal(segment_of(segs, NSTEPS + 1, TP_HOST_RANGE, corr), sk);
        const tp_event *a = find(&segs[sk], TP_KERNEL, corr), *b = find(&whole, TP_KERNEL, corr);
        assert_non_null(b);
        assert_int_equal(a->ts, b->ts);
        assert_int_equal(a->dur, b->dur);
        a = find(&segs[sk], TP_HOST_RANGE, corr), b = find(&whole, TP_HOST_RANGE, corr);
        assert_non_null(b);
        assert_int_equal(a->ts, b->ts);
    }
    int late = segment_of(segs, NSTEPS + 1, TP_KERNEL, step_corr(LATE_STEP));
    assert_true(late > LATE_STEP && late < NSTEPS); /* held, then out before the window ends */
    int64_t late_launch = BASE_NS + (int64_t)LATE_STEP * STEP_NS + 1000;
    for (int i = LATE_STEP; i < late; i++)
        assert_true(settled[i] <= late_launch);
    assert_true(settled[NSTEPS - 2] > late_launch);
    for (int i = 1; i < NSTEPS; i++)
        assert_true(settled[i] >= settled[i - 1]);
    assert_int_equal(segment_of(segs, NSTEPS + 1, TP_KERNEL, step_corr(NSTEPS - 1)), NSTEPS);
    int stream_track = 0;
    for (size_t t = 0; t < segs[NSTEPS].ntracks; t++)
        stream_track |= segs[NSTEPS].tracks[t].pid == 0 && segs[NSTEPS].tracks[t].tid == 7;
    assert_true(stream_track);
    assert_int_equal(segs[NSTEPS].dropped_events, 0);
    assert_int_equal(tp_log_count(), 0);
    for (int i = 0; i <= NSTEPS; i++)
        tp_model_free(&segs[i]);
    tp_model_free(&whole);
}

/* The source's pending records no longer grow with a streamed window: with room for 24 records,
 * the window's 80 go through its segments without a drop, where one collect at its end drops
 * most of them. */
static void test_streamed_window_pending_bounded(void **state) {
    (void)state;
    tp_log_reset();
    tp_model segs[NSTEPS + 1], whole;
    int64_t settled[NSTEPS];
    for (int i = 0; i <= NSTEPS; i++)
        tp_model_init(&segs[i]);
    tp_model_init(&whole);
    record_steps(24, segs, &segs[NSTEPS], settled);
    end_source(NULL);
    size_t kernels = 0;
    for (int i = 0; i <= NSTEPS; i++)
        kernels += count(&segs[i], TP_KERNEL);
    assert_int_equal(kernels, NSTEPS);
    assert_int_equal(segs[NSTEPS].dropped_events, 0);
    assert_int_equal(tp_log_count(), 0);
    record_steps(24, NULL, &whole, NULL); /* control: the same, not streamed */
    end_source(NULL);
    assert_true(whole.dropped_events > 0);
    assert_true(count(&whole, TP_KERNEL) < NSTEPS);
    for (int i = 0; i <= NSTEPS; i++)
        tp_model_free(&segs[i]);
    tp_model_free(&whole);
}

/* A source recording a window opened at BASE_NS; the window as its segments see it (no end). */
static tp_window_info streamed_window_started(void) {
    tp_log_reset();
    create();
    now_ns = BASE_NS;
    src.on_action(src.ctx, TP_ACTION_RECORD);
    return (tp_window_info){.start_ns = BASE_NS, .end_ns = INT64_MAX, .model_offset_ns = BASE_NS};
}

/* A graph launch is out with its first node, and holds the time settled until a flush brings no
 * node of it; a node arriving after the window's end still goes to the launch's window (its last
 * model), not to the window its start lies in. */
static void test_streamed_late_node_stays_in_its_window(void **state) {
    (void)state;
    tp_window_info w = streamed_window_started();
    CUpti_ActivityAPI launch = api(CUPTI_ACTIVITY_KIND_RUNTIME, 311, BASE_NS + 1000, 60);
    CUpti_ActivityKernel10 k1 = node_kernel(BASE_NS + 2000, 60, 4, 201);
    CUpti_ActivityKernel10 k2 = node_kernel(BASE_NS + 400000000, 60, 4, 202);
    assert_true(push(&launch, sizeof(launch)) && push(&k1, sizeof(k1)));
    tp_model seg, last, next;
    tp_model_init(&seg);
    tp_model_init(&last);
    tp_model_init(&next);
    now_ns = BASE_NS + 10000;
    src.collect_settled(src.ctx, &seg, &w); /* the first flush: nothing settled yet */
    assert_int_equal(seg.nevents, 0);
    now_ns = BASE_NS + 200000000;
    /* out with its first node; more may come, so the time settled stays at the launch (the
     * summary is not cut after it) until a flush brings none */
    assert_int_equal(src.collect_settled(src.ctx, &seg, &w), BASE_NS + 1000);
    assert_non_null(find(&seg, TP_HOST_RANGE, 60));
    assert_int_equal(count(&seg, TP_KERNEL), 1);
    now_ns = BASE_NS + 300000000;
    assert_true(src.collect_settled(src.ctx, &seg, &w) > BASE_NS + 1000);
    assert_int_equal(count(&seg, TP_KERNEL), 1);
    assert_true(push_late(&k2, sizeof(k2), 1)); /* the second node, after the window's end */
    w.end_ns = BASE_NS + 300000000;
    now_ns = BASE_NS + 500000000;
    src.collect(src.ctx, &last, &w);
    assert_int_equal(count(&last, TP_KERNEL), 1);
    assert_int_equal(find(&last, TP_KERNEL, 60)->ts, 400000000);
    tp_window_info w2 = {
        .start_ns = w.end_ns, .end_ns = BASE_NS + 900000000, .model_offset_ns = BASE_NS};
    src.collect(src.ctx, &next, &w2);
    assert_int_equal(count(&next, TP_KERNEL), 0); /* not the next window's */
    assert_int_equal(tp_log_count(), 0);
    tp_model_free(&seg);
    tp_model_free(&last);
    tp_model_free(&next);
}

/* A launch whose kernel does not come holds the segments back for a while (STREAM_WAIT_MS, 2 s),
 * then goes without it, so that the records after it do not pile up; the kernel, arriving
 * later, still goes to the launch's window. */
static void test_streamed_launch_waits_for_its_work_a_while(void **state) {
    (void)state;
    tp_window_info w = streamed_window_started();
    CUpti_ActivityAPI lonely = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, BASE_NS + 1000, 70);
    assert_true(push(&lonely, sizeof(lonely)));
    tp_model seg[60], last;
    int out = -1, held = 0;
    for (int i = 0; i < 60; i++) {
        int64_t t = BASE_NS + (int64_t)(i + 1) * STEP_NS;
        CUpti_ActivityAPI a = api(CUPTI_ACTIVITY_KIND_RUNTIME, 211, (uint64_t)t, 80 + (uint32_t)i);
        CUpti_ActivityKernel10 k =
            kernel((uint64_t)t + 100, (uint64_t)t + 200, a.correlationId, "_Z4stepv");
        assert_true(push(&a, sizeof(a)) && push(&k, sizeof(k)));
        now_ns = t + STEP_NS / 2;
        tp_model_init(&seg[i]);
        int64_t settled = src.collect_settled(src.ctx, &seg[i], &w);
        if (out < 0 && find(&seg[i], TP_HOST_RANGE, 70)) out = i;
        held += out < 0 && settled <= BASE_NS + 1000;
    }
    /* held for about 2 s (33 steps of 60 ms), not for good */
    assert_true(out > 25 && out < 40);
    assert_true(held > 25);
    for (int i = 0; i < out; i++) /* those behind it waited, then came along */
        assert_int_equal(seg[i].nevents, 0);
    assert_true(count(&seg[out], TP_HOST_RANGE) >= (size_t)out - 2);
    CUpti_ActivityKernel10 k = kernel(BASE_NS + 2000, BASE_NS + 3000, 70, "_Z4slowv");
    assert_true(push(&k, sizeof(k)));
    w.end_ns = BASE_NS + 62 * (int64_t)STEP_NS;
    now_ns = w.end_ns + 1000;
    tp_model_init(&last);
    src.collect(src.ctx, &last, &w);
    assert_non_null(find(&last, TP_KERNEL, 70)); /* by its launch, though it came so late */
    assert_int_equal(tp_log_count(), 0);
    for (int i = 0; i < 60; i++)
        tp_model_free(&seg[i]);
    tp_model_free(&last);
}

int main(int argc, char **argv) {
    (void)argc;
    if (!getenv("TPROF_TEST_FAKES")) {
        setenv("TPROF_TEST_FAKES", "1", 1);
        setenv("LD_LIBRARY_PATH", TPROF_FAKE_DRIVER_DIR, 1);
        setenv("CUDA_HOME", TPROF_FAKE_CUDA_HOME, 1);
        execv("/proc/self/exe", argv);
        perror("test_gpu_e2e: re-executing with the fake CUDA libraries");
        return 1;
    }
    tp_log_set_quiet(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_found_through_cuda_home, end_source),
        cmocka_unit_test_teardown(test_one_window, end_source),
        cmocka_unit_test_teardown(test_back_to_back_windows, end_source),
        cmocka_unit_test_teardown(test_flight_ring, end_source),
        cmocka_unit_test_teardown(test_kernel_never_completes, end_source),
        cmocka_unit_test_teardown(test_graph_nodes, end_source),
        cmocka_unit_test_teardown(test_graph_level, end_source),
        cmocka_unit_test_teardown(test_graph_level_refused_by_old_cupti, end_source),
        cmocka_unit_test_teardown(test_external_ids, end_source),
        cmocka_unit_test_teardown(test_driver_launches_with_and_without_callbacks, end_source),
        cmocka_unit_test_teardown(test_driver_launch_ids_per_thread_and_after_fork, end_source),
        cmocka_unit_test_teardown(test_clock_offset_without_callback, end_source),
        cmocka_unit_test_teardown(test_no_gpu, end_source),
        cmocka_unit_test_teardown(test_streamed_window_segments, end_source),
        cmocka_unit_test_teardown(test_streamed_window_pending_bounded, end_source),
        cmocka_unit_test_teardown(test_streamed_late_node_stays_in_its_window, end_source),
        cmocka_unit_test_teardown(test_streamed_launch_waits_for_its_work_a_while, end_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
int main(void) {
    return 77;
} /* built without CUDA's CUPTI headers: skipped */
#endif
