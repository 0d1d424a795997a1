/* test_export_perfetto.c - the Perfetto protobuf trace: written from a model, read back, every
 * figure of the analysis is the JSON trace's.
 *
 * Each fixture (Kineto's, torch.profiler's, tprof's own from a GPU run) is read from its JSON,
 * written as a Perfetto trace and read back from it: the analysis of both, rendered as
 * `tprof analyze --json` and as its text report, is the same byte for byte (the input's size,
 * which differs by nature, set aside). That the files are Perfetto's format is checked with the
 * Perfetto project's own definitions by tests/integration/test_perfetto_format.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/analysis.h"
#include "export/perfetto.h"
#include "report/report.h"
#include "trace/reader.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int to_buf(void *ctx, const void *data, size_t len) {
    tp_buf_put(ctx, data, len);
    return 0;
}

/* The JSON and text reports of m's analysis, the input's size and event count set to those of
 * like (the JSON file's, for a model read from the Perfetto one). */
static void reports(tp_model *m, const tp_model *like, tp_buf *json, tp_buf *text) {
    m->input_bytes = like->input_bytes;
    m->input_events = like->input_events;
    tp_analysis *a = tp_analysis_new(NULL);
    assert_non_null(a);
    assert_int_equal(tp_analysis_add_model(a, m, "trace"), 0);
    tp_analysis_finish(a);
    tp_buf_init(json);
    tp_buf_init(text);
    tp_report_json(json, a, NULL);
    tp_report_text(text, a, NULL);
    tp_analysis_free(a);
}

static void round_trip(const char *path) {
    char err[512] = "";
    tp_model a, b;
    tp_model_init(&a);
    tp_model_init(&b);
    if (tp_trace_read_file(path, &a, NULL, err, sizeof(err))) fail_msg("%s", err);
    char tmp[] = "/tmp/tprof_pftrace_XXXXXX";
    int fd = mkstemp(tmp);
    assert_true(fd >= 0);
    close(fd);
    if (tp_perfetto_write_file(&a, tmp, NULL, err, sizeof(err))) fail_msg("%s", err);
    if (tp_trace_read_file(tmp, &b, NULL, err, sizeof(err))) fail_msg("%s: %s", path, err);
    unlink(tmp);
    assert_int_equal(a.nevents, b.nevents);
    tp_buf ja, ta, jb, tb;
    reports(&a, &a, &ja, &ta);
    reports(&b, &a, &jb, &tb);
    if (ja.len != jb.len || memcmp(ja.data, jb.data, ja.len) != 0)
        fail_msg("%s: the analyses differ:\n%.*s\n----\n%.*s", path, (int)ja.len, ja.data,
                 (int)jb.len, jb.data);
    assert_int_equal(ta.len, tb.len);
    assert_memory_equal(ta.data, tb.data, ta.len);
    tp_buf_free(&ja), tp_buf_free(&ta), tp_buf_free(&jb), tp_buf_free(&tb);
    tp_model_free(&a);
    tp_model_free(&b);
}

static void test_fixtures_round_trip(void **state) {
    (void)state;
    const char *root = getenv("TPROF_FIXTURES");
    assert_non_null(root);
    static const char *const files[] = {
        "kineto/gaunernst_bert-small-uncased__1016001.json.gz",
        "torch-legacy/mlp_cpu_300steps.json.gz",
        "torch2/cnn_cpu_3steps.pt.trace.json.gz",
        "gpu-h200/torch_mlp.tprof.json.gz",
        "gpu-h200/torch_mlp.torch_profiler.pt.trace.json.gz",
        "gpu-h200/train_mlp_cuda.tprof.json.gz",
    };
    tp_log_set_quiet(1);
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/%s", root, files[i]);
        round_trip(path);
    }
}

/* A model of overlapping ranges that do not nest, on one thread, and a counter of two series:
 * Perfetto nests a track's slices, so the writer deals them to lanes (tracks of the same
 * thread) and the reader gives back every range with its duration. */
static void test_overlaps_and_counters(void **state) {
    (void)state;
    tp_model m, b;
    tp_model_init(&m);
    tp_model_init(&b);
    m.base_ns = 1000000000;
    uint32_t t = tp_model_track(&m, 7, 0, 8, 0);
    static const int64_t span[][2] = {{0, 100}, {50, 100}, {60, 10}, {120, 0}, {120, 30}};
    for (size_t i = 0; i < 5; i++) {
        tp_event *ev = tp_model_add_event(&m);
        ev->ts = span[i][0], ev->dur = span[i][1];
        ev->name = tp_model_intern_cstr(&m, i % 2 ? "odd" : "even");
        ev->track = t;
        ev->kind = TP_HOST_RANGE;
    }
    tp_event *c = tp_model_add_event(&m);
    c->ts = 70, c->kind = TP_COUNTER, c->track = t;
    c->name = tp_model_intern_cstr(&m, "mem");
    tp_model_arg_int(&m, c, "used", 5);
    tp_model_arg_double(&m, c, "ratio", 0.5);
    tp_buf out;
    tp_buf_init(&out);
    assert_int_equal(tp_perfetto_write(&m, NULL, to_buf, &out), 0);
    char err[256] = "";
    if (tp_trace_read_mem(out.data, out.len, "t", &b, err, sizeof(err))) fail_msg("%s", err);
    assert_int_equal(b.nevents, 6);
    int64_t seen[5] = {0};
    for (size_t i = 0; i < b.nevents; i++) {
        const tp_event *e = &b.events[i];
        if (e->kind == TP_COUNTER) {
            double v;
            assert_int_equal(tp_event_arg_number(&b, e, "used", &v), 0);
            assert_true(v == 5);
            assert_int_equal(tp_event_arg_number(&b, e, "ratio", &v), 0);
            assert_true(v == 0.5);
            continue;
        }
        for (size_t k = 0; k < 5; k++)
            if (e->ts == span[k][0] && e->dur == span[k][1]) seen[k]++;
    }
    for (size_t k = 0; k < 5; k++)
        assert_int_equal(seen[k], 1);
    /* {0,100} and {50,100} overlap without nesting: a second lane was described */
    assert_non_null(memmem(out.data, out.len, "(overlap 1)", 11));
    tp_buf_free(&out);
    tp_model_free(&m);
    tp_model_free(&b);
}

/* The writing order: every range first, by track and time (the outer first), then the other
 * events in the model's order; a deadline already past writes none of them and says so in the
 * header's tprof object, which the reader turns back into an empty window. */
static void test_order_and_deadline(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    uint32_t t0 = tp_model_track(&m, 1, 0, 1, 0), t1 = tp_model_track(&m, 1, 0, 2, 0);
    static const struct {
        int64_t ts, dur;
        int kind, track;
    } ev[] = {{5, 1, TP_HOST_RANGE, 1},  {3, 0, TP_INSTANT, 0}, {2, 9, TP_HOST_RANGE, 0},
              {2, 10, TP_HOST_RANGE, 0}, {1, 1, TP_KERNEL, 1},  {4, 0, TP_COUNTER, 1}};
    for (size_t i = 0; i < 6; i++) {
        tp_event *e = tp_model_add_event(&m);
        e->ts = ev[i].ts, e->dur = ev[i].dur, e->kind = (uint8_t)ev[i].kind;
        e->track = ev[i].track ? t1 : t0;
        e->name = tp_model_intern_cstr(&m, "x");
    }
    size_t order[6];
    assert_int_equal(tp_perfetto_order(&m, order), 4);
    static const size_t want[6] = {3, 2, 4, 0, 1, 5};
    assert_memory_equal(order, want, sizeof(want));
    int64_t past = 1;
    size_t written = 99;
    tp_chrome_opts o = {.deadline_ns = &past, .events_written = &written};
    tp_buf out;
    tp_buf_init(&out);
    assert_int_equal(tp_perfetto_write(&m, &o, to_buf, &out), 0);
    assert_int_equal(written, 0);
    assert_non_null(memmem(out.data, out.len, "\"truncated\":true,\"events_written\":0", 35));
    tp_model b;
    tp_model_init(&b);
    char err[256];
    if (tp_trace_read_mem(out.data, out.len, "t", &b, err, sizeof(err))) fail_msg("%s", err);
    assert_int_equal(b.nevents, 0);
    tp_buf_free(&out);
    tp_model_free(&m);
    tp_model_free(&b);
}

/* Malformed input stops the read with one line naming the input and the packet. */
static void test_malformed(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    tp_buf out;
    tp_buf_init(&out);
    assert_int_equal(tp_perfetto_write(&m, NULL, to_buf, &out), 0);
    static const unsigned char end_alone[] = {0x0a, 0x06, 0x5a, 0x04, 0x48, 0x02, 0x58, 0x01};
    char err[256] = "";
    tp_model b;
    tp_model_init(&b);
    assert_int_equal(
        tp_trace_read_mem(end_alone, sizeof(end_alone), "x.pftrace", &b, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "x.pftrace: packet 1: "));
    assert_null(strchr(err, '\n'));
    /* cut anywhere, the empty trace's bytes give an error or a model, never a crash */
    for (size_t n = 1; n < out.len; n++) {
        tp_model c;
        tp_model_init(&c);
        err[0] = '\0';
        if (tp_trace_read_mem(out.data, n, "cut", &c, err, sizeof(err)))
            assert_non_null(strstr(err, "cut: "));
        tp_model_free(&c);
    }
    tp_buf_free(&out);
    tp_model_free(&m);
    tp_model_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_round_trip),
        cmocka_unit_test(test_overlaps_and_counters),
        cmocka_unit_test(test_order_and_deadline),
        cmocka_unit_test(test_malformed),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
