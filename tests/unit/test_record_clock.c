/* test_record_clock.c - the tick source and its conversion into session-clock nanoseconds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "record/clock.h"

#include <stdlib.h>
#include <time.h>

/* The TSC is used exactly when /proc/cpuinfo lists both invariance flags (asked of grep). */
static void test_tick_source(void **state) {
    (void)state;
    tp_clock_init();
    int flags =
        system("grep -qw constant_tsc /proc/cpuinfo && grep -qw nonstop_tsc /proc/cpuinfo") == 0;
#if defined(__x86_64__)
    assert_int_equal(tp_clock_tsc, flags);
#else
    (void)flags;
    assert_int_equal(tp_clock_tsc, 0);
#endif
}

/* One reading of both clocks: the tightest bracket of a few tries (a preemption between the
 * reads would make the reference, not the conversion, wrong). *slack: the bracket in ns. */
static void reading(uint64_t *ticks, int64_t *mono, int64_t *slack) {
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 10; i++) {
        uint64_t a = tp_clock_ticks();
        int64_t m = tp_clock_now_ns();
        uint64_t b = tp_clock_ticks();
        if (b - a < best) {
            best = b - a;
            *ticks = a + (b - a) / 2;
            *mono = m;
        }
    }
    tp_clock_cal cal;
    tp_clock_calibrate(&cal);
    *slack = tp_clock_to_ns(&cal, *ticks + best) - tp_clock_to_ns(&cal, *ticks);
}

/* Readings taken over 60 ms, converted with a calibration taken after them, land on the
 * monotonic time read beside each (within a microsecond and the reading's own bracket), and stay
 * in order. */
static void test_conversion_matches_monotonic(void **state) {
    (void)state;
    enum { N = 30 };
    uint64_t ticks[N];
    int64_t mono[N], slack[N];
    struct timespec ms2 = {0, 2000000};
    for (int i = 0; i < N; i++) {
        reading(&ticks[i], &mono[i], &slack[i]);
        nanosleep(&ms2, NULL);
    }
    tp_clock_cal cal;
    tp_clock_calibrate(&cal);
    int64_t prev = INT64_MIN;
    for (int i = 0; i < N; i++) {
        int64_t ns = tp_clock_to_ns(&cal, ticks[i]);
        if (llabs(ns - mono[i]) > 1000 + slack[i])
            fail_msg("reading %d: %lld ns converted, %lld ns monotonic (bracket %lld ns)", i,
                     (long long)ns, (long long)mono[i], (long long)slack[i]);
        assert_true(ns >= prev);
        prev = ns;
    }
    /* Ticks after the anchor convert forward from it. */
    uint64_t later;
    int64_t later_mono, later_slack;
    reading(&later, &later_mono, &later_slack);
    assert_true(llabs(tp_clock_to_ns(&cal, later) - later_mono) <= 1000 + later_slack);
    assert_int_equal(tp_clock_to_ns(&cal, cal.ticks0), cal.ns0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tick_source),
        cmocka_unit_test(test_conversion_matches_monotonic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
