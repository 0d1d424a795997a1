/* emit.c - a reduced CUPTI record becomes one model event, as Kineto writes it.
 *
 * Names, categories, tracks and args follow Kineto's CUPTI activity logger, so tools reading
 * PyTorch traces read tprof's alike (docs/GPU.md lists them). The arg keys and categories are
 * interned once per model (tp_cupti_out), not once per event: a window holds many thousands. */
#include "gpu/convert.h"

#include "model/kineto.h"

#include <stdio.h>
#include <string.h>

/* The strings of tp_cupti_out, in this order. */
enum {
    S_QUEUED,
    S_DEVICE,
    S_CONTEXT,
    S_STREAM,
    S_REGS,
    S_SMEM,
    S_BLOCKS_SM,
    S_WARPS_SM,
    S_GRID,
    S_BLOCK,
    S_OCCUPANCY,
    S_BYTES,
    S_BANDWIDTH,
    S_FROM_DEVICE,
    S_IN_DEVICE,
    S_TO_DEVICE,
    S_FROM_CONTEXT,
    S_IN_CONTEXT,
    S_TO_CONTEXT,
    S_CBID,
    S_SYNC_KIND,
    S_WAIT_EVENT,
    S_TOTAL_ALLOCATED,
    S_MEM_BYTES,
    S_ADDR,
    S_DEVICE_ID,
    S_DEVICE_TYPE,
    S_CAT_KERNEL,
    S_CAT_MEMCPY,
    S_CAT_MEMSET,
    S_CAT_RUNTIME,
    S_CAT_DRIVER,
    S_CAT_SYNC,
    S_CAT_INSTANT,
    S_MEMORY_NAME,
    S_GRAPH_ID,
    S_GRAPH_NODE_ID,
    NSTRINGS
};
_Static_assert(NSTRINGS <= TP_CUPTI_NSTRINGS, "tp_cupti_out holds every string");

static const char *const strings[NSTRINGS] = {"queued",
                                              "device",
                                              "context",
                                              "stream",
                                              "registers per thread",
                                              "shared memory",
                                              "blocks per SM",
                                              "warps per SM",
                                              "grid",
                                              "block",
                                              "est. achieved occupancy %",
                                              "bytes",
                                              "memory bandwidth (GB/s)",
                                              "fromDevice",
                                              "inDevice",
                                              "toDevice",
                                              "fromContext",
                                              "inContext",
                                              "toContext",
                                              "cbid",
                                              "cuda_sync_kind",
                                              "wait_on_cuda_event_id",
                                              tp_karg_total_allocated,
                                              tp_karg_bytes,
                                              tp_karg_addr,
                                              tp_karg_device_id,
                                              tp_karg_device_type,
                                              tp_kcat_kernel,
                                              tp_kcat_gpu_memcpy,
                                              tp_kcat_gpu_memset,
                                              tp_kcat_cuda_runtime,
                                              tp_kcat_cuda_driver,
                                              "cuda_sync",
                                              tp_kcat_cpu_instant_event,
                                              tp_kname_memory,
                                              "graph id",
                                              "graph node id"};

void tp_cupti_out_init(tp_cupti_out *o, tp_model *m) {
    o->m = m;
    for (int i = 0; i < NSTRINGS; i++)
        o->s[i] = tp_model_intern_cstr(m, strings[i]);
}

static int put_int(tp_cupti_out *o, tp_event *ev, int key, int64_t v) {
    return tp_model_add_arg(o->m, ev, o->s[key], TP_ARG_INT, &v);
}

static int put_double(tp_cupti_out *o, tp_event *ev, int key, double v) {
    return tp_model_add_arg(o->m, ev, o->s[key], TP_ARG_DOUBLE, &v);
}

static int put_text(tp_cupti_out *o, tp_event *ev, int key, tp_arg_type type, const char *text) {
    tp_str s = tp_model_intern_cstr(o->m, text);
    return tp_model_add_arg(o->m, ev, o->s[key], type, &s);
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

static const tp_cupti_dev *find_dev(const tp_cupti_conv *c, uint32_t id) {
    for (size_t i = 0; i < c->ndevs; i++)
        if (c->devs[i].id == (int64_t)id) return &c->devs[i];
    return NULL;
}

/* A range's event, with the "External id" of the op that made the call (r->ext), when there
 * is one. */
static tp_event *range_event(tp_cupti_out *o, const tp_cupti_rec *r, int64_t pid, int64_t tid,
                             tp_kind kind, tp_str name, int cat, int64_t off) {
    uint32_t track = tp_model_track(o->m, pid, 0, tid, 0);
    tp_event *ev = track == UINT32_MAX
                       ? NULL
                       : tp_model_new_event(o->m, track, kind, r->start - off, name, o->s[cat]);
    if (!ev) return NULL;
    ev->dur = r->end - r->start;
    ev->corr = r->corr;
    ev->ext = r->ext <= UINT32_MAX ? (uint32_t)r->ext : 0;
    return ev;
}

/* device, context, stream: the first args of every GPU-work event. */
static int place_args(tp_cupti_out *o, tp_event *ev, const tp_cupti_rec *r) {
    return put_int(o, ev, S_DEVICE, r->device) | put_int(o, ev, S_CONTEXT, r->context) |
           put_int(o, ev, S_STREAM, r->stream);
}

/* bytes and bandwidth; Kineto's bandwidth is bytes per ns (= GB/s), absent for a zero duration. */
static int transfer_args(tp_cupti_out *o, tp_event *ev, const tp_cupti_rec *r) {
    int rc = put_int(o, ev, S_BYTES, (int64_t)r->u.copy.bytes);
    if (ev->dur > 0)
        rc |= put_double(o, ev, S_BANDWIDTH, (double)r->u.copy.bytes / (double)ev->dur);
    return rc;
}

/* Work a graph launch ran: its graph and node, after Kineto's args (the launch is the
 * cudaGraphLaunch its correlation id names, as for any kernel). */
static int graph_args(tp_cupti_out *o, tp_event *ev, const tp_cupti_rec *r) {
    if (!r->graph_id) return 0;
    return put_int(o, ev, S_GRAPH_ID, r->graph_id) |
           put_int(o, ev, S_GRAPH_NODE_ID, (int64_t)r->graph_node);
}

static int dims_arg(tp_cupti_out *o, tp_event *ev, int key, const int32_t v[3]) {
    char json[48];
    snprintf(json, sizeof(json), "[%d, %d, %d]", v[0], v[1], v[2]);
    return put_text(o, ev, key, TP_ARG_JSON, json);
}

static int emit_kernel(tp_cupti_conv *c, tp_cupti_out *o, const tp_cupti_rec *r, int64_t off) {
    tp_str name = tp_model_intern_cstr(o->m, r->u.k.name);
    tp_event *ev = range_event(o, r, r->device, r->stream, TP_KERNEL, name, S_CAT_KERNEL, off);
    if (!ev) return -1;
    const int32_t *g = r->u.k.grid, *b = r->u.k.block;
    int threads = b[0] * b[1] * b[2];
    int smem = r->u.k.smem_static + r->u.k.smem_dynamic;
    /* latency timestamps stay off (they cost), so the queue time is unknown: 0, as Kineto says */
    int rc = put_int(o, ev, S_QUEUED, 0) | place_args(o, ev, r) |
             put_int(o, ev, S_REGS, r->u.k.regs) | put_int(o, ev, S_SMEM, smem);
    const tp_cupti_dev *d = find_dev(c, r->device);
    double blocks_per_sm = -1;
    if (d && d->num_sms > 0 && d->warp_size > 0) {
        blocks_per_sm = (double)g[0] * g[1] * g[2] / d->num_sms;
        rc |= put_double(o, ev, S_BLOCKS_SM, blocks_per_sm) |
              put_double(o, ev, S_WARPS_SM, blocks_per_sm * threads / d->warp_size);
    }
    rc |= dims_arg(o, ev, S_GRID, g) | dims_arg(o, ev, S_BLOCK, b);
    int occ = tp_cupti_occupancy_pct(d, r->u.k.regs, smem, threads, blocks_per_sm);
    if (occ >= 0) rc |= put_int(o, ev, S_OCCUPANCY, occ);
    return rc | graph_args(o, ev, r) ? -1 : 0;
}

static int emit_copy(tp_cupti_out *o, const tp_cupti_rec *r, int64_t off) {
    char text[80];
    tp_event *ev;
    if (r->kind == TP_CUPTI_MEMSET) {
        snprintf(text, sizeof(text), "Memset (%s)", memory_kind_str(r->sub));
        tp_str name = tp_model_intern_cstr(o->m, text);
        ev = range_event(o, r, r->device, r->stream, TP_MEMSET, name, S_CAT_MEMSET, off);
    } else {
        snprintf(text, sizeof(text), "Memcpy %s (%s -> %s)", memcpy_kind_str(r->sub),
                 memory_kind_str(r->src_kind), memory_kind_str(r->dst_kind));
        tp_str name = tp_model_intern_cstr(o->m, text);
        ev = range_event(o, r, r->device, r->stream, TP_MEMCPY, name, S_CAT_MEMCPY, off);
    }
    if (!ev) return -1;
    int rc;
    if (r->kind == TP_CUPTI_MEMCPY_P2P)
        rc = put_int(o, ev, S_FROM_DEVICE, r->u.copy.src_device) |
             put_int(o, ev, S_IN_DEVICE, r->device) |
             put_int(o, ev, S_TO_DEVICE, r->u.copy.dst_device) |
             put_int(o, ev, S_FROM_CONTEXT, r->u.copy.src_context) |
             put_int(o, ev, S_IN_CONTEXT, r->context) |
             put_int(o, ev, S_TO_CONTEXT, r->u.copy.dst_context) |
             put_int(o, ev, S_STREAM, r->stream);
    else
        rc = place_args(o, ev, r);
    return rc | transfer_args(o, ev, r) | graph_args(o, ev, r) ? -1 : 0;
}

/* A graph launch traced whole: one span on its stream, a kernel for every figure (GPU busy, the
 * kernel table, its launch's op), named after its graph. */
static int emit_graph(tp_cupti_out *o, const tp_cupti_rec *r, int64_t off) {
    char text[48];
    snprintf(text, sizeof(text), "CUDA graph %u", r->graph_id);
    tp_str name = tp_model_intern_cstr(o->m, text);
    tp_event *ev = range_event(o, r, r->device, r->stream, TP_KERNEL, name, S_CAT_KERNEL, off);
    return ev && !(place_args(o, ev, r) | put_int(o, ev, S_GRAPH_ID, r->graph_id)) ? 0 : -1;
}

static int emit_api(tp_cupti_conv *c, tp_cupti_out *o, const tp_cupti_rec *r, int64_t off) {
    int driver = r->kind == TP_CUPTI_DRIVER;
    tp_str name = tp_model_intern_cstr(o->m, tp_cupti_api_shown(c, driver, r->u.api.cbid));
    tp_event *ev = range_event(o, r, r->u.api.pid, r->u.api.tid, TP_HOST_RANGE, name,
                               driver ? S_CAT_DRIVER : S_CAT_RUNTIME, off);
    return ev && !put_int(o, ev, S_CBID, r->u.api.cbid) ? 0 : -1;
}

/* Kineto shows a synchronization on the GPU track of the stream it waited for (stream -1 for a
 * context synchronization). Its category is not one of device work, so it is a host range. */
static int emit_sync(tp_cupti_out *o, const tp_cupti_rec *r, int64_t off) {
    const char *kind = sync_kind_str(r->sub);
    int64_t stream = (int32_t)r->stream;
    tp_str name = tp_model_intern_cstr(o->m, kind);
    tp_event *ev = range_event(o, r, r->device, stream, TP_HOST_RANGE, name, S_CAT_SYNC, off);
    if (!ev) return -1;
    int rc = tp_model_add_arg(o->m, ev, o->s[S_SYNC_KIND], TP_ARG_STR, &name);
    if (r->sub == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
        r->sub == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT)
        rc |= put_int(o, ev, S_WAIT_EVENT, (int32_t)r->u.sync.event);
    rc |= put_int(o, ev, S_STREAM, stream) | put_int(o, ev, S_DEVICE, r->device) |
          put_int(o, ev, S_CONTEXT, r->context);
    return rc ? -1 : 0;
}

/* A "[memory]" instant with PyTorch's args, on the process's main thread track. */
static int emit_memory(tp_cupti_conv *c, tp_cupti_out *o, const tp_cupti_rec *r, int64_t off) {
    int64_t total = tp_cupti_memory_apply(c, r);
    tp_cupti_rec at = *r;
    at.corr = 0; /* PyTorch's memory events carry no correlation */
    tp_event *ev = range_event(o, &at, r->u.mem.pid, r->u.mem.pid, TP_MEMORY, o->s[S_MEMORY_NAME],
                               S_CAT_INSTANT, off);
    if (!ev) return -1;
    int64_t bytes = (int64_t)r->u.mem.bytes;
    if (r->sub == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) bytes = -bytes;
    int rc = put_int(o, ev, S_TOTAL_ALLOCATED, total) | put_int(o, ev, S_MEM_BYTES, bytes) |
             put_int(o, ev, S_ADDR, (int64_t)r->u.mem.addr) |
             put_int(o, ev, S_DEVICE_ID, r->device) | put_int(o, ev, S_DEVICE_TYPE, 1);
    return rc ? -1 : 0;
}

int tp_cupti_emit(tp_cupti_conv *c, tp_cupti_out *o, const tp_cupti_rec *r, int64_t offset_ns) {
    switch (r->kind) {
    case TP_CUPTI_KERNEL:
        return emit_kernel(c, o, r, offset_ns);
    case TP_CUPTI_MEMCPY:
    case TP_CUPTI_MEMCPY_P2P:
    case TP_CUPTI_MEMSET:
        return emit_copy(o, r, offset_ns);
    case TP_CUPTI_RUNTIME:
    case TP_CUPTI_DRIVER:
        return emit_api(c, o, r, offset_ns);
    case TP_CUPTI_SYNC:
        return emit_sync(o, r, offset_ns);
    case TP_CUPTI_MEMORY:
        return emit_memory(c, o, r, offset_ns);
    case TP_CUPTI_GRAPH:
        return emit_graph(o, r, offset_ns);
    default:
        return 0;
    }
}
