/* test_record_clock.c - the tick source and its conversion into session-clock nanoseconds.
 *
 * The counter's conversion is tested twice: with injected counter values (any machine, whatever
 * its clocksource: the mult/shift math over 10 minutes, the drift check's re-calibration), and
 * live against CLOCK_MONOTONIC over a bounded run: TPROF_CLOCK_TEST_SECONDS long (default 2; 600
 * is the 10-minute run of docs/DESIGN.md). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "config/config.h"
#include "record/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The machine's answers, asked of /proc and /sys by the shell rather than by cpuid. */
static int shell_true(const char *cmd) {
    return system(cmd) == 0;
}

/* The probe reads what the kernel says (Linux sets nonstop_tsc from the same cpuid bit), and
 * auto uses the counter exactly when both conditions hold; monotonic never does. */
static void test_tick_source(void **state) {
    (void)state;
    tp_clock_probe p;
    tp_clock_probe_read(&p);
    const char *file = "/sys/devices/system/clocksource/clocksource0/current_clocksource";
    char cmd[256];
    snprintf(cmd, sizeof(cmd), "test \"$(cat %s)\" = '%s'", file, p.clocksource);
    assert_true(shell_true(cmd));
#if defined(__x86_64__)
    assert_int_equal(p.invariant, shell_true("grep -qw nonstop_tsc /proc/cpuinfo"));
    int expect = p.invariant && shell_true("grep -qx tsc /sys/devices/system/clocksource/"
                                           "clocksource0/current_clocksource");
#elif defined(__aarch64__)
    int expect = shell_true("grep -qx arch_sys_counter /sys/devices/system/clocksource/"
                            "clocksource0/current_clocksource");
#else
    int expect = 0;
#endif
    assert_int_equal(tp_clock_setup(TP_CLOCK_AUTO), expect);
    assert_int_equal(tp_clock_counter, expect);
    assert_int_equal(tp_clock_setup(TP_CLOCK_MONOTONIC), 0);
    assert_int_equal(tp_clock_setup(TP_CLOCK_TSC), p.invariant);
}

/* The decision, for machines this one is not. */
static void test_decision(void **state) {
    (void)state;
#if defined(__aarch64__)
    const char *own = "arch_sys_counter";
#else
    const char *own = "tsc";
#endif
    tp_clock_probe good = {1, ""}, kvm = {1, "kvm-clock"}, old = {0, ""};
    snprintf(good.clocksource, sizeof(good.clocksource), "%s", own);
    snprintf(old.clocksource, sizeof(old.clocksource), "%s", own);
    const char *why;
    assert_true(tp_clock_use_counter(TP_CLOCK_AUTO, &good, &why));
    assert_string_equal(why, "");
    assert_false(tp_clock_use_counter(TP_CLOCK_AUTO, &kvm, &why));
    assert_non_null(strstr(why, "clocksource"));
    assert_true(tp_clock_use_counter(TP_CLOCK_TSC, &kvm, NULL)); /* forced: invariant suffices */
    assert_false(tp_clock_use_counter(TP_CLOCK_AUTO, &old, &why));
    assert_non_null(strstr(why, "invariant"));
    assert_false(tp_clock_use_counter(TP_CLOCK_TSC, &old, NULL));
    assert_false(tp_clock_use_counter(TP_CLOCK_MONOTONIC, &good, &why));
    assert_string_equal(why, "clock: monotonic");
}

/* A synthetic counter of hz ticks per second (the exact rate as a fraction), read every second
 * for 10 minutes: the line through the first and last anchors converts each reading to its true
 * nanosecond within 1 ns (a long double reference), before, inside and after the span. */
static void check_rate(uint64_t hz) {
    const uint64_t t0 = UINT64_C(123456789012345);
    const int64_t n0 = INT64_C(5000000000000);
    tp_clock_anchor a = {t0, n0}, b = {t0 + hz * 600, n0 + INT64_C(600000000000)};
    tp_clock_cal cal;
    tp_clock_counter = 1;
    tp_clock_cal_span(&cal, &a, &b);
    for (int64_t s = -5; s <= 605; s++) {
        uint64_t ticks = t0 + (uint64_t)(s * (int64_t)hz) + hz / 3; /* a third of a second on */
        long double truth = (long double)n0 + (long double)(int64_t)(ticks - t0) * 1e9L / hz;
        long double err = (long double)tp_clock_to_ns(&cal, ticks) - truth;
        if (err > 1 || err < -1)
            fail_msg("%llu Hz, second %lld: off by %.1Lf ns", (unsigned long long)hz, (long long)s,
                     err);
    }
}

static void test_conversion_math(void **state) {
    (void)state;
    int was = tp_clock_counter;
    check_rate(UINT64_C(2596151860)); /* this VM's TSC */
    check_rate(UINT64_C(3000000000));
    check_rate(UINT64_C(24000000));   /* an arm64 generic timer */
    check_rate(UINT64_C(1000000000)); /* 1 GHz: mult is exactly 1 */
    tp_clock_counter = was;
}

/* The drift check with injected anchors: a steady counter never moves the base (readings 100 ns off
 * either way); a change of pace of 20 ppm does, once, and the process's rate is then the new
 * one, so that a conversion anchored later extrapolates at the new pace. */
static void test_drift_recalibrates(void **state) {
    (void)state;
    int was = tp_clock_counter;
    tp_clock_counter = 1;
    const uint64_t hz = 2000000000; /* 0.5 ns per tick */
    tp_clock_anchor a = {1000, 1000000000};
    tp_clock_reset(&a);
    for (int s = 1; s <= 10; s++) {
        a.ticks += hz;
        a.ns += 1000000000 + (s % 2 ? 100 : -100); /* readings 100 ns off either way */
        tp_clock_observe(&a);
    }
    assert_int_equal(tp_clock_rebases(), 0);
    for (int s = 1; s <= 10; s++) { /* CLOCK_MONOTONIC now runs 20 ppm faster against the counter */
        a.ticks += hz;
        a.ns += 1000020000;
        tp_clock_observe(&a);
    }
    assert_int_equal(tp_clock_rebases(), 1);
    tp_clock_cal cal;
    tp_clock_cal_span(&cal, &a, &a);
    int64_t ahead = tp_clock_to_ns(&cal, a.ticks + 10 * hz) - a.ns;
    assert_true(llabs(ahead - INT64_C(10000200000)) <= 100);
    tp_clock_counter = was;
}

/* One reading of both clocks: the tightest bracket of a few tries (a preemption between the
 * reads would make the reference, not the conversion, wrong). *slack: the bracket in ticks. */
static void reading(uint64_t *ticks, int64_t *mono, uint64_t *slack) {
    *slack = UINT64_MAX;
    for (int i = 0; i < 10; i++) {
        uint64_t a = tp_clock_ticks();
        int64_t m = tp_clock_now_ns();
        uint64_t b = tp_clock_ticks();
        if (b - a < *slack) {
            *slack = b - a;
            *ticks = a + (b - a) / 2;
            *mono = m;
        }
    }
}

/* A window of TPROF_CLOCK_TEST_SECONDS on the live clocks (auto: the counter where it is safe):
 * readings every 20 ms, its boundaries' drift checks every second, converted along the line of
 * its opening and closing anchors, land within 1 µs (and the reading's own bracket) of the
 * CLOCK_MONOTONIC time read beside each, and stay in order. */
static void test_live_window(void **state) {
    (void)state;
    const char *env = getenv("TPROF_CLOCK_TEST_SECONDS");
    long secs = env ? atol(env) : 2;
    if (secs < 1) secs = 1;
    size_t n = (size_t)secs * 50;
    uint64_t *ticks = malloc(n * sizeof(*ticks)), *slack = malloc(n * sizeof(*slack));
    int64_t *mono = malloc(n * sizeof(*mono));
    assert_true(ticks && slack && mono);
    int counter = tp_clock_setup(TP_CLOCK_AUTO);
    tp_clock_anchor opened, boundary;
    tp_clock_anchor_now(&opened);
    struct timespec ms20 = {0, 20000000};
    for (size_t i = 0; i < n; i++) {
        reading(&ticks[i], &mono[i], &slack[i]);
        if (i % 50 == 49) tp_clock_anchor_now(&boundary);
        nanosleep(&ms20, NULL);
    }
    tp_clock_cal cal;
    tp_clock_calibrate_span(&cal, &opened);
    int64_t prev = INT64_MIN, worst = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t ns = tp_clock_to_ns(&cal, ticks[i]);
        int64_t bracket =
            tp_clock_to_ns(&cal, ticks[i] + slack[i]) - tp_clock_to_ns(&cal, ticks[i]);
        if (llabs(ns - mono[i]) > 1000 + bracket)
            fail_msg("reading %zu: %lld ns converted, %lld ns monotonic (bracket %lld ns)", i,
                     (long long)ns, (long long)mono[i], (long long)bracket);
        if (llabs(ns - mono[i]) > worst) worst = llabs(ns - mono[i]);
        assert_true(ns >= prev);
        prev = ns;
    }
    printf("# %ld s on %s: worst conversion error %lld ns, %llu re-calibrations\n", secs,
           counter ? "the counter" : "CLOCK_MONOTONIC", (long long)worst,
           (unsigned long long)tp_clock_rebases());
    free(ticks), free(slack), free(mono);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tick_source),     cmocka_unit_test(test_decision),
        cmocka_unit_test(test_conversion_math), cmocka_unit_test(test_drift_recalibrates),
        cmocka_unit_test(test_live_window),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
