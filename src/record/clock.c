/* clock.c - choosing the tick source and converting ticks into session-clock nanoseconds.
 *
 * The rate is never taken from the CPU's nominal frequency: it is measured against
 * CLOCK_MONOTONIC, between anchors (clock.h says which). The process's rate lives in `model`,
 * under its lock: anchors are taken by the stepping thread (window boundaries) and the writer
 * (the flight recorder's saves, a signal's flush), and read by the writer's conversions. */
#include "record/clock.h"

#include "config/config.h"
#include "util/lock.h"
#include "util/log.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

__extension__ typedef unsigned __int128 tp_u128;

int tp_clock_counter;

static struct {
    pthread_mutex_t lock;
    tp_clock_anchor base; /* where the process's rate is measured from */
    tp_clock_anchor last; /* the latest anchor the drift check compared against */
    uint64_t mult;        /* the process's rate: base to the latest anchor */
    uint64_t rebases;
} model = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const uint64_t one_to_one = (uint64_t)1 << TP_CLOCK_SHIFT; /* ticks are nanoseconds */

/* cpuid's "invariant TSC" (AMD and Intel alike); arm64's generic timer is invariant by the
 * architecture; elsewhere there is no counter tprof reads. */
static int counter_invariant(void) {
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) return 0;
    __cpuid(0x80000007u, a, b, c, d);
    return (d >> 8) & 1;
#elif defined(__aarch64__)
    return 1;
#else
    return 0;
#endif
}

void tp_clock_probe_read(tp_clock_probe *p) {
    p->invariant = counter_invariant();
    p->clocksource[0] = '\0';
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "re");
    if (!f) return;
    if (!fgets(p->clocksource, sizeof(p->clocksource), f)) p->clocksource[0] = '\0';
    p->clocksource[strcspn(p->clocksource, "\n")] = '\0';
    fclose(f);
}

int tp_clock_use_counter(int mode, const tp_clock_probe *p, const char **why) {
#if defined(__aarch64__)
    static const char counter_source[] = "arch_sys_counter";
#else
    static const char counter_source[] = "tsc";
#endif
    const char *no = "";
    if (mode == TP_CLOCK_MONOTONIC)
        no = "clock: monotonic";
    else if (!p->invariant)
        no = "the CPU has no invariant counter";
    else if (mode == TP_CLOCK_AUTO && strcmp(p->clocksource, counter_source) != 0)
        no = "the kernel's clocksource is not the CPU's counter";
    if (why) *why = no;
    return !*no;
}

/* One reading of both clocks, keeping the tightest bracket of a few tries so that a preemption
 * in between does not skew the pair. */
static void read_pair(tp_clock_anchor *a) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 5; i++) {
        uint64_t t1 = tp_clock_ticks();
        int64_t n = tp_clock_mono_ns();
        uint64_t t2 = tp_clock_ticks();
        if (t2 - t1 < best) {
            best = t2 - t1;
            a->ticks = t1 + (t2 - t1) / 2;
            a->ns = n;
        }
    }
}

int tp_clock_setup(int mode) {
    tp_clock_probe p;
    const char *why;
    tp_clock_probe_read(&p);
    int use = tp_clock_use_counter(mode, &p, &why);
    if (mode == TP_CLOCK_TSC && !use)
        tp_log_warn("clock: tsc: %s; timestamps come from clock_gettime", why);
    tp_clock_counter = use;
    tp_clock_anchor base;
    read_pair(&base);
    tp_clock_reset(&base);
    if (use) {
        /* Spin a millisecond so that the process's rate is measured from the start. */
        int64_t from = tp_clock_mono_ns();
        while (tp_clock_mono_ns() - from < 1000000) {
        }
        tp_clock_anchor a;
        tp_clock_anchor_now(&a);
    }
    return use;
}

void tp_clock_reset(const tp_clock_anchor *base) {
    tp_lock(&model.lock);
    model.base = model.last = *base;
    model.mult = one_to_one;
    model.rebases = 0;
    tp_unlock(&model.lock);
}

int64_t tp_clock_now_ns(void) {
    return tp_clock_mono_ns();
}

uint64_t tp_clock_ticks_mono(void) {
    return (uint64_t)tp_clock_mono_ns();
}

uint64_t tp_clock_rate(const tp_clock_anchor *a, const tp_clock_anchor *b) {
    assert(b->ticks > a->ticks);
    return (uint64_t)(((tp_u128)(uint64_t)(b->ns - a->ns) << TP_CLOCK_SHIFT) /
                      (b->ticks - a->ticks));
}

/* |x - y| / y above TP_CLOCK_DRIFT_PPM parts per million. */
static int departs(uint64_t x, uint64_t y) {
    uint64_t d = x > y ? x - y : y - x;
    return (tp_u128)d * 1000000 > (tp_u128)y * TP_CLOCK_DRIFT_PPM;
}

void tp_clock_observe(const tp_clock_anchor *a) {
    tp_lock(&model.lock);
    if (tp_clock_counter && a->ticks > model.last.ticks) {
        if (a->ns - model.last.ns >= TP_CLOCK_CHECK_NS) {
            /* Only once the base's rate is itself measured over a check's length. */
            int measured = model.last.ns - model.base.ns >= TP_CLOCK_CHECK_NS;
            if (measured && departs(tp_clock_rate(&model.last, a), model.mult)) {
                model.base = model.last;
                model.rebases++;
            }
            model.last = *a;
        }
        model.mult = tp_clock_rate(&model.base, a); /* over the longest span there is */
    }
    tp_unlock(&model.lock);
}

uint64_t tp_clock_rebases(void) {
    tp_lock(&model.lock);
    uint64_t n = model.rebases;
    tp_unlock(&model.lock);
    return n;
}

void tp_clock_anchor_now(tp_clock_anchor *a) {
    read_pair(a);
    if (!tp_clock_counter) a->ticks = (uint64_t)a->ns; /* ticks are these nanoseconds */
    tp_clock_observe(a);
}

void tp_clock_cal_span(tp_clock_cal *cal, const tp_clock_anchor *from, const tp_clock_anchor *to) {
    if (!tp_clock_counter) {
        *cal = (tp_clock_cal){(uint64_t)to->ns, to->ns, one_to_one};
        return;
    }
    if (to->ns - from->ns >= TP_CLOCK_SPAN_NS && to->ticks > from->ticks) {
        *cal = (tp_clock_cal){from->ticks, from->ns, tp_clock_rate(from, to)};
        return;
    }
    tp_lock(&model.lock);
    *cal = (tp_clock_cal){to->ticks, to->ns, model.mult};
    tp_unlock(&model.lock);
}

void tp_clock_calibrate_span(tp_clock_cal *cal, const tp_clock_anchor *from) {
    tp_clock_anchor now;
    tp_clock_anchor_now(&now);
    tp_clock_cal_span(cal, from, &now);
}

void tp_clock_calibrate(tp_clock_cal *cal) {
    tp_clock_anchor now;
    tp_clock_anchor_now(&now);
    tp_clock_cal_span(cal, &now, &now);
}

int64_t tp_clock_to_ns(const tp_clock_cal *cal, uint64_t ticks) {
    if (ticks >= cal->ticks0)
        return cal->ns0 + (int64_t)(((tp_u128)(ticks - cal->ticks0) * cal->mult) >> TP_CLOCK_SHIFT);
    return cal->ns0 - (int64_t)(((tp_u128)(cal->ticks0 - ticks) * cal->mult) >> TP_CLOCK_SHIFT);
}
