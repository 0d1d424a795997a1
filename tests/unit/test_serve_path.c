/* test_serve_path.c - the server's request-path parser (src/serve/path.c), the one place a
 * client's path and run names are decoded: every spelling of "..", of a separator, of NUL and
 * of a hidden name is refused however it is escaped, and plain names come out decoded once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "serve/path.h"

#include <stdio.h>
#include <string.h>

static int parse(const char *raw, tp_serve_path *p) {
    const char *why = NULL;
    int rc = tp_serve_path_parse(raw, strlen(raw), p, &why);
    if (rc) assert_non_null(why);
    return rc;
}

static void accepts_plain_paths(void **state) {
    (void)state;
    tp_serve_path p;
    assert_int_equal(parse("/", &p), 0);
    assert_int_equal(p.n, 0);
    assert_int_equal(parse("/api/runs", &p), 0);
    assert_int_equal(p.n, 2);
    assert_string_equal(p.seg[0], "api");
    assert_string_equal(p.seg[1], "runs");
    assert_int_equal(parse("/runs/my%20run/trace_0001_steps_1-5.json.gz", &p), 0);
    assert_int_equal(p.n, 3);
    assert_string_equal(p.seg[1], "my run");
    assert_string_equal(p.seg[2], "trace_0001_steps_1-5.json.gz");
    /* decoded once: "%252e%252e" is the plain name "%2e%2e" */
    assert_int_equal(parse("/runs/%252e%252e/x", &p), 0);
    assert_string_equal(p.seg[1], "%2e%2e");
    /* a dot inside a name is fine */
    assert_int_equal(parse("/runs/a..b/c.json", &p), 0);
    assert_string_equal(p.seg[1], "a..b");
}

static void refuses_traversal_in_every_spelling(void **state) {
    (void)state;
    static const char *const bad[] = {"/..",
                                      "/../etc/passwd",
                                      "/runs/../../etc/passwd",
                                      "/runs/a/..",
                                      "/./x",
                                      "/%2e%2e/etc/passwd",
                                      "/%2E%2E/x",
                                      "/.%2e/x",
                                      "/%2e./x",
                                      "/runs/%2e%2e%2f%2e%2e/x",
                                      "/runs/a%2fb",
                                      "/runs/a%2Fb",
                                      "/runs/a%5cb",
                                      "/runs/..%5c..%5cx",
                                      "/runs/a\\b",
                                      "/runs/a%00b",
                                      "/runs/%00",
                                      "/runs/a%0ab",
                                      "/runs/a%7fb",
                                      "/runs/.hidden",
                                      "/runs/%2ehidden",
                                      "//etc/passwd",
                                      "/runs//x",
                                      "/runs/",
                                      "etc/passwd",
                                      "",
                                      "http://host/x",
                                      "/%",
                                      "/%2",
                                      "/%zz",
                                      "/a%g0",
                                      "/a%0"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tp_serve_path p;
        if (parse(bad[i], &p) == 0) fail_msg("accepted \"%s\"", bad[i]);
    }
}

static void bounds_hold(void **state) {
    (void)state;
    tp_serve_path p;
    char raw[TP_SERVE_PATH_MAX + 8];
    /* one name of 255 bytes passes, 256 do not */
    raw[0] = '/';
    memset(raw + 1, 'a', 256);
    raw[256] = '\0';
    assert_int_equal(parse(raw, &p), 0);
    raw[257] = '\0';
    raw[256] = 'a';
    assert_int_equal(parse(raw, &p), -1);
    /* TP_SERVE_SEGMENTS_MAX names pass, one more does not */
    char many[64] = "";
    for (int i = 0; i < TP_SERVE_SEGMENTS_MAX; i++)
        strcat(many, "/a");
    assert_int_equal(parse(many, &p), 0);
    assert_int_equal(p.n, TP_SERVE_SEGMENTS_MAX);
    strcat(many, "/a");
    assert_int_equal(parse(many, &p), -1);
    /* a path longer than TP_SERVE_PATH_MAX is refused before anything is decoded */
    for (size_t i = 0; i < sizeof(raw) - 1; i++)
        raw[i] = (i % 4 == 0) ? '/' : 'b';
    raw[sizeof(raw) - 1] = '\0';
    assert_int_equal(parse(raw, &p), -1);
}

static void decodes_query_names(void **state) {
    (void)state;
    char out[TP_SERVE_NAME_MAX + 1];
    const char *why;
    assert_int_equal(tp_serve_name_decode("run%2d1", 7, out, sizeof(out), &why), 0);
    assert_string_equal(out, "run-1");
    /* the length given counts, not a NUL: "ab" of "ab/c" */
    assert_int_equal(tp_serve_name_decode("ab/c", 2, out, sizeof(out), &why), 0);
    assert_string_equal(out, "ab");
    assert_int_equal(tp_serve_name_decode("", 0, out, sizeof(out), &why), -1);
    assert_int_equal(tp_serve_name_decode("..", 2, out, sizeof(out), &why), -1);
    assert_int_equal(tp_serve_name_decode("a%2f", 4, out, sizeof(out), &why), -1);
    /* a small output buffer is never overrun */
    char small[4];
    assert_int_equal(tp_serve_name_decode("abcd", 4, small, sizeof(small), &why), -1);
    assert_int_equal(tp_serve_name_decode("abc", 3, small, sizeof(small), &why), 0);
    assert_string_equal(small, "abc");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(accepts_plain_paths),
        cmocka_unit_test(refuses_traversal_in_every_spelling),
        cmocka_unit_test(bounds_hold),
        cmocka_unit_test(decodes_query_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
