/* order.c - the run-aware index sort and the grouping of order.h. */
#include "analysis/order.h"

#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

enum {
    TP_SMALL_SORT = 32, /* below this, insertion sort wins */
    TP_NEAR = 16,       /* how far back an out-of-order element is inserted in place */
    TP_FAR = 8,         /* a run keeping less than 1/TP_FAR of its input: radix sort instead */
    TP_LEVELS = 64,     /* set-aside rounds before the radix sort takes the rest */
};

void tp_order_free(tp_order *o) {
    free(o->tmp);
    free(o->keys);
    tp_sort_buf_free(&o->spare);
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

/* Radix sort of v[0..n) by start time (stable), then ties ordered by tie_sort. */
static int radix_sort(tp_order *o, const tp_event *ev, uint32_t *v, size_t n) {
    if (TP_GROW(o->keys, o->cap_keys, n)) return -1;
    tp_keyed *k = o->keys;
    for (size_t i = 0; i < n; i++)
        k[i] = (tp_keyed){tp_time_key(ev[v[i]].ts), v[i]};
    if (tp_sort_keyed(&o->spare, k, n)) return -1;
    for (size_t i = 0; i < n; i++)
        v[i] = (uint32_t)k[i].val;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && k[j].key == k[i].key)
            j++;
        if (j - i > 1) tie_sort(ev, v + i, j - i);
        i = j;
    }
    return 0;
}

static int sort_far(tp_order *o, const tp_event *ev, uint32_t *v, size_t n) {
    if (n <= TP_SMALL_SORT) {
        insertion_sort(ev, v, n);
        return 0;
    }
    return radix_sort(o, ev, v, n);
}

int tp_run_add(tp_run *r, const tp_event *ev, uint32_t x) {
    int64_t ts = ev[x].ts, dur = ev[x].dur;
    size_t n = r->n;
    if (n == r->cap && TP_GROW(r->v, r->cap, n + 1)) return -1;
    if (n == 0 || !tp_order_key_before(ts, dur, x, r->ts, r->dur, r->v[n - 1])) {
        r->v[r->n++] = x;
        r->ts = ts;
        r->dur = dur;
        return 0;
    }
    /* Far back (one comparison tells): set aside. Otherwise it belongs a short way back (a
     * parent written after its few children): insert it there; the last key stays. */
    size_t j = n - 1, limit = n > TP_NEAR ? n - TP_NEAR : 0;
    if (limit > 0 && before(ev, x, r->v[limit - 1])) {
        if (r->naside == r->cap_aside && TP_GROW(r->aside, r->cap_aside, r->naside + 1)) return -1;
        r->aside[r->naside++] = x;
        return 0;
    }
    while (j > limit && before(ev, x, r->v[j - 1]))
        j--;
    memmove(r->v + j + 1, r->v + j, (n - j) * sizeof(*r->v));
    r->v[j] = x;
    r->n++;
    return 0;
}

/* One round over v[0..n): the run stays at the front, the set-aside elements follow it.
 * Returns the run's length. o->tmp has room for n. */
static size_t split(tp_order *o, const tp_event *ev, uint32_t *v, size_t n) {
    /* The run lives in v itself: it never holds more than the elements read so far, so it
     * neither overtakes the unread part nor grows (tp_run_add cannot fail here). */
    tp_run r = {.v = v, .cap = n, .aside = o->tmp, .cap_aside = n};
    for (size_t i = 0; i < n; i++)
        (void)tp_run_add(&r, ev, v[i]);
    memcpy(v + r.n, r.aside, r.naside * sizeof(*v));
    return r.n;
}

/* Merges the sorted v[0..m) and v[m..m + s) in place through o->tmp (room for s). */
static void merge(tp_order *o, const tp_event *ev, uint32_t *v, size_t m, size_t s) {
    uint32_t *w = o->tmp;
    memcpy(w, v + m, s * sizeof(*v));
    /* From the back: the write position never overtakes the unread part of v. */
    size_t i = m, j = s, out = m + s;
    while (j > 0) {
        if (i > 0 && before(ev, w[j - 1], v[i - 1]))
            v[--out] = v[--i];
        else
            v[--out] = w[--j];
    }
}

/* Sorts v[0..n), of which v[0..m) is sorted already: the rest is split again into a run and a
 * set-aside part, round after round, and the runs are merged back innermost first. Each round
 * is linear; a round keeping less than 1/TP_FAR of its input means the input is far from
 * sorted, and the radix sort takes what is left. */
static int complete(tp_order *o, const tp_event *ev, uint32_t *v, size_t m, size_t n) {
    if (TP_GROW(o->tmp, o->cap_tmp, n)) return -1;
    size_t start[TP_LEVELS], levels = 0, off = 0;
    int rc = 0;
    while (m < n - off) {
        if (levels == TP_LEVELS || m < (n - off) / TP_FAR) {
            rc = sort_far(o, ev, v + off, n - off);
            break;
        }
        start[levels++] = off;
        off += m;
        m = split(o, ev, v + off, n - off);
    }
    if (rc) return rc;
    while (levels > 0) {
        size_t s = start[--levels];
        merge(o, ev, v + s, off - s, n - off);
        off = s;
    }
    return 0;
}

int tp_order_ranges(tp_order *o, const tp_event *ev, uint32_t *idx, size_t n) {
    if (n < 2) return 0;
    if (TP_GROW(o->tmp, o->cap_tmp, n)) return -1;
    return complete(o, ev, idx, split(o, ev, idx, n), n);
}

int tp_run_finish(tp_order *o, const tp_event *ev, tp_run *r) {
    if (r->naside == 0) return 0;
    if (TP_GROW(r->v, r->cap, r->n + r->naside)) return -1;
    memcpy(r->v + r->n, r->aside, r->naside * sizeof(*r->v));
    size_t m = r->n;
    r->n += r->naside;
    r->naside = 0;
    return complete(o, ev, r->v, m, r->n);
}

void tp_run_free(tp_run *r) {
    free(r->v);
    free(r->aside);
    *r = (tp_run){0};
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
