/* idle.c - GPU idle time explained, per device, as Holistic Trace Analysis defines it.
 *
 * Per stream (a GPU track), its work (kernels, copies, sets) in start order; each gap is the
 * start of a piece of work minus the end of the previous one on the stream (gaps below zero,
 * overlapping work, count as zero). A gap is
 *   - host: the work's launch (the host range with its correlation id) started after the
 *     previous work ended: the host did not enqueue work fast enough;
 *     - sync, the part of host gaps in which a synchronization call (cudaStreamSynchronize,
 *       cudaDeviceSynchronize, a blocking cudaMemcpy, ...) ended: the host had waited for the
 *       GPU to drain, then had to refill it;
 *   - launch: otherwise, when the gap is shorter than TP_IDLE_LAUNCH_NS (30 us, back-to-back launch
 *     overhead) and the two pieces come from different launches (a CUDA graph's nodes share their
 *     launch's correlation id: the gaps between them are the graph's, not launch overhead);
 *   - other: the rest (waiting on an event of another stream, work with no launch in the trace).
 * host + sync is HTA's "host wait", launch its "kernel wait", other its "other"; a device's
 * figures are the sums over its streams. docs/METRICS.md defines them.
 *
 * A window added in pieces (tp_model.piece: a streamed window's summary, sink/artifacts.c) has
 * gaps across the cuts too: each stream's last work, and the synchronizations that ended after
 * the earliest of them, are carried from a piece to the next model, so that the pieces' figures
 * are the window's. */
#include "analysis/internal.h"

#include "util/vec.h"

#include <stdlib.h>

tp_idle_row *tp_device_row(tp_analysis *a, int64_t pid) {
    for (size_t i = 0; i < a->nidle; i++)
        if (a->idle[i].device == pid) return &a->idle[i];
    if (TP_GROW(a->idle, a->cap_idle, a->nidle + 1)) return NULL;
    a->idle[a->nidle] = (tp_idle_row){.device = pid};
    return &a->idle[a->nidle++];
}

/* Whether a synchronization call ended in (from, to]: ends[0..n) sorted. */
static int sync_ended(const int64_t *ends, size_t n, int64_t from, int64_t to) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ends[mid] <= from)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && ends[lo] <= to;
}

/* The start of the launch of work e, or INT64_MIN when it has none in the trace. */
static int64_t launch_ts(tp_walk *s, const tp_event *e, size_t *hint) {
    if (!e->corr) return INT64_MIN;
    size_t k = tp_corr_find(&s->corr, e->corr, hint);
    if (k == SIZE_MAX || s->corr.use[k].launch == UINT32_MAX) return INT64_MIN;
    return s->m->events[s->corr.use[k].launch].ts;
}

/* What a window's pieces carry to the next model (the head of this file). */
typedef struct carried {
    int64_t pid, tid; /* the stream */
    int64_t end;      /* its last work's end */
    uint64_t corr;    /* and correlation id */
} carried;
struct tp_idle_carry {
    carried *streams;
    size_t n, cap;
    int64_t *sync_ends; /* sorted */
    size_t nsync, cap_sync;
};

void tp_idle_carry_free(struct tp_idle_carry *c) {
    if (!c) return;
    free(c->streams);
    free(c->sync_ends);
    free(c);
}

static carried *carried_of(struct tp_idle_carry *c, const tp_track *t) {
    for (size_t i = 0; c && i < c->n; i++)
        if (c->streams[i].pid == t->pid && c->streams[i].tid == t->tid) return &c->streams[i];
    return NULL;
}

/* Whether a synchronization call ended in (from, to], in this model or a carried piece. */
static int synced(const tp_walk *s, const struct tp_idle_carry *c, int64_t from, int64_t to) {
    return sync_ended(s->sync_ends, s->nsync_ends, from, to) ||
           (c && sync_ended(c->sync_ends, c->nsync, from, to));
}

/* The gap before work e, the previous work on its stream having ended at prev_end with
 * correlation id prev_corr, into its cell of row. */
static void add_gap(tp_walk *s, const tp_event *e, int64_t prev_end, uint64_t prev_corr,
                    tp_idle_row *row, size_t *hint) {
    int64_t gap = e->ts - prev_end;
    if (gap < 0) gap = 0;
    int64_t launch = launch_ts(s, e, hint);
    int64_t *cell = &row->other_ns;
    if (launch != INT64_MIN && launch > prev_end)
        cell = synced(s, s->a->priv ? s->a->priv->carry : NULL, prev_end, launch) ? &row->sync_ns
                                                                                  : &row->host_ns;
    else if (gap < TP_IDLE_LAUNCH_NS && !(e->corr && e->corr == prev_corr))
        cell = &row->launch_ns; /* one launch's work (a CUDA graph's nodes): no overhead */
    *cell = tp_add_sat(*cell, gap);
    row->idle_ns = tp_add_sat(row->idle_ns, gap);
}

/* One stream's work, sorted by start (val: event index), into its device's row; its first gap
 * from the work `before` carried from the window's earlier pieces (NULL: none). */
static void classify_gaps(tp_walk *s, const tp_keyed *w, size_t n, tp_idle_row *row,
                          const carried *before) {
    size_t hint = 0;
    if (before) add_gap(s, &s->m->events[w[0].val], before->end, before->corr, row, &hint);
    for (size_t i = 1; i < n; i++) {
        const tp_event *prev = &s->m->events[w[i - 1].val];
        add_gap(s, &s->m->events[w[i].val], tp_ev_end(prev), prev->corr, row, &hint);
    }
}

int tp_idle_sort_streams(tp_idle_streams *st, const tp_model *m, const uint32_t *work, size_t n,
                         tp_arena *tmp) {
    *st = (tp_idle_streams){0};
    if (!n) return 0;
    uint32_t *track = tp_arena_alloc(tmp, n, sizeof(*track));
    uint32_t *grouped = tp_arena_alloc(tmp, n, sizeof(*grouped));
    st->start = malloc((m->ntracks + 1) * sizeof(*st->start));
    st->work = malloc(n * sizeof(*st->work));
    tp_sort_buf spare = {0};
    int rc = track && grouped && st->start && st->work ? 0 : -1;
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            track[i] = m->events[work[i]].track;
        tp_group_by_key(work, track, n, m->ntracks, grouped, st->start);
    }
    for (size_t t = 0; rc == 0 && t < m->ntracks; t++) {
        tp_keyed *one = st->work + st->start[t];
        size_t count = st->start[t + 1] - st->start[t];
        for (size_t i = 0; i < count; i++) {
            uint32_t ev = grouped[st->start[t] + i];
            one[i] = (tp_keyed){tp_time_key(m->events[ev].ts), ev};
        }
        size_t sorted = 1; /* streams come in start order: sort only when they do not */
        while (sorted < count && one[sorted - 1].key <= one[sorted].key)
            sorted++;
        if (sorted < count && tp_sort_keyed(&spare, one, count)) rc = -1;
    }
    st->ntracks = m->ntracks;
    tp_sort_buf_free(&spare);
    if (rc) tp_idle_streams_free(st);
    return rc;
}

void tp_idle_streams_free(tp_idle_streams *st) {
    free(st->start);
    free(st->work);
    *st = (tp_idle_streams){0};
}

/* A piece of a window: its streams' last work, and the synchronizations that ended after the
 * earliest of all streams' last work, carried to the next model. -1 when out of memory. */
static int carry_on(tp_walk *s, const tp_idle_streams *st, struct tp_idle_carry *c) {
    const tp_model *m = s->m;
    for (size_t t = 0; t < st->ntracks; t++) {
        size_t count = st->start[t + 1] - st->start[t];
        if (!count) continue;
        const tp_event *last = &m->events[st->work[st->start[t + 1] - 1].val];
        carried *k = carried_of(c, &m->tracks[t]);
        if (!k) {
            if (TP_GROW(c->streams, c->cap, c->n + 1)) return -1;
            k = &c->streams[c->n++];
            k->pid = m->tracks[t].pid;
            k->tid = m->tracks[t].tid;
        }
        k->end = tp_ev_end(last);
        k->corr = last->corr;
    }
    int64_t first = INT64_MAX;
    for (size_t i = 0; i < c->n; i++)
        if (c->streams[i].end < first) first = c->streams[i].end;
    size_t kept = 0;
    for (size_t i = 0; i < c->nsync; i++)
        if (c->sync_ends[i] > first) c->sync_ends[kept++] = c->sync_ends[i];
    c->nsync = kept;
    for (size_t i = 0; i < s->nsync_ends; i++) {
        if (s->sync_ends[i] <= first) continue;
        if (TP_GROW(c->sync_ends, c->cap_sync, c->nsync + 1)) return -1;
        c->sync_ends[c->nsync++] = s->sync_ends[i];
    }
    tp_sort_i64(c->sync_ends, c->nsync);
    return 0;
}

int tp_gpu_idle(tp_walk *s, const tp_idle_streams *st) {
    const tp_model *m = s->m;
    struct tp_analysis_priv *pv = s->a->priv;
    struct tp_idle_carry *c = pv ? pv->carry : NULL;
    tp_sort_i64(s->sync_ends, s->nsync_ends);
    for (size_t t = 0; st->work && t < st->ntracks; t++) {
        size_t count = st->start[t + 1] - st->start[t];
        if (!count) continue;
        tp_idle_row *row = tp_device_row(s->a, m->tracks[t].pid);
        if (!row) return -1;
        classify_gaps(s, st->work + st->start[t], count, row, carried_of(c, &m->tracks[t]));
    }
    if (!pv) return 0;
    if (!m->piece) { /* a window's last piece, or a whole model: nothing goes on */
        tp_idle_carry_free(pv->carry);
        pv->carry = NULL;
        return 0;
    }
    if (!c && !(c = pv->carry = calloc(1, sizeof(*c)))) return -1;
    return st->work ? carry_on(s, st, c) : 0;
}
