/* sort.c - the keyed radix sort of sort.h. */
#include "util/sort.h"

#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

enum {
    RADIX_BITS = 11, /* 2048 buckets: the histogram stays in L1 */
    RADIX_BUCKETS = 1 << RADIX_BITS,
};

void tp_sort_buf_free(tp_sort_buf *b) {
    free(b->v);
    *b = (tp_sort_buf){0};
}

/* The digit of key at shift, keys counted from lo. */
static inline size_t digit(uint64_t key, uint64_t lo, unsigned shift) {
    return (size_t)((key - lo) >> shift) & (RADIX_BUCKETS - 1);
}

int tp_sort_keyed(tp_sort_buf *spare, tp_keyed *v, size_t n) {
    if (n < 2) return 0;
    uint64_t lo = v[0].key, hi = lo;
    int sorted = 1;
    for (size_t i = 1; i < n; i++) {
        lo = v[i].key < lo ? v[i].key : lo;
        hi = v[i].key > hi ? v[i].key : hi;
        sorted &= v[i].key >= v[i - 1].key;
    }
    if (sorted) return 0;
    if (TP_GROW(spare->v, spare->cap, n)) return -1;
    tp_keyed *src = v, *dst = spare->v;
    for (unsigned shift = 0; shift < 64 && ((hi - lo) >> shift) != 0; shift += RADIX_BITS) {
        size_t count[RADIX_BUCKETS] = {0};
        for (size_t i = 0; i < n; i++)
            count[digit(src[i].key, lo, shift)]++;
        if (count[digit(src[0].key, lo, shift)] == n) continue; /* all share this digit */
        size_t pos = 0;
        for (size_t b = 0; b < RADIX_BUCKETS; b++) {
            size_t c = count[b];
            count[b] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++)
            dst[count[digit(src[i].key, lo, shift)]++] = src[i];
        tp_keyed *t = src;
        src = dst;
        dst = t;
    }
    if (src != v) memcpy(v, src, n * sizeof(*v));
    return 0;
}
