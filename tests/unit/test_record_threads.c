/* test_record_threads.c - several threads recording at once: none of their ranges is lost or
 * misnested, windows flipping under them split nothing twice, and a thread that exits in the
 * middle of a window still has its events written. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "tprof.h"
#include "util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { NTHREADS = 4, PER_THREAD = 3000 };

static int setup(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    return 0;
}

/* Sort host ranges of one track by start, then longer first, and check with a stack that each
 * lies inside the one below it or after it: the definition of proper nesting. */
static int cmp_range(const void *a, const void *b) {
    const tp_event *x = *(const tp_event *const *)a, *y = *(const tp_event *const *)b;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->dur > y->dur ? -1 : x->dur < y->dur;
}

static size_t check_track(const tp_model *m, uint32_t track) {
    size_t n = 0;
    const tp_event **v = malloc(m->nevents * sizeof(*v) + 1);
    for (size_t i = 0; i < m->nevents; i++)
        if (m->events[i].track == track && m->events[i].kind == TP_HOST_RANGE)
            v[n++] = &m->events[i];
    qsort(v, n, sizeof(*v), cmp_range);
    const tp_event *stack[64];
    size_t depth = 0;
    for (size_t i = 0; i < n; i++) {
        while (depth && v[i]->ts >= stack[depth - 1]->ts + stack[depth - 1]->dur)
            depth--;
        if (depth)
            assert_true(v[i]->ts + v[i]->dur <= stack[depth - 1]->ts + stack[depth - 1]->dur);
        assert_true(depth < 64);
        stack[depth++] = v[i];
    }
    free(v);
    return n;
}

static void *recorder_thread(void *arg) {
    int id = (int)(intptr_t)arg;
    char name[32];
    snprintf(name, sizeof(name), "worker-%d", id);
    tprof_thread_name(name);
    for (int i = 0; i < PER_THREAD; i++) {
        TPROF_ZONE("level1");
        TPROF_ZONE("level2");
        TPROF_ZONE("level3");
    }
    return NULL;
}

static void test_four_threads_at_once(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, recorder_thread, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    assert_int_equal(m->dropped_events, 0);
    int seen[NTHREADS] = {0};
    for (uint32_t t = 0; t < m->ntracks; t++) {
        const char *tn = tp_model_str(m, m->tracks[t].thread_name);
        int id;
        if (sscanf(tn, "worker-%d", &id) != 1) continue;
        assert_true(id >= 0 && id < NTHREADS);
        seen[id]++;
        assert_int_equal(m->tracks[t].pid, getpid());
        assert_int_equal(check_track(m, t), 3 * PER_THREAD);
    }
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(seen[i], 1);
    assert_int_equal(count_named(m, "level1"), NTHREADS * PER_THREAD);
    for (size_t i = 0; i < m->nevents; i++)
        assert_false(m->events[i].flags & TP_EVF_TRUNCATED);
    cap_reset();
}

/* ---- windows flipping while threads record ---- */

static int stop_flag;

static void *named_ranges(void *arg) {
    int id = (int)(intptr_t)arg;
    char name[32];
    for (int i = 0; !__atomic_load_n(&stop_flag, __ATOMIC_RELAXED) && i < 200000; i++) {
        snprintf(name, sizeof(name), "t%d_%d", id, i);
        tprof_begin_copy(name);
        tprof_begin("inner");
        tprof_end();
        tprof_end();
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_windows_flip_under_threads(void **state) {
    (void)state;
    static const char *const kv[] = {"active", "1", NULL}; /* every step is a window */
    assert_int_equal(start_with(kv), 0);
    stop_flag = 0;
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, named_ranges, (void *)(intptr_t)i);
    struct timespec ms = {0, 2000000};
    for (int s = 0; s < 20; s++) {
        nanosleep(&ms, NULL);
        tprof_step();
    }
    __atomic_store_n(&stop_flag, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    tprof_shutdown();
    assert_int_equal(cap.n, 21); /* 20 saved, and the one recording at shutdown */
    size_t cap_names = 1 << 20, nnames = 0;
    char **names = malloc(cap_names * sizeof(*names));
    for (size_t w = 0; w < cap.n; w++) {
        tp_model *m = cap.models[w];
        int64_t start = cap.info[w].start_ns - cap.info[w].model_offset_ns;
        int64_t end = cap.info[w].end_ns - cap.info[w].model_offset_ns;
        for (uint32_t t = 0; t < m->ntracks; t++)
            check_track(m, t);
        for (size_t i = 0; i < m->nevents; i++) {
            const tp_event *ev = &m->events[i];
            assert_true(ev->ts >= start - 1000 && ev->ts + ev->dur <= end);
            const char *n = ev_name(m, ev);
            if (n[0] == 't' && nnames < cap_names) names[nnames++] = strdup(n);
        }
    }
    /* A range is in one window at most. */
    qsort(names, nnames, sizeof(*names), cmp_str);
    for (size_t i = 1; i < nnames; i++)
        if (strcmp(names[i - 1], names[i]) == 0) fail_msg("%s is in two windows", names[i]);
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    free(names);
    assert_true(nnames > 100); /* the threads did record into the windows */
    cap_reset();
}

/* ---- a thread that exits mid-window ---- */

static void *exits_with_open_range(void *arg) {
    (void)arg;
    tprof_thread_name("short-lived");
    for (int i = 0; i < 10; i++) {
        TPROF_ZONE("done");
    }
    tprof_begin("left_open");
    return NULL;
}

static void test_thread_exits_mid_window(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    pthread_t th;
    pthread_create(&th, NULL, exits_with_open_range, NULL);
    pthread_join(th, NULL);
    tprof_step();
    tprof_shutdown();
    tp_model *m = cap.models[0];
    assert_int_equal(count_named(m, "done"), 10);
    const tp_event *open = find_named(m, "left_open");
    assert_non_null(open);
    assert_true(open->flags & TP_EVF_TRUNCATED);
    assert_string_equal(tp_model_str(m, m->tracks[open->track].thread_name), "short-lived");
    cap_reset();
}

static int64_t trainer_tid;

static void *trainer(void *arg) {
    (void)arg;
    tprof_thread_name("trainer");
    trainer_tid = gettid();
    for (int s = 0; s < 3; s++)
        tprof_step();
    return NULL;
}

static void *shutdown_thread(void *arg) {
    (void)arg;
    tprof_shutdown();
    return NULL;
}

/* The ProfilerStep ranges sit on the thread that steps, under its name, whoever starts and ends
 * the session; before any tprof_step, on the thread that started it. */
static void test_steps_on_the_stepping_thread(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    pthread_t th;
    pthread_create(&th, NULL, trainer, NULL);
    pthread_join(th, NULL);
    tprof_shutdown();
    tp_model *m = cap.models[0];
    size_t steps = 0;
    for (size_t i = 0; i < m->nevents; i++) {
        if (!(m->events[i].flags & TP_EVF_STEP)) continue;
        const tp_track *tr = &m->tracks[m->events[i].track];
        assert_int_equal(tr->tid, trainer_tid);
        assert_string_equal(tp_model_str(m, tr->thread_name), "trainer");
        steps++;
    }
    assert_int_equal(steps, 4);
    cap_reset();

    assert_int_equal(start_with(NULL), 0);
    pthread_t closer;
    pthread_create(&closer, NULL, shutdown_thread, NULL);
    pthread_join(closer, NULL);
    const tp_event *s0 = find_named(cap.models[0], "ProfilerStep#0");
    assert_int_equal(cap.models[0]->tracks[s0->track].tid, gettid());
    cap_reset();
}

/* A thread keeps recording across sessions; its depth starts over with each. */
static void test_sessions_in_a_row(void **state) {
    (void)state;
    for (int s = 0; s < 3; s++) {
        assert_int_equal(start_with(NULL), 0);
        char name[16];
        snprintf(name, sizeof(name), "session%d", s);
        tprof_begin_copy(name);
        tprof_begin("open_at_shutdown");
        tprof_end();
        tprof_shutdown();
        assert_int_equal(cap.n, 1);
        const tp_event *ev = find_named(cap.models[0], name);
        assert_non_null(ev);
        assert_true(ev->flags & TP_EVF_TRUNCATED);
        assert_int_equal(count_named(cap.models[0], "open_at_shutdown"), 1);
        cap_reset();
    }
    /* The ranges left open above do not carry into the next session. */
    assert_int_equal(start_with(NULL), 0);
    tprof_end();
    assert_non_null(strstr(tprof_last_error(), "tprof_end without a matching tprof_begin"));
    tprof_shutdown();
    cap_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_threads_at_once),
        cmocka_unit_test(test_windows_flip_under_threads),
        cmocka_unit_test(test_thread_exits_mid_window),
        cmocka_unit_test(test_steps_on_the_stepping_thread),
        cmocka_unit_test(test_sessions_in_a_row),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
