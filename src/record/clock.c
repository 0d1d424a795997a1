/* clock.c - choosing the tick source and converting ticks into session-clock nanoseconds.
 *
 * The rate is never taken from the CPU's nominal frequency: it is measured against
 * CLOCK_MONOTONIC, from the first reading of the process to the latest one (see tp_clock_cal). */
#include "record/clock.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

__extension__ typedef unsigned __int128 tp_u128;

int tp_clock_tsc;

/* The first simultaneous reading of both clocks; the start of every rate measurement. */
static uint64_t base_ticks;
static int64_t base_ns;
static pthread_once_t clock_once = PTHREAD_ONCE_INIT;

/* 1 when /proc/cpuinfo lists both flags that make the TSC a usable clock: it ticks at a constant
 * rate whatever the frequency (constant_tsc) and does not stop in deep sleep (nonstop_tsc). */
static int tsc_is_invariant(void) {
#if defined(__x86_64__)
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return 0;
    char line[4096];
    int found = 0;
    while (!found && fgets(line, sizeof(line), f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        found = strstr(line, " constant_tsc") && strstr(line, " nonstop_tsc");
        break;
    }
    fclose(f);
    return found;
#else
    return 0;
#endif
}

/* One reading of both clocks: the monotonic time bracketed by two tick reads, keeping the
 * tightest bracket of a few tries so that a preemption in between does not skew the pair. */
static void read_pair(uint64_t *ticks, int64_t *ns) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t1 = tp_clock_ticks();
        int64_t n = tp_clock_mono_ns();
        uint64_t t2 = tp_clock_ticks();
        if (t2 - t1 < best) {
            best = t2 - t1;
            *ticks = t1 + (t2 - t1) / 2;
            *ns = n;
        }
    }
}

static void clock_setup(void) {
    tp_clock_tsc = tsc_is_invariant();
    read_pair(&base_ticks, &base_ns);
    /* Spin a millisecond so that the first calibration already spans a measurable interval. */
    while (tp_clock_mono_ns() - base_ns < 1000000) {
    }
}

void tp_clock_init(void) {
    pthread_once(&clock_once, clock_setup);
}

int64_t tp_clock_now_ns(void) {
    return tp_clock_mono_ns();
}

uint64_t tp_clock_ticks_mono(void) {
    return (uint64_t)tp_clock_mono_ns();
}

void tp_clock_calibrate(tp_clock_cal *cal) {
    tp_clock_init();
    read_pair(&cal->ticks0, &cal->ns0);
    if (!tp_clock_tsc) {
        cal->ticks0 = (uint64_t)cal->ns0; /* ticks are these nanoseconds */
        cal->mult = (uint64_t)1 << 32;
        return;
    }
    /* Nonzero: clock_setup spun a millisecond after taking the base reading. */
    uint64_t dticks = cal->ticks0 - base_ticks;
    cal->mult = (uint64_t)(((tp_u128)(uint64_t)(cal->ns0 - base_ns) << 32) / dticks);
}

int64_t tp_clock_to_ns(const tp_clock_cal *cal, uint64_t ticks) {
    if (ticks >= cal->ticks0)
        return cal->ns0 + (int64_t)(((tp_u128)(ticks - cal->ticks0) * cal->mult) >> 32);
    return cal->ns0 - (int64_t)(((tp_u128)(cal->ticks0 - ticks) * cal->mult) >> 32);
}
