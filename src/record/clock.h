/* clock.h - the recorder's two clocks: raw ticks for the hot path, nanoseconds for everything else.
 *
 * Ticks are the TSC on x86-64 when the CPU says it is invariant (constant_tsc and nonstop_tsc),
 * else CLOCK_MONOTONIC nanoseconds. The session clock (tp_clock_now_ns) is CLOCK_MONOTONIC; GPU
 * sources stamp their events with it, and ticks convert into it through a tp_clock_cal. */
#ifndef TP_CLOCK_H
#define TP_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* Set once by tp_clock_init: nonzero when ticks are TSC cycles. */
extern int tp_clock_tsc;

/* Decides the tick source and measures its rate (about 1 ms, once per process). Thread-safe. */
void tp_clock_init(void);

static inline int64_t tp_clock_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The session clock, in nanoseconds. */
int64_t tp_clock_now_ns(void);

/* The raw tick read of the hot path: one rdtsc, or clock_gettime on the fallback. */
static inline uint64_t tp_clock_ticks(void) {
#if defined(__x86_64__)
    if (__builtin_expect(tp_clock_tsc, 1)) return __rdtsc();
#endif
    return (uint64_t)tp_clock_mono_ns();
}

/* A conversion of ticks into session-clock nanoseconds: ns = ns0 + (ticks - ticks0) * mult / 2^32.
 * The anchor (ticks0, ns0) is one simultaneous reading of both clocks; mult is the rate measured
 * over the longest span available, so the error stays near the reading jitter (tens of ns) for
 * ticks anywhere between the process's first calibration and the anchor. */
typedef struct tp_clock_cal {
    uint64_t ticks0;
    int64_t ns0;
    uint64_t mult; /* nanoseconds per tick, 32.32 fixed point */
} tp_clock_cal;

/* A conversion anchored now. */
void tp_clock_calibrate(tp_clock_cal *cal);
int64_t tp_clock_to_ns(const tp_clock_cal *cal, uint64_t ticks);

#endif
