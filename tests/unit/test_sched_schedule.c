/* test_sched_schedule.c - the step schedule against an independent transcription of
 * torch.profiler.schedule, the example of docs/SEMANTICS.md §1, and epoch windows.
 *
 * Run as
 *     test_sched_schedule --actions SKIP_FIRST WAIT WARMUP ACTIVE REPEAT SKIP_FIRST_WAIT STEPS
 * it prints the action of each step instead, one per line, for the comparison with torch itself
 * (tests/integration/test_record_schedule.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sched/schedule.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { STEPS = 80 };

/* torch.profiler.schedule, written out as the sequence it describes rather than its
 * arithmetic: skip_first steps of NONE, then `repeat` cycles (forever when 0) of wait NONE,
 * warmup WARMUP, active-1 RECORD and one RECORD_AND_SAVE; skip_first_wait drops the first
 * cycle's wait; NONE after the last cycle. */
static void reference(const tp_schedule *s, tp_action *out, int n) {
    int k = 0;
    for (int i = 0; i < s->skip_first && k < n; i++)
        out[k++] = TP_ACTION_NONE;
    for (int cycle = 0; k < n && (s->repeat == 0 || cycle < s->repeat); cycle++) {
        int wait = cycle == 0 && s->skip_first_wait ? 0 : (int)s->wait;
        for (int i = 0; i < wait && k < n; i++)
            out[k++] = TP_ACTION_NONE;
        for (int i = 0; i < s->warmup && k < n; i++)
            out[k++] = TP_ACTION_WARMUP;
        for (int i = 0; i < s->active - 1 && k < n; i++)
            out[k++] = TP_ACTION_RECORD;
        if (k < n) out[k++] = TP_ACTION_RECORD_AND_SAVE;
    }
    while (k < n)
        out[k++] = TP_ACTION_NONE;
}

static tp_schedule steps_schedule(int skip_first, int wait, int warmup, int active, int repeat,
                                  int sfw) {
    return (tp_schedule){.mode = TP_SCHED_STEPS,
                         .skip_first = skip_first,
                         .wait = wait,
                         .warmup = warmup,
                         .active = active,
                         .repeat = repeat,
                         .skip_first_wait = sfw};
}

static void test_against_reference(void **state) {
    (void)state;
    static const int skips[] = {0, 1, 3}, waits[] = {0, 1, 2, 5}, warmups[] = {0, 1, 2},
                     actives[] = {1, 2, 3, 7}, repeats[] = {0, 1, 2, 3};
    size_t tuples = 0;
    for (size_t a = 0; a < 3; a++)
        for (size_t b = 0; b < 4; b++)
            for (size_t c = 0; c < 3; c++)
                for (size_t d = 0; d < 4; d++)
                    for (size_t e = 0; e < 4; e++)
                        for (int sfw = 0; sfw < 2; sfw++) {
                            tp_schedule s = steps_schedule(skips[a], waits[b], warmups[c],
                                                           actives[d], repeats[e], sfw);
                            tp_action want[STEPS];
                            reference(&s, want, STEPS);
                            int64_t first = -1;
                            for (int k = 0; k < STEPS; k++) {
                                tp_action got = tp_schedule_action(&s, k);
                                if (got != want[k])
                                    fail_msg("skip_first=%d wait=%d warmup=%d active=%d repeat=%d "
                                             "skip_first_wait=%d step %d: %s, want %s",
                                             skips[a], waits[b], warmups[c], actives[d], repeats[e],
                                             sfw, k, tp_action_name(got), tp_action_name(want[k]));
                                if (first < 0 && tp_action_records(want[k])) first = k;
                            }
                            assert_int_equal(tp_schedule_first_recorded(&s), first);
                            tuples++;
                        }
    assert_int_equal(tuples, 3 * 4 * 3 * 4 * 4 * 2);
}

/* The example of docs/SEMANTICS.md §1, as its text states it. */
static void test_semantics_example(void **state) {
    (void)state;
    tp_schedule s = steps_schedule(2, 1, 1, 2, 2, 0);
    static const char *const want[] = {
        "NONE", "NONE",   "NONE",   "WARMUP",          "RECORD", "RECORD_AND_SAVE",
        "NONE", "WARMUP", "RECORD", "RECORD_AND_SAVE", "NONE",   "NONE",
        "NONE"};
    for (int k = 0; k < 13; k++)
        assert_string_equal(tp_action_name(tp_schedule_action(&s, k)), want[k]);
    for (int k = 13; k < 1000; k++)
        assert_int_equal(tp_schedule_action(&s, k), TP_ACTION_NONE);
}

/* repeat=0: cycles never stop. */
static void test_repeat_forever(void **state) {
    (void)state;
    tp_schedule s = steps_schedule(0, 1, 0, 1, 0, 0);
    for (int64_t k = 0; k < 100000; k++)
        assert_int_equal(tp_schedule_action(&s, k),
                         k % 2 ? TP_ACTION_RECORD_AND_SAVE : TP_ACTION_NONE);
    assert_int_equal(tp_schedule_action(&s, 1000000001), TP_ACTION_RECORD_AND_SAVE);
}

static void test_no_schedule_records_all(void **state) {
    (void)state;
    tp_schedule s = {.mode = TP_SCHED_ALL};
    tp_sched sm;
    tp_sched_start(&sm, &s);
    for (int k = 0; k < 50; k++) {
        assert_int_equal(sm.action, TP_ACTION_RECORD);
        tp_sched_step(&sm);
    }
}

/* Epochs [1, 3], warmup 1, epoch_steps 2, four steps per epoch; an unlisted epoch records
 * nothing; steps before the first tprof_epoch record nothing. */
static void test_epoch_state_machine(void **state) {
    (void)state;
    static const int64_t epochs[] = {1, 3};
    tp_schedule s = {
        .mode = TP_SCHED_EPOCHS, .warmup = 1, .epochs = epochs, .nepochs = 2, .epoch_steps = 2};
    tp_sched sm;
    tp_sched_start(&sm, &s);
    assert_int_equal(sm.action, TP_ACTION_NONE);
    static const tp_action listed[4] = {TP_ACTION_WARMUP, TP_ACTION_RECORD,
                                        TP_ACTION_RECORD_AND_SAVE, TP_ACTION_NONE};
    for (int e = 0; e < 5; e++) {
        int is_listed = e == 1 || e == 3;
        tp_action a = tp_sched_epoch(&sm, e);
        for (int k = 0; k < 4; k++) {
            assert_int_equal(a, is_listed ? listed[k] : TP_ACTION_NONE);
            a = tp_sched_step(&sm);
        }
    }
    assert_int_equal(sm.step, 20);
    /* epoch_steps 0: the whole epoch after its warmup, never a RECORD_AND_SAVE. */
    s.epoch_steps = 0;
    tp_sched_start(&sm, &s);
    tp_sched_epoch(&sm, 3);
    assert_int_equal(sm.action, TP_ACTION_WARMUP);
    for (int k = 0; k < 100; k++)
        assert_int_equal(tp_sched_step(&sm), TP_ACTION_RECORD);
}

/* The step rule keeps its course whatever tprof_epoch says. */
static void test_epoch_ignored_by_steps(void **state) {
    (void)state;
    tp_schedule s = steps_schedule(0, 1, 0, 1, 0, 0);
    tp_sched sm;
    tp_sched_start(&sm, &s);
    tp_sched_step(&sm);
    assert_int_equal(tp_sched_epoch(&sm, 4), TP_ACTION_RECORD_AND_SAVE);
    assert_int_equal(tp_sched_step(&sm), TP_ACTION_NONE);
}

static int print_actions(int argc, char **argv) {
    if (argc != 9) {
        fprintf(stderr,
                "usage: %s --actions SKIP_FIRST WAIT WARMUP ACTIVE REPEAT SKIP_FIRST_WAIT STEPS\n",
                argv[0]);
        return 2;
    }
    int v[7];
    for (int i = 0; i < 7; i++)
        v[i] = atoi(argv[i + 2]);
    tp_schedule s = steps_schedule(v[0], v[1], v[2], v[3], v[4], v[5]);
    for (int k = 0; k < v[6]; k++)
        printf("%s\n", tp_action_name(tp_schedule_action(&s, k)));
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--actions") == 0) return print_actions(argc, argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_against_reference),   cmocka_unit_test(test_semantics_example),
        cmocka_unit_test(test_repeat_forever),      cmocka_unit_test(test_no_schedule_records_all),
        cmocka_unit_test(test_epoch_state_machine), cmocka_unit_test(test_epoch_ignored_by_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
