/* test_model.c - the event model, the intern table and the shared buffers and files. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/model.h"
#include "util/buf.h"
#include "util/fs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void test_intern_dedupes_and_keeps_pointers(void **state) {
    (void)state;
    tp_strtab t;
    tp_strtab_init(&t);
    assert_int_equal(tp_strtab_intern(&t, "", 0), TP_STR_EMPTY);
    tp_str a = tp_strtab_intern(&t, "aten::mm", 8);
    const char *pa = tp_strtab_get(&t, a);
    char name[32];
    /* Enough strings to force several rehashes and arena blocks. */
    for (int i = 0; i < 50000; i++) {
        snprintf(name, sizeof(name), "op_%d", i);
        tp_str id = tp_strtab_intern(&t, name, strlen(name));
        assert_int_equal(tp_strtab_find(&t, name, strlen(name)), id);
    }
    assert_int_equal(tp_strtab_intern(&t, "aten::mm", 8), a);
    assert_ptr_equal(tp_strtab_get(&t, a), pa);
    assert_string_equal(pa, "aten::mm");
    assert_int_equal(tp_strtab_find(&t, "missing", 7), UINT32_MAX);
    /* Embedded NULs and prefixes are distinct strings. */
    assert_int_not_equal(tp_strtab_intern(&t, "aten::m", 7), a);
    assert_int_equal(t.n, 50000 + 3);
    tp_strtab_free(&t);
}

static void test_tracks_and_args(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    tp_str stream = tp_model_intern_cstr(&m, "stream 7");
    uint32_t t1 = tp_model_track(&m, 100, 0, 200, 0);
    uint32_t t2 = tp_model_track(&m, 0, 0, 0, stream);
    for (int i = 0; i < 1000; i++)
        tp_model_track(&m, i, 0, i, 0);
    assert_int_equal(tp_model_track(&m, 100, 0, 200, 0), t1);
    assert_int_equal(tp_model_track(&m, 0, 0, 0, stream), t2);
    assert_int_not_equal(t1, t2);

    tp_event *ev = tp_model_add_event(&m);
    ev->kind = TP_HOST_RANGE;
    assert_int_equal(tp_model_arg_int(&m, ev, "flops", 4096), 0);
    assert_int_equal(tp_model_arg_double(&m, ev, "bw", 1.5), 0);
    assert_int_equal(tp_model_arg_str(&m, ev, "name", "x"), 0);
    double v;
    assert_int_equal(tp_event_arg_number(&m, ev, "flops", &v), 0);
    assert_true(v == 4096.0);
    assert_int_equal(tp_event_arg_number(&m, ev, "bw", &v), 0);
    assert_true(v == 1.5);
    assert_int_equal(tp_event_arg_number(&m, ev, "name", &v), -1);
    assert_int_equal(tp_event_arg_number(&m, ev, "absent", &v), -1);
    /* Args of an earlier event cannot grow once a later event exists. */
    tp_event *ev2 = tp_model_add_event(&m);
    assert_int_equal(tp_model_arg_int(&m, &m.events[0], "late", 1), -1);
    (void)ev2;
    tp_model_free(&m);
}

static void test_step_number(void **state) {
    (void)state;
    assert_int_equal(tp_step_number("ProfilerStep#0"), 0);
    assert_int_equal(tp_step_number("ProfilerStep#551"), 551);
    assert_int_equal(tp_step_number("ProfilerStep#"), -1);
    assert_int_equal(tp_step_number("ProfilerStep#5x"), -1);
    assert_int_equal(tp_step_number("ProfilerStep#99999999999999999999999"), -1);
    assert_int_equal(tp_step_number("aten::mm"), -1);
}

static void buf_check(void (*fn)(tp_buf *, int64_t), int64_t v, const char *want) {
    tp_buf b;
    tp_buf_init(&b);
    fn(&b, v);
    tp_buf_putc(&b, '\0');
    assert_string_equal(b.data, want);
    tp_buf_free(&b);
}

static void test_buf_numbers(void **state) {
    (void)state;
    buf_check(tp_buf_i64, 0, "0");
    buf_check(tp_buf_i64, -42, "-42");
    buf_check(tp_buf_i64, INT64_MIN, "-9223372036854775808");
    buf_check(tp_buf_i64, INT64_MAX, "9223372036854775807");
    buf_check(tp_buf_us, 12345, "12.345");
    buf_check(tp_buf_us, 12000, "12");
    buf_check(tp_buf_us, 12300, "12.3");
    buf_check(tp_buf_us, -1500, "-1.5");
    buf_check(tp_buf_us, 7, "0.007");
    buf_check(tp_buf_us, 1682725898236567000, "1682725898236567");
    tp_buf b;
    tp_buf_init(&b);
    tp_buf_double(&b, 0.1);
    tp_buf_putc(&b, ' ');
    tp_buf_double(&b, 1e300 * 1e300);
    tp_buf_putc(&b, ' ');
    tp_buf_double(&b, 3.0);
    tp_buf_putc(&b, '\0');
    assert_string_equal(b.data, "0.1 null 3");
    tp_buf_free(&b);
}

static void test_buf_json_strings(void **state) {
    (void)state;
    tp_buf b;
    tp_buf_init(&b);
    const char in[] = "a\"b\\c\n\x01\xc3\xa9\xff\xe2\x82";
    tp_buf_json_str(&b, in, sizeof(in) - 1);
    tp_buf_putc(&b, '\0');
    /* quote, backslash, newline and control escaped; valid UTF-8 kept; bad bytes -> U+FFFD */
    assert_string_equal(b.data,
                        "\"a\\\"b\\\\c\\n\\u0001\xc3\xa9\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");
    tp_buf_free(&b);
}

static void test_files_are_atomic(void **state) {
    (void)state;
    char dir[] = "/tmp/tprof_test_fs_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], err[256], cmd[300];
    snprintf(path, sizeof(path), "%s/a/b/c", dir);
    assert_int_equal(tp_mkdirs(path, err, sizeof(err)), 0);
    snprintf(path, sizeof(path), "%s/a/b/c/out.txt", dir);
    assert_int_equal(tp_write_file(path, "hello", 5, err, sizeof(err)), 0);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_size, 5);
    /* An unwritable place fails with a message naming the path, and leaves nothing. */
    assert_int_equal(tp_write_file("/proc/tprof_nope/x", "x", 1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "/proc/tprof_nope/x"));
    /* A write that fails midway (here: the file-size limit, as a full disk would) leaves
     * neither the file nor its temporary behind. */
    snprintf(path, sizeof(path), "%s/big.txt", dir);
    pid_t pid = fork();
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        static char block[1 << 16];
        tp_ofile *f = tp_ofile_open(path, 0, err, sizeof(err));
        if (!f) _exit(3);
        tp_ofile_write(f, block, sizeof(block));
        _exit(tp_ofile_commit(f, err, sizeof(err)) == -1 && strstr(err, path) ? 0 : 4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_not_equal(stat(path, &st), 0);
    snprintf(cmd, sizeof(cmd), "ls %s | grep -c tmp", dir);
    FILE *ls = popen(cmd, "r");
    char count[16] = "";
    assert_non_null(fgets(count, sizeof(count), ls));
    pclose(ls);
    assert_string_equal(count, "0\n");
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_intern_dedupes_and_keeps_pointers),
        cmocka_unit_test(test_tracks_and_args),
        cmocka_unit_test(test_step_number),
        cmocka_unit_test(test_buf_numbers),
        cmocka_unit_test(test_buf_json_strings),
        cmocka_unit_test(test_files_are_atomic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
