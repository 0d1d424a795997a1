/* stats.c - the summary statistics every table shares: mean, percentiles, sorting durations.
 *
 * Results are exact integers, so the C code and the Python reference agree to the nanosecond:
 * percentiles of integral p are computed in integer arithmetic. */
#include "analysis/analysis.h"

#include <math.h>
#include <stdlib.h>

int64_t tp_mean_ns(int64_t total, uint64_t count) {
    if (count == 0) return 0;
    if (count > (uint64_t)INT64_MAX) return 0;
    int64_t c = (int64_t)count, q = total / c, r = total % c;
    /* |r| >= c - |r| is 2|r| >= c without overflow. */
    if (r > 0 && r >= c - r) q++;
    if (r < 0 && -r >= c + r) q--;
    return q;
}

int64_t tp_percentile(const int64_t *sorted, size_t n, double p) {
    if (n == 0) return 0;
    if (!(p > 0)) return sorted[0];
    if (p >= 100) return sorted[n - 1];
    if (p == floor(p)) {
        uint64_t num = (uint64_t)p * (n - 1);
        size_t lo = (size_t)(num / 100);
        uint64_t rem = num % 100;
        if (rem == 0) return sorted[lo];
        /* sorted[lo] + diff * rem / 100, rounded half up, without overflowing diff * rem. */
        uint64_t diff = (uint64_t)sorted[lo + 1] - (uint64_t)sorted[lo];
        uint64_t add = diff / 100 * rem + (diff % 100 * rem + 50) / 100;
        return (int64_t)((uint64_t)sorted[lo] + add);
    }
    double rank = p / 100.0 * (double)(n - 1);
    size_t lo = (size_t)rank;
    if (lo >= n - 1) return sorted[n - 1];
    double v = (double)sorted[lo] + (rank - (double)lo) * (double)(sorted[lo + 1] - sorted[lo]);
    return (int64_t)floor(v + 0.5);
}

static int cmp_i64(const void *pa, const void *pb) {
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

void tp_sort_i64(int64_t *v, size_t n) {
    if (n > 1) qsort(v, n, sizeof(*v), cmp_i64);
}
