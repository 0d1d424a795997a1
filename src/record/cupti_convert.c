/* cupti_convert.c - one CUPTI activity record becomes one model event, as Kineto writes it.
 *
 * Names, categories, tracks and args follow Kineto's CUPTI activity logger so that tools reading
 * PyTorch traces read tprof's alike (docs/GPU.md lists them). Reduction (raw record ->
 * tp_cupti_rec) happens as CUPTI hands a buffer back; emission (tp_cupti_rec -> event) when its
 * window closes. */
#ifdef TPROF_HAVE_CUPTI_HEADERS

#include "record/cupti_convert.h"

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

static const tp_cupti_dev *find_dev(const tp_cupti_conv *c, uint32_t id) {
    for (size_t i = 0; i < c->ndevs; i++)
        if (c->devs[i].id == (int64_t)id) return &c->devs[i];
    return NULL;
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

static const char *memcpy_kind_str(unsigned k) {
    static const char *const s[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                    "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return k < sizeof(s) / sizeof(s[0]) ? s[k] : "Unknown";
}

static const char *memory_kind_str(unsigned k) {
    static const char *const s[] = {"Unknown", "Pageable", "Pinned",        "Device",
                                    "Array",   "Managed",  "Device Static", "Managed Static"};
    return k < sizeof(s) / sizeof(s[0]) ? s[k] : "Unknown";
}

static const char *sync_kind_str(unsigned k) {
    static const char *const s[] = {"Unknown Sync", "Event Sync", "Stream Wait Event",
                                    "Stream Sync", "Context Sync"};
    return k < sizeof(s) / sizeof(s[0]) ? s[k] : "Unknown Sync";
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
    return set_times(c, ms->start, ms->end, r);
}

static int reduce_api(const tp_cupti_conv *c, const CUpti_ActivityAPI *a, tp_cupti_rec *r) {
    r->kind = a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? TP_CUPTI_DRIVER : TP_CUPTI_RUNTIME;
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

/* ---- emission -------------------------------------------------------------------------------- */

static tp_event *range_event(tp_model *m, const tp_cupti_rec *r, int64_t pid, int64_t tid,
                             tp_kind kind, const char *name, const char *cat, int64_t off) {
    uint32_t track = tp_model_track(m, pid, 0, tid, 0);
    tp_str nm = tp_model_intern_cstr(m, name);
    tp_str ct = tp_model_intern_cstr(m, cat);
    tp_event *ev = track == UINT32_MAX ? NULL : tp_model_add_event(m);
    if (!ev) return NULL;
    ev->ts = r->start - off;
    ev->dur = r->end - r->start;
    ev->corr = r->corr;
    ev->name = nm;
    ev->cat = ct;
    ev->track = track;
    ev->kind = (uint8_t)kind;
    return ev;
}

/* device, context, stream: the first args of every GPU-work event. */
static int place_args(tp_model *m, tp_event *ev, const tp_cupti_rec *r) {
    return tp_model_arg_int(m, ev, "device", r->device) |
           tp_model_arg_int(m, ev, "context", r->context) |
           tp_model_arg_int(m, ev, "stream", r->stream);
}

/* bytes and bandwidth; Kineto's bandwidth is bytes per ns (= GB/s), absent for a zero duration. */
static int transfer_args(tp_model *m, tp_event *ev, const tp_cupti_rec *r) {
    int rc = tp_model_arg_int(m, ev, "bytes", (int64_t)r->u.copy.bytes);
    if (ev->dur > 0)
        rc |= tp_model_arg_double(m, ev, "memory bandwidth (GB/s)",
                                  (double)r->u.copy.bytes / (double)ev->dur);
    return rc;
}

static int dims_arg(tp_model *m, tp_event *ev, const char *key, const int32_t v[3]) {
    char json[48];
    snprintf(json, sizeof(json), "[%d, %d, %d]", v[0], v[1], v[2]);
    return tp_model_arg_json(m, ev, key, json);
}

static int emit_kernel(tp_cupti_conv *c, tp_model *m, const tp_cupti_rec *r, int64_t off) {
    tp_event *ev = range_event(m, r, r->device, r->stream, TP_KERNEL, r->u.k.name, "kernel", off);
    if (!ev) return -1;
    const int32_t *g = r->u.k.grid, *b = r->u.k.block;
    int threads = b[0] * b[1] * b[2];
    int smem = r->u.k.smem_static + r->u.k.smem_dynamic;
    /* latency timestamps stay off (they cost), so the queue time is unknown: 0, as Kineto says */
    int rc = tp_model_arg_int(m, ev, "queued", 0) | place_args(m, ev, r) |
             tp_model_arg_int(m, ev, "registers per thread", r->u.k.regs) |
             tp_model_arg_int(m, ev, "shared memory", smem);
    const tp_cupti_dev *d = find_dev(c, r->device);
    double blocks_per_sm = -1;
    if (d && d->num_sms > 0 && d->warp_size > 0) {
        blocks_per_sm = (double)g[0] * g[1] * g[2] / d->num_sms;
        rc |= tp_model_arg_double(m, ev, "blocks per SM", blocks_per_sm) |
              tp_model_arg_double(m, ev, "warps per SM", blocks_per_sm * threads / d->warp_size);
    }
    rc |= dims_arg(m, ev, "grid", g) | dims_arg(m, ev, "block", b);
    int occ = tp_cupti_occupancy_pct(d, r->u.k.regs, smem, threads, blocks_per_sm);
    if (occ >= 0) rc |= tp_model_arg_int(m, ev, "est. achieved occupancy %", occ);
    return rc ? -1 : 0;
}

static int emit_copy(tp_model *m, const tp_cupti_rec *r, int64_t off) {
    char name[80];
    tp_event *ev;
    if (r->kind == TP_CUPTI_MEMSET) {
        snprintf(name, sizeof(name), "Memset (%s)", memory_kind_str(r->sub));
        ev = range_event(m, r, r->device, r->stream, TP_MEMSET, name, "gpu_memset", off);
    } else {
        snprintf(name, sizeof(name), "Memcpy %s (%s -> %s)", memcpy_kind_str(r->sub),
                 memory_kind_str(r->src_kind), memory_kind_str(r->dst_kind));
        ev = range_event(m, r, r->device, r->stream, TP_MEMCPY, name, "gpu_memcpy", off);
    }
    if (!ev) return -1;
    int rc;
    if (r->kind == TP_CUPTI_MEMCPY_P2P)
        rc = tp_model_arg_int(m, ev, "fromDevice", r->u.copy.src_device) |
             tp_model_arg_int(m, ev, "inDevice", r->device) |
             tp_model_arg_int(m, ev, "toDevice", r->u.copy.dst_device) |
             tp_model_arg_int(m, ev, "fromContext", r->u.copy.src_context) |
             tp_model_arg_int(m, ev, "inContext", r->context) |
             tp_model_arg_int(m, ev, "toContext", r->u.copy.dst_context) |
             tp_model_arg_int(m, ev, "stream", r->stream);
    else
        rc = place_args(m, ev, r);
    return rc | transfer_args(m, ev, r) ? -1 : 0;
}

static int emit_api(tp_cupti_conv *c, tp_model *m, const tp_cupti_rec *r, int64_t off) {
    int driver = r->kind == TP_CUPTI_DRIVER;
    tp_event *ev = range_event(m, r, r->u.api.pid, r->u.api.tid, TP_HOST_RANGE,
                               tp_cupti_api_shown(c, driver, r->u.api.cbid),
                               driver ? "cuda_driver" : "cuda_runtime", off);
    return ev && !tp_model_arg_int(m, ev, "cbid", r->u.api.cbid) ? 0 : -1;
}

/* Kineto shows a synchronization on the GPU track of the stream it waited for (stream -1 for a
 * context synchronization). Its category is not one of device work, so it is a host range. */
static int emit_sync(tp_model *m, const tp_cupti_rec *r, int64_t off) {
    const char *kind = sync_kind_str(r->sub);
    int64_t stream = (int32_t)r->stream;
    tp_event *ev = range_event(m, r, r->device, stream, TP_HOST_RANGE, kind, "cuda_sync", off);
    if (!ev) return -1;
    int rc = tp_model_arg_str(m, ev, "cuda_sync_kind", kind);
    if (r->sub == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
        r->sub == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT)
        rc |= tp_model_arg_int(m, ev, "wait_on_cuda_event_id", (int32_t)r->u.sync.event);
    rc |= tp_model_arg_int(m, ev, "stream", stream) | tp_model_arg_int(m, ev, "device", r->device) |
          tp_model_arg_int(m, ev, "context", r->context);
    return rc ? -1 : 0;
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

/* A "[memory]" instant with PyTorch's args, on the process's main thread track. */
static int emit_memory(tp_cupti_conv *c, tp_model *m, const tp_cupti_rec *r, int64_t off) {
    int64_t total = tp_cupti_memory_apply(c, r);
    tp_cupti_rec at = *r;
    at.corr = 0; /* PyTorch's memory events carry no correlation */
    tp_event *ev = range_event(m, &at, r->u.mem.pid, r->u.mem.pid, TP_MEMORY, "[memory]",
                               "cpu_instant_event", off);
    if (!ev) return -1;
    int64_t bytes = (int64_t)r->u.mem.bytes;
    if (r->sub == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) bytes = -bytes;
    int rc = tp_model_arg_int(m, ev, "Total Allocated", total) |
             tp_model_arg_int(m, ev, "Bytes", bytes) |
             tp_model_arg_int(m, ev, "Addr", (int64_t)r->u.mem.addr) |
             tp_model_arg_int(m, ev, "Device Id", r->device) |
             tp_model_arg_int(m, ev, "Device Type", 1);
    return rc ? -1 : 0;
}

int tp_cupti_emit(tp_cupti_conv *c, tp_model *m, const tp_cupti_rec *r, int64_t offset_ns) {
    switch (r->kind) {
    case TP_CUPTI_KERNEL:
        return emit_kernel(c, m, r, offset_ns);
    case TP_CUPTI_MEMCPY:
    case TP_CUPTI_MEMCPY_P2P:
    case TP_CUPTI_MEMSET:
        return emit_copy(m, r, offset_ns);
    case TP_CUPTI_RUNTIME:
    case TP_CUPTI_DRIVER:
        return emit_api(c, m, r, offset_ns);
    case TP_CUPTI_SYNC:
        return emit_sync(m, r, offset_ns);
    case TP_CUPTI_MEMORY:
        return emit_memory(c, m, r, offset_ns);
    default:
        return 0;
    }
}

int tp_cupti_convert(tp_cupti_conv *c, tp_model *m, const CUpti_Activity *raw, int64_t offset_ns) {
    tp_cupti_rec r;
    if (!tp_cupti_reduce(c, raw, &r)) return 0;
    return tp_cupti_emit(c, m, &r, offset_ns) ? -1 : 1;
}

/* Driver functions that launch kernels (each launch yields at least one kernel record). */
const uint32_t tp_cupti_driver_launches[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
};
const size_t tp_cupti_ndriver_launches =
    sizeof(tp_cupti_driver_launches) / sizeof(tp_cupti_driver_launches[0]);

int tp_cupti_launches_kernel(int driver, uint32_t cbid) {
    static const uint32_t runtime[] = {
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
        CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000,
#if CUPTI_API_VERSION >= 130000
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
        CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
#endif
    };
    const uint32_t *set = driver ? tp_cupti_driver_launches : runtime;
    size_t n = driver ? tp_cupti_ndriver_launches : sizeof(runtime) / sizeof(runtime[0]);
    for (size_t i = 0; i < n; i++)
        if (set[i] == cbid) return 1;
    return 0;
}

#else
typedef int tp_cupti_convert_unused; /* built without the CUPTI headers */
#endif
