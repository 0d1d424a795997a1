/* test_record_stream.c - streamed windows (record/window.h, tp_wstream; the `stream` key): the
 * same records converted whole and in segments give the same events (names, times, lengths,
 * threads, categories, flags, args: an op's inputs texts kept while it stays open across
 * segments, ranges still open at the end truncated), and so do the JSON traces written both ways
 * when read back; a streamed session records windows many times max_events long without dropping
 * an event, its buffers reused as the writer takes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "export/chrome.h"
#include "record/clock.h"
#include "record/inputs.h"
#include "record/record.h"
#include "record/session.h"
#include "record/window.h"
#include "trace/reader.h"
#include "tprof.h"
#include "util/buf.h"
#include "util/jsonvalid.h"
#include "util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

enum { NTHREADS = 3, PER_THREAD = 6000 };

static int setup(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    return 0;
}

/* ---- events as text, compared as sorted lists ---- */

typedef struct lines {
    char **v;
    size_t n, cap;
} lines;

static void add_line(lines *l, const tp_model *m, const tp_event *ev) {
    tp_buf b;
    tp_buf_init(&b);
    const tp_track *t = ev->track < m->ntracks ? &m->tracks[ev->track] : NULL;
    tp_buf_printf(&b, "%d|%s|%lld|%lld|%lld|%s|%u|%s", ev->kind, ev_name(m, ev), (long long)ev->ts,
                  (long long)ev->dur, t ? (long long)t->tid : -1LL, tp_model_str(m, ev->cat),
                  (unsigned)ev->flags, t ? tp_model_str(m, t->thread_name) : "");
    for (uint32_t a = 0; a < ev->nargs; a++) {
        const tp_arg *arg = &m->args[ev->arg0 + a];
        tp_buf_printf(&b, "|%s=", tp_model_str(m, arg->key));
        if (arg->type == TP_ARG_INT)
            tp_buf_printf(&b, "%lld", (long long)arg->v.i);
        else if (arg->type == TP_ARG_DOUBLE)
            tp_buf_printf(&b, "%.17g", arg->v.d);
        else
            tp_buf_printf(&b, "%s", tp_model_str(m, arg->v.s));
    }
    if (ev->ext) tp_buf_printf(&b, "|ext=%lld", (long long)ev->ext);
    tp_buf_putc(&b, '\0');
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 1024;
        l->v = realloc(l->v, l->cap * sizeof(*l->v));
        assert_non_null(l->v);
    }
    l->v[l->n++] = b.data; /* owned now */
}

static void add_model(lines *l, const tp_model *m) {
    for (size_t i = 0; i < m->nevents; i++)
        add_line(l, m, &m->events[i]);
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void assert_same(lines *a, lines *b) {
    assert_int_equal(a->n, b->n);
    if (!a->n || !a->v || !b->v) {
        fail_msg("no events");
        return;
    }
    qsort(a->v, a->n, sizeof(*a->v), cmp_str);
    qsort(b->v, b->n, sizeof(*b->v), cmp_str);
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->v[i], b->v[i]) != 0) fail_msg("%s\n  vs\n%s", a->v[i], b->v[i]);
}

static void lines_free(lines *l) {
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    memset(l, 0, sizeof(*l));
}

/* ---- the records: several threads, several chunks each ---- */

typedef struct bytes {
    uint8_t b[256];
    uint8_t *p;
} bytes;

/* aten::mm's inputs [m, 8] x [8, 4]: texts that differ with m. */
static size_t mm_inputs(bytes *e, int64_t m) {
    static const char *const dtype = "float";
    e->p = e->b;
    const int64_t dims[2][2] = {{m, 8}, {8, 4}};
    for (int t = 0; t < 2; t++) {
        *e->p++ = TP_IN_TENSOR;
        e->p = tp_in_put_ptr(e->p, dtype);
        e->p = tp_in_put_count(e->p, strlen(dtype));
        e->p = tp_in_put_count(e->p, 2);
        for (int i = 0; i < 2; i++)
            e->p = tp_in_put_varint(e->p, dims[t][i]);
    }
    return (size_t)(e->p - e->b);
}

static const int ids[NTHREADS] = {0, 1, 2};

static void *recorder(void *arg) {
    int id = *(const int *)arg;
    char name[32];
    snprintf(name, sizeof(name), "worker-%d", id);
    tprof_thread_name(name);
    bytes in;
    for (int i = 0; i < PER_THREAD; i += 500) {
        /* an op whose inputs texts wait, pending, while its children fill chunks */
        if (tp_op_begin("aten::mm", i, id) & 1) {
            tp_op_inputs("aten::mm", in.b, mm_inputs(&in, i + id), TP_INPUTS_SHAPES);
            for (int k = 0; k < 500; k++) {
                tprof_begin(k % 3 ? "child" : "other");
                tprof_arg_int("k", k);
                if (k % 7 == 0) tprof_arg_str("kind", k % 2 ? "odd" : "even");
                if (k % 11 == 0) tprof_flops((uint64_t)k * 1000);
                if (k % 13 == 0) tprof_counter("loss", 1.0 / (k + 1));
                tprof_end();
            }
            tprof_end();
        }
    }
    tprof_begin("left_open"); /* closed at the window's end, flagged truncated */
    return NULL;
}

static void record_threads(void) {
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, recorder, (void *)&ids[i]), 0);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
}

/* ---- whole and streamed, from the same records ---- */

static void model_init(tp_model *m, const tp_window_env *env) {
    tp_model_init(m);
    m->base_ns = env->base_ns;
    m->rank = env->rank;
    m->world_size = env->world_size;
}

static void read_trace(const char *path, lines *l) {
    tp_model m;
    char err[512];
    tp_model_init(&m);
    if (tp_trace_read_file(path, &m, NULL, err, sizeof(err))) fail_msg("%s", err);
    add_model(l, &m);
    tp_model_free(&m);
}

/* No event of m starts before settled: what the earlier segments' settled_ts promised. */
static void assert_settled(const tp_model *m, int64_t settled) {
    for (size_t i = 0; i < m->nevents; i++)
        assert_true(m->events[i].ts >= settled);
}

/* The ts of whole's range named name. */
static int64_t range_ts(const tp_model *whole, const char *name) {
    for (size_t i = 0; i < whole->nevents; i++)
        if (strcmp(tp_model_str(whole, whole->events[i].name), name) == 0)
            return whole->events[i].ts;
    fail_msg("no range %s", name);
    return 0;
}

/* The window still records (stream off: the session's writer leaves its chunks alone); the test
 * converts its records both ways, as if it closed now, with one clock line for both. */
static void test_segments_hold_the_windows_events(void **state) {
    (void)state;
    static const char *const kv[] = {"clock", "monotonic", "record_shapes", "true", NULL};
    assert_int_equal(start_with(kv), 0);
    tprof_begin("main_open"); /* open before any segment, closed at the end */
    record_threads();
    tprof_begin("main_range");
    tprof_end();
    tp_session_lock();
    assert_non_null(tp_sess.open);
    tp_window w = *tp_sess.open;
    tp_session_unlock();
    w.end_ticks = tp_clock_ticks();
    tp_clock_cal_span(&w.cal, &w.opened, &w.opened);
    snprintf(w.name, sizeof(w.name), "test");
    tp_window_info ia, ib;
    tp_model *whole = tp_window_build(&w, &tp_sess.env, &ia);
    assert_non_null(whole);

    tp_wstream *s = tp_wstream_new(&w, &tp_sess.env);
    assert_non_null(s);
    char dir[] = "/tmp/tprof_stream_XXXXXX", a_path[64], b_path[64], p_path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(a_path, sizeof(a_path), "%s/whole.json", dir);
    snprintf(b_path, sizeof(b_path), "%s/streamed.json", dir);
    char err[512];
    tp_model head;
    model_init(&head, &tp_sess.env);
    tp_chrome_opts o = {.window = "test"};
    tp_chrome_stream *cs =
        tp_chrome_stream_open(&head, "/nonexistent-dir/x.json", &o, err, sizeof(err));
    assert_null(cs); /* the folder must exist: the name at the end is in the same one */
    snprintf(p_path, sizeof(p_path), "%s/provisional.json", dir);
    cs = tp_chrome_stream_open(&head, p_path, &o, err, sizeof(err));
    assert_non_null(cs);
    lines a = {0}, b = {0};
    size_t segments = 0;
    int64_t settled = INT64_MIN;
    for (;;) { /* each thread's chunks but its newest, then nothing more */
        tp_model *seg = tp_wstream_pass(s);
        assert_non_null(seg);
        size_t n = seg->nevents;
        assert_settled(seg, settled);
        assert_true(seg->settled_ts > INT64_MIN);
        if (seg->settled_ts > settled) settled = seg->settled_ts;
        /* each worker is inside an aten::mm whose children fill its chunks: listed open */
        assert_int_equal(seg->nopen, NTHREADS);
        for (size_t i = 0; i < seg->nopen; i++) {
            assert_string_equal(tp_model_str(seg, seg->open[i].name), "aten::mm");
            for (size_t k = 0; k < i; k++)
                assert_true(seg->tracks[seg->open[k].track].tid !=
                            seg->tracks[seg->open[i].track].tid);
        }
        if (n) {
            segments++;
            add_model(&b, seg);
            assert_int_equal(tp_chrome_stream_add_events(cs, seg), 0);
        }
        tp_model_free(seg);
        free(seg);
        if (!n) break;
    }
    assert_int_equal(segments, 1); /* the threads had filled chunks */
    assert_true(b.n > 0 && b.n < whole->nevents);
    tp_model *last = tp_wstream_finish(s, &ib);
    assert_non_null(last);
    assert_settled(last, settled);
    assert_int_equal(last->nopen, 0); /* the last segment closes every range */
    /* main_open's begin, in the main thread's newest chunk (not read while the window records),
     * held every segment's bound back */
    assert_true(settled <= range_ts(whole, "main_open"));
    add_model(&b, last);
    assert_int_equal(last->dropped_events, whole->dropped_events);
    assert_int_equal(ia.too_deep, ib.too_deep);
    assert_int_equal(last->ntracks, whole->ntracks); /* every thread's, for the metadata */
    add_model(&a, whole);
    /* per block of 500 children: the op and 39 counters; per thread left_open; main's two */
    assert_int_equal(a.n, (size_t)NTHREADS * (PER_THREAD + PER_THREAD / 500 * 40 + 1) + 2);
    assert_same(&a, &b);

    /* The traces: one written whole, one in segments, read back by tprof's reader. */
    size_t written = 0;
    assert_int_equal(tp_chrome_write_file(whole, a_path, &o, err, sizeof(err)), 0);
    assert_int_equal(tp_chrome_stream_end(cs, last, b_path, &written, err, sizeof(err)), 0);
    assert_int_equal(written, a.n);
    assert_int_equal(access(p_path, F_OK), -1); /* renamed to the name given at the end */
    lines ra = {0}, rb = {0};
    read_trace(a_path, &ra);
    read_trace(b_path, &rb);
    assert_int_equal(ra.n, a.n);
    assert_same(&ra, &rb);
    snprintf(err, sizeof(err), "rm -rf '%s'", dir);
    assert_int_equal(system(err), 0);

    lines_free(&a);
    lines_free(&b);
    lines_free(&ra);
    lines_free(&rb);
    tp_model_free(whole);
    free(whole);
    tp_model_free(last);
    free(last);
    tp_model_free(&head);
    tprof_end();
    tprof_shutdown();
    cap_reset();
}

/* ---- the GPU's part: in the last segment, its devices in the trailer ---- */

static tp_event *add_ev(tp_model *m, int kind, const char *name, uint32_t track, int64_t ts) {
    tp_event *ev = tp_model_add_event(m);
    assert_non_null(ev);
    ev->kind = (uint8_t)kind;
    ev->name = tp_model_intern_cstr(m, name);
    ev->cat = tp_model_intern_cstr(m, kind == TP_KERNEL ? "kernel" : "cuda_runtime");
    ev->track = track;
    ev->ts = ts;
    ev->dur = 10;
    return ev;
}

/* Devices are known only once the window closed, after the header was written: the trailer has
 * them; a launch and its kernel, both in the last segment, get their flow. */
static void test_devices_and_flows_of_the_last_segment(void **state) {
    (void)state;
    char dir[] = "/tmp/tprof_stream_XXXXXX", path[64], out[64], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/p.json", dir);
    snprintf(out, sizeof(out), "%s/t.json", dir);
    tp_model head, seg, last;
    tp_model_init(&head);
    tp_model_init(&seg);
    tp_model_init(&last);
    tp_chrome_stream *cs = tp_chrome_stream_open(&head, path, NULL, err, sizeof(err));
    assert_non_null(cs);
    add_ev(&seg, TP_HOST_RANGE, "early", tp_model_track(&seg, 1, 0, 1, 0), 5);
    assert_int_equal(tp_chrome_stream_add_events(cs, &seg), 0);
    tp_device *d = tp_model_device(&last, 0);
    assert_non_null(d);
    d->name = tp_model_intern_cstr(&last, "Fake GPU");
    d->num_sms = 132;
    uint32_t host = tp_model_track(&last, 1, 0, 1, 0), gpu = tp_model_track(&last, 0, 0, 7, 0);
    add_ev(&last, TP_HOST_RANGE, "cudaLaunchKernel", host, 100)->corr = 42;
    add_ev(&last, TP_KERNEL, "kern", gpu, 120)->corr = 42;
    assert_int_equal(tp_chrome_stream_end(cs, &last, out, NULL, err, sizeof(err)), 0);
    FILE *f = fopen(out, "rb");
    assert_non_null(f);
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *events = strstr(text, "\"traceEvents\""),
               *props = strstr(text, "\"deviceProperties\"");
    assert_true(events && props && props > events); /* after the events: in the trailer */
    assert_non_null(strstr(props, "\"numSms\":132"));
    assert_non_null(strstr(text, "\"ph\":\"s\"")); /* the flow's start and end */
    assert_non_null(strstr(text, "\"ph\":\"f\""));
    const char *early = strstr(text, "\"early\""), *meta = strstr(text, "\"thread_name\"");
    assert_true(early && meta && early < meta); /* the segment before the metadata */
    tp_model m;
    tp_model_init(&m);
    if (tp_trace_read_file(out, &m, NULL, err, sizeof(err))) fail_msg("%s", err);
    assert_int_equal(m.nevents, 3);
    assert_int_equal(m.ndevices, 1);
    assert_string_equal(tp_model_str(&m, m.devices[0].name), "Fake GPU");
    tp_model_free(&m);
    tp_model_free(&head);
    tp_model_free(&seg);
    tp_model_free(&last);
    snprintf(err, sizeof(err), "rm -rf '%s'", dir);
    assert_int_equal(system(err), 0);
}

/* ---- checkpoints: valid after each segment, the finished file unchanged ---- */

/* The whole text of a trace file, through zlib (a plain file reads as is; gzip members one after
 * another as one stream); n its length. */
static char *file_text(const char *path, size_t *n) {
    gzFile g = gzopen(path, "rb");
    if (!g) return NULL;
    size_t room = 1 << 16, len = 0;
    char *text = malloc(room);
    int got;
    while (text && (got = gzread(g, text + len, (unsigned)(room - len - 1))) > 0) {
        len += (size_t)got;
        char *grown = room - len < 2 ? realloc(text, room *= 2) : text;
        if (!grown) free(text);
        text = grown;
    }
    gzclose(g);
    if (text) text[len] = '\0';
    *n = len;
    return text;
}

/* Three segments of ranges on two threads (the second past the writer's 1 MB buffer, which
 * checkpoints in its middle too), and a last one with every track and a device:
 * written with and without checkpoints (gzip or not). After each segment the partial file is a
 * valid trace of every event so far, marked interrupted, and no file is at the final name; the
 * finished file is the one written without checkpoints, its text byte for byte (and, plain, its
 * bytes); the partial name is gone. */
static void check_checkpoints(int gzip) {
    enum { SEGMENTS = 3, PER = 200, BIG = 20000 };
    char dir[] = "/tmp/tprof_ckpt_XXXXXX", a[64], b[64], tmp_a[64], tmp_b[64], part[64], err[512];
    assert_non_null(mkdtemp(dir));
    snprintf(tmp_a, sizeof(tmp_a), "%s/a.tmpname", dir);
    snprintf(tmp_b, sizeof(tmp_b), "%s/b.tmpname", dir);
    snprintf(a, sizeof(a), "%s/a.json", dir);
    snprintf(b, sizeof(b), "%s/b.json", dir);
    snprintf(part, sizeof(part), "%s/b.partial.json", dir);
    tp_model head, seg[SEGMENTS], last;
    tp_model_init(&head);
    tp_model_init(&last);
    tp_chrome_opts o = {.gzip = gzip, .config_json = "{\"stream\": true}"};
    tp_chrome_stream *plain = tp_chrome_stream_open(&head, tmp_a, &o, err, sizeof(err));
    tp_chrome_stream *ck = tp_chrome_stream_open(&head, tmp_b, &o, err, sizeof(err));
    assert_true(plain && ck);
    assert_int_equal(tp_chrome_stream_checkpoints(ck, part), 0);
    size_t so_far = 0;
    for (int k = 0; k < SEGMENTS; k++) {
        tp_model_init(&seg[k]);
        int count = k == 1 ? BIG : PER;
        so_far += (size_t)count;
        for (int i = 0; i < count; i++)
            add_ev(&seg[k], TP_HOST_RANGE, i % 2 ? "odd" : "even",
                   tp_model_track(&seg[k], 1, 0, 10 + i % 2, 0), k * 1000 + i);
        assert_int_equal(tp_chrome_stream_add_events(plain, &seg[k]), 0);
        assert_int_equal(tp_chrome_stream_add_events(ck, &seg[k]), 0);
        size_t n;
        char *text = file_text(part, &n);
        assert_non_null(text);
        assert_true(tp_json_valid(text, n));
        assert_non_null(strstr(text, "\"partial\":true,\"interrupted\":true"));
        free(text);
        tp_model m;
        tp_model_init(&m);
        if (tp_trace_read_file(part, &m, NULL, err, sizeof(err))) fail_msg("%s", err);
        assert_int_equal(m.nevents, so_far);
        assert_true(m.partial);
        tp_model_free(&m);
        assert_int_equal(access(b, F_OK), -1);
        assert_int_equal(access(tmp_b, F_OK), -1); /* published under the partial name */
    }
    tp_device *d = tp_model_device(&last, 0);
    d->name = tp_model_intern_cstr(&last, "Fake GPU");
    for (int t = 0; t < 2; t++)
        add_ev(&last, TP_HOST_RANGE, "end", tp_model_track(&last, 1, 0, 10 + t, 0), 9000 + t);
    assert_int_equal(tp_chrome_stream_end(plain, &last, a, NULL, err, sizeof(err)), 0);
    assert_int_equal(tp_chrome_stream_end(ck, &last, b, NULL, err, sizeof(err)), 0);
    assert_int_equal(access(part, F_OK), -1);
    size_t na, nb;
    char *ta = file_text(a, &na), *tb = file_text(b, &nb);
    assert_true(ta && tb && na == nb && memcmp(ta, tb, na) == 0);
    assert_null(strstr(tb, "interrupted"));
    free(ta);
    free(tb);
    if (!gzip) {
        snprintf(err, sizeof(err), "cmp -s '%s' '%s'", a, b);
        assert_int_equal(system(err), 0);
    }
    for (int k = 0; k < SEGMENTS; k++)
        tp_model_free(&seg[k]);
    tp_model_free(&last);
    tp_model_free(&head);
    snprintf(err, sizeof(err), "rm -rf '%s'", dir);
    assert_int_equal(system(err), 0);
}

static void test_checkpoints_plain(void **state) {
    (void)state;
    check_checkpoints(0);
}

static void test_checkpoints_gzip(void **state) {
    (void)state;
    check_checkpoints(1);
}

/* ---- a streamed session: longer than max_events, nothing dropped ---- */

typedef struct streamed {
    size_t segments, events, ranges; /* ranges named "r" */
    size_t after;                    /* ranges named "after" in segments before the last */
    size_t steps;                    /* ProfilerStep#0, in whichever segment (its end's) */
    tp_model *last;
} streamed;

static streamed got;
static tp_model head_seen;

static size_t count_r(const tp_model *m) {
    return count_named(m, "r");
}

static void *st_open(void *ctx, const tp_model *head) {
    (void)ctx;
    head_seen.base_ns = head->base_ns;
    return &got;
}

static void st_add(void *ctx, void *trace, const tp_model *seg) {
    (void)ctx;
    streamed *s = trace;
    s->segments++;
    s->events += seg->nevents;
    s->ranges += count_r(seg);
    s->after += count_named(seg, "after");
    s->steps += count_named(seg, "ProfilerStep#0");
    assert_int_equal(seg->base_ns, head_seen.base_ns);
}

static void st_close(void *ctx, void *trace, tp_model *last, const tp_window_info *w) {
    (void)ctx;
    (void)w;
    streamed *s = trace;
    s->events += last->nevents;
    s->ranges += count_r(last);
    s->steps += count_named(last, "ProfilerStep#0");
    s->last = last;
}

/* A session streaming its windows into the capturing hooks (st_*), with max_events records of
 * budget. */
static void start_streamed(int max_events) {
    static const tp_sink sink = {.start = cap_start,
                                 .window = cap_window,
                                 .finish = cap_finish,
                                 .stream_open = st_open,
                                 .stream_add = st_add,
                                 .stream_close = st_close};
    cap_reset();
    memset(&got, 0, sizeof(got));
    tp_session_set_sink(&sink);
    char max[32];
    snprintf(max, sizeof(max), "%d", max_events);
    tprof_config *c = cfg_of((const char *const[]){"stream", "true", "max_events", max, NULL});
    assert_int_equal(tprof_start(c), 0);
    tprof_config_free(c);
}

static void test_stream_longer_than_max_events(void **state) {
    (void)state;
    enum { MAX = 65536, RANGES = 4 * MAX, PACE = 20000 };
    start_streamed(MAX);
    /* 8 records per max_events: without streaming all but the first max_events would drop. The
     * loop waits now and then, so that the writer (polling every TP_POLL_MS) keeps up on a loaded
     * machine: it is the budget's bound that is tested, not the writer's speed. */
    struct timespec pause = {0, 30L * 1000000};
    for (int i = 0; i < RANGES; i++) {
        tprof_begin("r");
        tprof_end();
        if (i % PACE == PACE - 1) nanosleep(&pause, NULL);
    }
    tprof_shutdown();
    assert_int_equal(cap.n, 0); /* delivered through the stream hooks only */
    assert_non_null(got.last);
    assert_true(got.segments >= 2);
    assert_int_equal(got.last->dropped_events, 0);
    assert_int_equal(got.ranges, RANGES);
    assert_int_equal(got.steps, 1);
    assert_int_equal(cap.run.dropped_events, 0);
    tp_model_free(got.last);
    free(got.last);
    tp_session_set_sink(NULL);
    cap_reset();
}

/* A burst the writer cannot keep up with drops ranges, counted; once the writer has caught up,
 * the thread keeps its ranges again (record.h, invariant 5), within the same window. */
static void test_stream_keeps_again_after_a_burst(void **state) {
    (void)state;
    enum { MAX = 65536, BURST = 2000000, AFTER = 1000 };
    start_streamed(MAX);
    tprof_begin("outer");             /* kept: its end is owed through the drops */
    for (int i = 0; i < BURST; i++) { /* 4 M records against 64 k of budget */
        tprof_begin("r");
        tprof_end();
    }
    struct timespec pause = {0, 200L * 1000000}, tick = {0, 1000000};
    nanosleep(&pause, NULL); /* the writer takes every chunk but the newest */
    for (int i = 0; i < AFTER; i++) {
        tprof_begin("after");
        tprof_end();
        if (i % 100 == 99) nanosleep(&tick, NULL);
    }
    tprof_end();
    tprof_shutdown();
    assert_non_null(got.last);
    uint64_t dropped = got.last->dropped_events;
    assert_true(dropped > 0);
    assert_int_equal(got.ranges + dropped, BURST);
    assert_int_equal(count_named(got.last, "after") + got.after, AFTER);
    const tp_event *outer = find_named(got.last, "outer");
    assert_non_null(outer);
    assert_false(outer->flags & TP_EVF_TRUNCATED); /* its own end, after the drops */
    assert_int_equal(cap.run.dropped_events, dropped);
    tp_model_free(got.last);
    free(got.last);
    tp_session_set_sink(NULL);
    cap_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segments_hold_the_windows_events),
        cmocka_unit_test(test_devices_and_flows_of_the_last_segment),
        cmocka_unit_test(test_checkpoints_plain),
        cmocka_unit_test(test_checkpoints_gzip),
        cmocka_unit_test(test_stream_longer_than_max_events),
        cmocka_unit_test(test_stream_keeps_again_after_a_burst),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
