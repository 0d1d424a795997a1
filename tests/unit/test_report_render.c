/* test_report_render.c - the renderers: each shows the figures of a hand-built analysis, lays them
 * out as promised (aligned text, pipe tables, quoted CSV) and says n/a where a figure does not
 * apply. JSON validity is checked with Python's json module in test_analysis_reports.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/compare.h"
#include "report/html.h"
#include "report/jsonw.h"
#include "report/report.h"

#include "test_analysis_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *weird = "a|b, \"c\"\nd";

static char long_kernel[501];

/* Two steps (1 ms and 3 ms), a dataloader of 1 ms (25% of step time), ops, two kernels (one
 * with a 500-character name), 1 ms of GPU work in a 4 ms window, memory, FLOPs (both
 * conventions). */
static tp_analysis *full_analysis(void) {
    /* 10 + 479 + 11 characters */
    snprintf(long_kernel, sizeof(long_kernel), "void gemm<%0479d(float*)END", 0);
    tp_model m;
    tp_model_init(&m);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "ProfilerStep#1", NULL, 0, 1000000);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "ProfilerStep#2", NULL, 1000000, 3000000);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "dataloader", NULL, 0, 1000000);
    tp_event *mm = tb_add(&m, TP_HOST_RANGE, 1, 1, "aten::mm", NULL, 1000000, 2000000);
    tp_model_arg_int(&m, mm, "flops", 4000000000);
    tp_model_arg_int(&m, mm, "flops_fcm", 6000000000); /* FlopCounterMode's, by the reader */
    tb_add(&m, TP_HOST_RANGE, 1, 1, weird, NULL, 3000000, 500000);
    tb_add(&m, TP_KERNEL, 0, 7, long_kernel, NULL, 1000000, 600000);
    tb_add(&m, TP_KERNEL, 0, 7, "relu", NULL, 2000000, 400000);
    tp_event *mem = tb_add(&m, TP_MEMORY, 1, 1, "[memory]", NULL, 10, 0);
    tp_model_arg_int(&m, mem, "Device Type", 1);
    tp_model_arg_int(&m, mem, "Device Id", 0);
    tp_model_arg_int(&m, mem, "Total Allocated", (int64_t)3 * 1024 * 1024);
    tp_model_device(&m, 0)->total_mem = (uint64_t)4 * 1024 * 1024;
    m.input_events = 123;
    m.input_bytes = 4567;
    tp_analysis *a = tp_analysis_new(NULL);
    assert_int_equal(tp_analysis_add_model(a, &m, "trace.json"), 0);
    tp_analysis_add_warning(a, "a warning with %d in it", 42);
    tp_analysis_finish(a);
    tp_model_free(&m);
    return a;
}

static tp_analysis *empty_analysis(void) {
    tp_model m;
    tp_model_init(&m);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "aten::add", NULL, 0, 100);
    tp_analysis *a = tp_analysis_new(NULL);
    assert_int_equal(tp_analysis_add_model(a, &m, NULL), 0);
    tp_analysis_finish(a);
    tp_model_free(&m);
    return a;
}

typedef void (*render_fn)(tp_buf *, const tp_analysis *, const tp_report_opts *);

static char *render(render_fn fn, const tp_analysis *a, const tp_report_opts *o) {
    tp_buf b;
    tp_buf_init(&b);
    fn(&b, a, o);
    tp_buf_putc(&b, '\0');
    assert_int_equal(b.failed, 0);
    return b.data;
}

static void contains(const char *text, const char *want) {
    if (!strstr(text, want)) fail_msg("missing \"%s\" in:\n%s", want, text);
}

static void lacks(const char *text, const char *unwanted) {
    if (strstr(text, unwanted)) fail_msg("unexpected \"%s\" in:\n%s", unwanted, text);
}

/* The lines of the table under heading `title`, up to the next blank line. */
static size_t table_lines(const char *text, const char *title, char lines[][512], size_t max) {
    const char *p = strstr(text, title);
    assert_non_null(p);
    p += strlen(title);
    if (p[-1] != '\n') p = strchr(p, '\n') + 1;
    size_t n = 0;
    while (*p && *p != '\n' && n < max) {
        const char *eol = strchr(p, '\n');
        size_t len = (size_t)(eol - p);
        assert_true(len < 512);
        memcpy(lines[n], p, len);
        lines[n++][len] = '\0';
        p = eol + 1;
    }
    return n;
}

static void test_text_report(void **state) {
    (void)state;
    tp_analysis *a = full_analysis();
    char *t = render(tp_report_text, a, &(tp_report_opts){.top_k = 5, .title = "my run"});
    contains(t, "my run\n");
    contains(t, "input: trace.json (123 events, 4.46 KiB)");
    contains(t, "steps: 2, window 4.000 ms");
    /* steps: total 4 ms, mean 2 ms, p50 2 ms, p95 2.9 ms, max 3 ms */
    contains(t, "4.000 ms");
    contains(t, "2.900 ms");
    contains(t, "slowest: ProfilerStep#2 3.000 ms, ProfilerStep#1 1.000 ms");
    contains(t, "25.0%  #####\n"); /* dataloader share and its bar */
    contains(t, "aten::mm");
    contains(t, "utilization 25.0%");
    contains(t, "CUDA 0");
    contains(t, "3.00 MiB");
    contains(t, "75.0%");
    contains(t, "4.00 GFLOP in 2.000 ms");
    contains(t, "2.00 TFLOP/s");
    contains(t, "a warning with 42 in it");
    /* ranked by the time they could save: the GPU idles 3 ms, loading takes 1 ms, and the
     * 3 ms in no stage (other) save nothing by themselves */
    const char *idle = strstr(t, "[gpu_idle] (could save up to 3.000 ms) GPU utilization is 25.0%");
    const char *dl = strstr(t, "[dataloader] (could save up to 1.000 ms) Data loading takes 25.0%");
    const char *other = strstr(t, "[other] 75.0% of step time (3.0 ms) is in no stage");
    assert_non_null(idle);
    assert_non_null(dl);
    assert_non_null(other);
    assert_true(idle < dl && dl < other);
    /* the 500-character kernel name is cut in the middle: its start and end remain */
    contains(t, "void gemm<");
    contains(t, "(float*)END");
    lacks(t, long_kernel);
    lacks(t, "nan");
    /* the control character in an op name does not break the layout */
    contains(t, "a|b, \"c\" d");
    /* aligned columns: every line of the ops table (right-aligned last column) has one width */
    char lines[16][512];
    size_t n = table_lines(t, "ops by self time", lines, 16);
    assert_int_equal(n, 4); /* header + 3 ops */
    for (size_t i = 1; i < n; i++)
        assert_int_equal(strlen(lines[i]), strlen(lines[0]));
    for (char *p = t, *eol; (eol = strchr(p, '\n')); p = eol + 1)
        assert_true(eol - p < 300);
    free(t);
    tp_analysis_free(a);
}

static void test_text_report_not_applicable(void **state) {
    (void)state;
    tp_analysis *a = empty_analysis();
    char *t = render(tp_report_text, a, NULL);
    contains(t, "recorded windows: 1 (0 partial)");
    contains(t, "Step time\n  n/a: no ProfilerStep#<n> ranges");
    contains(t, "n/a: no GPU kernels");
    contains(t, "GPU\n  n/a:");
    contains(t, "Memory peaks\n  n/a:");
    contains(t, "FLOPs\n  n/a:");
    contains(t, "none: no figure crossed a threshold");
    lacks(t, "-1");
    lacks(t, "nan");
    free(t);
    tp_analysis_free(a);
}

static void test_markdown_report(void **state) {
    (void)state;
    tp_analysis *a = full_analysis();
    char *md = render(tp_report_markdown, a, NULL);
    contains(md, "# tprof report\n");
    contains(md, "## Step time\n");
    contains(md, "| steps | total | mean | p50 | p95 | max |\n|---:|---:|---:|---:|---:|---:|\n");
    contains(md, "| a\\|b, \"c\" d |"); /* pipe escaped, newline flattened */
    contains(md, "- [gpu_idle] (could save up to 3.000 ms) GPU utilization is 25.0%");
    lacks(md, "#####"); /* bars are text-only */
    /* every row of a table has as many unescaped pipes as its header */
    char lines[16][512];
    size_t n = table_lines(md, "ops by self time\n\n", lines, 16);
    assert_true(n >= 3);
    int pipes0 = -1;
    for (size_t i = 0; i < n; i++) {
        int pipes = 0;
        for (const char *p = lines[i]; *p; p++)
            pipes += *p == '|' && (p == lines[i] || p[-1] != '\\');
        if (pipes0 < 0) pipes0 = pipes;
        assert_int_equal(pipes, pipes0);
    }
    free(md);
    tp_analysis_free(a);
}

static void test_json_report_keys(void **state) {
    (void)state;
    tp_analysis *a = full_analysis();
    char *j = render(tp_report_json, a,
                     &(tp_report_opts){.top_k = 1, .extra_json = "\"run\": {\"id\": \"x\"}"});
    contains(j, "\"input\": {\"path\": \"trace.json\", \"bytes\": 4567, \"events\": 123");
    contains(j,
             "\"steps\": {\"count\": 2, \"total_us\": 4000, \"mean_us\": 2000, \"p50_us\": 2000, "
             "\"p95_us\": 2900, \"max_us\": 3000");
    contains(j, "\"top_cpu_ops\": [{\"name\": \"aten::mm\", \"calls\": 1, \"total_us\": 2000, "
                "\"self_us\": 2000");
    contains(j, "\"gpu\": {\"busy_us\": 1000, \"utilization_pct\": 25, \"kernel_count\": 2");
    contains(j, "{\"stage\": \"dataloader\", \"count\": 1, \"total_us\": 1000");
    contains(j, "\"pct\": 25}");
    contains(j, "\"dataloader_pct\": 25");
    contains(j, "\"memory\": [{\"device_type\": 1, \"device_id\": 0, \"peak_bytes\": 3145728");
    contains(j, "\"flops\": {\"total\": 4000000000, \"time_us\": 2000, \"per_second\": "
                "2000000000000, \"convention\": \"torch.profiler's");
    /* the second convention: its total, the step's share and MFU n/a without a peak */
    contains(j, "\"flops_fcm\": {\"total\": 6000000000, \"step_flops\": 6000000000, "
                "\"achieved_tflops\": 1.5, \"mfu_pct\": null, \"convention\": "
                "\"FlopCounterMode's");
    contains(j, "\"flops\": 4000000000, \"flops_fcm\": 6000000000, \"gpu_us\""); /* its op row */
    contains(j, "\"recommendations\": [{\"id\": \"gpu_idle\"");
    contains(j, "\"saving_us\": 3000}, {\"id\": \"dataloader\"");
    contains(j, "\"run\": {\"id\": \"x\"}}\n");
    /* top_k = 1: one kernel of two */
    const char *k = strstr(j, "\"top_gpu_kernels\": [");
    assert_non_null(k);
    assert_null(strstr(strstr(k, "]"), "\"relu\""));
    free(j);
    j = render(tp_report_json, a, NULL);
    contains(j, "\"name\": \"a|b, \\\"c\\\"\\nd\""); /* escaped, not flattened */
    free(j);
    tp_analysis_free(a);
    a = empty_analysis();
    j = render(tp_report_json, a, NULL);
    contains(j, "\"mean_us\": null");
    contains(j, "\"utilization_pct\": null");
    contains(j, "\"dataloader_pct\": null");
    contains(j, "\"per_second\": null");
    free(j);
    tp_analysis_free(a);
}

static size_t count_lines(const char *s) {
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_csv_reports(void **state) {
    (void)state;
    tp_analysis *a = full_analysis();
    char *c = render(tp_report_csv, a, &(tp_report_opts){.top_k = 3});
    contains(c, "kind,name,calls,total_us,self_us,mean_us,min_us,max_us,pct,flops,flops_fcm\r\n");
    contains(c,
             "op,aten::mm,1,2000,2000,2000,2000,2000,57.142857142857146,4000000000,6000000000\r\n");
    contains(c, "op,aten::mm,1,2000,2000,2000,2000,2000,");
    contains(c, "\"a|b, \"\"c\"\"\nd\""); /* quoted, quotes doubled */
    contains(c, "kernel,relu,1,400,,400,400,400,40,,\r\n");
    contains(c, "stage,dataloader,1,1000,,1000,1000,1000,25,,\r\n");
    contains(c, "stage,forward,0,0,,,,,0,,\r\n");
    contains(c, "stage,validation,0,0,,,,,0,,\r\n");
    contains(c, "\r\nother,other,2,3000,,1500,0,3000,75,,\r\n");
    /* header + 3 ops (one spans two lines) + 2 kernels + 5 stages + other */
    assert_int_equal(count_lines(c), 1 + 4 + 2 + 5 + 1);
    free(c);
    tp_buf b;
    tp_buf_init(&b);
    tp_report_op_stats_csv(&b, a);
    tp_buf_putc(&b, '\0');
    contains(b.data, "name,calls,total_us,self_us,mean_us,min_us,max_us,flops,flops_fcm\r\n");
    contains(b.data, "aten::mm,1,2000,2000,2000,2000,2000,4000000000,6000000000\r\n");
    contains(b.data, "dataloader,1,1000,1000,1000,1000,1000,0,0\r\n");
    tp_buf_free(&b);
    tp_buf_init(&b);
    tp_report_stage_times_json(&b, a);
    tp_buf_putc(&b, '\0');
    contains(b.data, "{\"stages\": [{\"stage\": \"dataloader\", \"count\": 1, \"total_us\": 1000, "
                     "\"mean_us\": 1000, \"min_us\": 1000, \"p50_us\": 1000, \"p95_us\": 1000, "
                     "\"max_us\": 1000, \"pct\": 25}");
    contains(b.data, "\"steps\": [{\"name\": \"ProfilerStep#1\", \"number\": 1, \"start_us\": 0, "
                     "\"dur_us\": 1000, \"stages\": {\"dataloader\": 1000, \"forward\": 0, "
                     "\"backward\": 0, \"optimizer\": 0, \"validation\": 0}, \"other_us\": 0, "
                     "\"lead_us\": 0, \"flops\": 0, \"mfu_pct\": null, \"flops_fcm\": 0, "
                     "\"mfu_fcm_pct\": null}, {\"name\": "
                     "\"ProfilerStep#2\"");
    /* step 2 holds aten::mm and the weird op, no stage: all of it is other */
    contains(b.data, "\"other_us\": 3000, \"lead_us\": 0, \"flops\": 4000000000, ");
    contains(b.data, "\"flops_fcm\": 6000000000, \"mfu_fcm_pct\": null}");
    contains(b.data, "\"other\": {\"stage\": \"other\", \"count\": 2, \"total_us\": 3000");
    tp_buf_free(&b);
    tp_analysis_free(a);
}

static void test_compare_reports(void **state) {
    (void)state;
    tp_analysis *a = full_analysis(), *b = empty_analysis();
    tp_compare *c = tp_compare_new(a, a);
    tp_buf out;
    tp_buf_init(&out);
    tp_report_compare_text(&out, c, NULL);
    tp_buf_putc(&out, '\0');
    contains(out.data, "A: trace.json (2 steps)");
    contains(out.data, "mean step time: A 2.000 ms, B 2.000 ms, change +0.0%");
    contains(out.data, "\nWarnings\n  A, B: a warning with 42 in it\n"); /* said by both: once */
    contains(out.data, "ops by change in self time (top 3 of 3; 0 added, 0 removed)");
    tp_buf_free(&out);
    tp_compare_free(c);

    c = tp_compare_new(a, b);
    tp_buf_init(&out);
    tp_report_compare_markdown(&out, c, NULL);
    tp_buf_putc(&out, '\0');
    contains(out.data, "# tprof compare\n");
    contains(out.data, "- mean step time: n/a (B has no ProfilerStep#<n> ranges)");
    contains(out.data, "## Warnings\n\n- A: a warning with 42 in it\n");
    contains(out.data, "| aten::mm | 2.000 ms | - | -2.000 ms | -100.0% | removed |");
    contains(out.data, "| aten::add | - | 100 ns | +100 ns | n/a | added |");
    tp_buf_free(&out);
    tp_buf_init(&out);
    tp_report_compare_json(&out, c, &(tp_report_opts){.top_k = 1});
    tp_buf_putc(&out, '\0');
    contains(out.data, "\"a\": {\"path\": \"trace.json\", \"steps\": 2, \"mean_step_us\": 2000, "
                       "\"warnings\": [\"a warning with 42 in it\"]}");
    contains(out.data,
             "\"b\": {\"path\": \"\", \"steps\": 0, \"mean_step_us\": null, \"warnings\": []}");
    contains(out.data, "\"step_change_pct\": null");
    contains(out.data,
             "\"ops\": [{\"name\": \"aten::mm\", \"status\": \"removed\", \"a_calls\": 1, "
             "\"b_calls\": 0, \"a_us\": 2000, \"b_us\": 0, \"delta_us\": -2000, "
             "\"delta_pct\": -100}]");
    contains(out.data, "\"ops_added\": 1, \"ops_removed\": 3");
    tp_buf_free(&out);
    tp_compare_free(c);
    tp_analysis_free(a);
    tp_analysis_free(b);
}

/* The page around data rendered into it in place: every '<' of the data (first, last, several
 * in a row) becomes \u003c, and the page is the dashboard's (tp_html_page) with only the data
 * element added where its template puts it. */
static void test_html_page_halves(void **state) {
    (void)state;
    static const char open[] = "<script id=\"tprof-data\" type=\"application/json\">";
    static const char data[] = "<{\"a\": \"x<<y</script>\", \"b\": [1, 2]}<";
    static const char want[] = "\\u003c{\"a\": \"x\\u003c\\u003cy\\u003c/script>\", "
                               "\"b\": [1, 2]}\\u003c</script>";
    tp_buf page, dash;
    tp_buf_init(&page);
    tp_buf_init(&dash);
    size_t start = tp_html_page_open(&page);
    tp_buf_put(&page, data, sizeof(data) - 1);
    assert_int_equal(tp_html_page_close(&page, start), 0);
    assert_int_equal(tp_html_page(&dash), 0);
    size_t head = start - (sizeof(open) - 1), element = sizeof(open) - 1 + sizeof(want) - 1;
    assert_int_equal(page.len, dash.len + element);
    assert_memory_equal(page.data, dash.data, head);
    assert_memory_equal(page.data + head, open, sizeof(open) - 1);
    assert_memory_equal(page.data + start, want, sizeof(want) - 1);
    assert_memory_equal(page.data + head + element, dash.data + head, dash.len - head);
    assert_null(memmem(page.data, page.len, "{{", 2)); /* every marker replaced */
    tp_buf_free(&page);
    tp_buf_free(&dash);
}

/* Keys: the writers' literals copied as they are, a key from input (a stage named by the user)
 * escaped like any JSON string, commas kept in both cases. */
static void test_json_keys_plain_and_escaped(void **state) {
    (void)state;
    tp_buf b;
    tp_buf_init(&b);
    tp_jw w;
    tp_jw_init(&w, &b);
    tp_jw_object(&w, NULL);
    tp_jw_i64(&w, "plain", 1);
    tp_jw_i64(&w, "say \"hi\"\n", 2);
    tp_jw_i64(&w, "caf\xc3\xa9", 3);
    tp_jw_i64(&w, "", 4);
    tp_jw_end_object(&w);
    tp_buf_putc(&b, '\0');
    assert_string_equal(b.data,
                        "{\"plain\": 1, \"say \\\"hi\\\"\\n\": 2, \"caf\xc3\xa9\": 3, \"\": 4}");
    tp_buf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_text_report),      cmocka_unit_test(test_text_report_not_applicable),
        cmocka_unit_test(test_markdown_report),  cmocka_unit_test(test_json_report_keys),
        cmocka_unit_test(test_csv_reports),      cmocka_unit_test(test_compare_reports),
        cmocka_unit_test(test_html_page_halves), cmocka_unit_test(test_json_keys_plain_and_escaped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
