/* convert.c - one CUPTI activity record becomes one model event, as Kineto writes it.
 *
 * Names, categories, tracks and args follow Kineto's CUPTI activity logger so that tools reading
 * PyTorch traces read tprof's alike (docs/GPU.md lists them). Reduction (raw record ->
 * tp_cupti_rec) happens as CUPTI hands a buffer back; emission (tp_cupti_rec -> event) when its
 * window closes. */
#include "gpu/convert.h"
#include "gpu/cupti_ids.h"

#include "util/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    API_CACHE_MAX_CBID = 1 << 16, /* real cbids are below 1000; larger ones are not cached */
    MAX_DEVICE_ID = 1 << 12,      /* memory totals are kept for device ids below this */
};

void tp_cupti_conv_init(tp_cupti_conv *c) {
    memset(c, 0, sizeof(*c));
    tp_strtab_init(&c->names);
}

void tp_cupti_conv_free(tp_cupti_conv *c) {
    tp_strtab_free(&c->names);
    free(c->shown);
    free(c->api_ids);
    free(c->devs);
    free(c->ctx_dev);
    free(c->mem_total);
    memset(c, 0, sizeof(*c));
}

/* tp_grow, with the new elements zeroed (the caches below use 0 for "not yet"). */
static int grow_zeroed(void **arr, size_t *cap, size_t need, size_t elem) {
    size_t old = *cap;
    if (need <= old) return 0;
    if (tp_grow(arr, cap, need, elem)) return -1;
    memset((char *)*arr + old * elem, 0, (*cap - old) * elem);
    return 0;
}

void tp_cupti_conv_set_devices(tp_cupti_conv *c, tp_cupti_dev *devs, size_t n) {
    free(c->devs);
    c->devs = devs;
    c->ndevs = n;
}

void tp_cupti_add_devices(const tp_cupti_conv *c, tp_model *m) {
    for (size_t i = 0; i < c->ndevs; i++) {
        const tp_cupti_dev *d = &c->devs[i];
        tp_device *md = tp_model_device(m, d->id);
        if (!md) return;
        md->name = tp_model_intern_cstr(m, d->name);
        md->total_mem = d->total_mem;
        md->compute_major = d->cc_major;
        md->compute_minor = d->cc_minor;
        md->num_sms = d->num_sms;
    }
}

/* ---- names ----------------------------------------------------------------------------------- */

static const char *kernel_shown(tp_cupti_conv *c, const char *given) {
    if (!given) given = "";
    tp_str id = tp_strtab_intern(&c->names, given, strlen(given));
    if (id < c->cap_shown && c->shown[id]) return tp_strtab_get(&c->names, c->shown[id] - 1);
    tp_str shown = id;
    int status = -1;
    char *plain = c->demangle && given[0] ? c->demangle(given, NULL, NULL, &status) : NULL;
    if (plain && status == 0) shown = tp_strtab_intern(&c->names, plain, strlen(plain));
    free(plain);
    if (!grow_zeroed((void **)&c->shown, &c->cap_shown, (size_t)id + 1, sizeof(*c->shown)))
        c->shown[id] = shown + 1;
    return tp_strtab_get(&c->names, shown);
}

/* CUPTI names runtime functions with the version that introduced them ("cudaMalloc_v3020");
 * Kineto and every trace tool show the plain name. */
static size_t without_version(const char *name) {
    size_t n = strlen(name), i = n;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    return i < n && i > 2 && name[i - 1] == 'v' && name[i - 2] == '_' ? i - 2 : n;
}

const char *tp_cupti_api_shown(tp_cupti_conv *c, int driver, uint32_t cbid) {
    size_t key = (size_t)cbid * 2 + (driver != 0);
    if (key < c->cap_api_ids && c->api_ids[key])
        return tp_strtab_get(&c->names, c->api_ids[key] - 1);
    const char *given = c->api_name ? c->api_name(driver, cbid) : NULL;
    char fallback[64];
    if (!given || !given[0]) {
        snprintf(fallback, sizeof(fallback), "CUDA %s API %u", driver ? "driver" : "runtime", cbid);
        given = fallback;
    }
    tp_str id = tp_strtab_intern(&c->names, given, without_version(given));
    if (cbid < API_CACHE_MAX_CBID &&
        !grow_zeroed((void **)&c->api_ids, &c->cap_api_ids, key + 1, sizeof(*c->api_ids)))
        c->api_ids[key] = id + 1;
    return tp_strtab_get(&c->names, id);
}

/* ---- reduction ------------------------------------------------------------------------------- */

static void learn_context(tp_cupti_conv *c, uint32_t context, uint32_t device) {
    for (size_t i = 0; i < c->nctx; i++)
        if (c->ctx_dev[i][0] == context) {
            c->ctx_dev[i][1] = device;
            return;
        }
    if (TP_GROW(c->ctx_dev, c->cap_ctx, c->nctx + 1)) return;
    c->ctx_dev[c->nctx][0] = context;
    c->ctx_dev[c->nctx++][1] = device;
}

/* Kineto's rule: a context it has not seen belongs to device 0. */
static uint32_t context_device(const tp_cupti_conv *c, uint32_t context) {
    for (size_t i = 0; i < c->nctx; i++)
        if (c->ctx_dev[i][0] == context) return c->ctx_dev[i][1];
    return 0;
}

/* Start and end on the session clock; 0 when CUPTI could not time the record. */
static int set_times(const tp_cupti_conv *c, uint64_t start, uint64_t end, tp_cupti_rec *r) {
    if (start == 0 && end == 0) return 0;
    r->start = (int64_t)start + c->clock_delta_ns;
    r->end = end < start ? r->start : (int64_t)end + c->clock_delta_ns;
    return 1;
}

static int reduce_kernel(tp_cupti_conv *c, const CUpti_ActivityKernel10 *k, tp_cupti_rec *r) {
    learn_context(c, k->contextId, k->deviceId);
    r->kind = TP_CUPTI_KERNEL;
    r->corr = k->correlationId;
    r->device = k->deviceId;
    r->context = k->contextId;
    r->stream = k->streamId;
    r->u.k.name = kernel_shown(c, k->name);
    r->u.k.grid[0] = k->gridX, r->u.k.grid[1] = k->gridY, r->u.k.grid[2] = k->gridZ;
    r->u.k.block[0] = k->blockX, r->u.k.block[1] = k->blockY, r->u.k.block[2] = k->blockZ;
    r->u.k.smem_static = k->staticSharedMemory;
    r->u.k.smem_dynamic = k->dynamicSharedMemory;
    r->u.k.regs = k->registersPerThread;
    r->graph_id = k->graphId;
    r->graph_node = k->graphNodeId;
    return set_times(c, k->start, k->end, r);
}

static int reduce_memcpy(tp_cupti_conv *c, const CUpti_ActivityMemcpy6 *mc, tp_cupti_rec *r) {
    learn_context(c, mc->contextId, mc->deviceId);
    r->kind = TP_CUPTI_MEMCPY;
    r->sub = mc->copyKind;
    r->src_kind = mc->srcKind;
    r->dst_kind = mc->dstKind;
    r->corr = mc->correlationId;
    r->device = mc->deviceId;
    r->context = mc->contextId;
    r->stream = mc->streamId;
    r->u.copy.bytes = mc->bytes;
    r->graph_id = mc->graphId;
    r->graph_node = mc->graphNodeId;
    return set_times(c, mc->start, mc->end, r);
}

/* A peer-to-peer copy's record begins as a memcpy record does (kind to streamId, same offsets;
 * test_fields_read_have_stable_offsets), then places its correlation id elsewhere. */
static int reduce_p2p(tp_cupti_conv *c, const CUpti_ActivityMemcpyPtoP4 *p, tp_cupti_rec *r) {
    int timed = reduce_memcpy(c, (const CUpti_ActivityMemcpy6 *)p, r);
    r->kind = TP_CUPTI_MEMCPY_P2P;
    r->corr = p->correlationId;
    r->u.copy.src_device = p->srcDeviceId;
    r->u.copy.dst_device = p->dstDeviceId;
    r->u.copy.src_context = p->srcContextId;
    r->u.copy.dst_context = p->dstContextId;
    r->graph_id = p->graphId; /* after the correlation id, so elsewhere than a memcpy's */
    r->graph_node = p->graphNodeId;
    return timed;
}

static int reduce_memset(tp_cupti_conv *c, const CUpti_ActivityMemset4 *ms, tp_cupti_rec *r) {
    learn_context(c, ms->contextId, ms->deviceId);
    r->kind = TP_CUPTI_MEMSET;
    r->sub = (uint8_t)ms->memoryKind;
    r->corr = ms->correlationId;
    r->device = ms->deviceId;
    r->context = ms->contextId;
    r->stream = ms->streamId;
    r->u.copy.bytes = ms->bytes;
    r->graph_id = ms->graphId;
    r->graph_node = ms->graphNodeId;
    return set_times(c, ms->start, ms->end, r);
}

/* One launch of a graph, traced whole (cuda_graphs: graph): its span on the stream it ran on. A
 * graph spread over devices says where it began. */
static int reduce_graph(tp_cupti_conv *c, const CUpti_ActivityGraphTrace2 *g, tp_cupti_rec *r) {
    learn_context(c, g->contextId, g->deviceId);
    r->kind = TP_CUPTI_GRAPH;
    r->corr = g->correlationId;
    r->device = g->deviceId;
    r->context = g->contextId;
    r->stream = g->streamId;
    r->graph_id = g->graphId;
    return set_times(c, g->start, g->end, r);
}

/* An op's id tied to a call's correlation id. CUPTI gives it no time: it waits, and leaves,
 * with the calls of its window (gpu_window.c). */
static int reduce_external(const CUpti_ActivityExternalCorrelation *x, tp_cupti_rec *r) {
    r->kind = TP_CUPTI_EXTERNAL;
    r->corr = x->correlationId;
    r->ext = x->externalId;
    r->start = r->end = INT64_MAX;
    return x->externalId != 0;
}

static int reduce_api(const tp_cupti_conv *c, const CUpti_ActivityAPI *a, tp_cupti_rec *r) {
    int driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;
    if (!tp_cupti_api_kept(driver, a->cbid)) return 0;
    r->kind = driver ? TP_CUPTI_DRIVER : TP_CUPTI_RUNTIME;
    r->corr = a->correlationId;
    r->u.api.cbid = a->cbid;
    r->u.api.pid = a->processId;
    r->u.api.tid = a->threadId;
    return set_times(c, a->start, a->end, r);
}

static int reduce_sync(const tp_cupti_conv *c, const CUpti_ActivitySynchronization2 *s,
                       tp_cupti_rec *r) {
    r->kind = TP_CUPTI_SYNC;
    r->sub = (uint8_t)s->type;
    r->corr = s->correlationId;
    r->context = s->contextId;
    r->device = context_device(c, s->contextId);
    r->stream = s->streamId;
    r->u.sync.event = s->cudaEventId;
    return set_times(c, s->start, s->end, r);
}

/* Only device memory counts toward a GPU's "Total Allocated" (pinned host memory does not). */
static int reduce_memory(const tp_cupti_conv *c, const CUpti_ActivityMemory4 *mm, tp_cupti_rec *r) {
    int op = mm->memoryOperationType;
    int kind = mm->memoryKind;
    if ((op != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION &&
         op != CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) ||
        (kind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE && kind != CUPTI_ACTIVITY_MEMORY_KIND_MANAGED))
        return 0;
    r->kind = TP_CUPTI_MEMORY;
    r->sub = (uint8_t)op;
    r->src_kind = (uint8_t)kind;
    r->corr = mm->correlationId;
    r->device = mm->deviceId;
    r->context = mm->contextId;
    r->stream = mm->streamId;
    r->u.mem.bytes = mm->bytes;
    r->u.mem.addr = mm->address;
    r->u.mem.pid = mm->processId;
    return set_times(c, mm->timestamp, mm->timestamp, r);
}

int tp_cupti_reduce(tp_cupti_conv *c, const CUpti_Activity *raw, tp_cupti_rec *r) {
    memset(r, 0, sizeof(*r));
    switch (raw->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
        return reduce_kernel(c, (const CUpti_ActivityKernel10 *)raw, r);
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return reduce_memcpy(c, (const CUpti_ActivityMemcpy6 *)raw, r);
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        return reduce_p2p(c, (const CUpti_ActivityMemcpyPtoP4 *)raw, r);
    case CUPTI_ACTIVITY_KIND_MEMSET:
        return reduce_memset(c, (const CUpti_ActivityMemset4 *)raw, r);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
        return reduce_external((const CUpti_ActivityExternalCorrelation *)raw, r);
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
        return reduce_graph(c, (const CUpti_ActivityGraphTrace2 *)raw, r);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
        return reduce_api(c, (const CUpti_ActivityAPI *)raw, r);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
        return reduce_sync(c, (const CUpti_ActivitySynchronization2 *)raw, r);
    case CUPTI_ACTIVITY_KIND_MEMORY2:
        return reduce_memory(c, (const CUpti_ActivityMemory4 *)raw, r);
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
        const CUpti_ActivityContext3 *ctx = (const CUpti_ActivityContext3 *)raw;
        learn_context(c, ctx->contextId, ctx->deviceId);
        return 0;
    }
    default:
        return 0;
    }
}

int64_t tp_cupti_memory_apply(tp_cupti_conv *c, const tp_cupti_rec *r) {
    if (r->device >= MAX_DEVICE_ID || grow_zeroed((void **)&c->mem_total, &c->cap_mem_total,
                                                  (size_t)r->device + 1, sizeof(*c->mem_total)))
        return 0;
    int64_t *total = &c->mem_total[r->device];
    int64_t bytes = (int64_t)r->u.mem.bytes;
    *total += r->sub == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? -bytes : bytes;
    if (*total < 0) *total = 0; /* freed memory allocated before tprof started watching */
    return *total;
}

int tp_cupti_convert(tp_cupti_conv *c, tp_model *m, const CUpti_Activity *raw, int64_t offset_ns) {
    tp_cupti_rec r;
    if (!tp_cupti_reduce(c, raw, &r)) return 0;
    tp_cupti_out out;
    tp_cupti_out_init(&out, m);
    return tp_cupti_emit(c, &out, &r, offset_ns) ? -1 : 1;
}

const uint32_t tp_cupti_runtime_queries[] = {TP_CUPTI_RUNTIME_QUERY_IDS};
const size_t tp_cupti_nruntime_queries =
    sizeof(tp_cupti_runtime_queries) / sizeof(tp_cupti_runtime_queries[0]);

const uint32_t tp_cupti_driver_launches[] = {TP_CUPTI_DRIVER_LAUNCH_IDS};
const size_t tp_cupti_ndriver_launches =
    sizeof(tp_cupti_driver_launches) / sizeof(tp_cupti_driver_launches[0]);

static int in_set(const uint32_t *set, size_t n, uint32_t cbid) {
    for (size_t i = 0; i < n; i++)
        if (set[i] == cbid) return 1;
    return 0;
}

int tp_cupti_api_kept(int driver, uint32_t cbid) {
    return driver ? tp_cupti_launches_work(1, cbid)
                  : !in_set(tp_cupti_runtime_queries, tp_cupti_nruntime_queries, cbid);
}

int tp_cupti_launches_work(int driver, uint32_t cbid) {
    static const uint32_t runtime[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
        CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
        CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000,
#if CUPTI_API_VERSION >= 130000
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
    };
    return driver ? in_set(tp_cupti_driver_launches, tp_cupti_ndriver_launches, cbid)
                  : in_set(runtime, sizeof(runtime) / sizeof(runtime[0]), cbid);
}
