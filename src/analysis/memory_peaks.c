/* memory_peaks.c - memory peaks per (Device Type, Device Id) from PyTorch's [memory] instants.
 *
 * Where events carry `Total Allocated` (the allocator's running total, as Kineto writes it) the
 * peak is its maximum; otherwise it is the peak of the running sum of `Bytes` (negative for a
 * free) from zero in time order, which only sees allocations made inside the trace. Events
 * without both device args are ignored. The peak's time is that of the first event reaching it.
 *
 * Allocations (events with Bytes > 0, any device) are handed to the walks by thread, in time
 * order, so that each is charged to the innermost op enclosing it on its thread (nesting.c). */
#include "analysis/internal.h"

#include "model/kineto.h"
#include "util/vec.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mem_keys {
    tp_str type, id, bytes, total;
} mem_keys;

static tp_str find_key(const tp_model *m, const char *k) {
    return tp_strtab_find(&m->strings, k, strlen(k));
}

enum { HAS_TYPE = 1, HAS_ID = 2, HAS_BYTES = 4, HAS_TOTAL = 8 };

typedef struct mem_args {
    int64_t type, id, bytes, total;
} mem_args;

static int arg_i64(const tp_arg *a, int64_t *out) {
    if (a->type == TP_ARG_INT) {
        *out = a->v.i;
        return 1;
    }
    if (a->type != TP_ARG_DOUBLE || !(fabs(a->v.d) < 9.2e18)) return 0;
    *out = (int64_t)llround(a->v.d);
    return 1;
}

/* The numeric memory args of e, in one sweep over its args; returns the HAS_* bits found. */
static unsigned read_args(const tp_model *m, const tp_event *e, const mem_keys *k, mem_args *out) {
    unsigned has = 0;
    for (uint32_t i = 0; i < e->nargs; i++) {
        const tp_arg *a = &m->args[e->arg0 + i];
        if (a->key == k->type && arg_i64(a, &out->type))
            has |= HAS_TYPE;
        else if (a->key == k->id && arg_i64(a, &out->id))
            has |= HAS_ID;
        else if (a->key == k->bytes && arg_i64(a, &out->bytes))
            has |= HAS_BYTES;
        else if (a->key == k->total && arg_i64(a, &out->total))
            has |= HAS_TOTAL;
    }
    return has;
}

/* The peak of one device's events (idx in time order): of Total Allocated when any event has
 * it, else of the running sum of Bytes. */
static void group_peak(const tp_model *m, const mem_keys *k, const uint32_t *idx, size_t n,
                       int64_t *peak, int64_t *peak_ts) {
    int64_t total_peak = 0, total_ts = 0, run_peak = 0, run_ts = 0, running = 0;
    int have_total = 0;
    for (size_t i = 0; i < n; i++) {
        const tp_event *e = &m->events[idx[i]];
        mem_args v = {0};
        unsigned has = read_args(m, e, k, &v);
        if ((has & HAS_TOTAL) && (!have_total || v.total > total_peak)) {
            total_peak = v.total;
            total_ts = e->ts;
            have_total = 1;
        }
        running = tp_add_sat(running, (has & HAS_BYTES) ? v.bytes : 0);
        if (i == 0 || running > run_peak) {
            run_peak = running;
            run_ts = e->ts;
        }
    }
    *peak = have_total ? total_peak : run_peak;
    *peak_ts = have_total ? total_ts : run_ts;
}

/* Keeps the larger of this peak and the analysis' peak for the device. */
static int merge_peak(tp_analysis *a, const tp_model *m, struct tp_pair dev, int64_t peak,
                      int64_t ts) {
    tp_mem_row *row = NULL;
    for (size_t i = 0; i < a->nmemory && !row; i++)
        if (a->memory[i].device_type == dev.a && a->memory[i].device_id == dev.b)
            row = &a->memory[i];
    if (!row) {
        if (TP_GROW(a->memory, a->cap_memory, a->nmemory + 1)) return -1;
        row = &a->memory[a->nmemory++];
        *row = (tp_mem_row){.device_type = dev.a,
                            .device_id = dev.b,
                            .peak_bytes = peak,
                            .peak_ts_ns = tp_add_sat(m->base_ns, ts)};
    } else if (peak > row->peak_bytes) {
        row->peak_bytes = peak;
        row->peak_ts_ns = tp_add_sat(m->base_ns, ts);
    }
    if (dev.a == 1) /* CUDA: the device's capacity, when the trace lists it */
        for (size_t i = 0; i < m->ndevices; i++)
            if (m->devices[i].id == dev.b && m->devices[i].total_mem)
                row->capacity_bytes = m->devices[i].total_mem;
    return 0;
}

/* Each device's events in time order, and their peak merged into the analysis. */
static int peaks_per_device(tp_walk *s, const mem_keys *k, const tp_pairs *devices,
                            const uint32_t *kept, const uint32_t *key, size_t n) {
    uint32_t *grouped = tp_arena_alloc(s->tmp, n, sizeof(*grouped));
    size_t *start = tp_arena_alloc(s->tmp, devices->n + 1, sizeof(*start));
    int rc = grouped && start ? 0 : -1;
    if (rc == 0) tp_group_by_key(kept, key, n, devices->n, grouped, start);
    for (size_t g = 0; g < devices->n && rc == 0; g++) {
        uint32_t *seg = grouped + start[g];
        size_t len = start[g + 1] - start[g];
        int64_t peak = 0, ts = 0;
        rc = tp_order_ranges(&s->order, s->m->events, seg, len);
        if (rc == 0) {
            group_peak(s->m, k, seg, len, &peak, &ts); /* every device holds an event */
            rc = merge_peak(s->a, s->m, devices->v[g], peak, ts);
        }
    }
    return rc;
}

int tp_memory_peaks(tp_walk *s, const uint32_t *mem, size_t n) {
    const tp_model *m = s->m;
    if (n == 0) return 0;
    mem_keys k = {find_key(m, tp_karg_device_type), find_key(m, tp_karg_device_id),
                  find_key(m, tp_karg_bytes), find_key(m, tp_karg_total_allocated)};
    uint32_t *key = tp_arena_alloc(s->tmp, n, sizeof(*key));
    uint32_t *kept = tp_arena_alloc(s->tmp, n, sizeof(*kept));
    tp_pairs devices = {0};
    size_t nkept = 0;
    int rc = key && kept ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        mem_args v = {0};
        if ((read_args(m, &m->events[mem[i]], &k, &v) & (HAS_TYPE | HAS_ID)) != (HAS_TYPE | HAS_ID))
            continue; /* not attributable to a device */
        key[nkept] = tp_pairs_number(&devices, v.type, v.id);
        if (key[nkept] == UINT32_MAX) rc = -1;
        kept[nkept++] = mem[i];
    }
    if (rc == 0 && devices.n) rc = peaks_per_device(s, &k, &devices, kept, key, nkept);
    tp_pairs_free(&devices);
    return rc;
}

/* The allocations among mem[0..n) by track, into s->allocs, s->alloc_bytes, s->alloc_start. */
static int group_allocs(tp_walk *s, const mem_keys *k, const uint32_t *kept, const uint32_t *track,
                        size_t n) {
    const tp_model *m = s->m;
    s->allocs = tp_arena_alloc(&s->keep, n, sizeof(*s->allocs));
    s->alloc_bytes = tp_arena_alloc(&s->keep, n, sizeof(*s->alloc_bytes));
    s->alloc_start = tp_arena_alloc(&s->keep, m->ntracks + 1, sizeof(*s->alloc_start));
    if (!s->allocs || !s->alloc_bytes || !s->alloc_start) return -1;
    tp_group_by_key(kept, track, n, m->ntracks, s->allocs, s->alloc_start);
    for (size_t t = 0; t < m->ntracks; t++) {
        uint32_t *seg = s->allocs + s->alloc_start[t];
        if (tp_order_ranges(&s->order, m->events, seg, s->alloc_start[t + 1] - s->alloc_start[t]))
            return -1;
    }
    for (size_t i = 0; i < n; i++) {
        mem_args v = {0};
        read_args(m, &m->events[s->allocs[i]], k, &v);
        assert(v.bytes > 0); /* kept by tp_memory_allocs */
        s->alloc_bytes[i] = v.bytes;
    }
    return 0;
}

int tp_memory_allocs(tp_walk *s, const uint32_t *mem, size_t n) {
    const tp_model *m = s->m;
    tp_str bytes_key = find_key(m, tp_karg_bytes);
    if (n == 0 || bytes_key == UINT32_MAX) return 0;
    mem_keys k = {UINT32_MAX, UINT32_MAX, bytes_key, UINT32_MAX};
    uint32_t *kept = tp_arena_alloc(s->tmp, n, sizeof(*kept));
    uint32_t *track = tp_arena_alloc(s->tmp, n, sizeof(*track));
    size_t nkept = 0;
    int rc = kept && track ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        mem_args v = {0};
        if (!(read_args(m, &m->events[mem[i]], &k, &v) & HAS_BYTES) || v.bytes <= 0) continue;
        track[nkept] = m->events[mem[i]].track;
        kept[nkept++] = mem[i];
    }
    if (rc == 0 && nkept) rc = group_allocs(s, &k, kept, track, nkept);
    return rc;
}
