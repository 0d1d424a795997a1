/* test_record_api.c - the public API's contract: every function is safe in every state and with odd
 * arguments, TPROF_ZONE closes on every way out of a block, copied names are copies, and
 * tprof_is_recording follows the schedule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "tprof.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>

static int setup(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    return 0;
}

static int state_marker;

/* Every call, with NULLs where pointers go and devices out of range. */
static void call_everything(void) {
    tprof_begin(NULL);
    tprof_begin_copy(NULL);
    tprof_flops(1);
    tprof_arg_int(NULL, 1);
    tprof_arg_str(NULL, NULL);
    tprof_shapes(NULL);
    tprof_end();
    tprof_end();
    tprof_collective_begin(NULL, -1, -1, -1, 1);
    tprof_collective_end();
    tprof_counter(NULL, 0.0 / 0.0);
    tprof_alloc(0, NULL, 1);
    tprof_free(0, NULL);
    tprof_alloc(100000, &state_marker, 1);
    tprof_free(-5, &state_marker);
    tprof_thread_name(NULL);
    tprof_step();
    tprof_epoch(-1);
    (void)tprof_is_recording();
    assert_non_null(tprof_last_error());
}

static void test_every_state(void **state) {
    (void)state;
    call_everything(); /* before init */
    tprof_shutdown();
    assert_int_equal(tprof_init(NULL, NULL), 0); /* disabled */
    call_everything();
    tprof_shutdown();
    static const char *const kv[] = {"record_shapes", "1", "profile_memory", "1", NULL};
    assert_int_equal(start_with(kv), 0); /* recording */
    call_everything();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    /* The NULL names became visible placeholders, not crashes. */
    assert_true(count_named(cap.models[0], "(null)") >= 2);
    cap_reset();
    static const char *const kv2[] = {"wait", "100", NULL};
    assert_int_equal(start_with(kv2), 0); /* active, between windows */
    call_everything();
    tprof_shutdown();
    assert_int_equal(cap.n, 0);
    cap_reset();
    call_everything(); /* after shutdown */
    assert_int_equal(tprof_start(NULL), -1);
}

static int leave_early(int x) {
    TPROF_ZONE("early");
    if (x) return 1;
    TPROF_ZONE("late");
    return 0;
}

static void test_zone_closes_on_return(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    leave_early(1);
    leave_early(0);
    for (int i = 0; i < 3; i++) {
        TPROF_ZONE("loop");
        if (i == 1) continue;
        if (i == 2) break;
    }
    tprof_shutdown();
    tp_model *m = cap.models[0];
    assert_int_equal(count_named(m, "early"), 2);
    assert_int_equal(count_named(m, "late"), 1);
    assert_int_equal(count_named(m, "loop"), 3);
    for (size_t i = 0; i < m->nevents; i++)
        assert_false(m->events[i].flags & TP_EVF_TRUNCATED);
    cap_reset();
}

static void test_copied_names(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    char buf[32];
    for (int i = 0; i < 3; i++) {
        snprintf(buf, sizeof(buf), "layer%d", i);
        tprof_begin_copy(buf);
        tprof_counter(buf, i);
        tprof_end();
    }
    memset(buf, 'X', sizeof(buf) - 1);
    tprof_shutdown();
    tp_model *m = cap.models[0];
    assert_int_equal(count_named(m, "layer0"), 2); /* the range and the counter */
    assert_int_equal(count_named(m, "layer2"), 2);
    cap_reset();
}

static void test_is_recording_follows_schedule(void **state) {
    (void)state;
    static const char *const kv[] = {"wait", "1",      "warmup", "1", "active",
                                     "1",    "repeat", "1",      NULL};
    assert_int_equal(tprof_is_recording(), 0);
    assert_int_equal(start_with(kv), 0);
    int want[] = {0, 0, 1, 0, 0};
    for (int k = 0; k < 5; k++) {
        assert_int_equal(tprof_is_recording(), want[k]);
        tprof_step();
    }
    tprof_shutdown();
    assert_int_equal(tprof_is_recording(), 0);
    cap_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_state),
        cmocka_unit_test(test_zone_closes_on_return),
        cmocka_unit_test(test_copied_names),
        cmocka_unit_test(test_is_recording_follows_schedule),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
