/* test_record_signal.c - SIGTERM and SIGINT in the middle of a window: a child process records,
 * is signalled, and its sink reports the window it received; the child then ends as the handler
 * that was there before tprof (or the default action) decides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "record/record.h"
#include "record/session.h"
#include "tprof.h"
#include "util/lock.h"
#include "util/log.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int report_fd = -1;

/* The child's sink: one line per window, written with write(2) so the parent reads it whole. */
static void report_window(void *ctx, tp_model *m, const tp_window_info *w) {
    (void)ctx;
    char line[256];
    size_t work = count_named(m, "work"), steps = 0;
    for (size_t i = 0; i < m->nevents; i++)
        steps += (m->events[i].flags & TP_EVF_STEP) != 0;
    int n =
        snprintf(line, sizeof(line), "window %s partial=%d model_partial=%d work=%zu steps=%zu\n",
                 w->name, w->partial, m->partial, work, steps);
    if (write(report_fd, line, (size_t)n) != n) _exit(90);
    tp_model_free(m);
    free(m);
}

static void previous_handler(int sig) {
    static const char msg[] = "previous handler ran\n";
    if (write(report_fd, msg, sizeof(msg) - 1) < 0) _exit(91);
    _exit(sig == SIGTERM ? 7 : 8);
}

enum { SESSION_LOCK = 1, THREADS_LOCK = 2 }; /* the session's, the record buffers' registry */

typedef struct child_opts {
    int sig;
    int own_handler; /* install previous_handler before tprof starts */
    int signals;     /* profiling.signals */
    int from_thread; /* the signal arrives while a worker thread records */
    int under_lock;  /* the signal arrives while this thread holds this lock of tprof's */
} child_opts;

static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        tprof_begin("work");
        tprof_end();
    }
    return NULL;
}

static void run_child(const child_opts *o) {
    if (o->own_handler) signal(o->sig, previous_handler);
    static const tp_sink sink = {.window = report_window};
    tp_session_set_sink(&sink);
    tprof_config *c = tprof_config_new();
    tprof_config_set(c, "enabled", "true");
    tprof_config_set(c, "active", "100"); /* one long window, still open at the signal */
    tprof_config_set(c, "signals", o->signals ? "true" : "false");
    if (tprof_start(c)) _exit(92);
    tprof_config_free(c);
    for (int s = 0; s < 3; s++) {
        for (int i = 0; i < 5; i++) {
            tprof_begin("work");
            tprof_end();
        }
        tprof_step();
    }
    tprof_begin("open_at_signal");
    if (o->from_thread) {
        pthread_t th;
        pthread_create(&th, NULL, worker, NULL);
        usleep(20000);
    }
    /* as inside tprof_step, or as a new thread registers: the writer's flush takes both */
    pthread_mutex_t *lock = o->under_lock == THREADS_LOCK ? tp_threads_mutex() : NULL;
    if (o->under_lock == SESSION_LOCK) tp_session_lock();
    if (lock) tp_lock(lock);
    kill(getpid(), o->sig);
    if (lock) tp_unlock(lock);
    if (o->under_lock == SESSION_LOCK) tp_session_unlock();
    static const char msg[] = "survived\n";
    if (write(report_fd, msg, sizeof(msg) - 1) < 0) _exit(93);
    _exit(0);
}

/* Runs a child; returns its wait status, and what it reported in out. */
static int child(const child_opts *o, char *out, size_t n) {
    char path[] = "/tmp/tprof_signal_XXXXXX";
    report_fd = mkstemp(path);
    assert_true(report_fd >= 0);
    pid_t pid = fork();
    if (pid == 0) run_child(o);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    lseek(report_fd, 0, SEEK_SET);
    ssize_t got = read(report_fd, out, n - 1);
    out[got > 0 ? got : 0] = '\0';
    close(report_fd);
    unlink(path);
    return status;
}

/* What every flushed child reports: steps 0-2 and the running step 3, 5 ranges each before it. */
static const char flushed[] = "window steps_0-3 partial=1 model_partial=1 work=15 steps=4\n";

/* Runs a child with o; it must die of `sig` (or exit with `code` when sig is 0) having reported
 * `want`. */
static void expect_child(child_opts o, int sig, int code, const char *want) {
    char out[1024];
    int st = child(&o, out, sizeof(out));
    if (sig) {
        assert_true(WIFSIGNALED(st));
        assert_int_equal(WTERMSIG(st), sig);
    } else {
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), code);
    }
    assert_string_equal(out, want);
}

static void test_sigterm_default_action(void **state) {
    (void)state;
    expect_child((child_opts){SIGTERM, 0, 1, 0, 0}, SIGTERM, 0, flushed);
}

static void test_sigint_default_action(void **state) {
    (void)state;
    expect_child((child_opts){SIGINT, 0, 1, 0, 0}, SIGINT, 0, flushed);
}

static void test_previous_handler_runs_after_flush(void **state) {
    (void)state;
    char want[256];
    snprintf(want, sizeof(want), "%sprevious handler ran\n", flushed);
    expect_child((child_opts){SIGTERM, 1, 1, 0, 0}, 0, 7, want);
}

/* Recording threads keep running while the writer flushes; the window still arrives whole. */
static void test_signal_while_threads_record(void **state) {
    (void)state;
    child_opts o = {SIGTERM, 0, 1, 1, 0};
    char out[1024];
    int st = child(&o, out, sizeof(out));
    assert_true(WIFSIGNALED(st));
    assert_int_equal(WTERMSIG(st), SIGTERM);
    assert_non_null(strstr(out, "window steps_0-3 partial=1 model_partial=1 work="));
    unsigned long work = strtoul(strstr(out, "work=") + 5, NULL, 10);
    assert_true(work > 15);
}

/* A signal that lands while its thread holds a lock the writer's flush takes (the session's,
 * inside tprof_step; the thread registry's, as a thread starts or ends) waits for the lock's
 * release, then flushes as any other: the window is not lost. */
static void test_signal_while_holding_a_lock(void **state) {
    (void)state;
    expect_child((child_opts){SIGTERM, 0, 1, 0, SESSION_LOCK}, SIGTERM, 0, flushed);
    expect_child((child_opts){SIGTERM, 0, 1, 0, THREADS_LOCK}, SIGTERM, 0, flushed);
}

/* signals: false leaves the host's signals alone: no flush, the default action. */
static void test_signals_off(void **state) {
    (void)state;
    expect_child((child_opts){SIGTERM, 0, 0, 0, 0}, SIGTERM, 0, "");
}

/* After tprof_shutdown, the host's handlers are back as they were. */
static void test_handlers_restored(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    struct sigaction before, during, after;
    sigaction(SIGTERM, NULL, &before);
    tprof_config *c = tprof_config_new();
    tprof_config_set(c, "enabled", "true");
    assert_int_equal(tprof_start(c), 0);
    tprof_config_free(c);
    sigaction(SIGTERM, NULL, &during);
    assert_true(during.sa_flags & SA_SIGINFO);
    tprof_shutdown();
    sigaction(SIGTERM, NULL, &after);
    assert_ptr_equal(after.sa_handler, before.sa_handler);
    assert_int_equal(after.sa_flags & SA_SIGINFO, before.sa_flags & SA_SIGINFO);
    /* An ignored signal stays ignored. */
    signal(SIGINT, SIG_IGN);
    c = tprof_config_new();
    tprof_config_set(c, "enabled", "true");
    assert_int_equal(tprof_start(c), 0);
    tprof_config_free(c);
    sigaction(SIGINT, NULL, &during);
    assert_ptr_equal(during.sa_handler, SIG_IGN);
    tprof_shutdown();
    signal(SIGINT, SIG_DFL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sigterm_default_action),
        cmocka_unit_test(test_sigint_default_action),
        cmocka_unit_test(test_previous_handler_runs_after_flush),
        cmocka_unit_test(test_signal_while_threads_record),
        cmocka_unit_test(test_signal_while_holding_a_lock),
        cmocka_unit_test(test_signals_off),
        cmocka_unit_test(test_handlers_restored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
