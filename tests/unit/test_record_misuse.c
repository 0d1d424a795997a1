/* test_record_misuse.c - faults and misuse never stop the host: each gives one "tprof:" line,
 * and what is recorded stays whole. The order of the tests matters: the first runs before any
 * session of the process. */
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
#include <sys/wait.h>
#include <unistd.h>

/* ---- stderr, captured ---- */

static char err_path[64];
static int err_saved = -1, err_fd = -1;

static void stderr_begin(void) {
    snprintf(err_path, sizeof(err_path), "/tmp/tprof_misuse_XXXXXX");
    err_fd = mkstemp(err_path);
    assert_true(err_fd >= 0);
    fflush(stderr);
    err_saved = dup(2);
    dup2(err_fd, 2);
    tp_log_set_quiet(0);
}

/* What was printed since stderr_begin (static buffer). */
static const char *stderr_end(void) {
    static char buf[8192];
    fflush(stderr);
    dup2(err_saved, 2);
    close(err_saved);
    tp_log_set_quiet(1);
    lseek(err_fd, 0, SEEK_SET);
    ssize_t n = read(err_fd, buf, sizeof(buf) - 1);
    buf[n > 0 ? n : 0] = '\0';
    close(err_fd);
    unlink(err_path);
    return buf;
}

static size_t lines(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int setup(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    return 0;
}

static void test_calls_before_init(void **state) {
    (void)state;
    stderr_begin();
    tprof_step();
    tprof_counter("c", 1);
    tprof_epoch(1);
    tprof_flops(1);
    tprof_shutdown();
    const char *out = stderr_end();
    assert_non_null(strstr(out, "tprof: tprof_step called before tprof_init; ignored"));
    assert_non_null(strstr(out, "tprof: tprof_shutdown called before tprof_init (ignored)"));
    assert_int_equal(lines(out), 2); /* once, not per call */
    assert_int_equal(tprof_is_recording(), 0);
}

static void test_invalid_config_records_nothing(void **state) {
    (void)state;
    cap_install();
    char a0[] = "prog", a1[] = "--profile", a2[] = "--profiling.wait", a3[] = "-1",
         a4[] = "data.txt";
    char *argv[] = {a0, a1, a2, a3, a4, NULL};
    int argc = 5;
    stderr_begin();
    assert_int_equal(tprof_init(&argc, argv), -1);
    const char *out = stderr_end();
    assert_string_equal(out,
                        "tprof: invalid value \"-1\" for profiling.wait (from --profiling.wait): "
                        "must be an integer >= 0\n");
    assert_string_equal(tprof_last_error(),
                        "invalid value \"-1\" for profiling.wait (from --profiling.wait): must be "
                        "an integer >= 0");
    /* tprof's arguments leave argv all the same, and nothing records. */
    assert_int_equal(argc, 2);
    assert_string_equal(argv[1], "data.txt");
    assert_null(argv[2]);
    assert_int_equal(cap.started, 0);
    tprof_begin("x");
    tprof_end();
    tprof_step();
    assert_int_equal(tprof_is_recording(), 0);
    assert_int_equal(cap.n, 0);
    /* Both schedules at once: caught when the session starts. */
    char b1[] = "--profile", b2[] = "--profiling.epochs=1,2", b3[] = "--profiling.wait=2";
    char *argv2[] = {a0, b1, b2, b3, NULL};
    argc = 4;
    stderr_begin();
    assert_int_equal(tprof_init(&argc, argv2), -1);
    out = stderr_end();
    assert_int_equal(lines(out), 1);
    assert_non_null(strstr(out, "tprof: invalid configuration: profiling.epochs (from "
                                "--profiling.epochs) and profiling.wait (from --profiling.wait) "
                                "cannot be combined"));
    assert_int_equal(cap.started, 0);
}

static void test_end_without_begin(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    stderr_begin();
    tprof_end();
    tprof_end();
    tprof_begin("fine");
    tprof_end();
    tprof_shutdown();
    const char *out = stderr_end();
    assert_non_null(strstr(out, "tprof: tprof_end without a matching tprof_begin on thread"));
    assert_non_null(strstr(out, "tprof: 2 tprof_end calls in all had no matching tprof_begin"));
    assert_int_equal(lines(out), 2);
    assert_int_equal(count_named(cap.models[0], "fine"), 1);
    cap_reset();
}

/* An end between windows of a range begun inside one, and an end inside a window of a range
 * begun before it, are both normal. */
static void test_ends_across_windows_are_not_misuse(void **state) {
    (void)state;
    static const char *const kv[] = {"wait", "1", "active", "1", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_begin("from_before"); /* step 0: NONE */
    tprof_step();               /* step 1 records */
    tprof_end();
    tprof_begin("into_after");
    tprof_step(); /* window saved with the range open */
    tprof_end();
    tprof_shutdown();
    for (size_t i = 0; i < tp_log_count(); i++)
        assert_null(strstr(tp_log_get(i), "without a matching"));
    tp_model *m = cap.models[0];
    assert_int_equal(count_named(m, "from_before"), 0); /* torch keeps no half range either */
    assert_true(find_named(m, "into_after")->flags & TP_EVF_TRUNCATED);
    cap_reset();
}

static void test_open_at_shutdown(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    tprof_begin("a");
    tprof_begin("b");
    tprof_shutdown();
    tp_model *m = cap.models[0];
    assert_true(find_named(m, "a")->flags & TP_EVF_TRUNCATED);
    assert_true(find_named(m, "b")->flags & TP_EVF_TRUNCATED);
    assert_non_null(strstr(tprof_last_error(), "2 ranges still open at its end were closed there"));
    cap_reset();
}

static void *second_stepper(void *arg) {
    (void)arg;
    tprof_step();
    return NULL;
}

static void test_step_from_two_threads(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    tprof_step();
    pthread_t th;
    pthread_create(&th, NULL, second_stepper, NULL);
    pthread_join(th, NULL);
    assert_non_null(strstr(tprof_last_error(), "tprof_step from thread"));
    assert_non_null(strstr(tprof_last_error(), "ignored: steps are driven by thread"));
    tprof_step();
    tprof_shutdown();
    char steps[64] = "";
    tp_model *m = cap.models[0];
    for (int k = 0; k < 4; k++) {
        char name[32];
        snprintf(name, sizeof(name), "ProfilerStep#%d", k);
        if (find_named(m, name))
            snprintf(steps + strlen(steps), sizeof(steps) - strlen(steps), "%d", k);
    }
    assert_string_equal(steps, "012"); /* the other thread's call moved nothing */
    cap_reset();
}

static void test_init_twice_and_shutdown_twice(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    setenv("TPROF_ENABLED", "1", 1);
    assert_int_equal(tprof_init(NULL, NULL), -1);
    unsetenv("TPROF_ENABLED");
    assert_non_null(
        strstr(tprof_last_error(), "tprof_init called while a session is active (ignored)"));
    assert_int_equal(tprof_is_recording(), 1); /* the first session goes on */
    tprof_begin("still");
    tprof_end();
    tprof_shutdown();
    assert_int_equal(count_named(cap.models[0], "still"), 1);
    stderr_begin();
    tprof_shutdown();
    tprof_counter("late", 1);
    tprof_counter("later", 2);
    const char *out = stderr_end();
    assert_non_null(strstr(out, "tprof: tprof_shutdown called twice (ignored)"));
    assert_non_null(strstr(out, "tprof: tprof_counter called after tprof_shutdown; ignored"));
    assert_int_equal(lines(out), 2);
    assert_int_equal(cap.finished, 1);
    cap_reset();
}

/* Disabled profiling: every call is quiet and does nothing. */
static void test_disabled_is_quiet(void **state) {
    (void)state;
    cap_install();
    stderr_begin();
    assert_int_equal(tprof_init(NULL, NULL), 0);
    tprof_begin("x");
    tprof_end();
    tprof_end();
    tprof_step();
    tprof_counter("c", 1);
    tprof_shutdown();
    const char *out = stderr_end();
    assert_string_equal(out, "");
    assert_int_equal(cap.started, 0);
}

/* A session active across fork: the child records nothing and can use the API and exit
 * normally; the parent's session carries on. */
static void test_fork_child_is_off(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    tprof_begin("parent_before");
    tprof_end();
    pid_t pid = fork();
    if (pid == 0) {
        tprof_begin("child");
        tprof_end();
        tprof_counter("child", 1);
        tprof_step();
        int rec = tprof_is_recording();
        tprof_shutdown();
        _exit(rec ? 3 : 0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    tprof_begin("parent_after");
    tprof_end();
    tprof_shutdown();
    tp_model *m = cap.models[0];
    assert_int_equal(count_named(m, "parent_before"), 1);
    assert_int_equal(count_named(m, "parent_after"), 1);
    assert_int_equal(count_named(m, "child"), 0);
    cap_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_calls_before_init),
        cmocka_unit_test(test_invalid_config_records_nothing),
        cmocka_unit_test(test_end_without_begin),
        cmocka_unit_test(test_ends_across_windows_are_not_misuse),
        cmocka_unit_test(test_open_at_shutdown),
        cmocka_unit_test(test_step_from_two_threads),
        cmocka_unit_test(test_init_twice_and_shutdown_twice),
        cmocka_unit_test(test_disabled_is_quiet),
        cmocka_unit_test(test_fork_child_is_off),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
