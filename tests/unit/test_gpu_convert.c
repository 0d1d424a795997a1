/* test_gpu_convert.c - CUPTI activity records (the CUDA 13 structs, filled in here) as model
 * events: names, kinds, categories, tracks, times after the clock offset, every arg, correlation,
 * memory totals, occupancy, and which window each pending record lands in.
 *
 * Expected values come from outside tprof: Kineto's own output for the same launches in the
 * fixtures (gaunernst_bert on H100, nccl_data on A100), the Itanium C++ ABI's demangling, and
 * arithmetic written out in each test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#ifdef TPROF_HAVE_CUPTI_HEADERS

#include "gpu/convert.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ---- */

static const tp_arg *find_arg(const tp_model *m, const tp_event *ev, const char *key) {
    tp_str k = tp_strtab_find(&m->strings, key, strlen(key));
    return k == UINT32_MAX ? NULL : tp_event_arg(m, ev, k);
}

/* Arg values, or values no test expects when the arg is absent or of another type. */
static const char *arg_str(const tp_model *m, const tp_event *ev, const char *key) {
    const tp_arg *a = find_arg(m, ev, key);
    return a && (a->type == TP_ARG_STR || a->type == TP_ARG_JSON) ? tp_model_str(m, a->v.s) : "?";
}

static int64_t arg_int(const tp_model *m, const tp_event *ev, const char *key) {
    const tp_arg *a = find_arg(m, ev, key);
    return a && a->type == TP_ARG_INT ? a->v.i : INT64_MIN;
}

static double arg_double(const tp_model *m, const tp_event *ev, const char *key) {
    const tp_arg *a = find_arg(m, ev, key);
    return a && a->type == TP_ARG_DOUBLE ? a->v.d : -1e300;
}

static int has_arg(const tp_model *m, const tp_event *ev, const char *key) {
    return find_arg(m, ev, key) != NULL;
}

/* The arg keys of ev in order, comma-separated. */
static void arg_keys(const tp_model *m, const tp_event *ev, char *out, size_t n) {
    out[0] = '\0';
    for (uint32_t i = 0; i < ev->nargs; i++) {
        size_t len = strlen(out);
        snprintf(out + len, n - len, "%s%s", i ? "," : "",
                 tp_model_str(m, m->args[ev->arg0 + i].key));
    }
}

static void check_track(const tp_model *m, const tp_event *ev, int64_t pid, int64_t tid) {
    assert_true(ev->track < m->ntracks);
    assert_int_equal(m->tracks[ev->track].pid, pid);
    assert_int_equal(m->tracks[ev->track].tid, tid);
}

static const char *fixture_api_name(int driver, uint32_t cbid) {
    if (!driver && cbid == 211) return "cudaLaunchKernel_v7000";
    if (!driver && cbid == 20) return "cudaMalloc_v3020";
    if (driver && cbid == 307) return "cuLaunchKernel";
    if (!driver && cbid == 500) return "_v12"; /* nothing but a suffix: kept whole */
    return NULL;
}

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

static demangle_fn libstdcxx_demangler(void) {
    void *h = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
    void *sym = h ? dlsym(h, "__cxa_demangle") : NULL;
    demangle_fn f = NULL;
    memcpy(&f, &sym, sizeof(sym));
    return f;
}

/* Device properties as the fixtures' deviceProperties state them, plus the per-SM block limit
 * and the per-block shared memory reservation of compute capability 8.0 and 9.0 (CUDA C
 * Programming Guide, "Technical Specifications per Compute Capability"). */
static tp_cupti_dev h100(void) {
    return (tp_cupti_dev){.id = 0,
                          .name = "NVIDIA H100 80GB HBM3",
                          .total_mem = 85018279936u,
                          .cc_major = 9,
                          .num_sms = 132,
                          .warp_size = 32,
                          .max_threads_per_sm = 2048,
                          .max_blocks_per_sm = 32,
                          .regs_per_sm = 65536,
                          .smem_per_sm = 233472,
                          .smem_reserved_per_block = 1024};
}

static tp_cupti_dev a100(void) {
    return (tp_cupti_dev){.id = 0,
                          .name = "NVIDIA A100-PG509-200",
                          .total_mem = 42297524224u,
                          .cc_major = 8,
                          .num_sms = 108,
                          .warp_size = 32,
                          .max_threads_per_sm = 2048,
                          .max_blocks_per_sm = 32,
                          .regs_per_sm = 65536,
                          .smem_per_sm = 167936,
                          .smem_reserved_per_block = 1024};
}

static void set_one_device(tp_cupti_conv *c, tp_cupti_dev d) {
    tp_cupti_dev *devs = malloc(sizeof(*devs));
    assert_non_null(devs);
    *devs = d;
    tp_cupti_conv_set_devices(c, devs, 1);
}

/* ---- layouts ---- */

/* Records from libcupti 11 and 12 have older struct versions; every field tprof reads must sit
 * where the CUDA 13 struct has it. */
static void test_fields_read_have_stable_offsets(void **state) {
    (void)state;
#define SAME(old, cur, f) assert_int_equal(offsetof(old, f), offsetof(cur, f))
#define KERNEL(old)                                                                                \
    SAME(old, CUpti_ActivityKernel10, registersPerThread);                                         \
    SAME(old, CUpti_ActivityKernel10, start);                                                      \
    SAME(old, CUpti_ActivityKernel10, end);                                                        \
    SAME(old, CUpti_ActivityKernel10, deviceId);                                                   \
    SAME(old, CUpti_ActivityKernel10, contextId);                                                  \
    SAME(old, CUpti_ActivityKernel10, streamId);                                                   \
    SAME(old, CUpti_ActivityKernel10, gridX);                                                      \
    SAME(old, CUpti_ActivityKernel10, gridZ);                                                      \
    SAME(old, CUpti_ActivityKernel10, blockX);                                                     \
    SAME(old, CUpti_ActivityKernel10, blockZ);                                                     \
    SAME(old, CUpti_ActivityKernel10, staticSharedMemory);                                         \
    SAME(old, CUpti_ActivityKernel10, dynamicSharedMemory);                                        \
    SAME(old, CUpti_ActivityKernel10, correlationId);                                              \
    SAME(old, CUpti_ActivityKernel10, name)
    KERNEL(CUpti_ActivityKernel4);
    KERNEL(CUpti_ActivityKernel7);
    KERNEL(CUpti_ActivityKernel8);
    KERNEL(CUpti_ActivityKernel9);
#define MEMCPY_HEAD(old)                                                                           \
    SAME(old, CUpti_ActivityMemcpy6, copyKind);                                                    \
    SAME(old, CUpti_ActivityMemcpy6, srcKind);                                                     \
    SAME(old, CUpti_ActivityMemcpy6, dstKind);                                                     \
    SAME(old, CUpti_ActivityMemcpy6, bytes);                                                       \
    SAME(old, CUpti_ActivityMemcpy6, start);                                                       \
    SAME(old, CUpti_ActivityMemcpy6, end);                                                         \
    SAME(old, CUpti_ActivityMemcpy6, deviceId);                                                    \
    SAME(old, CUpti_ActivityMemcpy6, contextId);                                                   \
    SAME(old, CUpti_ActivityMemcpy6, streamId)
#define MEMCPY(old)                                                                                \
    MEMCPY_HEAD(old);                                                                              \
    SAME(old, CUpti_ActivityMemcpy6, correlationId)
    MEMCPY(CUpti_ActivityMemcpy4);
    MEMCPY(CUpti_ActivityMemcpy5);
#define P2P(old)                                                                                   \
    SAME(old, CUpti_ActivityMemcpyPtoP4, bytes);                                                   \
    SAME(old, CUpti_ActivityMemcpyPtoP4, start);                                                   \
    SAME(old, CUpti_ActivityMemcpyPtoP4, streamId);                                                \
    SAME(old, CUpti_ActivityMemcpyPtoP4, srcDeviceId);                                             \
    SAME(old, CUpti_ActivityMemcpyPtoP4, dstContextId);                                            \
    SAME(old, CUpti_ActivityMemcpyPtoP4, correlationId)
    P2P(CUpti_ActivityMemcpyPtoP2);
    P2P(CUpti_ActivityMemcpyPtoP3);
    /* a peer-to-peer record is read as a memcpy record up to streamId */
    MEMCPY_HEAD(CUpti_ActivityMemcpyPtoP4);
#define MEMSET(old)                                                                                \
    SAME(old, CUpti_ActivityMemset4, bytes);                                                       \
    SAME(old, CUpti_ActivityMemset4, start);                                                       \
    SAME(old, CUpti_ActivityMemset4, end);                                                         \
    SAME(old, CUpti_ActivityMemset4, deviceId);                                                    \
    SAME(old, CUpti_ActivityMemset4, streamId);                                                    \
    SAME(old, CUpti_ActivityMemset4, correlationId);                                               \
    SAME(old, CUpti_ActivityMemset4, memoryKind)
    MEMSET(CUpti_ActivityMemset2);
    MEMSET(CUpti_ActivityMemset3);
    SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, type);
    SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, start);
    SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, correlationId);
    SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, contextId);
    SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, streamId);
    SAME(CUpti_ActivitySynchronization, CUpti_ActivitySynchronization2, cudaEventId);
#define MEMORY(old)                                                                                \
    SAME(old, CUpti_ActivityMemory4, memoryOperationType);                                         \
    SAME(old, CUpti_ActivityMemory4, memoryKind);                                                  \
    SAME(old, CUpti_ActivityMemory4, address);                                                     \
    SAME(old, CUpti_ActivityMemory4, bytes);                                                       \
    SAME(old, CUpti_ActivityMemory4, timestamp);                                                   \
    SAME(old, CUpti_ActivityMemory4, processId);                                                   \
    SAME(old, CUpti_ActivityMemory4, deviceId)
    MEMORY(CUpti_ActivityMemory2);
    MEMORY(CUpti_ActivityMemory3);
    /* the graph fields, since the records that brought graphId (CUDA 11.1) */
#define GRAPH(old, cur)                                                                            \
    SAME(old, cur, graphId);                                                                       \
    SAME(old, cur, graphNodeId)
    GRAPH(CUpti_ActivityKernel6, CUpti_ActivityKernel10);
    GRAPH(CUpti_ActivityKernel7, CUpti_ActivityKernel10);
    GRAPH(CUpti_ActivityKernel8, CUpti_ActivityKernel10);
    GRAPH(CUpti_ActivityKernel9, CUpti_ActivityKernel10);
    GRAPH(CUpti_ActivityMemcpy4, CUpti_ActivityMemcpy6);
    GRAPH(CUpti_ActivityMemcpy5, CUpti_ActivityMemcpy6);
    GRAPH(CUpti_ActivityMemset3, CUpti_ActivityMemset4);
    GRAPH(CUpti_ActivityMemcpyPtoP3, CUpti_ActivityMemcpyPtoP4);
    SAME(CUpti_ActivityGraphTrace, CUpti_ActivityGraphTrace2, correlationId);
    SAME(CUpti_ActivityGraphTrace, CUpti_ActivityGraphTrace2, start);
    SAME(CUpti_ActivityGraphTrace, CUpti_ActivityGraphTrace2, end);
    SAME(CUpti_ActivityGraphTrace, CUpti_ActivityGraphTrace2, deviceId);
    SAME(CUpti_ActivityGraphTrace, CUpti_ActivityGraphTrace2, graphId);
    SAME(CUpti_ActivityGraphTrace, CUpti_ActivityGraphTrace2, contextId);
    SAME(CUpti_ActivityGraphTrace, CUpti_ActivityGraphTrace2, streamId);
    SAME(CUpti_ActivityContext, CUpti_ActivityContext3, contextId);
    SAME(CUpti_ActivityContext, CUpti_ActivityContext3, deviceId);
}

/* ---- kernels ---- */

/* The same launch as bert's first indexSelectLargeIndex kernel on the H100 (Kineto wrote
 * blocks per SM 4.272727, warps per SM 17.09091, occupancy 27 for it). */
static void test_kernel_as_kineto_writes_it(void **state) {
    (void)state;
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    c.demangle = libstdcxx_demangler();
    assert_non_null(c.demangle);
    set_one_device(&c, h100());
    tp_model m;
    tp_model_init(&m);
    CUpti_ActivityKernel10 k = {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                .registersPerThread = 32,
                                .start = 5000000123,
                                .end = 5000003259,
                                .deviceId = 0,
                                .contextId = 1,
                                .streamId = 7,
                                .gridX = 564,
                                .gridY = 1,
                                .gridZ = 1,
                                .blockX = 128,
                                .blockY = 1,
                                .blockZ = 1,
                                .correlationId = 8218,
                                .name = "_Z6kernelPfi"};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&k, 5000000000), 1);
    assert_int_equal(m.nevents, 1);
    const tp_event *ev = &m.events[0];
    assert_int_equal(ev->kind, TP_KERNEL);
    assert_string_equal(tp_model_str(&m, ev->name), "kernel(float*, int)");
    assert_string_equal(tp_model_str(&m, ev->cat), "kernel");
    assert_int_equal(ev->ts, 123);
    assert_int_equal(ev->dur, 3136);
    assert_int_equal(ev->corr, 8218);
    check_track(&m, ev, 0, 7);
    char keys[512];
    arg_keys(&m, ev, keys, sizeof(keys));
    assert_string_equal(keys, "queued,device,context,stream,registers per thread,shared memory,"
                              "blocks per SM,warps per SM,grid,block,est. achieved occupancy %");
    assert_int_equal(arg_int(&m, ev, "queued"), 0);
    assert_int_equal(arg_int(&m, ev, "device"), 0);
    assert_int_equal(arg_int(&m, ev, "context"), 1);
    assert_int_equal(arg_int(&m, ev, "stream"), 7);
    assert_int_equal(arg_int(&m, ev, "registers per thread"), 32);
    assert_int_equal(arg_int(&m, ev, "shared memory"), 0);
    assert_float_equal(arg_double(&m, ev, "blocks per SM"), 4.272727, 1e-6);
    assert_float_equal(arg_double(&m, ev, "warps per SM"), 17.09091, 1e-5);
    assert_string_equal(arg_str(&m, ev, "grid"), "[564, 1, 1]");
    assert_string_equal(arg_str(&m, ev, "block"), "[128, 1, 1]");
    assert_int_equal(arg_int(&m, ev, "est. achieved occupancy %"), 27);
    tp_model_free(&m);
    tp_cupti_conv_free(&c);
}

/* Occupancy against Kineto's values for launches of the fixtures, where registers or shared
 * memory are what limits resident blocks. */
static void test_occupancy_matches_kineto(void **state) {
    (void)state;
    tp_cupti_dev a = a100(), h = h100();
    /* nccl_data: cudnn bn_bw_1C11 kernel: 40 registers, 400 B shared, 512x512 -> 75 */
    assert_int_equal(tp_cupti_occupancy_pct(&a, 40, 400, 512, 512.0 / 108), 75);
    /* nccl_data: vectorized_elementwise_kernel, grid 1 x block 128 -> 0.009 blocks per SM -> 0 */
    assert_int_equal(tp_cupti_occupancy_pct(&a, 16, 0, 128, 1.0 / 108), 0);
    /* H100, 128 threads, plenty of blocks: warps allow 16 blocks, registers (255/thread) allow
     * 2 per sub-partition x 4 = 8 warps = 2 blocks -> 2 x 128 / 2048 = 12.5% -> 13 */
    assert_int_equal(tp_cupti_occupancy_pct(&h, 255, 0, 128, 50), 13);
    /* shared memory bound: (100000 + 1024 reserved) rounded to 101120 -> 2 blocks of 256 -> 25 */
    assert_int_equal(tp_cupti_occupancy_pct(&h, 16, 100000, 256, 50), 25);
    assert_int_equal(tp_cupti_occupancy_pct(NULL, 16, 0, 128, 1), -1);
    tp_cupti_dev unknown = {0};
    assert_int_equal(tp_cupti_occupancy_pct(&unknown, 16, 0, 128, 1), -1);
}

static void test_kernel_without_device_or_demangler(void **state) {
    (void)state;
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    tp_model m;
    tp_model_init(&m);
    CUpti_ActivityKernel10 k = {.kind = CUPTI_ACTIVITY_KIND_KERNEL,
                                .start = 100,
                                .end = 90,
                                .deviceId = 3,
                                .streamId = 13,
                                .gridX = 2,
                                .gridY = 3,
                                .gridZ = 4,
                                .blockX = 32,
                                .blockY = 2,
                                .blockZ = 1,
                                .staticSharedMemory = 1024,
                                .dynamicSharedMemory = 512,
                                .correlationId = 5,
                                .name = "_Z6kernelPfi"};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&k, 0), 1);
    const tp_event *ev = &m.events[0];
    assert_string_equal(tp_model_str(&m, ev->name), "_Z6kernelPfi"); /* no demangler: as given */
    assert_int_equal(ev->dur, 0);                                    /* end before start */
    check_track(&m, ev, 3, 13);
    assert_int_equal(arg_int(&m, ev, "shared memory"), 1536);
    assert_string_equal(arg_str(&m, ev, "grid"), "[2, 3, 4]");
    assert_false(has_arg(&m, ev, "blocks per SM")); /* device unknown: no occupancy figures */
    assert_false(has_arg(&m, ev, "est. achieved occupancy %"));
    /* no timestamps: nothing */
    k.start = k.end = 0;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&k, 0), 0);
    assert_int_equal(m.nevents, 1);
    tp_model_free(&m);
    tp_cupti_conv_free(&c);
}

/* ---- copies and sets ---- */

static double arg_or(const tp_model *m, const tp_event *ev, const char *key) {
    double v = -1;
    return tp_event_arg_number(m, ev, key, &v) == 0 ? v : -1;
}

/* Work run by a graph launch carries its graph and node after Kineto's args (a peer-to-peer
 * copy has them elsewhere than a memcpy); outside graphs, no graph args. A graph traced whole is
 * one kernel-like event. */
static void test_graph_records(void **state) {
    (void)state;
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    tp_model m;
    tp_model_init(&m);
    CUpti_ActivityKernel10 k = {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                .start = 1000,
                                .end = 1100,
                                .gridX = 1,
                                .gridY = 1,
                                .gridZ = 1,
                                .blockX = 32,
                                .blockY = 1,
                                .blockZ = 1,
                                .correlationId = 5,
                                .name = "node",
                                .graphNodeId = 0x100000007ull,
                                .graphId = 9};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&k, 0), 1);
    CUpti_ActivityMemcpyPtoP4 p2p = {.kind = CUPTI_ACTIVITY_KIND_MEMCPY2,
                                     .bytes = 10,
                                     .start = 1200,
                                     .end = 1300,
                                     .correlationId = 5,
                                     .graphNodeId = 8,
                                     .graphId = 9};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&p2p, 0), 1);
    k.graphId = 0, k.graphNodeId = 0, k.correlationId = 6;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&k, 0), 1);
    CUpti_ActivityGraphTrace2 g = {.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE,
                                   .correlationId = 7,
                                   .start = 2000,
                                   .end = 2600,
                                   .deviceId = 1,
                                   .graphId = 9,
                                   .contextId = 2,
                                   .streamId = 13};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&g, 500), 1);
    assert_int_equal(m.nevents, 4);
    const tp_event *e = &m.events[0];
    assert_true(arg_or(&m, e, "graph id") == 9);
    assert_true(arg_or(&m, e, "graph node id") == (double)0x100000007ull);
    assert_string_equal(tp_model_str(&m, m.args[e->arg0 + e->nargs - 1].key), "graph node id");
    e = &m.events[1];
    assert_true(arg_or(&m, e, "graph id") == 9 && arg_or(&m, e, "graph node id") == 8);
    e = &m.events[2];
    assert_true(arg_or(&m, e, "graph id") == -1 && arg_or(&m, e, "graph node id") == -1);
    e = &m.events[3];
    assert_int_equal(e->kind, TP_KERNEL);
    assert_string_equal(tp_model_str(&m, e->name), "CUDA graph 9");
    assert_int_equal(e->corr, 7);
    assert_int_equal(e->ts, 1500);
    assert_int_equal(e->dur, 600);
    assert_int_equal(m.tracks[e->track].pid, 1);
    assert_int_equal(m.tracks[e->track].tid, 13);
    assert_true(arg_or(&m, e, "graph id") == 9 && arg_or(&m, e, "context") == 2);
    tp_model_free(&m);
    tp_cupti_conv_free(&c);
}

static void test_memcpy_memset_p2p(void **state) {
    (void)state;
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    tp_model m;
    tp_model_init(&m);
    /* nccl_data's second DtoD copy: 8192000 bytes in 16.832 us -> 486.6920152091255 GB/s */
    CUpti_ActivityMemcpy6 mc = {.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
                                .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOD,
                                .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                .bytes = 8192000,
                                .start = 20000,
                                .end = 36832,
                                .deviceId = 0,
                                .contextId = 1,
                                .streamId = 7,
                                .correlationId = 64019};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&mc, 10000), 1);
    mc.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    mc.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
    mc.start = mc.end = 40000; /* zero duration: no bandwidth */
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&mc, 10000), 1);
    /* nccl_data's memset: 6291456 bytes in 4.96 us -> 1268.4387096774194 GB/s */
    CUpti_ActivityMemset4 ms = {.kind = CUPTI_ACTIVITY_KIND_MEMSET,
                                .bytes = 6291456,
                                .start = 50000,
                                .end = 54960,
                                .deviceId = 1,
                                .contextId = 2,
                                .streamId = 9,
                                .correlationId = 57609,
                                .memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&ms, 10000), 1);
    CUpti_ActivityMemcpyPtoP4 p2p = {.kind = CUPTI_ACTIVITY_KIND_MEMCPY2,
                                     .copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP,
                                     .srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                     .dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                                     .bytes = 1000,
                                     .start = 60000,
                                     .end = 60500,
                                     .deviceId = 1,
                                     .contextId = 2,
                                     .streamId = 3,
                                     .srcDeviceId = 0,
                                     .srcContextId = 1,
                                     .dstDeviceId = 1,
                                     .dstContextId = 2,
                                     .correlationId = 77};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&p2p, 10000), 1);
    assert_int_equal(m.nevents, 4);

    const tp_event *ev = &m.events[0];
    char keys[256];
    assert_int_equal(ev->kind, TP_MEMCPY);
    assert_string_equal(tp_model_str(&m, ev->name), "Memcpy DtoD (Device -> Device)");
    assert_string_equal(tp_model_str(&m, ev->cat), "gpu_memcpy");
    assert_int_equal(ev->ts, 10000);
    assert_int_equal(ev->dur, 16832);
    assert_int_equal(ev->corr, 64019);
    check_track(&m, ev, 0, 7);
    arg_keys(&m, ev, keys, sizeof(keys));
    assert_string_equal(keys, "device,context,stream,bytes,memory bandwidth (GB/s)");
    assert_int_equal(arg_int(&m, ev, "bytes"), 8192000);
    assert_true(arg_double(&m, ev, "memory bandwidth (GB/s)") == 486.6920152091255);

    ev = &m.events[1];
    assert_string_equal(tp_model_str(&m, ev->name), "Memcpy HtoD (Pageable -> Device)");
    assert_false(has_arg(&m, ev, "memory bandwidth (GB/s)"));

    ev = &m.events[2];
    assert_int_equal(ev->kind, TP_MEMSET);
    assert_string_equal(tp_model_str(&m, ev->name), "Memset (Device)");
    assert_string_equal(tp_model_str(&m, ev->cat), "gpu_memset");
    check_track(&m, ev, 1, 9);
    assert_int_equal(arg_int(&m, ev, "device"), 1);
    assert_int_equal(arg_int(&m, ev, "context"), 2);
    assert_true(arg_double(&m, ev, "memory bandwidth (GB/s)") == 1268.4387096774194);

    ev = &m.events[3];
    assert_int_equal(ev->kind, TP_MEMCPY);
    assert_string_equal(tp_model_str(&m, ev->name), "Memcpy PtoP (Device -> Device)");
    check_track(&m, ev, 1, 3);
    arg_keys(&m, ev, keys, sizeof(keys));
    assert_string_equal(keys, "fromDevice,inDevice,toDevice,fromContext,inContext,toContext,"
                              "stream,bytes,memory bandwidth (GB/s)");
    assert_int_equal(arg_int(&m, ev, "fromDevice"), 0);
    assert_int_equal(arg_int(&m, ev, "toContext"), 2);
    assert_true(arg_double(&m, ev, "memory bandwidth (GB/s)") == 2.0);
    tp_model_free(&m);
    tp_cupti_conv_free(&c);
}

/* ---- API calls and synchronization ---- */

static void test_api_records(void **state) {
    (void)state;
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    c.api_name = fixture_api_name;
    tp_model m;
    tp_model_init(&m);
    CUpti_ActivityAPI api = {.kind = CUPTI_ACTIVITY_KIND_RUNTIME,
                             .cbid = 211,
                             .start = 1500,
                             .end = 1750,
                             .processId = 19392,
                             .threadId = 19400,
                             .correlationId = 8218};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&api, 1000), 1);
    api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    api.cbid = 307;
    api.correlationId = 8368;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&api, 1000), 1);
    api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    api.cbid = 999; /* CUPTI cannot name it */
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&api, 1000), 1);
    api.cbid = 500;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&api, 1000), 1);
    /* left out: a runtime query (cudaGetDevice), a driver call that launches nothing
     * (cuCtxGetCurrent: the DRIVER kind records every driver call the program makes) */
    api.cbid = CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&api, 1000), 0);
    api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
    api.cbid = CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&api, 1000), 0);
    api.cbid = CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&api, 1000), 1);
    assert_int_equal(m.nevents, 5);

    const tp_event *ev = &m.events[0];
    assert_int_equal(ev->kind, TP_HOST_RANGE);
    assert_string_equal(tp_model_str(&m, ev->name), "cudaLaunchKernel");
    assert_string_equal(tp_model_str(&m, ev->cat), "cuda_runtime");
    assert_int_equal(ev->ts, 500);
    assert_int_equal(ev->dur, 250);
    assert_int_equal(ev->corr, 8218);
    check_track(&m, ev, 19392, 19400);
    assert_int_equal(ev->nargs, 1);
    assert_int_equal(arg_int(&m, ev, "cbid"), 211);
    ev = &m.events[1];
    assert_string_equal(tp_model_str(&m, ev->name), "cuLaunchKernel");
    assert_string_equal(tp_model_str(&m, ev->cat), "cuda_driver");
    assert_int_equal(ev->corr, 8368);
    assert_string_equal(tp_model_str(&m, m.events[2].name), "CUDA runtime API 999");
    assert_string_equal(tp_model_str(&m, m.events[3].name), "_v12");
    /* names are looked up once per cbid */
    assert_string_equal(tp_cupti_api_shown(&c, 0, 20), "cudaMalloc");
    assert_ptr_equal(tp_cupti_api_shown(&c, 0, 211), tp_cupti_api_shown(&c, 0, 211));
    tp_model_free(&m);
    tp_cupti_conv_free(&c);
}

static void test_synchronization(void **state) {
    (void)state;
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    tp_model m;
    tp_model_init(&m);
    /* context 5 lives on device 2: CUPTI says so in a context record */
    CUpti_ActivityContext3 ctx = {
        .kind = CUPTI_ACTIVITY_KIND_CONTEXT, .contextId = 5, .deviceId = 2};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&ctx, 0), 0);
    CUpti_ActivitySynchronization2 s = {.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                        .type =
                                            CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE,
                                        .start = 3000,
                                        .end = 3400,
                                        .correlationId = 41,
                                        .contextId = 5,
                                        .streamId = 13,
                                        .cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE};
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&s, 1000), 1);
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
    s.streamId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&s, 1000), 1);
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE;
    s.contextId = 6; /* unknown context: device 0, as Kineto assumes */
    s.cudaEventId = 4;
    assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&s, 1000), 1);
    assert_int_equal(m.nevents, 3);

    const tp_event *ev = &m.events[0];
    char keys[256];
    assert_int_equal(ev->kind, TP_HOST_RANGE);
    assert_string_equal(tp_model_str(&m, ev->name), "Stream Sync");
    assert_string_equal(tp_model_str(&m, ev->cat), "cuda_sync");
    assert_int_equal(ev->ts, 2000);
    assert_int_equal(ev->dur, 400);
    assert_int_equal(ev->corr, 41);
    check_track(&m, ev, 2, 13);
    arg_keys(&m, ev, keys, sizeof(keys));
    assert_string_equal(keys, "cuda_sync_kind,stream,device,context");
    assert_string_equal(arg_str(&m, ev, "cuda_sync_kind"), "Stream Sync");
    assert_int_equal(arg_int(&m, ev, "device"), 2);
    ev = &m.events[1];
    assert_string_equal(tp_model_str(&m, ev->name), "Context Sync");
    check_track(&m, ev, 2, -1);
    assert_int_equal(arg_int(&m, ev, "stream"), -1);
    ev = &m.events[2];
    assert_string_equal(tp_model_str(&m, ev->name), "Event Sync");
    check_track(&m, ev, 0, -1);
    arg_keys(&m, ev, keys, sizeof(keys));
    assert_string_equal(keys, "cuda_sync_kind,wait_on_cuda_event_id,stream,device,context");
    assert_int_equal(arg_int(&m, ev, "wait_on_cuda_event_id"), 4);
    tp_model_free(&m);
    tp_cupti_conv_free(&c);
}

/* ---- device memory ---- */

static CUpti_ActivityMemory4 mem_rec(int op, int kind, uint32_t dev, uint64_t addr, uint64_t bytes,
                                     uint64_t ts) {
    return (CUpti_ActivityMemory4){.kind = CUPTI_ACTIVITY_KIND_MEMORY2,
                                   .memoryOperationType = op,
                                   .memoryKind = kind,
                                   .correlationId = 99,
                                   .address = addr,
                                   .bytes = bytes,
                                   .timestamp = ts,
                                   .processId = 4242,
                                   .deviceId = dev};
}

static void test_memory_totals(void **state) {
    (void)state;
    enum {
        ALLOC = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
        FREE = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE,
        DEV = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE
    };
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    tp_model m;
    tp_model_init(&m);
    CUpti_ActivityMemory4 recs[] = {
        mem_rec(ALLOC, DEV, 0, 0x1000, 1000, 100),
        mem_rec(ALLOC, DEV, 1, 0x9000, 7000, 110),
        mem_rec(ALLOC, DEV, 0, 0x2000, 500, 120),
        mem_rec(ALLOC, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 0, 0x5000, 64, 125), /* host: ignored */
        mem_rec(FREE, DEV, 0, 0x1000, 1000, 130),
        mem_rec(FREE, DEV, 1, 0x7000, 9000, 140), /* allocated before tprof watched */
    };
    int want_appended[] = {1, 1, 1, 0, 1, 1};
    for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++)
        assert_int_equal(tp_cupti_convert(&c, &m, (CUpti_Activity *)&recs[i], 100),
                         want_appended[i]);
    assert_int_equal(m.nevents, 5);
    /* Bytes, Total Allocated per device, worked out by hand */
    int64_t want[][4] = {{0, 1000, 1000, 0},
                         {1, 7000, 7000, 10},
                         {0, 500, 1500, 20},
                         {0, -1000, 500, 30},
                         {1, -9000, 0, 40}};
    for (size_t i = 0; i < 5; i++) {
        const tp_event *ev = &m.events[i];
        assert_int_equal(ev->kind, TP_MEMORY);
        assert_string_equal(tp_model_str(&m, ev->name), "[memory]");
        assert_string_equal(tp_model_str(&m, ev->cat), "cpu_instant_event");
        assert_int_equal(ev->dur, 0);
        assert_int_equal(ev->corr, 0);
        assert_int_equal(ev->ts, want[i][3]);
        check_track(&m, ev, 4242, 4242);
        assert_int_equal(arg_int(&m, ev, "Device Id"), want[i][0]);
        assert_int_equal(arg_int(&m, ev, "Bytes"), want[i][1]);
        assert_int_equal(arg_int(&m, ev, "Total Allocated"), want[i][2]);
        assert_int_equal(arg_int(&m, ev, "Device Type"), 1);
    }
    assert_int_equal(arg_int(&m, &m.events[0], "Addr"), 0x1000);
    tp_model_free(&m);
    tp_cupti_conv_free(&c);
}

static void test_other_kinds_and_devices(void **state) {
    (void)state;
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    set_one_device(&c, h100());
    tp_model m;
    tp_model_init(&m);
    CUpti_Activity other = {.kind = CUPTI_ACTIVITY_KIND_MARKER};
    assert_int_equal(tp_cupti_convert(&c, &m, &other, 0), 0);
    assert_int_equal(m.nevents, 0);
    tp_cupti_add_devices(&c, &m);
    assert_int_equal(m.ndevices, 1);
    assert_string_equal(tp_model_str(&m, m.devices[0].name), "NVIDIA H100 80GB HBM3");
    assert_int_equal(m.devices[0].total_mem, 85018279936u);
    assert_int_equal(m.devices[0].compute_major, 9);
    assert_int_equal(m.devices[0].num_sms, 132);
    assert_true(tp_cupti_launches_work(0, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
    assert_true(tp_cupti_launches_work(1, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    assert_true(tp_cupti_launches_work(0, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000));
    assert_false(tp_cupti_launches_work(0, CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020));
    assert_false(tp_cupti_launches_work(1, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000));
    tp_model_free(&m);
    tp_cupti_conv_free(&c);
}

/* ---- windows ---- */

static tp_cupti_rec api_at(int64_t t, uint32_t corr, uint32_t cbid) {
    return (tp_cupti_rec){.start = t,
                          .end = t + 5,
                          .corr = corr,
                          .kind = TP_CUPTI_RUNTIME,
                          .u.api = {.cbid = cbid, .pid = 1, .tid = 1}};
}

static tp_cupti_rec kernel_at(int64_t t, uint32_t corr) {
    return (tp_cupti_rec){.start = t,
                          .end = t + 10,
                          .corr = corr,
                          .kind = TP_CUPTI_KERNEL,
                          .u.k = {.name = "k", .grid = {1, 1, 1}, .block = {1, 1, 1}}};
}

static tp_cupti_rec memory_at(int64_t t, uint64_t bytes) {
    return (tp_cupti_rec){.start = t,
                          .end = t,
                          .kind = TP_CUPTI_MEMORY,
                          .sub = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION,
                          .src_kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
                          .u.mem = {.bytes = bytes, .pid = 1}};
}

static size_t count_kind(const tp_model *m, int kind) {
    size_t n = 0;
    for (size_t i = 0; i < m->nevents; i++)
        n += m->events[i].kind == kind;
    return n;
}

static void test_window_assignment(void **state) {
    (void)state;
    enum { LAUNCH = 211, MALLOC = 20 };
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    tp_cupti_pending p;
    tp_cupti_pending_init(&p, 100);
    tp_cupti_rec recs[] = {
        api_at(100, 1, LAUNCH),  kernel_at(150, 1),  /* warmup: launch and kernel before: dropped */
        api_at(190, 2, LAUNCH),  kernel_at(1100, 2), /* launched before, ran inside: kept */
        memory_at(50, 1000),                         /* before: counts toward the total only */
        api_at(1000, 3, LAUNCH), kernel_at(1990, 3), /* inside */
        api_at(1500, 4, LAUNCH), kernel_at(2500, 4), /* launched inside, ran after the end */
        api_at(1600, 5, MALLOC), memory_at(1600, 24),
        api_at(2100, 6, LAUNCH), kernel_at(2200, 6), /* the next window's */
        memory_at(2300, 8),
    };
    /* out of order, as buffers arrive */
    for (size_t i = sizeof(recs) / sizeof(recs[0]); i-- > 0;)
        tp_cupti_pending_add(&p, &recs[i]);
    /* every launch of the window has its kernel; a launch whose kernel is still running does not */
    assert_int_equal(tp_cupti_pending_unfinished(&p, 1000, 2000), 0);
    tp_cupti_rec late_launch = api_at(1700, 7, LAUNCH);
    tp_cupti_pending_add(&p, &late_launch);
    assert_int_equal(tp_cupti_pending_unfinished(&p, 1000, 2000), 1);
    assert_int_equal(tp_cupti_pending_unfinished(&p, 0, 3000), 1);
    assert_int_equal(tp_cupti_pending_unfinished(&p, 2000, 3000), 0);

    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "w1", .start_ns = 1000, .end_ns = 2000, .model_offset_ns = 1000};
    assert_int_equal(tp_cupti_pending_take(&p, &c, &m, &w, NULL), 8);
    assert_int_equal(count_kind(&m, TP_HOST_RANGE), 4); /* launches 3, 4, 7 and the malloc */
    assert_int_equal(count_kind(&m, TP_KERNEL), 3);     /* kernels 2, 3, 4 */
    assert_int_equal(count_kind(&m, TP_MEMORY), 1);
    int seen[8] = {0};
    for (size_t i = 0; i < m.nevents; i++) {
        const tp_event *ev = &m.events[i];
        if (ev->kind == TP_KERNEL) seen[ev->corr]++;
        if (ev->kind == TP_MEMORY) {
            assert_int_equal(ev->ts, 600);
            assert_int_equal(arg_int(&m, ev, "Total Allocated"), 1024); /* 1000 before + 24 */
        }
    }
    assert_int_equal(seen[2] + seen[3] + seen[4], 3);
    assert_int_equal(seen[1] + seen[6], 0);
    tp_model_free(&m);
    assert_int_equal(p.n, 3); /* launch 6, kernel 6, memory at 2300 */

    tp_model_init(&m);
    tp_window_info w2 = {.name = "w2", .start_ns = 2000, .end_ns = 3000, .model_offset_ns = 2000};
    assert_int_equal(tp_cupti_pending_take(&p, &c, &m, &w2, NULL), 3);
    assert_int_equal(count_kind(&m, TP_KERNEL), 1);
    assert_int_equal(m.events[0].ts, 100); /* sorted by time: the launch at 2100 first */
    for (size_t i = 0; i < m.nevents; i++)
        if (m.events[i].kind == TP_MEMORY)
            assert_int_equal(arg_int(&m, &m.events[i], "Total Allocated"), 1032);
    assert_int_equal(p.n, 0);
    tp_model_free(&m);

    /* the bound: records beyond it are dropped and counted */
    tp_cupti_pending_free(&p);
    tp_cupti_pending_init(&p, 2);
    for (int i = 0; i < 5; i++)
        tp_cupti_pending_add(&p, &recs[0]);
    assert_int_equal(p.n, 2);
    assert_int_equal(p.dropped, 3);
    tp_cupti_pending_free(&p);
    tp_cupti_conv_free(&c);
}

/* A streamed window's GPU state as the source keeps it, for take_settled. */
typedef struct streamed {
    tp_cupti_conv c;
    tp_cupti_pending p;
    tp_cupti_emitted e;
} streamed;

static void streamed_init(streamed *st) {
    tp_cupti_conv_init(&st->c);
    tp_cupti_pending_init(&st->p, 100);
    st->e = (tp_cupti_emitted){0};
}

static void streamed_free(streamed *st) {
    tp_cupti_emitted_free(&st->e);
    tp_cupti_pending_free(&st->p);
    tp_cupti_conv_free(&st->c);
}

/* One take_settled of a streamed window's records: what it moved into a fresh model (count of
 * kind), and the settled time it returned. */
static int64_t take_settled(streamed *st, int64_t upto, int64_t wait_from, int kind,
                            size_t *moved) {
    tp_window_info w = {.start_ns = 0, .end_ns = INT64_MAX, .model_offset_ns = 0};
    tp_model m;
    tp_model_init(&m);
    long n;
    int64_t settled =
        tp_cupti_pending_take_settled(&st->p, &st->c, &m, &w, upto, wait_from, &st->e, &n);
    assert_true(n >= 0);
    *moved = count_kind(&m, kind);
    tp_model_free(&m);
    return settled;
}

/* A streamed window: a launch waits for its work (the settled time stays before it); one older
 * than wait_from goes into the segment without it, and the settled time still stays before it
 * until its work comes (so that the summary is not cut between them, sink/artifacts.c) or it is
 * forgotten (TP_CUPTI_EMITTED_MS). */
static void test_streamed_take_waits_for_work_given_up_on(void **state) {
    (void)state;
    enum { LAUNCH = 211 };
    const int64_t forget = (int64_t)TP_CUPTI_EMITTED_MS * 1000000;
    streamed st;
    streamed_init(&st);
    size_t moved;
    tp_cupti_rec recs[] = {api_at(1000, 1, LAUNCH), kernel_at(1100, 1), api_at(2000, 2, LAUNCH),
                           api_at(3000, 3, LAUNCH), kernel_at(3100, 3)};
    for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++)
        tp_cupti_pending_add(&st.p, &recs[i]);
    /* launch 2 waits for its kernel: the segment stops before it */
    assert_int_equal(take_settled(&st, 5000, 1500, TP_HOST_RANGE, &moved), 2000);
    assert_int_equal(moved, 1);
    /* given up on: it and launch 3 go, the settled time stays at launch 2 */
    assert_int_equal(take_settled(&st, 6000, 2500, TP_HOST_RANGE, &moved), 2000);
    assert_int_equal(moved, 2);
    assert_int_equal(take_settled(&st, 7000, 2500, TP_HOST_RANGE, &moved), 2000);
    /* its kernel comes: it goes too (its launch is in an earlier segment), and the time moves */
    tp_cupti_rec k2 = kernel_at(2100, 2);
    tp_cupti_pending_add(&st.p, &k2);
    assert_int_equal(take_settled(&st, 8000, 2500, TP_KERNEL, &moved), 8000);
    assert_int_equal(moved, 1);
    /* a launch whose work never comes holds the time until it is forgotten */
    tp_cupti_rec l4 = api_at(9000, 4, LAUNCH);
    tp_cupti_pending_add(&st.p, &l4);
    assert_int_equal(take_settled(&st, 10000, 9500, TP_HOST_RANGE, &moved), 9000);
    assert_int_equal(moved, 1);
    assert_int_equal(take_settled(&st, 9000 + forget, 9500, TP_HOST_RANGE, &moved), 9000);
    assert_int_equal(take_settled(&st, 9001 + forget, 9500, TP_HOST_RANGE, &moved), 9001 + forget);
    assert_int_equal(st.p.n, 0);
    streamed_free(&st);
}

/* A graph launch traced per node: its nodes come as they run, over several takes; the settled
 * time stays before the launch until a take brings none of them. */
static void test_streamed_take_waits_for_a_graphs_nodes(void **state) {
    (void)state;
    enum { GRAPH_LAUNCH = 311 }; /* cudaGraphLaunch_v10000 */
    streamed st;
    streamed_init(&st);
    size_t moved;
    tp_cupti_rec launch = api_at(1000, 1, GRAPH_LAUNCH), node1 = kernel_at(1100, 1),
                 node2 = kernel_at(1200, 1), after = api_at(1500, 2, 20 /* cudaMalloc */);
    node1.graph_id = node2.graph_id = 5;
    node1.graph_node = 1;
    node2.graph_node = 2;
    tp_cupti_pending_add(&st.p, &launch);
    tp_cupti_pending_add(&st.p, &node1);
    tp_cupti_pending_add(&st.p, &after);
    /* the first node stands for the graph in the segment, which takes every record */
    assert_int_equal(take_settled(&st, 2000, 0, TP_KERNEL, &moved), 1000);
    assert_int_equal(moved, 1);
    assert_int_equal(st.p.n, 0);
    tp_cupti_pending_add(&st.p, &node2);
    assert_int_equal(take_settled(&st, 3000, 0, TP_KERNEL, &moved), 1000);
    assert_int_equal(moved, 1);
    /* a take without a node of it: the graph is taken as done */
    assert_int_equal(take_settled(&st, 4000, 0, TP_KERNEL, &moved), 4000);
    assert_int_equal(moved, 0);
    streamed_free(&st);
}

/* The flight recorder's ring moved past 1000: older records go, memory ones counted first, and
 * the ring's window still gets its own, with the device total they moved. */
static void test_flight_prune(void **state) {
    (void)state;
    enum { LAUNCH = 211 };
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    tp_cupti_pending p;
    tp_cupti_pending_init(&p, 100);
    tp_cupti_rec recs[] = {
        api_at(100, 1, LAUNCH),  kernel_at(150, 1),  /* before the ring: dropped */
        memory_at(50, 1000),                         /* before: applied to the total, dropped */
        api_at(990, 2, LAUNCH),  kernel_at(1100, 2), /* launched before, ran in the ring: kept */
        api_at(1000, 3, LAUNCH), kernel_at(1200, 3), /* in the ring */
        memory_at(1300, 24),
    };
    for (size_t i = 0; i < sizeof(recs) / sizeof(recs[0]); i++)
        tp_cupti_pending_add(&p, &recs[i]);
    tp_cupti_pending_prune(&p, &c, 1000);
    assert_int_equal(p.n, 4); /* kernel 2, launch and kernel 3, memory at 1300 */
    for (size_t i = 0; i < p.n; i++)
        assert_true(p.recs[i].start >= 1000);
    tp_cupti_pending_prune(&p, &c, 1000); /* again: nothing more goes */
    assert_int_equal(p.n, 4);
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "flight", .start_ns = 1000, .end_ns = 2000, .model_offset_ns = 0};
    assert_int_equal(tp_cupti_pending_take(&p, &c, &m, &w, NULL), 4);
    assert_int_equal(count_kind(&m, TP_KERNEL), 2);
    for (size_t i = 0; i < m.nevents; i++)
        if (m.events[i].kind == TP_MEMORY)
            assert_int_equal(arg_int(&m, &m.events[i], "Total Allocated"), 1024);
    tp_model_free(&m);
    tp_cupti_pending_free(&p);
    tp_cupti_conv_free(&c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flight_prune),
        cmocka_unit_test(test_fields_read_have_stable_offsets),
        cmocka_unit_test(test_kernel_as_kineto_writes_it),
        cmocka_unit_test(test_occupancy_matches_kineto),
        cmocka_unit_test(test_kernel_without_device_or_demangler),
        cmocka_unit_test(test_memcpy_memset_p2p),
        cmocka_unit_test(test_graph_records),
        cmocka_unit_test(test_api_records),
        cmocka_unit_test(test_synchronization),
        cmocka_unit_test(test_memory_totals),
        cmocka_unit_test(test_other_kinds_and_devices),
        cmocka_unit_test(test_window_assignment),
        cmocka_unit_test(test_streamed_take_waits_for_work_given_up_on),
        cmocka_unit_test(test_streamed_take_waits_for_a_graphs_nodes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
int main(void) {
    return 77;
} /* built without CUDA's CUPTI headers: skipped */
#endif
