/* test_serve_runs.c - the server's view of the folder (src/serve/runs.c, confine.c): which
 * subdirectories are runs, their window counts and partial flag, the change key that must move
 * when a window is added, renamed into place, rewritten or removed (and only then), links
 * flagged; and opening below the folder: links, directories and FIFOs refused, regular files
 * opened, whatever the depth. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "serve/confine.h"
#include "serve/runs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char root[64];
static int root_fd = -1;

static void write_at(const char *rel, const char *text) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void mkdir_at(const char *rel) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    assert_int_equal(mkdir(path, 0700), 0);
}

static int setup(void **state) {
    (void)state;
    snprintf(root, sizeof(root), "/tmp/tprof_serve_runs_XXXXXX");
    assert_non_null(mkdtemp(root));
    mkdir_at("a");
    write_at("a/config.json", "{}");
    write_at("a/trace_0001_steps_1-5.json", "{\"traceEvents\": []}");
    write_at("a/summary.json", "{}");
    mkdir_at("b");
    write_at("b/config.json", "{}");
    mkdir_at("empty");          /* no run file: no run */
    write_at("notes.txt", "x"); /* a file: no run */
    mkdir_at(".hidden");        /* hidden: no run */
    write_at(".hidden/config.json", "{}");
    char target[128], link[128];
    snprintf(target, sizeof(target), "%s/a", root);
    snprintf(link, sizeof(link), "%s/linked", root);
    assert_int_equal(symlink(target, link), 0); /* a link to a run: no run */
    root_fd = open(root, O_RDONLY | O_DIRECTORY);
    assert_true(root_fd >= 0);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    close(root_fd);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
    return system(cmd);
}

static void lists_the_runs(void **state) {
    (void)state;
    tp_serve_run *runs;
    size_t n, left_out;
    assert_int_equal(tp_serve_runs_list(root_fd, &runs, &n, &left_out), 0);
    assert_int_equal(left_out, 0);
    assert_int_equal(n, 2);
    const tp_serve_run *a = strcmp(runs[0].name, "a") == 0 ? &runs[0] : &runs[1];
    const tp_serve_run *b = a == &runs[0] ? &runs[1] : &runs[0];
    assert_string_equal(a->name, "a");
    assert_string_equal(b->name, "b");
    assert_int_equal(a->windows, 1);
    assert_int_equal(a->partial, 0);
    assert_int_equal(b->windows, 0);
    assert_int_equal(b->partial, 1);
    assert_true(runs[0].mtime_ns <= runs[1].mtime_ns); /* oldest first */
    tp_buf out;
    tp_buf_init(&out);
    tp_serve_runs_json(&out, runs, n, left_out);
    tp_buf_putc(&out, '\0');
    assert_non_null(strstr(out.data, "{\"name\":\"a\",\"mtime\":"));
    assert_non_null(strstr(out.data, "\"windows\":1,\"partial\":false,\"analysable\":true}"));
    tp_buf_free(&out);
    free(runs);
    tp_serve_run r;
    assert_int_equal(tp_serve_run_scan(root_fd, "linked", &r), -1);
    assert_int_equal(tp_serve_run_scan(root_fd, "empty", &r), -1);
    assert_int_equal(tp_serve_run_scan(root_fd, ".hidden", &r), -1);
    assert_int_equal(tp_serve_run_scan(root_fd, "notes.txt", &r), -1);
}

static uint64_t key_of(const char *name) {
    tp_serve_run r;
    assert_int_equal(tp_serve_run_scan(root_fd, name, &r), 0);
    return r.key;
}

static void change_key_moves_with_the_files(void **state) {
    (void)state;
    uint64_t k0 = key_of("a");
    assert_int_equal(key_of("a"), k0); /* nothing changed: the same key */
    /* a file that is no run file (a temporary being written) changes nothing of the key's
     * files; the directory's own times move, which is allowed to move the key */
    write_at("a/trace_0002_steps_6-10.json.tmp.x1", "{");
    uint64_t k1 = key_of("a");
    /* renamed into place: a new window */
    char from[256], to[256];
    snprintf(from, sizeof(from), "%s/a/trace_0002_steps_6-10.json.tmp.x1", root);
    snprintf(to, sizeof(to), "%s/a/trace_0002_steps_6-10.json", root);
    assert_int_equal(rename(from, to), 0);
    tp_serve_run r;
    assert_int_equal(tp_serve_run_scan(root_fd, "a", &r), 0);
    assert_int_equal(r.windows, 2);
    assert_true(r.key != k1 && r.key != k0);
    /* rewritten in place, same size: its times move the key */
    uint64_t k2 = r.key;
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    write_at("a/trace_0002_steps_6-10.json", "{");
    assert_true(key_of("a") != k2);
    /* removed */
    uint64_t k3 = key_of("a");
    assert_int_equal(unlink(to), 0);
    assert_true(key_of("a") != k3);
    /* a streamed window's unfinished trace: a window by its name, which moves the key; its
     * rewrites while it records do not (the dashboard would read the growing file each poll) */
    uint64_t k4 = key_of("a");
    write_at("a/trace_0003_streaming.partial.json", "{");
    assert_int_equal(tp_serve_run_scan(root_fd, "a", &r), 0);
    assert_int_equal(r.windows, 2);
    assert_true(r.key != k4);
    uint64_t k5 = r.key;
    nanosleep(&pause, NULL);
    write_at("a/trace_0003_streaming.partial.json", "{\"traceEvents\": [");
    assert_true(key_of("a") == k5);
}

static void links_in_a_run_are_flagged(void **state) {
    (void)state;
    char link[256];
    snprintf(link, sizeof(link), "%s/b/trace_0001.json", root);
    assert_int_equal(symlink("/etc/hostname", link), 0);
    tp_serve_run r;
    assert_int_equal(tp_serve_run_scan(root_fd, "b", &r), 0);
    assert_int_equal(r.has_link, 1);
    const char *seg[] = {"b", "trace_0001.json"};
    struct stat st;
    errno = 0;
    assert_int_equal(tp_serve_open_file(root_fd, seg, 2, &st), -1);
    assert_int_equal(errno, ELOOP);
    assert_int_equal(unlink(link), 0);
}

static void opens_regular_files_only(void **state) {
    (void)state;
    struct stat st;
    const char *file[] = {"a", "config.json"};
    int fd = tp_serve_open_file(root_fd, file, 2, &st);
    assert_true(fd >= 0);
    assert_int_equal(st.st_size, 2);
    close(fd);
    const char *dir[] = {"a"};
    assert_int_equal(tp_serve_open_file(root_fd, dir, 1, &st), -1);
    const char *through_link[] = {"linked", "config.json"};
    assert_int_equal(tp_serve_open_file(root_fd, through_link, 2, &st), -1);
    const char *missing[] = {"a", "nope", "x"};
    assert_int_equal(tp_serve_open_file(root_fd, missing, 3, &st), -1);
    char fifo[256];
    snprintf(fifo, sizeof(fifo), "%s/a/pipe.json", root);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    const char *pipe_seg[] = {"a", "pipe.json"};
    assert_int_equal(tp_serve_open_file(root_fd, pipe_seg, 2, &st), -1); /* and no hang */
    assert_int_equal(unlink(fifo), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lists_the_runs),
        cmocka_unit_test(change_key_moves_with_the_files),
        cmocka_unit_test(links_in_a_run_are_flagged),
        cmocka_unit_test(opens_regular_files_only),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
