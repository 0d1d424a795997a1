/* test_export_perfetto.c - the Perfetto protobuf trace: written from a model, read back, every
 * figure of the analysis is the JSON trace's.
 *
 * Each fixture (Kineto's, torch.profiler's, tprof's own from a GPU run) is read from its JSON,
 * written as a Perfetto trace and read back from it: the analysis of both, rendered as
 * `tprof analyze --json` and as its text report, is the same byte for byte (the input's size,
 * which differs by nature, set aside). Below the figures, the models themselves: the JSON trace
 * and the Perfetto trace of one model read back give the same events, args, tracks with their
 * names, devices and run facts (in another order: the Perfetto writer sorts ranges by track).
 * A model streamed in segments (tp_perfetto_stream, each segment a model of its own) reads back
 * after each segment, marked partial, and at its end as the model of the whole window's trace.
 * That the files are Perfetto's format is checked with the
 * Perfetto project's own definitions by tests/integration/test_perfetto_format.py. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/analysis.h"
#include "export/chrome.h"
#include "export/perfetto.h"
#include "model/copy.h"
#include "report/report.h"
#include "trace/reader.h"
#include "util/buf.h"
#include "util/log.h"
#include "util/pb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static const char *const fixtures[] = {
    "kineto/gaunernst_bert-small-uncased__1016001.json.gz",
    "kineto/sampled_rank-0.json.gz",
    "kineto/nccl_data.json.gz",
    "kineto/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
    "torch-legacy/mlp_cpu_300steps.json.gz",
    "torch2/cnn_cpu_3steps.pt.trace.json.gz",
    "gpu-h200/torch_mlp.tprof.json.gz",
    "gpu-h200/torch_mlp.torch_profiler.pt.trace.json.gz",
    "gpu-h200/train_mlp_cuda.tprof.json.gz",
};
enum { NFIXTURES = sizeof(fixtures) / sizeof(fixtures[0]) };

static const char *fixture(size_t i, char *path, size_t n) {
    const char *root = getenv("TPROF_FIXTURES");
    assert_non_null(root);
    snprintf(path, n, "%s/%s", root, fixtures[i]);
    return path;
}

static void test_fixtures_round_trip(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    for (size_t i = 0; i < NFIXTURES; i++) {
        char path[1024];
        round_trip(fixture(i, path, sizeof(path)));
    }
}

/* ---- the models, compared as text: one line per event, track and fact, sorted ------------- */

static int cmp_line(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void put_track(tp_buf *b, const tp_model *m, uint32_t t) {
    const tp_track *tr = &m->tracks[t];
    tp_buf_printf(b, "%lld/%s/%lld/%s", (long long)tr->pid, tp_model_str(m, tr->pid_str),
                  (long long)tr->tid, tp_model_str(m, tr->tid_str));
}

/* Every event, track and run fact of m as sorted lines, joined. */
static char *model_text(const tp_model *m) {
    size_t n = m->nevents + m->ntracks + m->ndevices + 1, k = 0;
    char **lines = calloc(n, sizeof(*lines));
    assert_non_null(lines);
    tp_buf b;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        tp_buf_init(&b);
        put_track(&b, m, e->track);
        tp_buf_printf(&b, " %lld+%lld k%d f%d c%llu x%u %s [%s]", (long long)e->ts,
                      (long long)e->dur, e->kind, e->flags, (unsigned long long)e->corr, e->ext,
                      tp_model_str(m, e->name), tp_model_str(m, e->cat));
        for (size_t a = 0; a < e->nargs; a++) {
            const tp_arg *g = &m->args[e->arg0 + a];
            tp_buf_printf(&b, " %s=", tp_model_str(m, g->key));
            if (g->type == TP_ARG_INT)
                tp_buf_printf(&b, "i%lld", (long long)g->v.i);
            else if (g->type == TP_ARG_DOUBLE)
                tp_buf_printf(&b, "d%.17g", g->v.d);
            else
                tp_buf_printf(&b, "s%d:%s", g->type, tp_model_str(m, g->v.s));
        }
        tp_buf_putc(&b, '\0');
        lines[k++] = b.data;
    }
    for (uint32_t t = 0; t < m->ntracks; t++) {
        tp_buf_init(&b);
        tp_buf_puts(&b, "track ");
        put_track(&b, m, t);
        tp_buf_printf(&b, " %s | %s", tp_model_str(m, m->tracks[t].process_name),
                      tp_model_str(m, m->tracks[t].thread_name));
        tp_buf_putc(&b, '\0');
        lines[k++] = b.data;
    }
    for (size_t i = 0; i < m->ndevices; i++) {
        const tp_device *d = &m->devices[i];
        tp_buf_init(&b);
        tp_buf_printf(&b, "device %lld %s %llu %d.%d %d", (long long)d->id,
                      tp_model_str(m, d->name), (unsigned long long)d->total_mem, d->compute_major,
                      d->compute_minor, d->num_sms);
        tp_buf_putc(&b, '\0');
        lines[k++] = b.data;
    }
    tp_buf_init(&b);
    tp_buf_printf(&b, "facts base %lld rank %lld/%lld dropped %llu partial %d flight %lld %s",
                  (long long)m->base_ns, (long long)m->rank, (long long)m->world_size,
                  (unsigned long long)m->dropped_events, m->partial, (long long)m->flight_step,
                  tp_model_str(m, m->flight_reason));
    tp_buf_putc(&b, '\0');
    lines[k++] = b.data;
    qsort(lines, k, sizeof(*lines), cmp_line);
    tp_buf all;
    tp_buf_init(&all);
    for (size_t i = 0; i < k; i++) {
        tp_buf_printf(&all, "%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    tp_buf_putc(&all, '\0');
    assert_false(all.failed);
    return all.data;
}

/* The first line where two texts differ, for the failure message. */
static const char *first_difference(const char *a, const char *b) {
    const char *line = a;
    for (; *a && *a == *b; a++, b++)
        if (*a == '\n') line = a + 1;
    return line;
}

static void read_written(const tp_model *a, int perfetto, tp_model *out) {
    tp_buf b;
    tp_buf_init(&b);
    int rc =
        perfetto ? tp_perfetto_write(a, NULL, to_buf, &b) : tp_chrome_write(a, NULL, to_buf, &b);
    assert_int_equal(rc, 0);
    char err[512] = "";
    tp_model_init(out);
    if (tp_trace_read_mem(b.data, b.len, perfetto ? "p" : "j", out, err, sizeof(err)))
        fail_msg("%s", err);
    tp_buf_free(&b);
}

/* Each fixture's model written both ways and read back: the same model. */
static void test_same_model_as_json(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    for (size_t i = 0; i < NFIXTURES; i++) {
        char path[1024], err[512] = "";
        tp_model a, j, p;
        tp_model_init(&a);
        if (tp_trace_read_file(fixture(i, path, sizeof(path)), &a, NULL, err, sizeof(err)))
            fail_msg("%s", err);
        read_written(&a, 0, &j);
        read_written(&a, 1, &p);
        char *tj = model_text(&j), *tp = model_text(&p);
        if (strcmp(tj, tp) != 0)
            fail_msg("%s: JSON and Perfetto models differ at:\n%.400s\n----\n%.400s", path,
                     first_difference(tj, tp), first_difference(tp, tj));
        free(tj), free(tp);
        tp_model_free(&a), tp_model_free(&j), tp_model_free(&p);
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

/* ---- a streamed window ---------------------------------------------------------------------- */

/* Events [from, from + n) of a as a segment of their own (strings and tracks its own); the
 * last also with a's devices and run facts. */
static void segment_of(const tp_model *a, size_t from, size_t n, int last, tp_model *seg) {
    tp_model view = *a;
    view.events = a->events + from;
    view.nevents = n;
    if (!last) view.ndevices = 0;
    tp_model_init(seg);
    seg->base_ns = a->base_ns;
    seg->rank = a->rank;
    seg->world_size = a->world_size;
    tp_copy_opts co = {.map_track = tp_copy_track};
    assert_int_equal(tp_model_append(seg, &view, &co), 0);
    if (!last) return;
    seg->partial = a->partial;
    seg->dropped_events = a->dropped_events;
    seg->flight_step = a->flight_step;
    seg->flight_reason = tp_model_restr(seg, a, a->flight_reason);
}

/* a streamed `per` events a segment into dir; after each segment (the first ones, then every
 * 256th: a read is of the whole file so far) the partial file reads back, marked partial; the
 * finished trace read into out. */
static void stream_model(const tp_model *a, size_t per, const char *dir, tp_model *out) {
    char path[512], partial[512], final[512], err[512] = "";
    snprintf(path, sizeof(path), "%s/trace_streaming.pftrace", dir);
    snprintf(partial, sizeof(partial), "%s/trace_0001_streaming.partial.pftrace", dir);
    snprintf(final, sizeof(final), "%s/trace_0001_window.pftrace", dir);
    tp_model head;
    tp_model_init(&head);
    head.base_ns = a->base_ns, head.rank = a->rank, head.world_size = a->world_size;
    tp_perfetto_stream *s = tp_perfetto_stream_open(&head, path, partial, NULL, err, sizeof(err));
    if (!s) fail_msg("%s", err);
    size_t from = 0, seen = 0;
    for (size_t k = 0; a->nevents - from > per; from += per, k++) {
        tp_model seg, r;
        segment_of(a, from, per, 0, &seg);
        assert_int_equal(tp_perfetto_stream_add(s, &seg), 0);
        if (k >= 8 && k % 256) {
            tp_model_free(&seg);
            continue;
        }
        tp_model_init(&r);
        if (tp_trace_read_file(partial, &r, NULL, err, sizeof(err))) fail_msg("%s", err);
        assert_true(r.partial);
        assert_true(r.nevents >= seen); /* (the reader leaves some instants out) */
        seen = r.nevents;
        tp_model_free(&seg), tp_model_free(&r);
    }
    tp_model last;
    size_t written = 0;
    segment_of(a, from, a->nevents - from, 1, &last);
    if (tp_perfetto_stream_end(s, &last, final, &written, err, sizeof(err))) fail_msg("%s", err);
    assert_int_equal(written, a->nevents);
    struct stat st;
    assert_int_equal(stat(partial, &st), -1); /* renamed */
    tp_model_init(out);
    if (tp_trace_read_file(final, out, NULL, err, sizeof(err))) fail_msg("%s", err);
    unlink(final);
    tp_model_free(&last);
    tp_model_free(&head);
}

/* Each fixture streamed in segments of 7 events (names, tracks and flows across segments) reads
 * back as the model of its whole Perfetto trace. */
static void test_streamed_same_model(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    char dir[] = "/tmp/tprof_pfstream_XXXXXX";
    assert_non_null(mkdtemp(dir));
    for (size_t i = 0; i < NFIXTURES; i++) {
        char path[1024], err[512] = "";
        tp_model a, w, s;
        tp_model_init(&a);
        if (tp_trace_read_file(fixture(i, path, sizeof(path)), &a, NULL, err, sizeof(err)))
            fail_msg("%s", err);
        read_written(&a, 1, &w);
        stream_model(&a, 7, dir, &s);
        char *tw = model_text(&w), *ts = model_text(&s);
        if (strcmp(tw, ts) != 0)
            fail_msg("%s: whole and streamed models differ at:\n%.400s\n----\n%.400s", path,
                     first_difference(tw, ts), first_difference(ts, tw));
        free(tw), free(ts);
        tp_model_free(&a), tp_model_free(&w), tp_model_free(&s);
    }
    assert_int_equal(rmdir(dir), 0);
}

/* A streamed trace cut anywhere (a kill inside the one write of a segment) reads as an unfinished
 * trace (tp_read_opts.cut_short_ok): the slices whole before the cut, a slice whose end was cut
 * off left out, marked partial and cut short; never an error. */
static void test_streamed_cut_anywhere(void **state) {
    (void)state;
    tp_model a;
    tp_model_init(&a);
    a.base_ns = 1000000000;
    uint32_t t = tp_model_track(&a, 7, 0, 8, 0);
    /* as a thread's ranges come: in the order they end */
    static const int64_t span[][2] = {{10, 5}, {10, 20}, {30, 0}, {35, 10}, {40, 10}};
    for (size_t i = 0; i < 5; i++) {
        tp_event *ev = tp_model_add_event(&a);
        ev->ts = span[i][0], ev->dur = span[i][1], ev->track = t, ev->kind = TP_HOST_RANGE;
        ev->name = tp_model_intern_cstr(&a, i % 2 ? "odd" : "even");
        tp_model_arg_int(&a, ev, "i", (int64_t)i);
    }
    char dir[] = "/tmp/tprof_pfcut_XXXXXX";
    assert_non_null(mkdtemp(dir));
    tp_model whole;
    stream_model(&a, 2, dir, &whole);
    assert_int_equal(whole.nevents, 5);
    assert_false(whole.partial);
    char *want = model_text(&whole);
    /* the streamed file again, one segment, its bytes this time */
    char path[512];
    snprintf(path, sizeof(path), "%s/w.pftrace", dir);
    tp_model head;
    tp_model_init(&head);
    head.base_ns = a.base_ns;
    char err[512] = "";
    tp_perfetto_stream *s = tp_perfetto_stream_open(&head, path, path, NULL, err, sizeof(err));
    assert_non_null(s);
    assert_int_equal(tp_perfetto_stream_end(s, &a, path, NULL, err, sizeof(err)), 0);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static unsigned char bytes[1 << 16];
    size_t len = fread(bytes, 1, sizeof(bytes), f);
    fclose(f);
    unlink(path);
    assert_true(len > 0 && len < sizeof(bytes));
    size_t prev = 0;
    for (size_t n = 16; n <= len; n++) {
        int cut = 0;
        tp_read_opts o = {.cut_short_ok = 1, .cut_short = &cut};
        tp_model b;
        tp_model_init(&b);
        if (tp_trace_read_mem_opts(bytes, n, "cut.partial.pftrace", &b, &o, err, sizeof(err)))
            fail_msg("cut at %zu of %zu: %s", n, len, err);
        assert_true(b.nevents >= prev && b.nevents <= 5);
        prev = b.nevents;
        for (size_t i = 0; i < b.nevents; i++) /* each slice whole, with its args */
            assert_int_equal(b.events[i].dur, span[i][1]);
        assert_int_equal(cut, n < len);
        assert_int_equal(b.partial, n < len);
        if (n == len) {
            char *got = model_text(&b);
            assert_string_equal(got, want);
            free(got);
        }
        tp_model_free(&b);
    }
    assert_int_equal(prev, 5);
    free(want);
    tp_model_free(&head), tp_model_free(&whole), tp_model_free(&a);
    assert_int_equal(rmdir(dir), 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures_round_trip),
        cmocka_unit_test(test_same_model_as_json),
        cmocka_unit_test(test_overlaps_and_counters),
        cmocka_unit_test(test_order_and_deadline),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_streamed_same_model),
        cmocka_unit_test(test_streamed_cut_anywhere),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
