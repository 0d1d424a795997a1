/* test_record_flight.c - the flight recorder's ring inside the recorder (record/flight.h): the
 * windows a save delivers (its steps, the marked step), the chunks a thread keeps staying bounded
 * however many steps run (F1, F2), a range across steps keeping its end (F3), other threads, and
 * a schedule beside the ring. Models are captured by a test sink (test_record_capture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "record/record.h"
#include "tprof.h"
#include "util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int setup(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    return 0;
}

static const char *const FLIGHT[] = {
    "flight_recorder", "true", "flight_steps", "3", "slow_step_factor", "0", NULL};

static size_t steps_of(const tp_model *m, int64_t *first, int64_t *last) {
    size_t n = 0;
    *first = INT64_MAX;
    *last = -1;
    for (size_t i = 0; i < m->nevents; i++) {
        if (!(m->events[i].flags & TP_EVF_STEP)) continue;
        int64_t k = tp_step_number(ev_name(m, &m->events[i]));
        *first = k < *first ? k : *first;
        *last = k > *last ? k : *last;
        n++;
    }
    return n;
}

/* The chunks the calling thread holds (its list, which it alone grows). */
static size_t my_chunks(void) {
    size_t n = 0;
    for (tp_chunk *c = tp_tls_cur.thr ? tp_tls_cur.thr->chunks : NULL; c; c = c->next)
        n++;
    return n;
}

static void test_explicit_save(void **state) {
    (void)state;
    assert_int_equal(start_with(FLIGHT), 0);
    for (int i = 0; i < 10; i++)
        step_with_range("work_%d", i);
    tprof_begin("running");
    assert_int_equal(tprof_flight_save("manual"), 0);
    tprof_end();
    tprof_shutdown();
    assert_int_equal(cap.n, 1); /* no schedule: the save is the only window */
    const tp_model *m = cap.models[0];
    assert_string_equal(cap.names[0], "flight_manual_steps_7-10");
    int64_t first, last;
    assert_int_equal(steps_of(m, &first, &last), 4); /* flight_steps 3 + the running step */
    assert_int_equal(first, 7);
    assert_int_equal(last, 10);
    assert_int_equal(m->flight_step, 10);
    assert_string_equal(tp_model_str(m, m->flight_reason), "manual");
    assert_int_equal(count_named(m, "work_6"), 0);
    assert_int_equal(count_named(m, "work_7"), 1);
    assert_int_equal(count_named(m, "work_9"), 1);
    const tp_event *run = find_named(m, "running");
    assert_non_null(run);
    assert_true(run->flags & TP_EVF_TRUNCATED); /* cut at the save */
    assert_int_equal(count_named(m, TP_FLIGHT_MARK), 1);
    cap_reset();
}

static void test_memory_is_reused(void **state) {
    (void)state;
    assert_int_equal(start_with(FLIGHT), 0);
    size_t after_warm = 0;
    for (int i = 0; i < 5000; i++) {
        for (int k = 0; k < 10; k++) {
            tprof_begin("op");
            tprof_end();
        }
        tprof_step();
        if (i == 100) after_warm = my_chunks();
    }
    /* the ring (3 + 1 steps), the running step and one released late: a chunk each */
    assert_true(after_warm <= 7);
    assert_int_equal(my_chunks(), after_warm);
    tprof_shutdown();
    assert_int_equal(cap.n, 0);
    cap_reset();
}

static void test_range_across_steps(void **state) {
    (void)state;
    assert_int_equal(start_with(FLIGHT), 0);
    for (int i = 0; i < 6; i++)
        step_with_range("before_%d", i);
    tprof_begin("across"); /* begun in step 6 */
    tprof_step();
    tprof_step();
    tprof_end(); /* ended in step 8 */
    tprof_step();
    assert_int_equal(tprof_flight_save("check"), 0);
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    const tp_event *e = find_named(cap.models[0], "across");
    assert_non_null(e);
    assert_false(e->flags & TP_EVF_TRUNCATED); /* its end was kept (F3) */
    cap_reset();
}

static void *other_thread(void *arg) {
    (void)arg;
    for (int i = 0; i < 200; i++) {
        tprof_begin("worker");
        tprof_end();
    }
    return NULL;
}

static void test_schedule_beside_the_ring(void **state) {
    (void)state;
    static const char *const kv[] = {"flight_recorder",
                                     "true",
                                     "flight_steps",
                                     "2",
                                     "slow_step_factor",
                                     "0",
                                     "wait",
                                     "4",
                                     "active",
                                     "2",
                                     "repeat",
                                     "1",
                                     NULL};
    assert_int_equal(start_with(kv), 0);
    for (int i = 0; i < 12; i++) {
        if (i == 5) {
            pthread_t t;
            assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
            pthread_join(t, NULL);
        }
        step_with_range("s_%d", i);
    }
    assert_int_equal(tprof_flight_save("late"), 0);
    tprof_shutdown();
    assert_int_equal(cap.n, 2);
    assert_string_equal(cap.names[0], "steps_4-5"); /* saved as without the recorder */
    int64_t first, last;
    assert_int_equal(steps_of(cap.models[0], &first, &last), 2);
    assert_int_equal(count_named(cap.models[0], "s_4"), 1);
    assert_int_equal(count_named(cap.models[0], "s_5"), 1);
    assert_int_equal(count_named(cap.models[0], "s_6"), 0);
    assert_int_equal(count_named(cap.models[0], "worker"), 200); /* the other thread's */
    assert_string_equal(cap.names[1], "flight_late_steps_10-12");
    assert_int_equal(cap.models[1]->flight_step, 12);
    cap_reset();
}

static void test_refusals(void **state) {
    (void)state;
    static const char *const kv[] = {"flight_recorder",
                                     "true",
                                     "flight_cooldown_steps",
                                     "5",
                                     "flight_max_saves",
                                     "2",
                                     "slow_step_factor",
                                     "0",
                                     NULL};
    assert_int_equal(tprof_flight_save("nosession"), -1);
    assert_int_equal(start_with(kv), 0);
    assert_int_equal(tprof_flight_save("a/b"), -1);
    assert_int_equal(tprof_flight_save("x.json"), -1);
    assert_int_equal(tprof_flight_save(NULL), -1);
    assert_int_equal(tprof_flight_save("one"), 0);
    assert_int_equal(tprof_flight_save("two"), -1); /* cooldown */
    for (int i = 0; i < 5; i++)
        tprof_step();
    assert_int_equal(tprof_flight_save("two"), 0);
    for (int i = 0; i < 5; i++)
        tprof_step();
    assert_int_equal(tprof_flight_save("three"), -1); /* the cap */
    tprof_shutdown();
    assert_int_equal(cap.n, 2);
    cap_reset();
    static const char *const off[] = {NULL};
    assert_int_equal(start_with(off), 0);
    assert_int_equal(tprof_flight_save("off"), -1);
    tprof_shutdown();
    cap_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_explicit_save),      cmocka_unit_test(test_memory_is_reused),
        cmocka_unit_test(test_range_across_steps), cmocka_unit_test(test_schedule_beside_the_ring),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
