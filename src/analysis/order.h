/* order.h - putting event indices in order: by start time (the one sort every analysis pass
 * needs, on top of the keyed sort of util/sort.h), and indices into groups (per device).
 *
 * Self time needs each thread's ranges by start ascending, then duration descending (torch's
 * rule); GPU busy and memory need time order. Traces arrive nearly sorted, or as a few sorted
 * runs: the recorder writes each thread in order; older Kineto writes parents right after
 * their children; Kineto writes a thread's ops and its runtime calls as two blocks, and a
 * stream's first kernels late. So the sort keeps a sorted run, inserts an element that belongs
 * a few places back directly, and sets the others aside; the set-aside elements are sorted the
 * same way and merged back: O(n) per run for such input. Input far from sorted goes to an LSD
 * radix sort on start times, not a comparison sort. */
#ifndef TP_ANALYSIS_ORDER_H
#define TP_ANALYSIS_ORDER_H

#include "model/model.h"
#include "util/sort.h"

#include <stddef.h>
#include <stdint.h>

/* The order on unpacked keys: (ts_a, dur_a, index a) before (ts_b, dur_b, index b)? */
static inline int tp_order_key_before(int64_t ts_a, int64_t dur_a, uint32_t a, int64_t ts_b,
                                      int64_t dur_b, uint32_t b) {
    if (ts_a != ts_b) return ts_a < ts_b;
    if (dur_a != dur_b) return dur_a > dur_b;
    return a < b;
}

/* Scratch reused across calls; zero-initialise, free with tp_order_free. */
typedef struct tp_order {
    uint32_t *tmp;
    size_t cap_tmp;
    tp_keyed *keys; /* the radix sort's records */
    size_t cap_keys;
    tp_sort_buf spare; /* and its second buffer */
} tp_order;

void tp_order_free(tp_order *o);

/* Sorts idx[0..n), indices into ev, by start ascending, then duration descending, then index
 * ascending (a total order, so the result does not depend on the input order).
 * 0, or -1 when out of memory (idx then holds the same indices in some order). */
int tp_order_ranges(tp_order *o, const tp_event *ev, uint32_t *idx, size_t n);

/* The same sort, fed one index at a time while the events are read: the run keeps the sorted
 * part and the set-aside part apart, and tp_run_finish completes the sort. Zero-initialise;
 * after tp_run_finish, v[0..n) is sorted; free v and aside. */
typedef struct tp_run {
    uint32_t *v, *aside;
    size_t n, naside, cap, cap_aside;
    int64_t ts, dur; /* the key of v[n - 1], while n > 0 */
} tp_run;

/* Appends index x (of ev). 0, or -1 when out of memory. */
int tp_run_add(tp_run *r, const tp_event *ev, uint32_t x);
int tp_run_finish(tp_order *o, const tp_event *ev, tp_run *r);
void tp_run_free(tp_run *r);

/* A few distinct (a, b) pairs numbered in order of appearance: the devices of a trace, keyed
 * (pid, pid string) or (Device Type, Device Id). Zero-initialise; linear search, as traces hold
 * a handful. */
typedef struct tp_pairs {
    struct tp_pair {
        int64_t a, b;
    } * v;
    size_t n, cap;
} tp_pairs;

/* The number of (a, b), added if new; UINT32_MAX when out of memory. */
uint32_t tp_pairs_number(tp_pairs *p, int64_t a, int64_t b);
void tp_pairs_free(tp_pairs *p);

/* Groups idx[0..n) by key[i] (each < nkeys), keeping the order within a group: out receives the
 * grouped indices, and group g is out[start[g] .. start[g + 1]) (start has nkeys + 1 entries). */
void tp_group_by_key(const uint32_t *idx, const uint32_t *key, size_t n, size_t nkeys,
                     uint32_t *out, size_t *start);

#endif
