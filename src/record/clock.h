/* clock.h - the recorder's two clocks: raw ticks for the hot path, nanoseconds for everything else.
 *
 * Ticks are the CPU's own counter where reading it directly is safe, else CLOCK_MONOTONIC
 * nanoseconds (tp_clock_setup decides, once per session). Safe means the counter runs at one rate
 * whatever the core's frequency or sleep state, and the kernel keeps CLOCK_MONOTONIC on it:
 * x86-64's TSC when cpuid says it is invariant (leaf 0x80000007, EDX bit 8) and the clocksource is
 * "tsc"; arm64's generic timer (cntvct_el0, invariant by the architecture) when the clocksource is
 * "arch_sys_counter". Under another clocksource (kvm-clock, hpet, xen) the kernel itself did not
 * trust the counter, so neither does tprof unless `clock: tsc` says so.
 *
 * The session clock (tp_clock_now_ns) is CLOCK_MONOTONIC; GPU sources stamp their events with it,
 * and ticks convert into it off the hot path through a tp_clock_cal, a mult/shift line:
 *   - a window is anchored (one simultaneous reading of both clocks, tp_clock_anchor) as it opens
 *     and as it closes; its ticks convert along the line through both anchors, so that the error
 *     anywhere inside is the anchors' own (tens of ns) plus how far CLOCK_MONOTONIC strays from a
 *     straight line against the counter over the window (NTP slewing; 10 ns over 20 s here);
 *   - a window shorter than TP_CLOCK_SPAN_NS, whose own anchors are too close for a precise rate,
 *     and the flight recorder take the process's rate: measured from a base anchor to the latest
 *     one, and checked at every anchor (each window boundary): when the rate of the last
 *     TP_CLOCK_CHECK_NS or more departs from it by over TP_CLOCK_DRIFT_PPM, the kernel's clock
 *     changed its pace against the counter and the base moves up to the previous anchor
 *     (re-calibrated), so that an old rate never spreads over later windows. */
#ifndef TP_RECORD_CLOCK_H
#define TP_RECORD_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

/* Nonzero while ticks are the CPU's counter; set by tp_clock_setup. (Hidden, so that the hot path
 * reads it directly rather than through the GOT.) */
extern int tp_clock_counter __attribute__((visibility("hidden")));

/* The fraction bits of tp_clock_cal.mult: 48 keep a 10-minute span exact to well under a ns
 * (32 would lose 0.4 µs), and the 128-bit product has room for days of ticks. */
#define TP_CLOCK_SHIFT 48
/* Anchors closer than this give no rate of their own (their reading error would dominate). */
#define TP_CLOCK_SPAN_NS INT64_C(10000000)
/* The drift check: over at least this long, a rate departing by more is a change of pace. */
#define TP_CLOCK_CHECK_NS  INT64_C(100000000)
#define TP_CLOCK_DRIFT_PPM 2

/* Why the counter may be used: the CPU's answer and the kernel's clocksource, as read. */
typedef struct tp_clock_probe {
    int invariant;        /* the counter ticks at a constant rate and never stops */
    char clocksource[32]; /* current_clocksource, "" when unreadable */
} tp_clock_probe;

/* Reads this machine's probe. */
void tp_clock_probe_read(tp_clock_probe *p);
/* Whether mode (enum tp_clock_mode of config/config.h) uses the counter on a machine that answers
 * p. *why, when not NULL: a short reason when the counter is not used, else "". A pure decision. */
int tp_clock_use_counter(int mode, const tp_clock_probe *p, const char **why);

/* Decides the tick source for mode and takes the base anchor (about 1 ms). Called by tprof_start
 * before any tick of the session is read; never while a session records. 1 when ticks are the
 * counter. A mode of `tsc` the machine cannot honour is warned about once. */
int tp_clock_setup(int mode);

static inline int64_t tp_clock_mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The session clock, in nanoseconds. */
int64_t tp_clock_now_ns(void);

/* The fallback tick read, out of line so that the hot path stays free of calls. */
uint64_t tp_clock_ticks_mono(void);

/* The hot path's own read: 1 when ticks can be read inline (the counter), and that read. When 0,
 * the hot path takes its slow path, which calls tp_clock_ticks: keeping every call out of the
 * fast path lets it run without saving registers. */
static inline int tp_clock_inline(void) {
#if defined(__x86_64__) || defined(__aarch64__)
    return __builtin_expect(tp_clock_counter, 1);
#else
    return 0;
#endif
}
static inline uint64_t tp_clock_inline_ticks(void) {
#if defined(__x86_64__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    /* The virtual count, readable at EL0 wherever Linux runs (it is what its vDSO reads). */
    __asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return 0;
#endif
}

/* The raw tick read: the counter, or clock_gettime on the fallback. */
static inline uint64_t tp_clock_ticks(void) {
    if (tp_clock_inline()) return tp_clock_inline_ticks();
    return tp_clock_ticks_mono();
}

/* One simultaneous reading of both clocks. */
typedef struct tp_clock_anchor {
    uint64_t ticks;
    int64_t ns;
} tp_clock_anchor;

/* An anchor now: the monotonic time bracketed by two tick reads, the tightest of a few tries.
 * Feeds the drift check (tp_clock_observe). */
void tp_clock_anchor_now(tp_clock_anchor *a);
/* Starts the process's rate over from base (tp_clock_setup's first anchor; tests inject one). */
void tp_clock_reset(const tp_clock_anchor *base);
/* The drift check of one anchor against the process's rate; tp_clock_anchor_now's second half,
 * callable with injected anchors (tests). */
void tp_clock_observe(const tp_clock_anchor *a);
/* How many times the drift check moved the base since tp_clock_setup. */
uint64_t tp_clock_rebases(void);

/* A conversion of ticks into session-clock nanoseconds:
 *   ns = ns0 + (ticks - ticks0) * mult >> TP_CLOCK_SHIFT. */
typedef struct tp_clock_cal {
    uint64_t ticks0;
    int64_t ns0;
    uint64_t mult; /* nanoseconds per tick, fixed point with TP_CLOCK_SHIFT fraction bits */
} tp_clock_cal;

/* The mult of the line through two anchors (b later than a by at least one tick). */
uint64_t tp_clock_rate(const tp_clock_anchor *a, const tp_clock_anchor *b);
/* The line through from and to when they are TP_CLOCK_SPAN_NS apart or more, else the process's
 * rate anchored at to. */
void tp_clock_cal_span(tp_clock_cal *cal, const tp_clock_anchor *from, const tp_clock_anchor *to);
/* A window's conversion: anchored now, along the line from `from` (its opening anchor). */
void tp_clock_calibrate_span(tp_clock_cal *cal, const tp_clock_anchor *from);
/* A conversion anchored now at the process's rate. */
void tp_clock_calibrate(tp_clock_cal *cal);
int64_t tp_clock_to_ns(const tp_clock_cal *cal, uint64_t ticks);

#endif
