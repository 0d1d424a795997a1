/* collectives.c - what one rank's model says for the cross-rank analysis: its collectives (to
 * match across ranks, ranks.h) and its GPU time split into compute, communication, their overlap
 * and idle, as Holistic Trace Analysis splits it (a kernel whose name contains "nccl" is
 * communication; copies and sets are neither compute nor communication but count as work).
 *
 * A collective's arrival is its start. Where the trace numbers collectives (tprof's ranges carry
 * "seq", equal on every rank for the same collective) they are matched by that number; Kineto's
 * traces have none, so their communication kernels, or else their record_param_comms ranges, or
 * else gloo's ranges or torch's c10d ops, are matched by order. */
#include "analysis/internal.h"
#include "analysis/ranks.h"
#include "model/kineto.h"

#include "util/hash.h"
#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

int tp_is_comm_kernel(const char *name) {
    return strstr(name, "nccl") || strstr(name, "Nccl") || strstr(name, "rccl");
}

static int push(tp_coll_list *out, tp_coll c) {
    if (TP_GROW(out->v, out->cap, out->n + 1)) return -1;
    out->v[out->n++] = c;
    return 0;
}

static uint64_t str_hash(const tp_model *m, tp_str id) {
    const char *s = tp_model_str(m, id);
    return tp_hash_bytes(s, strlen(s));
}

/* The hash of a string arg, or 0 when absent (order matching then ignores names). */
static uint64_t arg_hash(const tp_model *m, const tp_event *e, tp_str key) {
    const tp_arg *a = key == UINT32_MAX ? NULL : tp_event_arg(m, e, key);
    return a && a->type == TP_ARG_STR ? str_hash(m, a->v.s) : 0;
}

static tp_coll coll_of(const tp_model *m, const tp_event *e, uint64_t key, uint64_t name_hash) {
    return (tp_coll){.key = key,
                     .name_hash = name_hash,
                     .start_ns = tp_add_sat(m->base_ns, e->ts),
                     .end_ns = tp_add_sat(m->base_ns, tp_ev_end(e))};
}

/* Host ranges carrying an integer "seq": keyed, sync unless they carry "async". */
static int seq_ranges(const tp_model *m, tp_coll_list *out, size_t *found) {
    tp_str seq = tp_strtab_find(&m->strings, "seq", 3);
    tp_str async = tp_strtab_find(&m->strings, "async", 5);
    if (seq == UINT32_MAX) return 0;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        const tp_arg *a = e->kind == TP_HOST_RANGE ? tp_event_arg(m, e, seq) : NULL;
        if (!a || a->type != TP_ARG_INT || a->v.i < 0) continue;
        tp_coll c = coll_of(m, e, (uint64_t)a->v.i, str_hash(m, e->name));
        c.keyed = 1;
        c.sync = async == UINT32_MAX || !tp_event_arg(m, e, async);
        if (push(out, c)) return -1;
        (*found)++;
    }
    return 0;
}

/* What order matching takes, in order of preference: communication kernels (sync: they end
 * together on every rank), else Kineto's record_param_comms ranges, else gloo's own ranges
 * ("gloo:all_reduce" ..., begun and ended on the backend's threads as the collective runs: sync
 * too), else torch's c10d ops (c10d::allreduce_, ...). A gloo job recorded through torch's
 * observer or by torch.profiler has no record_param_comms. The ranges other than gloo's are
 * launches, not sync. */
enum ordered_kind { ORDER_KERNELS, ORDER_PARAM_COMMS, ORDER_GLOO, ORDER_C10D_OPS };

static int takes(const tp_model *m, const tp_event *e, enum ordered_kind kind, tp_str rpc) {
    if (kind == ORDER_KERNELS)
        return e->kind == TP_KERNEL && tp_is_comm_kernel(tp_model_str(m, e->name));
    if (e->kind != TP_HOST_RANGE) return 0;
    if (kind == ORDER_PARAM_COMMS) return rpc != UINT32_MAX && e->name == rpc;
    if (kind == ORDER_GLOO) return strncmp(tp_model_str(m, e->name), "gloo:", 5) == 0;
    return strncmp(tp_model_str(m, e->name), "c10d::", 6) == 0;
}

/* The collectives of one kind, keyed by their order of start. */
static int ordered(const tp_model *m, tp_coll_list *out, enum ordered_kind kind) {
    tp_str coll_name =
        tp_strtab_find(&m->strings, tp_karg_collective_name, TP_KLEN(tp_karg_collective_name));
    tp_str rpc = tp_strtab_find(&m->strings, "record_param_comms", 18);
    size_t first = out->n;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if (!takes(m, e, kind, rpc)) continue;
        int by_name = kind == ORDER_GLOO || kind == ORDER_C10D_OPS;
        uint64_t name = by_name ? str_hash(m, e->name) : arg_hash(m, e, coll_name);
        if (push(out, coll_of(m, e, 0, name))) return -1;
        out->v[out->n - 1].sync = kind == ORDER_KERNELS || kind == ORDER_GLOO;
    }
    tp_coll *v = out->v + first;
    size_t n = out->n - first;
    /* insertion sort by start: the events of one kind arrive nearly in order */
    for (size_t i = 1; i < n; i++) {
        tp_coll c = v[i];
        size_t j = i;
        for (; j > 0 && v[j - 1].start_ns > c.start_ns; j--)
            v[j] = v[j - 1];
        v[j] = c;
    }
    for (size_t i = 0; i < n; i++)
        v[i].key = i;
    return (int)n;
}

int tp_collectives_of(const tp_model *m, tp_coll_list *out) {
    size_t found = 0;
    if (seq_ranges(m, out, &found)) return -1;
    if (found) return 0;
    int n = ordered(m, out, ORDER_KERNELS);
    if (n == 0) n = ordered(m, out, ORDER_PARAM_COMMS);
    if (n == 0) n = ordered(m, out, ORDER_GLOO);
    if (n == 0) n = ordered(m, out, ORDER_C10D_OPS);
    return n < 0 ? -1 : 0;
}

/* ---- the GPU split ---- */

enum { WORK_ALL, WORK_COMM, WORK_COMPUTE, WORK_KINDS };

typedef struct dev_work {
    tp_keyed *v[WORK_KINDS];
    size_t n[WORK_KINDS], cap[WORK_KINDS];
    int64_t first, last;
} dev_work;

static int add_work(dev_work *d, int kind, const tp_event *e) {
    if (TP_GROW(d->v[kind], d->cap[kind], d->n[kind] + 1)) return -1;
    d->v[kind][d->n[kind]++] = (tp_keyed){tp_time_key(e->ts), (uint64_t)tp_ev_dur(e)};
    return 0;
}

/* Gathers the work of the device with this pid. */
static int gather(const tp_model *m, int64_t pid, dev_work *d) {
    d->first = INT64_MAX;
    d->last = INT64_MIN;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if (!tp_kind_is_gpu_work(e->kind) || m->tracks[e->track].pid != pid) continue;
        int comm = e->kind == TP_KERNEL && tp_is_comm_kernel(tp_model_str(m, e->name));
        if (add_work(d, WORK_ALL, e)) return -1;
        if (e->kind == TP_KERNEL && add_work(d, comm ? WORK_COMM : WORK_COMPUTE, e)) return -1;
        if (e->ts < d->first) d->first = e->ts;
        if (tp_ev_end(e) > d->last) d->last = tp_ev_end(e);
    }
    return 0;
}

/* The union of comm and compute together, in the comm list grown to hold both. */
static int union_both(dev_work *d, tp_order *o, int64_t *u) {
    size_t nc = d->n[WORK_COMM], n = nc + d->n[WORK_COMPUTE];
    if (TP_GROW(d->v[WORK_COMM], d->cap[WORK_COMM], n)) return -1;
    if (d->n[WORK_COMPUTE]) /* the list is NULL when empty */
        memcpy(d->v[WORK_COMM] + nc, d->v[WORK_COMPUTE], d->n[WORK_COMPUTE] * sizeof(tp_keyed));
    return tp_gpu_union(o, d->v[WORK_COMM], n, d->first, d->last, u);
}

static int split_device(const tp_model *m, int64_t pid, tp_order *o, tp_gpu_split *g) {
    dev_work d = {0};
    int64_t u[WORK_KINDS] = {0}, uboth = 0;
    int rc = gather(m, pid, &d);
    for (int k = 0; k < WORK_KINDS && rc == 0; k++)
        rc = tp_gpu_union(o, d.v[k], d.n[k], d.first, d.last, &u[k]);
    if (rc == 0 && d.n[WORK_ALL]) rc = union_both(&d, o, &uboth);
    if (rc == 0 && d.n[WORK_ALL]) {
        g->compute_ns += u[WORK_COMPUTE];
        g->comm_ns += u[WORK_COMM];
        /* |comm ∩ compute| = |comm| + |compute| - |comm ∪ compute| */
        g->overlap_ns += u[WORK_COMM] + u[WORK_COMPUTE] - uboth;
        g->work_ns += u[WORK_ALL];
        g->idle_ns += d.last - d.first - u[WORK_ALL];
    }
    for (int k = 0; k < WORK_KINDS; k++)
        free(d.v[k]);
    return rc;
}

int tp_gpu_split_add(const tp_model *m, tp_gpu_split *g) {
    int64_t *pids = NULL;
    size_t npids = 0, cap = 0;
    tp_order o = {0};
    int rc = 0;
    for (size_t i = 0; i < m->nevents && rc == 0; i++) {
        const tp_event *e = &m->events[i];
        if (!tp_kind_is_gpu_work(e->kind)) continue;
        int64_t pid = m->tracks[e->track].pid;
        size_t k = 0;
        while (k < npids && pids[k] != pid)
            k++;
        if (k < npids) continue;
        rc = TP_GROW(pids, cap, npids + 1);
        if (rc == 0) pids[npids++] = pid;
    }
    for (size_t k = 0; k < npids && rc == 0; k++)
        rc = split_device(m, pids[k], &o, g);
    free(pids);
    tp_order_free(&o);
    return rc ? -1 : 0;
}
