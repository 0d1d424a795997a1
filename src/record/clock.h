/* clock.h - the recorder's two clocks: raw ticks for the hot path, nanoseconds for everything else.
 *
 * Ticks are the TSC on x86-64 when the CPU says it is invariant (constant_tsc and nonstop_tsc),
 * else CLOCK_MONOTONIC nanoseconds. The session clock (tp_clock_now_ns) is CLOCK_MONOTONIC; GPU
 * sources stamp their events with it, and ticks convert into it through a tp_clock_cal. */
#ifndef TP_RECORD_CLOCK_H
#define TP_RECORD_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* Set once by tp_clock_init: nonzero when ticks are TSC cycles. (Hidden, so that the hot path
 * reads it directly rather than through the GOT.) */
extern int tp_clock_tsc __attribute__((visibility("hidden")));

/* Decides the tick source and measures its rate (about 1 ms, once per process). Thread-safe. */
void tp_clock_init(void);

static inline int64_t tp_clock_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The session clock, in nanoseconds. */
int64_t tp_clock_now_ns(void);

/* The fallback tick read, out of line so that the hot path stays free of calls. */
uint64_t tp_clock_ticks_mono(void);

/* The raw tick read of the hot path: one rdtsc, or clock_gettime on the fallback. */
static inline uint64_t tp_clock_ticks(void) {
#if defined(__x86_64__)
    if (__builtin_expect(tp_clock_tsc, 1)) return __rdtsc();
#endif
    return tp_clock_ticks_mono();
}

/* The hot path's own read: 1 when ticks can be read inline (the TSC), and that read. When 0,
 * the hot path takes its slow path, which calls tp_clock_ticks: keeping every call out of the
 * fast path lets it run without saving registers. */
static inline int tp_clock_inline(void) {
#if defined(__x86_64__)
    return __builtin_expect(tp_clock_tsc, 1);
#else
    return 0;
#endif
}
static inline uint64_t tp_clock_inline_ticks(void) {
#if defined(__x86_64__)
    return __rdtsc();
#else
    return 0;
#endif
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
