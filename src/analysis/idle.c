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
 * figures are the sums over its streams. docs/METRICS.md defines them. */
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

/* One stream's work, sorted by start (val: event index), into its device's row. */
static void classify_gaps(tp_walk *s, const tp_keyed *w, size_t n, tp_idle_row *row) {
    size_t hint = 0;
    for (size_t i = 1; i < n; i++) {
        const tp_event *prev = &s->m->events[w[i - 1].val], *e = &s->m->events[w[i].val];
        int64_t prev_end = tp_ev_end(prev), gap = e->ts - prev_end;
        if (gap < 0) gap = 0;
        int64_t launch = launch_ts(s, e, &hint);
        int64_t *cell = &row->other_ns;
        if (launch != INT64_MIN && launch > prev_end)
            cell = sync_ended(s->sync_ends, s->nsync_ends, prev_end, launch) ? &row->sync_ns
                                                                             : &row->host_ns;
        else if (gap < TP_IDLE_LAUNCH_NS && !(e->corr && e->corr == prev->corr))
            cell = &row->launch_ns; /* one launch's work (a CUDA graph's nodes): no overhead */
        *cell = tp_add_sat(*cell, gap);
        row->idle_ns = tp_add_sat(row->idle_ns, gap);
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

int tp_gpu_idle(tp_walk *s, const tp_idle_streams *st) {
    const tp_model *m = s->m;
    if (!st->work) return 0;
    tp_sort_i64(s->sync_ends, s->nsync_ends);
    for (size_t t = 0; t < st->ntracks; t++) {
        size_t count = st->start[t + 1] - st->start[t];
        if (!count) continue;
        tp_idle_row *row = tp_device_row(s->a, m->tracks[t].pid);
        if (!row) return -1;
        classify_gaps(s, st->work + st->start[t], count, row);
    }
    return 0;
}
