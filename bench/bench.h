/* bench.h - what the benchmarks share: a clock read in seconds, and the median of a figure's
 * runs (each benchmark reports the median of its runs, as BENCHMARKS.md says). Header-only: each
 * benchmark is one program of one .c file. */
#ifndef TP_BENCH_H
#define TP_BENCH_H

#include <stdlib.h>
#include <time.h>

/* Clock clk (CLOCK_MONOTONIC, CLOCK_PROCESS_CPUTIME_ID, ...) in seconds. */
static inline double bench_now_s(clockid_t clk) {
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (n > 0; the upper middle one when n is even); v is sorted. */
static inline double bench_median(double *v, int n) {
    qsort(v, (size_t)n, sizeof(*v), bench_cmp_double);
    return v[n / 2];
}

#endif
