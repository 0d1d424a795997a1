/* test_record_windows.c - what a session delivers for each window: the ProfilerStep#k ranges the
 * schedule records, nesting, args, counters, memory, truncation, drops, epochs, sources, and the
 * run facts. Every model is captured by a test sink (test_record_capture.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "record/clock.h"
#include "record/record.h"
#include "record/session.h"
#include "tprof.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int setup(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    return 0;
}

/* Independent of the recorder: ranges on one track either nest or are disjoint. */
static void assert_nested(const tp_model *m) {
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *a = &m->events[i];
        if (a->kind != TP_HOST_RANGE) continue;
        for (size_t j = i + 1; j < m->nevents; j++) {
            const tp_event *b = &m->events[j];
            if (b->kind != TP_HOST_RANGE || b->track != a->track) continue;
            int64_t ae = a->ts + a->dur, be = b->ts + b->dur;
            int disjoint = ae <= b->ts || be <= a->ts;
            int a_in_b = a->ts >= b->ts && ae <= be, b_in_a = b->ts >= a->ts && be <= ae;
            if (!(disjoint || a_in_b || b_in_a))
                fail_msg("ranges %s [%lld, %lld] and %s [%lld, %lld] overlap without nesting",
                         ev_name(m, a), (long long)a->ts, (long long)ae, ev_name(m, b),
                         (long long)b->ts, (long long)be);
        }
    }
}

/* The ProfilerStep numbers of m, ascending, as a string "4 5". */
static void step_list(const tp_model *m, char *out, size_t n) {
    int64_t steps[256];
    size_t k = 0;
    for (size_t i = 0; i < m->nevents && k < 256; i++) {
        int64_t s = tp_step_number(ev_name(m, &m->events[i]));
        if (s >= 0) {
            assert_true(m->events[i].flags & TP_EVF_STEP);
            assert_string_equal(tp_model_str(m, m->events[i].cat), "user_annotation");
            steps[k++] = s;
        }
    }
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && steps[j - 1] > steps[j]; j--) {
            int64_t t = steps[j];
            steps[j] = steps[j - 1];
            steps[j - 1] = t;
        }
    size_t len = 0;
    out[0] = '\0';
    for (size_t i = 0; i < k; i++)
        len += (size_t)snprintf(out + len, n - len, "%s%lld", i ? " " : "", (long long)steps[i]);
}

static void test_no_schedule_is_one_window(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    assert_int_equal(tprof_is_recording(), 1);
    for (int s = 0; s < 3; s++) {
        {
            TPROF_ZONE("outer");
            TPROF_ZONE("inner");
        }
        if (s < 2) tprof_step(); /* step 2 runs until shutdown */
    }
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    char steps[128];
    step_list(m, steps, sizeof(steps));
    assert_string_equal(steps, "0 1 2");
    assert_string_equal(cap.info[0].name, "steps_0-2");
    assert_int_equal(m->partial, 0);
    assert_int_equal(count_named(m, "outer"), 3);
    assert_int_equal(count_named(m, "inner"), 3);
    assert_nested(m);
    /* Every range sits inside a step; every step on this thread's track. */
    uint32_t track = find_named(m, "ProfilerStep#0")->track;
    assert_int_equal(m->tracks[track].pid, getpid());
    assert_int_equal(m->tracks[track].tid, gettid());
    for (size_t i = 0; i < m->nevents; i++)
        assert_int_equal(m->events[i].track, track);
    assert_int_equal(cap.finished, 1);
    assert_int_equal(cap.run.windows, 1);
    assert_ptr_equal(cap.run.no_window_reason, cap.reason);
    assert_string_equal(cap.reason, "");
    cap_reset();
}

/* tp_steps_restart (the Lightning integrations, after a validation loop): the step in progress
 * begins again, so the loop lies in the window between two steps, in none of them; the schedule
 * does not move (issue 23). */
static void test_step_restart(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    { TPROF_ZONE("train"); }
    tprof_step();
    {
        TPROF_ZONE("validation");
        usleep(2000);
    }
    tp_steps_restart();
    { TPROF_ZONE("train"); }
    tprof_step();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    char steps[128];
    step_list(m, steps, sizeof(steps));
    assert_string_equal(steps, "0 1 2");
    const tp_event *v = find_named(m, "validation"), *s1 = find_named(m, "ProfilerStep#1");
    const tp_event *s0 = find_named(m, "ProfilerStep#0");
    assert_true(s0->ts + s0->dur <= v->ts); /* step 0 ended before it */
    assert_true(s1->ts >= v->ts + v->dur);  /* step 1 begins after it */
    assert_int_equal(count_named(m, "train"), 2);
    cap_reset();
}

/* docs/SEMANTICS.md §1's example: steps 4-5 and 8-9 are saved, nothing else is kept. */
static void test_schedule_example(void **state) {
    (void)state;
    static const char *const kv[] = {"skip_first", "2", "wait",   "1", "warmup", "1",
                                     "active",     "2", "repeat", "2", NULL};
    assert_int_equal(start_with(kv), 0);
    for (int k = 0; k < 12; k++)
        step_with_range("work_%d", k);
    tprof_shutdown();
    assert_int_equal(cap.n, 2);
    const char *want_steps[2] = {"4 5", "8 9"}, *want_names[2] = {"steps_4-5", "steps_8-9"};
    for (int w = 0; w < 2; w++) {
        tp_model *m = cap.models[w];
        char steps[64];
        step_list(m, steps, sizeof(steps));
        assert_string_equal(steps, want_steps[w]);
        assert_string_equal(cap.info[w].name, want_names[w]);
        assert_int_equal(cap.info[w].partial, 0);
        assert_int_equal(cap.info[w].first_step, w ? 8 : 4);
        assert_int_equal(cap.info[w].last_step, w ? 9 : 5);
        /* Only the work of the recorded steps, each inside its own step. */
        size_t work = 0;
        for (size_t i = 0; i < m->nevents; i++) {
            const char *n = ev_name(m, &m->events[i]);
            if (strncmp(n, "work_", 5) != 0) continue;
            work++;
            char step[32];
            snprintf(step, sizeof(step), "ProfilerStep#%s", n + 5);
            const tp_event *st = find_named(m, step);
            assert_non_null(st);
            assert_true(m->events[i].ts >= st->ts &&
                        m->events[i].ts + m->events[i].dur <= st->ts + st->dur);
        }
        assert_int_equal(work, 2);
    }
    assert_string_equal(cap.reason, "");
    cap_reset();
}

static void *addr(uintptr_t a) {
    return (void *)a;
}

/* A copied name follows the text at the caller's pointer, not the pointer (tp_intern looks its
 * recent copies up by pointer first): one buffer reused for other names, and many names. */
static void test_copied_names_follow_the_text(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    char buf[16];
    for (int i = 0; i < 300; i++) {
        snprintf(buf, sizeof(buf), "op_%d", i % 3 == 2 ? 2 : i % 100);
        tprof_begin_copy(buf);
        tprof_end();
    }
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    /* op_2: the 100 i with i % 3 == 2, and 102 and 202; op_0: 0 and 100 (200 % 3 == 2) */
    assert_int_equal(count_named(m, "op_2"), 102);
    assert_int_equal(count_named(m, "op_0"), 2);
    assert_int_equal(count_named(m, "op_50"), 2); /* 150 and 250 (50 % 3 == 2) */
    cap_reset();
}

static void test_args_counters_memory(void **state) {
    (void)state;
    static const char *const kv[] = {"record_shapes", "true", "profile_memory", "true", NULL};
    tprof_alloc(0, addr(0x9000), 1); /* before the session: ignored */
    assert_int_equal(start_with(kv), 0);
    tprof_begin("mm");
    tprof_flops(100);
    tprof_flops(23);
    tprof_arg_int("k", -7);
    char value[8] = "v";
    tprof_arg_str("s", value);
    value[0] = 'X'; /* copied at the call */
    tprof_shapes("[[2, 3], [3, 4]]");
    tprof_begin("child");
    tprof_arg_int("c", 1);
    tprof_end();
    tprof_arg_int("k2", 9);
    tprof_end();
    tprof_counter("loss", 0.5);
    tprof_alloc(0, addr(0x1000), 1000);
    tprof_alloc(0, addr(0x2000), 500);
    tprof_free(0, addr(0x1000));
    tprof_alloc(-1, addr(0x3000), 64);
    tprof_free(0, addr(0x4000)); /* never allocated: no event */
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    const tp_event *mm = find_named(m, "mm"), *child = find_named(m, "child");
    assert_non_null(mm);
    assert_non_null(child);
    assert_int_equal(mm->nargs, 5);
    assert_int_equal(arg_of(m, mm, "flops")->v.i, 123);
    assert_int_equal(arg_of(m, mm, "k")->v.i, -7);
    assert_int_equal(arg_of(m, mm, "k2")->v.i, 9);
    assert_string_equal(tp_model_str(m, arg_of(m, mm, "s")->v.s), "v");
    const tp_arg *dims = arg_of(m, mm, "Input Dims");
    assert_int_equal(dims->type, TP_ARG_JSON);
    assert_string_equal(tp_model_str(m, dims->v.s), "[[2, 3], [3, 4]]");
    assert_int_equal(child->nargs, 1);
    assert_int_equal(arg_of(m, child, "c")->v.i, 1);

    const tp_event *loss = find_named(m, "loss");
    assert_int_equal(loss->kind, TP_COUNTER);
    assert_true(arg_of(m, loss, "value")->v.d == 0.5);

    /* Memory: PyTorch's args; Total Allocated runs per device. */
    int64_t want[4][5] = {/* Total Allocated, Bytes, Addr, Device Id, Device Type */
                          {1000, 1000, 0x1000, 0, 1},
                          {1500, 500, 0x2000, 0, 1},
                          {500, -1000, 0x1000, 0, 1},
                          {64, 64, 0x3000, -1, 0}};
    static const char *const keys[5] = {"Total Allocated", "Bytes", "Addr", "Device Id",
                                        "Device Type"};
    size_t k = 0;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *ev = &m->events[i];
        if (ev->kind != TP_MEMORY) continue;
        assert_true(k < 4);
        assert_string_equal(ev_name(m, ev), "[memory]");
        assert_string_equal(tp_model_str(m, ev->cat), "cpu_instant_event");
        for (int a = 0; a < 5; a++)
            assert_int_equal(arg_of(m, ev, keys[a])->v.i, want[k][a]);
        k++;
    }
    assert_int_equal(k, 4);
    cap_reset();
}

/* A window that opens after the allocations starts with what each device holds (Bytes 0,
 * Total Allocated, Addr 0), so its memory peak counts memory allocated before it. */
static void test_memory_snapshot_at_window_open(void **state) {
    (void)state;
    static const char *const kv[] = {"profile_memory", "true", "wait", "1", "active", "1", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_alloc(0, addr(0x1000), 4096); /* step 0: not recorded */
    tprof_alloc(-1, addr(0x2000), 100);
    tprof_alloc(1, addr(0x3000), 7);
    tprof_free(1, addr(0x3000)); /* device 1 holds nothing when the window opens */
    tprof_step();
    tprof_alloc(0, addr(0x4000), 10); /* step 1: recorded */
    tprof_step();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    int64_t want[3][4] = {/* Total Allocated, Bytes, Addr, Device Id */
                          {100, 0, 0, -1},
                          {4096, 0, 0, 0},
                          {4106, 10, 0x4000, 0}};
    static const char *const keys[4] = {"Total Allocated", "Bytes", "Addr", "Device Id"};
    size_t k = 0;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *ev = &m->events[i];
        if (ev->kind != TP_MEMORY) continue;
        assert_true(k < 3);
        for (int a = 0; a < 4; a++)
            assert_int_equal(arg_of(m, ev, keys[a])->v.i, want[k][a]);
        k++;
    }
    assert_int_equal(k, 3);
    cap_reset();
}

/* tp_range_category names the innermost kept range's category (the Python binding's aten ops are
 * "cpu_op", as Kineto writes them); other ranges stay "user_annotation". */
static void test_range_category(void **state) {
    (void)state;
    static const char *const kv[] = {NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_begin("module");
    tprof_begin("aten::mm");
    char cat[] = "cpu_op";
    tp_range_category(cat);
    cat[0] = 'X'; /* copied at the call */
    tprof_end();
    tprof_end();
    tp_range_category("orphan"); /* no range open: warned, ignored */
    tprof_shutdown();
    tp_model *m = cap.models[0];
    assert_string_equal(tp_model_str(m, find_named(m, "aten::mm")->cat), "cpu_op");
    assert_string_equal(tp_model_str(m, find_named(m, "module")->cat), "user_annotation");
    assert_string_equal(tprof_last_error(), "tp_range_category outside any range (ignored)");
    cap_reset();
}

static void test_options_off(void **state) {
    (void)state;
    static const char *const kv[] = {"with_flops", "false", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_begin("mm");
    tprof_flops(100);
    tprof_shapes("[[1]]");
    tprof_end();
    tprof_alloc(0, addr(0x1000), 1000);
    tprof_shutdown();
    tp_model *m = cap.models[0];
    assert_int_equal(find_named(m, "mm")->nargs, 0);
    assert_int_equal(count_named(m, "[memory]"), 0);
    cap_reset();
}

static void test_bad_shapes_kept_as_text(void **state) {
    (void)state;
    static const char *const kv[] = {"record_shapes", "true", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_begin("op");
    tprof_shapes("[[1, 2], \"x\"]");
    tprof_end();
    tprof_shutdown();
    const tp_arg *a = arg_of(cap.models[0], find_named(cap.models[0], "op"), "Input Dims");
    assert_int_equal(a->type, TP_ARG_STR);
    cap_reset();
}

/* A range open when its window closes is closed there and flagged; one warning names it. */
static void test_truncation(void **state) {
    (void)state;
    static const char *const kv[] = {"active", "2", "repeat", "1", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_step();
    tprof_begin("spans_the_end");
    tprof_step(); /* step 1 was RECORD_AND_SAVE: the window closes with the range open */
    tprof_end();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    const tp_event *r = find_named(m, "spans_the_end");
    assert_true(r->flags & TP_EVF_TRUNCATED);
    const tp_event *s1 = find_named(m, "ProfilerStep#1");
    assert_int_equal(r->ts + r->dur, s1->ts + s1->dur); /* closed at the window's end */
    assert_non_null(strstr(tprof_last_error(), "spans_the_end"));
    cap_reset();
}

/* max_events bounds the records held: each range takes two (its begin and its end). */
static void test_drops_are_counted(void **state) {
    (void)state;
    static const char *const kv[] = {"max_events", "16", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_begin("outer"); /* kept first, so its end is owed and kept */
    for (int i = 0; i < 100; i++) {
        tprof_begin("r");
        tprof_end();
    }
    tprof_end();
    tprof_shutdown();
    tp_model *m = cap.models[0];
    size_t kept = count_named(m, "r");
    assert_int_equal(kept, 16 / 2 - 1);
    assert_int_equal(kept + m->dropped_events, 100);
    const tp_event *outer = find_named(m, "outer");
    assert_false(outer->flags & TP_EVF_TRUNCATED);
    assert_int_equal(cap.run.dropped_events, m->dropped_events);
    assert_nested(m);
    cap_reset();
}

/* Over several chunks: every kept range keeps its end, and kept + dropped = all. */
static void test_drops_across_chunks(void **state) {
    (void)state;
    static const char *const kv[] = {"max_events", "5000", NULL};
    assert_int_equal(start_with(kv), 0);
    for (int i = 0; i < 3000; i++) {
        TPROF_ZONE("outer");
        TPROF_ZONE("inner");
    }
    tprof_shutdown();
    tp_model *m = cap.models[0];
    size_t outer = count_named(m, "outer"), inner = count_named(m, "inner");
    assert_int_equal(outer + inner + m->dropped_events, 6000);
    assert_true(outer >= inner && outer <= 2500);
    assert_true(outer + inner >= 2000); /* most of the budget was used */
    for (size_t i = 0; i < m->nevents; i++)
        assert_false(m->events[i].flags & TP_EVF_TRUNCATED);
    assert_nested(m);
    cap_reset();
}

/* In a listed epoch: warmup steps, then epoch_steps recorded, saved as epoch_<e>. */
static void test_epoch_windows(void **state) {
    (void)state;
    static const char *const kv[] = {"epochs", "[1, 3]", "epoch_steps", "2", "warmup", "1", NULL};
    assert_int_equal(start_with(kv), 0);
    for (int e = 0; e < 4; e++) {
        tprof_epoch(e);
        for (int s = 0; s < 4; s++)
            step_with_range("e%d_s%d", e, s);
    }
    tprof_shutdown();
    /* Epoch e's steps are 4e .. 4e+3: one warmup, then two recorded. */
    assert_int_equal(cap.n, 2);
    const char *names[2] = {"epoch_1", "epoch_3"}, *steps[2] = {"5 6", "13 14"};
    for (int w = 0; w < 2; w++) {
        char got[64], want[16];
        step_list(cap.models[w], got, sizeof(got));
        assert_string_equal(cap.info[w].name, names[w]);
        assert_string_equal(got, steps[w]);
        int e = w ? 3 : 1;
        for (int s = 0; s < 4; s++) {
            snprintf(want, sizeof(want), "e%d_s%d", e, s);
            assert_int_equal(count_named(cap.models[w], want), s == 1 || s == 2);
        }
        assert_int_equal(cap.info[w].partial, 0);
    }
    cap_reset();
}

/* epoch_steps 0: the whole epoch after warmup, closed when the next epoch begins. */
static void test_epoch_whole(void **state) {
    (void)state;
    static const char *const kv[] = {"epochs", "0", NULL};
    assert_int_equal(start_with(kv), 0);
    for (int e = 0; e < 2; e++) {
        tprof_epoch(e);
        for (int s = 0; s < 3; s++)
            tprof_step();
    }
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    char got[64];
    step_list(cap.models[0], got, sizeof(got));
    assert_string_equal(got, "0 1 2");
    assert_int_equal(cap.info[0].partial, 0);
    cap_reset();
}

/* An epoch that ends before its recorded steps did: partial, with a warning. */
static void test_epoch_cut_short(void **state) {
    (void)state;
    static const char *const kv[] = {"epochs", "0", "epoch_steps", "10", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_epoch(0);
    for (int s = 0; s < 3; s++)
        tprof_step();
    tprof_epoch(1);
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    assert_int_equal(cap.info[0].partial, 1);
    assert_int_equal(cap.models[0]->partial, 1);
    assert_non_null(strstr(cap.reason, "no window completed"));
    cap_reset();
}

static void test_partial_at_shutdown(void **state) {
    (void)state;
    static const char *const kv[] = {"active", "5", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_step();
    tprof_step();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    assert_string_equal(cap.info[0].name, "steps_0-2");
    assert_int_equal(cap.info[0].partial, 1);
    assert_int_equal(cap.models[0]->partial, 1);
    assert_int_equal(cap.run.partial_windows, 1);
    assert_non_null(strstr(cap.reason, "saved as partial"));
    cap_reset();
}

/* Nothing from NONE or WARMUP, but the run says why no window completed. */
static void test_no_window_reason(void **state) {
    (void)state;
    static const char *const kv[] = {"skip_first", "10", "warmup", "2", NULL};
    assert_int_equal(start_with(kv), 0);
    for (int s = 0; s < 3; s++) {
        TPROF_ZONE("unrecorded");
        tprof_step();
    }
    tprof_shutdown();
    assert_int_equal(cap.n, 0);
    assert_int_equal(cap.run.windows, 0);
    assert_non_null(
        strstr(cap.reason, "the run ended at step 3 (NONE), before the first recorded step 12"));
    cap_reset();
}

/* tp_steps_drop_open: the step in progress at the end is no step. A window holding other steps
 * ends with them (not partial for a whole-run window); one holding only that step is not
 * written, nor counted; a tprof_step after the call makes the step whole again. */
static void test_drop_open_step(void **state) {
    (void)state;
    static const char *const all[] = {NULL};
    assert_int_equal(start_with(all), 0);
    tprof_step();
    tprof_step();
    tp_steps_drop_open();
    tprof_begin("teardown"); /* kept in the window, outside every step */
    tprof_end();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    assert_string_equal(cap.info[0].name, "steps_0-1");
    assert_int_equal(count_named(cap.models[0], "ProfilerStep#2"), 0);
    assert_int_equal(count_named(cap.models[0], "ProfilerStep#1"), 1);
    assert_int_equal(count_named(cap.models[0], "teardown"), 1);
    assert_int_equal(cap.run.windows, 1);
    assert_int_equal(cap.run.partial_windows, 0);
    cap_reset();

    static const char *const two[] = {"active", "2", NULL};
    assert_int_equal(start_with(two), 0);
    for (int s = 0; s < 4; s++)
        tprof_step();
    tp_steps_drop_open(); /* step 4 opened the third window alone */
    tprof_shutdown();
    assert_int_equal(cap.n, 2);
    assert_int_equal(cap.run.windows, 2);
    assert_int_equal(cap.run.partial_windows, 0);
    assert_string_equal(cap.reason, "");
    cap_reset();

    assert_int_equal(start_with(two), 0);
    tp_steps_drop_open();
    tprof_step(); /* step 0 ended: a step after all */
    tp_steps_drop_open();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    assert_string_equal(cap.info[0].name, "steps_0-0");
    assert_int_equal(cap.run.partial_windows, 1); /* cut short of its 2 steps */
    cap_reset();

    assert_int_equal(start_with(two), 0); /* no step ended at all: the run is its one step */
    tp_steps_drop_open();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    assert_string_equal(cap.info[0].name, "steps_0-0");
    assert_int_equal(count_named(cap.models[0], "ProfilerStep#0"), 1);
    cap_reset();

    static const char *const waits[] = {"wait", "1", "active", "1", NULL};
    assert_int_equal(start_with(waits), 0); /* step 1, recorded, is the dropped one */
    tprof_step();
    tp_steps_drop_open();
    tprof_shutdown();
    assert_int_equal(cap.n, 0);
    assert_int_equal(cap.run.windows, 0);
    assert_non_null(strstr(cap.reason, "no recorded step ended before the run did (step 1,"));
    cap_reset();
}

/* A range begun before its window: ended by name it starts at the window's start, flagged
 * truncated; ended by tprof_end it is not in the window; tp_ranges_open_cut makes one open
 * across the whole window a range of it, to its end, without the truncation warning. */
static void test_ranges_open_as_the_window_opens(void **state) {
    (void)state;
    static const char *const kv[] = {"wait", "1", "active", "2", "repeat", "1", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_begin("whole");      /* open across the window */
    tprof_begin("unnamed");    /* ended by tprof_end */
    tprof_begin_copy("epoch"); /* ended by name in the window */
    tprof_step();              /* step 1 opens the window */
    tprof_begin("inside");
    tprof_end();
    tp_range_end_named("epoch");
    tprof_end();
    assert_int_equal(tp_steps_window_ends(), 0);
    tprof_step();
    assert_int_equal(tp_steps_window_ends(), 1); /* step 2 is the window's last */
    static const char *const cut[] = {"whole"};
    tp_ranges_open_cut(cut, 1);
    tprof_step();
    tprof_end();
    assert_int_equal(tp_steps_window_ends(), 0);
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    const tp_event *s1 = find_named(m, "ProfilerStep#1"), *s2 = find_named(m, "ProfilerStep#2");
    const tp_event *epoch = find_named(m, "epoch"), *whole = find_named(m, "whole");
    assert_non_null(epoch);
    assert_non_null(whole);
    assert_int_equal(count_named(m, "unnamed"), 0);
    assert_int_equal(epoch->ts, s1->ts); /* the window's start */
    assert_true(epoch->ts + epoch->dur <= s1->ts + s1->dur);
    assert_true(epoch->flags & TP_EVF_TRUNCATED);
    assert_int_equal(whole->ts, s1->ts);
    assert_int_equal(whole->ts + whole->dur, s2->ts + s2->dur); /* the window's end */
    assert_true(whole->flags & TP_EVF_TRUNCATED);
    assert_false(find_named(m, "inside")->flags & TP_EVF_TRUNCATED);
    assert_nested(m);
    assert_null(strstr(tprof_last_error(), "whole")); /* no "still open at its end" warning */
    cap_reset();
}

/* ---- a GPU-like source ---- */

typedef struct fake_source {
    tp_action actions[32];
    size_t nactions, collected, shut;
    int64_t offset;
} fake_source;

static void fake_on_action(void *ctx, tp_action a) {
    fake_source *f = ctx;
    if (f->nactions < 32) f->actions[f->nactions++] = a;
}

static void fake_collect(void *ctx, tp_model *m, const tp_window_info *w) {
    fake_source *f = ctx;
    f->collected++;
    f->offset = w->model_offset_ns;
    tp_event *ev = tp_model_add_event(m);
    ev->kind = TP_KERNEL;
    ev->name = tp_model_intern_cstr(m, "fake_kernel");
    ev->ts = w->start_ns - w->model_offset_ns;
    ev->dur = w->end_ns - w->start_ns;
    ev->track = tp_model_track(m, 0, 0, 7, 0);
}

static void fake_shutdown(void *ctx) {
    ((fake_source *)ctx)->shut++;
}

static void test_sources_follow_the_schedule(void **state) {
    (void)state;
    static const char *const kv[] = {"wait", "1",      "warmup", "1", "active",
                                     "2",    "repeat", "1",      NULL};
    static fake_source f;
    memset(&f, 0, sizeof(f));
    tp_source src = {"fake", &f, fake_on_action, fake_collect, fake_shutdown, NULL, NULL};
    assert_int_equal(tp_session_add_source(&src), -1); /* no session */
    assert_int_equal(start_with(kv), 0);
    assert_int_equal(tp_session_add_source(&src), 0);
    int64_t t0 = tp_clock_now_ns();
    for (int s = 0; s < 5; s++)
        tprof_step();
    int64_t t1 = tp_clock_now_ns();
    tprof_shutdown();
    /* The action at joining (step 0), then each step that begins. */
    static const tp_action want[] = {TP_ACTION_NONE,   TP_ACTION_WARMUP,
                                     TP_ACTION_RECORD, TP_ACTION_RECORD_AND_SAVE,
                                     TP_ACTION_NONE,   TP_ACTION_NONE};
    assert_int_equal(f.nactions, 6);
    for (size_t i = 0; i < 6; i++)
        assert_int_equal(f.actions[i], want[i]);
    assert_int_equal(f.collected, 1);
    assert_int_equal(f.shut, 1);
    tp_model *m = cap.models[0];
    const tp_event *k = find_named(m, "fake_kernel");
    assert_non_null(k);
    /* The window's times are on the session clock: within what this thread measured (give or
     * take the conversion's jitter). */
    assert_true(cap.info[0].start_ns >= t0 - 1000 && cap.info[0].end_ns <= t1 + 1000);
    /* The source's event lines up with the steps of the window. */
    const tp_event *s2 = find_named(m, "ProfilerStep#2"), *s3 = find_named(m, "ProfilerStep#3");
    assert_int_equal(k->ts, s2->ts);
    /* every host range is recorded 1 ns shorter than measured (window.c's range_dur) */
    assert_int_equal(k->ts + k->dur, s3->ts + s3->dur + 1);
    cap_reset();
}

/* Under either clock (the counter where this machine allows it, and clock_gettime) a range's
 * duration is what CLOCK_MONOTONIC measured around and inside it, within a microsecond. */
static void test_clock_sources_agree(void **state) {
    (void)state;
    static const char *const kv[2][3] = {{"clock", "auto", NULL}, {"clock", "monotonic", NULL}};
    struct timespec ms20 = {0, 20000000};
    for (int c = 0; c < 2; c++) {
        assert_int_equal(start_with(kv[c]), 0);
        int64_t outer0 = tp_clock_now_ns();
        tprof_begin("timed");
        int64_t inner0 = tp_clock_now_ns();
        nanosleep(&ms20, NULL);
        int64_t inner1 = tp_clock_now_ns();
        tprof_end();
        int64_t outer1 = tp_clock_now_ns();
        tprof_shutdown();
        const tp_event *r = find_named(cap.models[0], "timed");
        assert_non_null(r);
        assert_true(r->dur >= inner1 - inner0 - 1000 && r->dur <= outer1 - outer0 + 1000);
        cap_reset();
    }
}

/* base_ns is the wall clock of the session's origin; rank facts come from the environment. */
static void test_run_facts(void **state) {
    (void)state;
    struct timespec before, after;
    clock_gettime(CLOCK_REALTIME, &before);
    assert_int_equal(start_with(NULL), 0);
    clock_gettime(CLOCK_REALTIME, &after);
    tprof_shutdown();
    tp_model *m = cap.models[0];
    assert_true(m->base_ns >= before.tv_sec * 1000000000LL + before.tv_nsec);
    assert_true(m->base_ns <= after.tv_sec * 1000000000LL + after.tv_nsec);
    assert_int_equal(m->rank, -1);
    assert_int_equal(cap.run.world_size, 1);
    assert_int_equal(cap.run.print_summary, 1);
    cap_reset();

    setenv("RANK", "2", 1);
    setenv("WORLD_SIZE", "4", 1);
    assert_int_equal(start_with(NULL), 0);
    tprof_shutdown();
    unsetenv("RANK");
    unsetenv("WORLD_SIZE");
    m = cap.models[0];
    assert_int_equal(m->rank, 2);
    assert_int_equal(m->world_size, 4);
    assert_int_equal(cap.run.rank, 2);
    assert_int_equal(cap.run.print_summary, 0);
    cap_reset();

    /* Each launcher's variables; a malformed one is skipped with a warning. */
    setenv("OMPI_COMM_WORLD_RANK", "1", 1);
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    setenv("RANK", "x", 1);
    assert_int_equal(start_with(NULL), 0);
    tprof_shutdown();
    assert_int_equal(cap.models[0]->rank, 1);
    assert_int_equal(cap.models[0]->world_size, 3);
    int warned = 0;
    for (size_t i = 0; i < tp_log_count(); i++)
        warned |= strstr(tp_log_get(i), "RANK=\"x\"") != NULL;
    assert_true(warned);
    unsetenv("RANK");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    cap_reset();
    static const char *const pairs[][2] = {{"PMI_RANK", "PMI_SIZE"},
                                           {"SLURM_PROCID", "SLURM_NTASKS"}};
    for (int i = 0; i < 2; i++) {
        setenv(pairs[i][0], "5", 1);
        setenv(pairs[i][1], "8", 1);
        assert_int_equal(start_with(NULL), 0);
        tprof_shutdown();
        assert_int_equal(cap.models[0]->rank, 5);
        assert_int_equal(cap.models[0]->world_size, 8);
        unsetenv(pairs[i][0]);
        unsetenv(pairs[i][1]);
        cap_reset();
    }
    setenv("LOCAL_RANK", "1", 1);
    assert_int_equal(start_with(NULL), 0);
    tprof_shutdown();
    assert_int_equal(cap.models[0]->rank, 1);
    assert_int_equal(cap.run.print_summary, 0);
    unsetenv("LOCAL_RANK");
    cap_reset();
}

/* Warnings of ranks other than 0 say which rank wrote them. */
static void test_rank_prefix(void **state) {
    (void)state;
    char path[] = "/tmp/tprof_test_stderr_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    int saved = dup(2);
    dup2(fd, 2);
    tp_log_set_quiet(0);
    setenv("RANK", "3", 1);
    assert_int_equal(start_with(NULL), 0);
    tprof_end(); /* a warning */
    tprof_shutdown();
    unsetenv("RANK");
    tp_log_set_quiet(1);
    dup2(saved, 2);
    close(saved);
    char buf[512] = "";
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    unlink(path);
    assert_true(n > 0);
    assert_non_null(strstr(buf, "tprof: [rank 3] tprof_end without a matching tprof_begin"));
    tp_log_set_prefix("");
    cap_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_restart),
        cmocka_unit_test(test_no_schedule_is_one_window),
        cmocka_unit_test(test_schedule_example),
        cmocka_unit_test(test_copied_names_follow_the_text),
        cmocka_unit_test(test_args_counters_memory),
        cmocka_unit_test(test_memory_snapshot_at_window_open),
        cmocka_unit_test(test_range_category),
        cmocka_unit_test(test_options_off),
        cmocka_unit_test(test_bad_shapes_kept_as_text),
        cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_drops_are_counted),
        cmocka_unit_test(test_drops_across_chunks),
        cmocka_unit_test(test_epoch_windows),
        cmocka_unit_test(test_epoch_whole),
        cmocka_unit_test(test_epoch_cut_short),
        cmocka_unit_test(test_partial_at_shutdown),
        cmocka_unit_test(test_no_window_reason),
        cmocka_unit_test(test_drop_open_step),
        cmocka_unit_test(test_ranges_open_as_the_window_opens),
        cmocka_unit_test(test_sources_follow_the_schedule),
        cmocka_unit_test(test_clock_sources_agree),
        cmocka_unit_test(test_run_facts),
        cmocka_unit_test(test_rank_prefix),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
