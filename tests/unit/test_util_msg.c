/* test_util_msg.c - the seam every printed line goes through (util/msg.h): the host's hook gets
 * each line whole with its kind, warnings once, outside the log's lock; without a hook, or when
 * it declines, the line is on stderr. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/log.h"
#include "util/msg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
    int calls, declines;
    tp_msg_kind kind;
    char text[2048];
    size_t len, log_count;
} seen;

static int keep(tp_msg_kind kind, const char *text, size_t len) {
    seen.calls++;
    seen.kind = kind;
    seen.len = len < sizeof(seen.text) ? len : sizeof(seen.text) - 1;
    memcpy(seen.text, text, seen.len);
    seen.text[seen.len] = '\0';
    seen.log_count = tp_log_count(); /* takes the log's lock: it is not held here */
    return seen.declines ? -1 : 0;
}

static int setup(void **state) {
    (void)state;
    memset(&seen, 0, sizeof(seen));
    tp_log_reset();
    tp_log_set_prefix("");
    tp_msg_set_hook(keep);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    tp_msg_set_hook(NULL);
    return 0;
}

static void test_warnings_once_with_their_kind(void **state) {
    (void)state;
    tp_log_warn("window %d: out of memory", 3);
    assert_int_equal(seen.calls, 1);
    assert_int_equal(seen.kind, TP_MSG_WARNING);
    assert_string_equal(seen.text, "tprof: window 3: out of memory\n");
    assert_int_equal(seen.log_count, 1); /* recorded before it is printed */
    tp_log_warn("window %d: out of memory", 3);
    assert_int_equal(seen.calls, 1);
    tp_log_set_prefix("[rank 3] ");
    tp_log_error("invalid value for profiling.wait");
    assert_int_equal(seen.calls, 2);
    assert_int_equal(seen.kind, TP_MSG_ERROR);
    assert_string_equal(seen.text, "tprof: [rank 3] invalid value for profiling.wait\n");
}

static void test_output_whole_and_cut_lines(void **state) {
    (void)state;
    const char summary[] = "tprof summary: 1 window of runs/a\n  steps: 4\n";
    tp_msg_write(TP_MSG_OUTPUT, summary, sizeof(summary) - 1);
    assert_int_equal(seen.kind, TP_MSG_OUTPUT);
    assert_string_equal(seen.text, summary);
    char longer[1500];
    memset(longer, 'x', sizeof(longer) - 1);
    longer[sizeof(longer) - 1] = '\0';
    tp_msg_printf(TP_MSG_OUTPUT, "%s", longer);
    assert_int_equal(seen.len, 1023); /* cut at 1 KB, still one line */
    assert_int_equal(seen.text[1022], '\n');
    assert_int_equal(seen.text[1021], 'x');
}

/* What f writes to stderr while it runs. */
static void capture_stderr(void (*f)(void), char *out, size_t cap) {
    char path[] = "/tmp/test_util_msg_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    dup2(fd, 2);
    f();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    ssize_t n = pread(fd, out, cap - 1, 0);
    close(fd);
    out[n > 0 ? n : 0] = '\0';
}

static void warn_it(void) {
    tp_log_warn("to stderr");
}

static void test_stderr_without_a_hook_or_when_declined(void **state) {
    (void)state;
    char err[256];
    seen.declines = 1;
    capture_stderr(warn_it, err, sizeof(err));
    assert_int_equal(seen.calls, 1); /* asked, declined */
    assert_string_equal(err, "tprof: to stderr\n");
    tp_log_reset();
    tp_msg_set_hook(NULL);
    capture_stderr(warn_it, err, sizeof(err));
    assert_int_equal(seen.calls, 1);
    assert_string_equal(err, "tprof: to stderr\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_warnings_once_with_their_kind, setup, teardown),
        cmocka_unit_test_setup_teardown(test_output_whole_and_cut_lines, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stderr_without_a_hook_or_when_declined, setup,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
