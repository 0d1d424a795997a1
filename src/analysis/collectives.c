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

/* The union of comm and compute together over [lo, hi), in the comm list grown to hold both. */
static int union_both(dev_work *d, tp_order *o, int64_t lo, int64_t hi, int64_t *u) {
    size_t nc = d->n[WORK_COMM], n = nc + d->n[WORK_COMPUTE];
    if (TP_GROW(d->v[WORK_COMM], d->cap[WORK_COMM], n)) return -1;
    if (d->n[WORK_COMPUTE]) /* the list is NULL when empty */
        memcpy(d->v[WORK_COMM] + nc, d->v[WORK_COMPUTE], d->n[WORK_COMPUTE] * sizeof(tp_keyed));
    return tp_gpu_union(o, d->v[WORK_COMM], n, lo, hi, u);
}

/* A window's pieces (tp_model.piece) are split as the window is: GPU work goes into its launch's
 * piece (sink/artifacts.c), so it may run past the piece's end; what does is carried, from that
 * end on, into the next piece's unions, which each cover [previous piece's end, piece's end), so
 * that their sums are the window's. Each device's first work's start, last work's end and union
 * of all work are kept too: the last piece adds its idle time. A device is told by its pid. */
typedef struct split_dev {
    int64_t pid, first, last, work_ns; /* over the pieces so far */
    tp_keyed *over[WORK_KINDS];        /* its work past the last piece's end, from there on */
    size_t nover[WORK_KINDS], cap[WORK_KINDS];
} split_dev;

struct tp_split_carry {
    split_dev *v;
    size_t n, cap;
    int64_t from; /* the last piece's end: where the next piece's unions begin */
};

void tp_split_carry_free(struct tp_split_carry *c) {
    for (size_t i = 0; c && i < c->n; i++)
        for (int k = 0; k < WORK_KINDS; k++)
            free(c->v[i].over[k]);
    if (c) free(c->v);
    free(c);
}

/* The carried state of device pid, made on first sight; NULL when out of memory. */
static split_dev *carried_dev(struct tp_split_carry *c, int64_t pid) {
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].pid == pid) return &c->v[i];
    if (TP_GROW(c->v, c->cap, c->n + 1)) return NULL;
    split_dev *cd = &c->v[c->n++];
    *cd = (split_dev){.pid = pid, .first = INT64_MAX, .last = INT64_MIN};
    return cd;
}

/* The work cd carried joins d's; d's span widens to cover the window's so far. */
static int take_carried(split_dev *cd, dev_work *d) {
    for (int k = 0; k < WORK_KINDS; k++) {
        size_t n = cd->nover[k];
        if (n && TP_GROW(d->v[k], d->cap[k], d->n[k] + n)) return -1;
        if (n) memcpy(d->v[k] + d->n[k], cd->over[k], n * sizeof(tp_keyed));
        d->n[k] += n;
        cd->nover[k] = 0;
    }
    if (cd->first < d->first) d->first = cd->first;
    if (cd->last > d->last) d->last = cd->last;
    cd->first = d->first;
    cd->last = d->last;
    return 0;
}

/* d's work past `end` into cd, from end on, for the next piece. */
static int keep_past(split_dev *cd, const dev_work *d, int64_t end) {
    tp_keyed past;
    for (int k = 0; k < WORK_KINDS; k++) {
        for (size_t i = 0; i < d->n[k]; i++) {
            if (!tp_gpu_past(&d->v[k][i], end, &past)) continue;
            if (TP_GROW(cd->over[k], cd->cap[k], cd->nover[k] + 1)) return -1;
            cd->over[k][cd->nover[k]++] = past;
        }
    }
    return 0;
}

/* The device's split into g: over its work's span in a whole model (c NULL), else over the piece
 * (c: the window's pieces so far). */
static int split_device(const tp_model *m, int64_t pid, tp_order *o, tp_gpu_split *g,
                        struct tp_split_carry *c) {
    dev_work d = {0};
    int64_t u[WORK_KINDS] = {0}, uboth = 0;
    split_dev *cd = c ? carried_dev(c, pid) : NULL;
    int rc = c && !cd ? -1 : gather(m, pid, &d);
    if (rc == 0 && cd) rc = take_carried(cd, &d);
    int64_t lo = c ? c->from : d.first, hi = !c ? d.last : m->piece ? m->piece_end : INT64_MAX;
    for (int k = 0; k < WORK_KINDS && rc == 0; k++)
        rc = tp_gpu_union(o, d.v[k], d.n[k], lo, hi, &u[k]);
    if (rc == 0 && cd && m->piece) rc = keep_past(cd, &d, hi);
    if (rc == 0 && d.n[WORK_ALL]) rc = union_both(&d, o, lo, hi, &uboth);
    if (rc == 0 && d.n[WORK_ALL]) {
        g->compute_ns += u[WORK_COMPUTE];
        g->comm_ns += u[WORK_COMM];
        /* |comm ∩ compute| = |comm| + |compute| - |comm ∪ compute| */
        g->overlap_ns += u[WORK_COMM] + u[WORK_COMPUTE] - uboth;
        g->work_ns += u[WORK_ALL];
        if (!c) g->idle_ns += d.last - d.first - u[WORK_ALL];
    }
    if (cd) cd->work_ns += u[WORK_ALL];
    for (int k = 0; k < WORK_KINDS; k++)
        free(d.v[k]);
    return rc;
}

typedef struct pid_set {
    int64_t *v;
    size_t n, cap;
} pid_set;

/* pid into set unless there already; -1 when out of memory. */
static int add_pid(pid_set *set, int64_t pid) {
    if (tp_pid_in(set->v, set->n, pid)) return 0;
    if (TP_GROW(set->v, set->cap, set->n + 1)) return -1;
    set->v[set->n++] = pid;
    return 0;
}

/* The devices of m, with those of the carry c, into set; -1 when out of memory. */
static int device_pids(const tp_model *m, const struct tp_split_carry *c, pid_set *set) {
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if (tp_kind_is_gpu_work(e->kind) && add_pid(set, m->tracks[e->track].pid)) return -1;
    }
    for (size_t i = 0; c && i < c->n; i++)
        if (add_pid(set, c->v[i].pid)) return -1;
    return 0;
}

/* The window's last piece: each device's idle time over the window, and the carry is done. */
static void finish_pieces(tp_gpu_split *g) {
    struct tp_split_carry *c = g->carry;
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].last > c->v[i].first)
            g->idle_ns += c->v[i].last - c->v[i].first - c->v[i].work_ns;
    tp_split_carry_free(c);
    g->carry = NULL;
}

int tp_gpu_split_add(const tp_model *m, tp_gpu_split *g) {
    if (m->piece && !g->carry) {
        if (!(g->carry = calloc(1, sizeof(*g->carry)))) return -1;
        g->carry->from = INT64_MIN;
    }
    struct tp_split_carry *c = g->carry;
    pid_set pids = {0};
    tp_order o = {0};
    int rc = device_pids(m, c, &pids);
    for (size_t k = 0; k < pids.n && rc == 0; k++)
        rc = split_device(m, pids.v[k], &o, g, c);
    free(pids.v);
    tp_order_free(&o);
    if (c && m->piece) c->from = m->piece_end;
    if (c && !m->piece) finish_pieces(g);
    return rc ? -1 : 0;
}
