/* series.c - the report's timeline and memory curve (series.h): bounded samples of models. */
#include "report/series.h"

#include "model/kineto.h"
#include "report/jsonw.h"
#include "util/sort.h"
#include "util/vec.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tp_series_init(tp_series *s) {
    memset(s, 0, sizeof(*s));
    tp_strtab_init(&s->names);
}

void tp_series_free(tp_series *s) {
    tp_free_strings(s->lanes, s->nlanes);
    tp_strtab_free(&s->names);
    free(s->steps);
    free(s->heap);
    for (size_t i = 0; i < s->nmem; i++)
        free(s->mem[i].points);
    free(s->mem);
    memset(s, 0, sizeof(*s)); /* freeing again is harmless; using it again needs init */
}

/* The label of a track's lane (series.h). */
void tp_series_lane_label(const tp_model *m, const tp_track *t, int device, char *out, size_t n) {
    const char *tname = t->thread_name ? tp_model_str(m, t->thread_name) : "";
    if (device) {
        snprintf(out, n, "GPU %lld / stream %lld", (long long)t->pid, (long long)t->tid);
    } else if (t->tid_str || t->pid_str) {
        snprintf(out, n, "%s / %s", t->pid_str ? tp_model_str(m, t->pid_str) : "-",
                 t->tid_str ? tp_model_str(m, t->tid_str) : "-");
    } else {
        snprintf(out, n, "pid %lld / thread %lld%s%s%s", (long long)t->pid, (long long)t->tid,
                 *tname ? " (" : "", tname, *tname ? ")" : "");
    }
}

/* The index of the lane labelled `label`, added if new; UINT32_MAX when out of memory. */
static uint32_t lane_of(tp_series *s, const char *label) {
    for (size_t i = 0; i < s->nlanes; i++)
        if (strcmp(s->lanes[i], label) == 0) return (uint32_t)i;
    char *copy = strdup(label);
    if (!copy || TP_GROW(s->lanes, s->cap_lanes, s->nlanes + 1)) {
        free(copy);
        s->failed = 1;
        return UINT32_MAX;
    }
    s->lanes[s->nlanes] = copy;
    return (uint32_t)s->nlanes++;
}

static void heap_swap(tp_series_range *h, size_t i, size_t j) {
    tp_series_range t = h[i];
    h[i] = h[j];
    h[j] = t;
}

static void heap_up(tp_series_range *h, size_t i) {
    while (i > 0 && h[(i - 1) / 2].dur_ns > h[i].dur_ns) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(tp_series_range *h, size_t n, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, min = i;
        if (l < n && h[l].dur_ns < h[min].dur_ns) min = l;
        if (r < n && h[r].dur_ns < h[min].dur_ns) min = r;
        if (min == i) return;
        heap_swap(h, i, min);
        i = min;
    }
}

/* One of the bounded lists of ranges (the steps, the other ranges) of a series. */
typedef struct kept {
    tp_series_range **v;
    size_t *n, *cap;
    uint64_t *seen;
} kept;

/* Keeps r, named `name`, in k when it is among the TP_SERIES_RANGES longest so far. */
static void offer_range(tp_series *s, kept k, tp_series_range r, const char *name) {
    ++*k.seen;
    tp_series_range *h = *k.v;
    int full = *k.n == TP_SERIES_RANGES;
    if (full && r.dur_ns <= h[0].dur_ns) return;
    if (!full && TP_GROW(*k.v, *k.cap, *k.n + 1)) {
        s->failed = 1;
        return;
    }
    h = *k.v;
    r.name = tp_strtab_intern(&s->names, name, strlen(name));
    if (full) {
        h[0] = r;
        heap_down(h, *k.n, 0);
    } else {
        h[*k.n] = r;
        heap_up(h, (*k.n)++);
    }
    assert(*k.n <= TP_SERIES_RANGES);
}

static tp_series_mem *mem_of(tp_series *s, int64_t type, int64_t id) {
    for (size_t i = 0; i < s->nmem; i++)
        if (s->mem[i].device_type == type && s->mem[i].device_id == id) return &s->mem[i];
    if (TP_GROW(s->mem, s->cap_mem, s->nmem + 1)) return NULL;
    s->mem[s->nmem] = (tp_series_mem){.device_type = type, .device_id = id};
    return &s->mem[s->nmem++];
}

/* A [memory] event's point, on its device's curve (events without both device args are
 * ignored, as the analysis' peaks ignore them). */
static void add_memory(tp_series *s, const tp_model *m, const tp_event *e) {
    double type, id, bytes = 0, total = 0;
    if (tp_event_arg_number(m, e, tp_karg_device_type, &type) ||
        tp_event_arg_number(m, e, tp_karg_device_id, &id))
        return;
    tp_series_point p = {.ts_ns = m->base_ns + e->ts};
    if (tp_event_arg_number(m, e, tp_karg_bytes, &bytes) == 0) p.bytes = (int64_t)bytes;
    if (tp_event_arg_number(m, e, tp_karg_total_allocated, &total) == 0) {
        p.total = (int64_t)total;
        p.has_total = 1;
    }
    tp_series_mem *d = mem_of(s, (int64_t)type, (int64_t)id);
    if (!d || TP_GROW(d->points, d->cap, d->n + 1)) {
        s->failed = 1;
        return;
    }
    d->points[d->n++] = p;
}

void tp_series_add_model(tp_series *s, const tp_model *m) {
    uint32_t *lanes = calloc(m->ntracks ? m->ntracks : 1, sizeof(*lanes));
    if (!lanes) {
        s->failed = 1;
        return;
    }
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if (e->kind == TP_MEMORY) {
            add_memory(s, m, e);
            continue;
        }
        if (e->kind != TP_HOST_RANGE && !tp_kind_is_gpu_work(e->kind)) continue;
        if (e->track >= m->ntracks) continue;
        if (!lanes[e->track]) { /* lane + 1, 0 until looked up */
            char label[256];
            tp_series_lane_label(m, &m->tracks[e->track], e->kind != TP_HOST_RANGE, label,
                                 sizeof(label));
            lanes[e->track] = lane_of(s, label) + 1;
        }
        if (lanes[e->track] == 0) continue; /* lane_of failed: UINT32_MAX + 1 */
        tp_series_range r = {.start_ns = m->base_ns + e->ts,
                             .dur_ns = e->dur,
                             .lane = lanes[e->track] - 1,
                             .kind = e->kind,
                             .step = (e->flags & TP_EVF_STEP) != 0};
        kept k = r.step ? (kept){&s->steps, &s->nsteps, &s->cap_steps, &s->steps_seen}
                        : (kept){&s->heap, &s->nheap, &s->cap_heap, &s->ranges_seen};
        offer_range(s, k, r, tp_model_str(m, e->name));
    }
    free(lanes);
}

static int point_by_time(const void *x, const void *y) {
    const tp_series_point *a = x, *b = y;
    return (a->ts_ns > b->ts_ns) - (a->ts_ns < b->ts_ns);
}

/* The names of the kept ranges, each once, in order of first use; index[id] becomes the
 * position of name id in that list + 1 (0: unused). */
static void name_list(tp_jw *w, const tp_series *s, uint32_t *index) {
    uint32_t next = 0;
    tp_jw_array(w, "names");
    for (int pass = 0; pass < 2; pass++) {
        const tp_series_range *r = pass ? s->heap : s->steps;
        size_t n = pass ? s->nheap : s->nsteps;
        for (size_t i = 0; i < n; i++) {
            if (index[r[i].name]) continue;
            index[r[i].name] = ++next;
            tp_jw_str(w, NULL, tp_strtab_get(&s->names, r[i].name));
        }
    }
    tp_jw_end_array(w);
}

/* ", " at p, as the JSON writer separates values; returns the end. */
static char *comma(char *p) {
    p[0] = ',';
    p[1] = ' ';
    return p + 2;
}

/* The ranges r[0..n) in order of start (ties in their order here: the sort is stable), each
 * as [lane, start_us, dur_us, name, kind]; 0, or -1 when out of memory. */
static int range_list(tp_jw *w, const char *key, const tp_series_range *r, size_t n,
                      const uint32_t *index, const uint32_t *lane) {
    tp_keyed *order = malloc((n ? n : 1) * sizeof(*order));
    tp_sort_buf spare = {0};
    if (!order) return -1;
    for (size_t i = 0; i < n; i++)
        order[i] = (tp_keyed){tp_time_key(r[i].start_ns), i};
    int rc = tp_sort_keyed(&spare, order, n);
    tp_sort_buf_free(&spare);
    tp_jw_array(w, key);
    for (size_t k = 0; rc == 0 && k < n; k++) {
        const tp_series_range *g = &r[order[k].val];
        /* formatted here in one piece: thousands of rows through a value call each cost more
         * than the rest of a small report */
        char row[4 * TP_FMT_NUM_MAX + 24], *p = row;
        assert(index[g->name] > 0 && lane[g->lane] > 0);
        *p++ = '[';
        p = tp_fmt_u64(p, lane[g->lane] - 1);
        p = tp_fmt_us(comma(p), g->start_ns);
        p = tp_fmt_us(comma(p), g->dur_ns);
        p = tp_fmt_u64(comma(p), index[g->name] - 1);
        memcpy(p, g->kind == TP_HOST_RANGE ? ", \"cpu\"]" : ", \"gpu\"]", 8);
        tp_jw_raw(w, NULL, row, (size_t)(p + 8 - row));
    }
    tp_jw_end_array(w);
    free(order);
    return rc;
}

/* One device's curve: allocated bytes (Total Allocated where the events carry it, else the
 * running sum of Bytes), at most TP_SERIES_MEM_POINTS points, each bucket's highest. */
static void memory_curve(tp_jw *w, tp_series_mem *d) {
    if (d->n) qsort(d->points, d->n, sizeof(*d->points), point_by_time);
    int any_total = 0;
    for (size_t i = 0; i < d->n; i++)
        any_total |= d->points[i].has_total;
    size_t per_bucket = (d->n + TP_SERIES_MEM_POINTS - 1) / TP_SERIES_MEM_POINTS;
    tp_jw_object(w, NULL);
    tp_jw_i64(w, "device_type", d->device_type);
    tp_jw_i64(w, "device_id", d->device_id);
    tp_jw_u64(w, "events", d->n);
    tp_jw_array(w, "points"); /* [ts_us, bytes] */
    int64_t running = 0, last = 0;
    for (size_t i = 0; i < d->n;) {
        int64_t best = INT64_MIN, best_ts = 0;
        for (size_t end = i + per_bucket; i < d->n && i < end; i++) {
            const tp_series_point *p = &d->points[i];
            running += p->bytes;
            int64_t v = any_total ? (p->has_total ? p->total : last) : running;
            last = v;
            if (v > best) {
                best = v;
                best_ts = p->ts_ns;
            }
        }
        tp_jw_array(w, NULL);
        tp_jw_us(w, NULL, best_ts);
        tp_jw_i64(w, NULL, best);
        tp_jw_end_array(w);
    }
    tp_jw_end_array(w);
    tp_jw_end_object(w);
}

/* The lanes the kept ranges are on, in order of first use; lane[i] becomes lane i's position in
 * that list + 1 (0: no kept range on it), so that threads without a kept range (thousands, with
 * as many ranks) take no room. used: room for as many lanes. */
static void lane_list(tp_jw *w, const tp_series *s, uint32_t *lane, uint32_t *used) {
    uint32_t next = 0;
    for (int pass = 0; pass < 2; pass++) {
        const tp_series_range *r = pass ? s->heap : s->steps;
        size_t n = pass ? s->nheap : s->nsteps;
        for (size_t i = 0; i < n; i++) {
            if (lane[r[i].lane]) continue;
            used[next] = r[i].lane;
            lane[r[i].lane] = ++next;
        }
    }
    tp_jw_array(w, "lanes");
    for (uint32_t k = 0; k < next; k++)
        tp_jw_str(w, NULL, s->lanes[used[k]]);
    tp_jw_end_array(w);
}

void tp_series_json(tp_buf *out, tp_series *s, size_t max_str) {
    tp_jw w;
    tp_jw_init(&w, out);
    w.max_str = max_str;
    tp_jw_object(&w, NULL);
    uint32_t *index = calloc(s->names.n ? s->names.n : 1, sizeof(*index));
    uint32_t *lane = calloc(s->nlanes ? 2 * s->nlanes : 1, sizeof(*lane));
    if (!index || !lane) {
        free(index);
        free(lane);
        out->failed = 1;
        return;
    }
    lane_list(&w, s, lane, lane + s->nlanes);
    name_list(&w, s, index);
    if (range_list(&w, "steps", s->steps, s->nsteps, index, lane) ||
        range_list(&w, "ranges", s->heap, s->nheap, index, lane))
        out->failed = 1;
    free(index);
    free(lane);
    tp_jw_u64(&w, "steps_total", s->steps_seen);
    tp_jw_u64(&w, "ranges_total", s->ranges_seen);
    tp_jw_bool(&w, "partial", s->failed || s->names.failed);
    tp_jw_u64(&w, "memory_total", s->nmem);
    tp_jw_array(&w, "memory");
    for (size_t i = 0; i < s->nmem && i < TP_SERIES_MEM_DEVICES; i++)
        memory_curve(&w, &s->mem[i]);
    tp_jw_end_array(&w);
    tp_jw_end_object(&w);
}
