/* order.c - the nearly-sorted-aware index sort and the grouping of order.h. */
#include "analysis/order.h"

#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

struct tp_order_key {
    uint64_t key; /* start time minus the smallest start, so it sorts as unsigned */
    uint32_t idx;
};

enum {
    TP_RADIX_BITS = 11, /* 2048 buckets: the histogram stays in L1 */
    TP_RADIX_BUCKETS = 1 << TP_RADIX_BITS,
    TP_SMALL_SORT = 32, /* below this, insertion sort wins */
    TP_NEAR = 16,       /* how far back an out-of-order element is inserted in place */
};

void tp_order_free(tp_order *o) {
    free(o->tmp);
    free(o->keys);
    free(o->keys2);
    *o = (tp_order){0};
}

static inline int before(const tp_event *ev, uint32_t a, uint32_t b) {
    return tp_order_key_before(ev[a].ts, ev[a].dur, a, ev[b].ts, ev[b].dur, b);
}

static void insertion_sort(const tp_event *ev, uint32_t *v, size_t n) {
    for (size_t i = 1; i < n; i++) {
        uint32_t x = v[i];
        size_t j = i;
        for (; j > 0 && before(ev, x, v[j - 1]); j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

static int qsort_cmp(const void *pa, const void *pb, void *ctx) {
    const tp_event *ev = ctx;
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return before(ev, a, b) ? -1 : before(ev, b, a) ? 1 : 0;
}

/* Orders a run of equal start times by the rest of the order. Runs are short in real traces (a
 * range and the children that start with it); a long one (adversarial input) takes qsort_r. */
static void tie_sort(const tp_event *ev, uint32_t *v, size_t n) {
    if (n <= TP_SMALL_SORT)
        insertion_sort(ev, v, n);
    else
        qsort_r(v, n, sizeof(*v), qsort_cmp, (void *)ev);
}

/* LSD radix sort of v[0..n) by start time (stable), then ties ordered by tie_sort. */
static int radix_sort(tp_order *o, const tp_event *ev, uint32_t *v, size_t n) {
    if (TP_GROW(o->keys, o->cap_keys, n)) return -1;
    struct tp_order_key *k2 = realloc(o->keys2, o->cap_keys * sizeof(*k2));
    if (!k2) return -1;
    o->keys2 = k2;
    int64_t lo = ev[v[0]].ts, hi = lo;
    for (size_t i = 1; i < n; i++) {
        int64_t t = ev[v[i]].ts;
        lo = t < lo ? t : lo;
        hi = t > hi ? t : hi;
    }
    struct tp_order_key *src = o->keys, *dst = o->keys2;
    for (size_t i = 0; i < n; i++)
        src[i] = (struct tp_order_key){(uint64_t)ev[v[i]].ts - (uint64_t)lo, v[i]};
    uint64_t span = (uint64_t)hi - (uint64_t)lo;
    for (unsigned shift = 0; shift < 64 && (span >> shift) != 0; shift += TP_RADIX_BITS) {
        size_t count[TP_RADIX_BUCKETS] = {0};
        for (size_t i = 0; i < n; i++)
            count[(src[i].key >> shift) & (TP_RADIX_BUCKETS - 1)]++;
        size_t pos = 0;
        for (size_t b = 0; b < TP_RADIX_BUCKETS; b++) {
            size_t c = count[b];
            count[b] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[(src[i].key >> shift) & (TP_RADIX_BUCKETS - 1)]++] = src[i];
        struct tp_order_key *t = src;
        src = dst;
        dst = t;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = src[i].idx;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && src[j].key == src[i].key)
            j++;
        if (j - i > 1) tie_sort(ev, v + i, j - i);
        i = j;
    }
    return 0;
}

static int sort_any(tp_order *o, const tp_event *ev, uint32_t *v, size_t n) {
    if (n <= TP_SMALL_SORT) {
        insertion_sort(ev, v, n);
        return 0;
    }
    return radix_sort(o, ev, v, n);
}

int tp_order_ranges(tp_order *o, const tp_event *ev, uint32_t *idx, size_t n) {
    if (n < 2) return 0;
    /* Keep the elements that extend the sorted prefix in place. One that belongs a short way
     * back (a parent written after its few children) is inserted there; the others are set
     * aside in out, sorted apart and merged back. */
    if (TP_GROW(o->tmp, o->cap_tmp, n)) return -1;
    uint32_t *out = o->tmp;
    size_t m = 1, s = 0;
    /* The last kept element's key stays in registers: one event read per element. */
    int64_t last_ts = ev[idx[0]].ts, last_dur = ev[idx[0]].dur;
    uint32_t last = idx[0];
    for (size_t i = 1; i < n; i++) {
        uint32_t x = idx[i];
        int64_t ts = ev[x].ts, dur = ev[x].dur;
        if (!tp_order_key_before(ts, dur, x, last_ts, last_dur, last)) {
            idx[m++] = x;
            last_ts = ts;
            last_dur = dur;
            last = x;
            continue;
        }
        size_t j = m - 1, limit = m > TP_NEAR ? m - TP_NEAR : 0;
        while (j > limit && before(ev, x, idx[j - 1]))
            j--;
        if (j == limit && limit > 0 && before(ev, x, idx[limit - 1])) {
            out[s++] = x;
            continue;
        }
        /* m <= i, so the shift only overwrites slots already read */
        memmove(idx + j + 1, idx + j, (m - j) * sizeof(*idx));
        idx[j] = x;
        m++;
    }
    if (s == 0) return 0;
    if (s > n / 4) {
        /* Far from sorted: merging would not pay; sort everything at once. */
        for (size_t i = 0; i < s; i++)
            idx[m + i] = out[i];
        return sort_any(o, ev, idx, n);
    }
    if (sort_any(o, ev, out, s)) {
        for (size_t i = 0; i < s; i++)
            idx[m + i] = out[i];
        return -1;
    }
    /* Merge from the back: the write position never overtakes the unread part of idx. */
    size_t i = m, j = s, w = n;
    while (j > 0) {
        if (i > 0 && before(ev, out[j - 1], idx[i - 1]))
            idx[--w] = idx[--i];
        else
            idx[--w] = out[--j];
    }
    return 0;
}

void tp_group_by_key(const uint32_t *idx, const uint32_t *key, size_t n, size_t nkeys,
                     uint32_t *out, size_t *start) {
    for (size_t g = 0; g <= nkeys; g++)
        start[g] = 0;
    for (size_t i = 0; i < n; i++)
        start[key[i] + 1]++;
    for (size_t g = 0; g < nkeys; g++)
        start[g + 1] += start[g];
    /* start[g] now marks group g's first slot; filling advances it to the next group's. */
    for (size_t i = 0; i < n; i++)
        out[start[key[i]]++] = idx[i];
    for (size_t g = nkeys; g > 0; g--)
        start[g] = start[g - 1];
    start[0] = 0;
}

uint32_t tp_pairs_number(tp_pairs *p, int64_t a, int64_t b) {
    for (size_t i = 0; i < p->n; i++)
        if (p->v[i].a == a && p->v[i].b == b) return (uint32_t)i;
    if (p->n >= UINT32_MAX - 1 || TP_GROW(p->v, p->cap, p->n + 1)) return UINT32_MAX;
    p->v[p->n] = (struct tp_pair){a, b};
    return (uint32_t)p->n++;
}

void tp_pairs_free(tp_pairs *p) {
    free(p->v);
    *p = (tp_pairs){0};
}
