/* sort.h - records sorted by an unsigned integer key: an LSD radix sort, stable.
 *
 * The analysis sorts GPU work by time and correlation ids; the Chrome writer sorts ranges by
 * correlation id to draw flows. Keys are dense in both (times within a trace, ids counted up),
 * so the sort passes only over the bits in which the keys differ (hi - lo), and input already
 * in order costs one scan. */
#ifndef TP_UTIL_SORT_H
#define TP_UTIL_SORT_H

#include <stddef.h>
#include <stdint.h>

/* A record sorted by its unsigned key; val travels with it. */
typedef struct tp_keyed {
    uint64_t key;
    uint64_t val;
} tp_keyed;

/* A signed time as an unsigned key in the same order, and back. */
static inline uint64_t tp_time_key(int64_t t) {
    return (uint64_t)t ^ (UINT64_C(1) << 63);
}
static inline int64_t tp_key_time(uint64_t k) {
    return k >= (UINT64_C(1) << 63) ? (int64_t)(k - (UINT64_C(1) << 63))
                                    : (int64_t)k - INT64_MAX - 1;
}

/* The sort's second buffer, grown as needed and reused across sorts. Zero-initialise; free with
 * tp_sort_buf_free. */
typedef struct tp_sort_buf {
    tp_keyed *v;
    size_t cap;
} tp_sort_buf;

void tp_sort_buf_free(tp_sort_buf *b);

/* Sorts v[0..n) by key, stably: an LSD radix sort over the span of the keys (11 bits a pass).
 * 0, or -1 when out of memory (v is then unchanged). */
int tp_sort_keyed(tp_sort_buf *spare, tp_keyed *v, size_t n);

#endif
