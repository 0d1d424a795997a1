/* test_report_trace_view.c - the Trace view's ranges (src/report/trace_view.c): lanes in their
 * order, nesting depths, rows as contiguous runs with delta-coded starts, args and ids kept,
 * long names cut, and the bound of TP_TRACE_VIEW_EVENTS ranges cutting the window by time. The
 * page that draws them is tested in Chromium (tests/integration/test_trace_view_browser.py). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "report/trace_view.h"

#include "test_analysis_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The view's JSON of v, NUL-terminated (free it). */
static char *render(const tp_trace_view *v) {
    tp_buf out;
    tp_buf_init(&out);
    tp_trace_view_json(&out, v);
    assert_false(out.failed);
    tp_buf_putc(&out, '\0');
    return out.data;
}

/* A thread: a step [0, 100) holding an op [10, 60) with a child [20, 30), then an op [70, 90);
 * a launch [40, 45) in the first op, its kernel on stream 7 [50, 80); a thread of its own with
 * one range; the GPU stream's ranges come after the host's, whatever the events' order. */
static void test_lanes_rows_and_depths(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    m.rank = 3;
    tp_event *k = tb_add(&m, TP_KERNEL, 0, 7, "gemm", NULL, 50, 30);
    k->corr = 9;
    k->ext = 4;
    tb_add(&m, TP_HOST_RANGE, 1, 2, "other", NULL, 5, 1);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "aten::add", NULL, 70, 20);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "ProfilerStep#1", NULL, 0, 100);
    tp_event *op = tb_add(&m, TP_HOST_RANGE, 1, 1, "aten::mm", NULL, 10, 50);
    op->ext = 4;
    tp_model_arg_int(&m, op, "Sequence number", 17);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "aten::empty", NULL, 20, 10);
    tp_event *launch = tb_add(&m, TP_HOST_RANGE, 1, 1, "cudaLaunchKernel", NULL, 40, 5);
    launch->corr = 9;
    tb_add(&m, TP_INSTANT, 1, 1, "mark", NULL, 3, 0); /* not a range: not drawn */
    tp_trace_view v;
    tp_trace_view_init(&v);
    tp_trace_view_add_model(&v, &m);
    tp_model_free(&m);
    assert_int_equal(v.n, 7);
    assert_int_equal(v.seen, 7);
    char *json = render(&v);
    /* lanes: host threads by tid, then the stream; each labelled with the rank */
    const char *l1 = strstr(json, "rank 3 / pid 1 / thread 1"),
               *l2 = strstr(json, "rank 3 / pid 1 / thread 2");
    const char *l3 = strstr(json, "rank 3 / GPU 0 / stream 7");
    assert_non_null(l1);
    assert_true(l1 < l2 && l2 < l3);
    /* rows [lane, depth, first range]: thread 1 has depths 0..3 (the step; the ops; the empty
     * and the launch; none deeper), thread 2 one row, the stream one */
    assert_non_null(
        strstr(json, "\"rows\": [[0, 0, 0], [0, 1, 1], [0, 2, 3], [1, 0, 5], [2, 0, 6]]"));
    /* by row, then start; a row's first start from t0 (0 here), the next from the previous */
    assert_non_null(strstr(json, "\"start\": [0,10,60,20,20,5,50]"));
    assert_non_null(strstr(json, "\"dur\": [100,50,20,10,5,1,30]"));
    assert_non_null(strstr(json, "\"corr\": [0,0,0,0,9,0,9]"));
    assert_non_null(strstr(json, "\"ext\": [0,4,0,0,0,0,4]"));
    /* args as the objects they are, each once, after null for none */
    assert_non_null(strstr(json, "\"args_json\": [null, {\"External id\":4}, "
                                 "{\"External id\":4,\"Sequence number\":17}]"));
    assert_non_null(strstr(json, "\"ranges\": 7, \"ranges_total\": 7"));
    free(json);
    tp_trace_view_free(&v);
}

/* n ranges on one thread, the i-th starting at base + step * (n - 1 - i): latest first. */
static void add_ranges(tp_trace_view *v, size_t n, int64_t base, int64_t step) {
    tp_model m;
    tp_model_init(&m);
    for (size_t i = 0; i < n; i++)
        tb_add(&m, TP_HOST_RANGE, 1, 1, "aten::add", NULL, base + step * (int64_t)(n - 1 - i), 1);
    tp_trace_view_add_model(v, &m);
    tp_model_free(&m);
}

/* Past TP_TRACE_VIEW_EVENTS ranges the earliest are kept, whatever their order, and the window
 * ends at the first range left out; a later model's ranges past that end are left out, its
 * earlier ones kept (and the cut moves back). */
static void test_cut_by_time(void **state) {
    (void)state;
    const size_t max = TP_TRACE_VIEW_EVENTS, over = 1000;
    tp_trace_view v;
    tp_trace_view_init(&v);
    add_ranges(&v, max + over, 0, 10);
    assert_int_equal(v.n, max);
    assert_int_equal(v.seen, max + over);
    assert_int_equal(v.cut_ns, 10 * (int64_t)max); /* ranges 0, 10, ..., 10 * (max - 1) kept */
    for (size_t i = 0; i < v.n; i++)
        assert_true(v.r[i].start_ns < v.cut_ns);
    add_ranges(&v, 10, 5, 10 * (int64_t)max); /* starts 5 (kept) and 10 * max + 5 ... (not) */
    assert_int_equal(v.seen, max + over + 10);
    assert_int_equal(v.n, max);
    assert_int_equal(v.cut_ns, 10 * (int64_t)(max - 1)); /* the one at 5 pushed the last out */
    char *json = render(&v);
    assert_non_null(strstr(json, "\"cut_us\": 20971.51"));
    free(json);
    tp_trace_view_free(&v);
}

/* A name longer than TP_TRACE_VIEW_NAME_MAX bytes is kept cut, with an ellipsis. */
static void test_long_names_cut(void **state) {
    (void)state;
    char name[1001];
    memset(name, 'x', 1000);
    name[1000] = '\0';
    tp_model m;
    tp_model_init(&m);
    tb_add(&m, TP_HOST_RANGE, 1, 1, name, NULL, 0, 1);
    tp_trace_view v;
    tp_trace_view_init(&v);
    tp_trace_view_add_model(&v, &m);
    tp_model_free(&m);
    const char *kept = tp_strtab_get(&v.names, v.r[0].name);
    assert_int_equal(strlen(kept), TP_TRACE_VIEW_NAME_MAX);
    assert_memory_equal(kept, name, TP_TRACE_VIEW_NAME_MAX - 3);
    assert_string_equal(kept + TP_TRACE_VIEW_NAME_MAX - 3, "\xe2\x80\xa6");
    tp_trace_view_free(&v);
}

/* Ranges of a lane that start together go longest first (so each later one nests in the one
 * before), else in the order they came: a run longer than the insertion sort's (40 ranges, the
 * shortest first) and a short one (durations 1, 3, 2, then a second range of 3). */
static void test_ties_longest_first(void **state) {
    (void)state;
    enum { LONG = 40 };
    tp_model m;
    tp_model_init(&m);
    for (int i = 0; i < LONG; i++)
        tb_add(&m, TP_HOST_RANGE, 1, 1, "aten::add", NULL, 0, i + 1);
    static const int64_t short_run[] = {1, 3, 2, 3};
    static const char *const short_names[] = {"a", "b", "c", "d"};
    for (int i = 0; i < 4; i++)
        tb_add(&m, TP_HOST_RANGE, 1, 2, short_names[i], NULL, 5, short_run[i]);
    tp_trace_view v;
    tp_trace_view_init(&v);
    tp_trace_view_add_model(&v, &m);
    tp_model_free(&m);
    char *json = render(&v);
    char want[512] = "\"dur\": [";
    for (int i = 0; i < LONG; i++) /* a row each: 40 at depth 0, 39 at depth 1, ... */
        snprintf(want + strlen(want), sizeof(want) - strlen(want), "%d,", LONG - i);
    strcat(want, "3,3,2,1]"); /* thread 2: b before d (both 3: as they came), then c, a */
    assert_non_null(strstr(json, want));
    assert_non_null(strstr(json, "\"names\": [\"\", \"aten::add\", \"a\", \"b\", \"c\", \"d\"]"));
    strcpy(want, "\"name\": [");
    for (int i = 0; i < LONG; i++)
        strcat(want, "1,");
    strcat(want, "3,5,4,2]"); /* b, d, c, a */
    assert_non_null(strstr(json, want));
    free(json);
    tp_trace_view_free(&v);
}

/* Starts too far apart to share a 64-bit key with the lane (2^63 ns between them) are still
 * ordered by start on each lane. */
static void test_far_starts(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    const int64_t far = (int64_t)1 << 62;
    tb_add(&m, TP_HOST_RANGE, 1, 1, "late", NULL, far - 10, 1);
    tb_add(&m, TP_HOST_RANGE, 1, 2, "other", NULL, 0, 1);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "early", NULL, -far, 1);
    tp_trace_view v;
    tp_trace_view_init(&v);
    tp_trace_view_add_model(&v, &m);
    tp_model_free(&m);
    char *json = render(&v);
    /* names: 1 late, 2 other, 3 early; thread 1 (early, late), then thread 2 */
    assert_non_null(strstr(json, "\"name\": [3,1,2]"));
    assert_non_null(strstr(json, "\"rows\": [[0, 0, 0], [1, 0, 2]]"));
    free(json);
    tp_trace_view_free(&v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ties_longest_first),    cmocka_unit_test(test_far_starts),
        cmocka_unit_test(test_lanes_rows_and_depths), cmocka_unit_test(test_cut_by_time),
        cmocka_unit_test(test_long_names_cut),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
