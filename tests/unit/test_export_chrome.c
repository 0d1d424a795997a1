/* test_export_chrome.c - the Chrome trace writer on models built by hand: every event kind, string
 * pids, args of each type, truncation, flows with and without a launch, hostile names, the
 * empty model, streaming in chunks, gzip, failing writes that must leave nothing behind, and
 * one trace written from several models in turn (tp_chrome_stream, as `tprof merge` does).
 * Expected texts are derived here from the model by hand or by snprintf, never by the writer.
 * tests/integration/test_chrome_output.py checks the same output with Python's json module. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "export/chrome.h"
#include "model/model.h"
#include "util/buf.h"
#include "util/jsonvalid.h"

#include <dirent.h>
#include <time.h>
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

/* ---- helpers ----------------------------------------------------------------------------------
 */

typedef struct capture {
    tp_buf text;
    size_t calls;
    size_t max_chunk;
    size_t fail_at; /* the call (1-based) that fails; 0: never */
} capture;

static int capture_write(void *ctx, const void *data, size_t len) {
    capture *c = ctx;
    c->calls++;
    if (c->fail_at && c->calls >= c->fail_at) return -1;
    if (len > c->max_chunk) c->max_chunk = len;
    tp_buf_put(&c->text, data, len);
    return 0;
}

/* The trace of m as a NUL-terminated string (caller frees). */
static char *write_to_string(const tp_model *m, const tp_chrome_opts *o, size_t *len) {
    capture c;
    memset(&c, 0, sizeof(c));
    assert_int_equal(tp_chrome_write(m, o, capture_write, &c), 0);
    if (len) *len = c.text.len;
    tp_buf_putc(&c.text, '\0');
    assert_false(c.text.failed);
    return c.text.data;
}

static tp_event *add_event(tp_model *m, int kind, uint32_t track, const char *cat, const char *name,
                           int64_t ts, int64_t dur) {
    tp_event *ev = tp_model_add_event(m);
    assert_non_null(ev);
    ev->kind = (uint8_t)kind;
    ev->track = track;
    ev->cat = tp_model_intern_cstr(m, cat);
    ev->name = tp_model_intern_cstr(m, name);
    ev->ts = ts;
    ev->dur = dur;
    return ev;
}

static void assert_contains(const char *text, const char *needle) {
    if (!strstr(text, needle)) fail_msg("missing from the trace: %s", needle);
}

/* By hand rather than with strstr, which sanitizers make linear in the whole text per call. */
static size_t count_of(const char *text, const char *needle) {
    size_t n = 0, k = strlen(needle);
    for (const char *p = text; *p; p++)
        n += strncmp(p, needle, k) == 0;
    return n;
}

/* Microseconds written the slow, obvious way: integer part, three decimals, zeros trimmed. */
static void expected_us(int64_t ns, char *out, size_t cap) {
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    int n = snprintf(out, cap, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", mag / 1000,
                     (unsigned)(mag % 1000));
    while (out[n - 1] == '0')
        out[--n] = '\0';
    if (out[n - 1] == '.') out[n - 1] = '\0';
}

/* ---- a model with every kind ------------------------------------------------------------------
 */

enum { HOST_PID = 10, HOST_TID = 11, GPU = 0, STREAM = 7 };

static void build_every_kind(tp_model *m) {
    uint32_t host = tp_model_track(m, HOST_PID, 0, HOST_TID, 0);
    uint32_t stream = tp_model_track(m, GPU, 0, STREAM, 0);
    tp_str cpu = tp_model_intern_cstr(m, "CPU functions");
    tp_str thr = tp_model_intern_cstr(m, "worker \"a\"");
    uint32_t legacy = tp_model_track(m, 0, cpu, 0, thr);
    m->tracks[host].thread_name = tp_model_intern_cstr(m, "main");
    m->base_ns = 1700000000000000000;
    m->rank = 3;
    m->world_size = 8;

    tp_event *ev =
        add_event(m, TP_HOST_RANGE, host, "user_annotation", "ProfilerStep#4", 0, 5000000);
    ev->flags = TP_EVF_STEP;
    ev = add_event(m, TP_HOST_RANGE, host, "cpu_op", "aten::mm", 1500, 1);
    tp_model_arg_int(m, ev, "flops", -42);
    tp_model_arg_double(m, ev, "ratio", 0.25);
    tp_model_arg_str(m, ev, "module", "fc1");
    tp_model_arg_json(m, ev, "Input Dims", "[[64, 784], [784, 256]]");
    tp_model_arg_json(m, ev, "broken", "[1, 2");
    /* A launch whose kernel is in the model, one whose kernel is not, and a kernel whose launch
     * is not. */
    ev = add_event(m, TP_HOST_RANGE, host, "cuda_runtime", "cudaLaunchKernel", 2000, 3000);
    ev->corr = 7;
    ev = add_event(m, TP_HOST_RANGE, host, "cuda_runtime", "cudaLaunchKernel", 6000, 3000);
    ev->corr = 8;
    ev = add_event(m, TP_KERNEL, stream, "kernel", "sgemm", 9000, 4000);
    ev->corr = 7;
    ev = add_event(m, TP_KERNEL, stream, "kernel", "orphan", 14000, 1000);
    ev->corr = 99;
    add_event(m, TP_MEMCPY, stream, "gpu_memcpy", "Memcpy HtoD", 16000, 10);
    add_event(m, TP_MEMSET, stream, "gpu_memset", "Memset", 17000, 10);
    add_event(m, TP_GPU_ANNOTATION, stream, "gpu_user_annotation", "forward", 9000, 6000);
    ev = add_event(m, TP_HOST_RANGE, host, "", "truncated", 4000000, 1000000);
    ev->flags = TP_EVF_TRUNCATED;
    ev = add_event(m, TP_MEMORY, host, "cpu_instant_event", "[memory]", 2500, 0);
    tp_model_arg_int(m, ev, "Device Type", 1);
    tp_model_arg_int(m, ev, "Bytes", -4096);
    ev = add_event(m, TP_COUNTER, legacy, "", "loss", 3000, 0);
    tp_model_arg_double(m, ev, "value", 1.5);
    add_event(m, TP_INSTANT, legacy, "marker", "epoch start", 3500, 0);
    add_event(m, TP_HOST_RANGE, host, "cpu_op", "negative", 100, -5);
}

static void test_every_kind(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    build_every_kind(&m);
    tp_chrome_opts o = {
        .config_json = "{\"active\": 2}", .window = "steps_4-5", .trace_name = "run 1"};
    char *t = write_to_string(&m, &o, NULL);
    assert_true(tp_json_valid(t, strlen(t)));

    assert_contains(t, "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#4\","
                       "\"pid\":10,\"tid\":11,\"ts\":0,\"dur\":5000}");
    assert_contains(t, "\"name\":\"aten::mm\",\"pid\":10,\"tid\":11,\"ts\":1.5,\"dur\":0.001,"
                       "\"args\":{\"flops\":-42,\"ratio\":0.25,\"module\":\"fc1\","
                       "\"Input Dims\":[[64, 784], [784, 256]],\"broken\":\"[1, 2\"}}");
    /* Ranges of every device kind, with their categories. */
    assert_contains(t, "\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD\",\"pid\":0,\"tid\":7");
    assert_contains(t, "\"cat\":\"gpu_memset\",\"name\":\"Memset\",\"pid\":0,\"tid\":7");
    assert_contains(t, "\"cat\":\"gpu_user_annotation\",\"name\":\"forward\",\"pid\":0,\"tid\":7");
    /* Empty category left out; truncation marked; negative length clamped. */
    assert_contains(t, "{\"ph\":\"X\",\"name\":\"truncated\",\"pid\":10,\"tid\":11,\"ts\":4000,"
                       "\"dur\":1000,\"args\":{\"tprof truncated\":true}}");
    assert_contains(t, "\"name\":\"negative\",\"pid\":10,\"tid\":11,\"ts\":0.1,\"dur\":0}");
    /* Flows: only correlation 7 has both ends; 8 has no kernel, 99 no launch. */
    assert_contains(t, "\"name\":\"cudaLaunchKernel\",\"pid\":10,\"tid\":11,\"ts\":2,\"dur\":3,"
                       "\"args\":{\"correlation\":7}},\n{\"ph\":\"s\",\"id\":7,\"pid\":10,"
                       "\"tid\":11,\"ts\":2,\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
    assert_contains(t, "\"name\":\"sgemm\",\"pid\":0,\"tid\":7,\"ts\":9,\"dur\":4,"
                       "\"args\":{\"correlation\":7}},\n{\"ph\":\"f\",\"id\":7,\"pid\":0,\"tid\":7,"
                       "\"ts\":9,\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
    assert_int_equal(count_of(t, "\"ph\":\"s\""), 1);
    assert_int_equal(count_of(t, "\"ph\":\"f\""), 1);
    assert_contains(t, "\"name\":\"orphan\",\"pid\":0,\"tid\":7,\"ts\":14,\"dur\":1,"
                       "\"args\":{\"correlation\":99}}");
    /* Instants, memory, counters; string pid and tid written as strings. */
    assert_contains(
        t, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\","
           "\"pid\":10,\"tid\":11,\"ts\":2.5,\"args\":{\"Device Type\":1,\"Bytes\":-4096}}");
    assert_contains(t, "{\"ph\":\"C\",\"name\":\"loss\",\"pid\":\"CPU functions\","
                       "\"tid\":\"worker \\\"a\\\"\",\"ts\":3,\"args\":{\"value\":1.5}}");
    assert_contains(t, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"marker\",\"name\":\"epoch start\","
                       "\"pid\":\"CPU functions\"");

    /* Metadata: names (given, defaults), and GPUs sorted after host processes. */
    assert_contains(t, "\"pid\":10,\"tid\":11,\"args\":{\"name\":\"main\"}}");
    assert_contains(t, "\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":0,\"tid\":0,"
                       "\"args\":{\"name\":\"GPU 0\"}}");
    assert_contains(t, "\"pid\":0,\"tid\":7,\"args\":{\"name\":\"stream 7\"}}");
    assert_contains(t, "\"name\":\"process_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":0,\"tid\":0,"
                       "\"args\":{\"sort_index\":16777216}}");
    assert_contains(t, "\"name\":\"process_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":10,\"tid\":0,"
                       "\"args\":{\"sort_index\":10}}");
    assert_contains(t, "\"pid\":10,\"tid\":0,\"args\":{\"name\":\"process 10\"}}");
    assert_contains(t,
                    "\"pid\":\"CPU functions\",\"tid\":0,\"args\":{\"name\":\"CPU functions\"}}");
    assert_contains(t, "\"tid\":\"worker \\\"a\\\"\",\"args\":{\"name\":\"worker \\\"a\\\"\"}}");
    /* Metadata come before every event. */
    const char *last_meta = NULL;
    for (const char *p = t; (p = strstr(p, "\"ph\":\"M\"")) != NULL; p++)
        last_meta = p;
    assert_non_null(last_meta);
    assert_true(last_meta < strstr(t, "\"ph\":\"X\""));

    /* Top level. */
    assert_true(strncmp(t, "{\"schemaVersion\":1,", 19) == 0);
    assert_null(strstr(t, "\"deviceProperties\""));
    assert_contains(t, "\"distributedInfo\":{\"rank\": 3,\"world_size\":8}");
    assert_contains(t, "\"displayTimeUnit\":\"ms\"");
    assert_contains(t, "\"baseTimeNanoseconds\":1700000000000000000");
    assert_contains(t, "\"traceName\":\"run 1\"");
    assert_contains(t,
                    "\"tprof\":{\"version\":\"0.1.0\",\"window\":\"steps_4-5\",\"partial\":false,"
                    "\"dropped_events\":0,\"rank\":3,\"world_size\":8,\"config\":{\"active\": 2}}");
    free(t);
    tp_model_free(&m);
}

static void test_hostile_names(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    uint32_t tr = tp_model_track(&m, 1, 0, 1, 0);
    static const char name[] = "q\"b\\s\n\t\x01\x1f\x7f \xc3\xa9 \xff\xe2\x82 end";
    tp_event *ev = tp_model_add_event(&m);
    ev->kind = TP_HOST_RANGE;
    ev->track = tr;
    ev->name = tp_model_intern(&m, name, sizeof(name) - 1);
    ev->cat = tp_model_intern(&m, "with\0nul", 8);
    tp_model_arg_str(&m, ev, "k\"ey", "v\x02");
    tp_model_arg_json(&m, ev, "del", "\"a\x7f\"");
    char *t = write_to_string(&m, NULL, NULL);
    assert_true(tp_json_valid(t, strlen(t)));
    assert_contains(t,
                    "\"cat\":\"with\\u0000nul\",\"name\":\"q\\\"b\\\\s\\n\\t\\u0001\\u001f\\u007f "
                    "\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd end\"");
    /* Raw JSON with a raw DEL is not embedded (Perfetto rejects it) but kept as a string. */
    assert_contains(t, "\"args\":{\"k\\\"ey\":\"v\\u0002\",\"del\":\"\\\"a\\u007f\\\"\"}");
    /* No raw control byte anywhere in the output but the newlines between entries. */
    for (const char *p = t; *p; p++)
        assert_true((unsigned char)*p >= 0x20 || *p == '\n');
    assert_null(strchr(t, 0x7f));
    free(t);
    tp_model_free(&m);
}

static void test_empty_model(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    size_t len;
    char *t = write_to_string(&m, NULL, &len);
    assert_int_equal(strlen(t), len);
    assert_true(tp_json_valid(t, len));
    assert_contains(t, "\"traceEvents\":[\n]");
    assert_null(strstr(t, "deviceProperties"));
    assert_null(strstr(t, "distributedInfo"));
    assert_null(strstr(t, "traceName"));
    assert_null(strstr(t, "\"window\""));
    assert_null(strstr(t, "\"config\""));
    assert_contains(t, "\"partial\":false,\"dropped_events\":0,\"rank\":-1,\"world_size\":-1}");
    free(t);
    tp_model_free(&m);
}

/* A host process without a name: this program's name when it is this process. */
static void test_own_process_name(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    uint32_t tr = tp_model_track(&m, getpid(), 0, 1, 0);
    add_event(&m, TP_HOST_RANGE, tr, "c", "r", 0, 1);
    char *t = write_to_string(&m, NULL, NULL);
    char want[128];
    snprintf(want, sizeof(want), "\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"test_export_chrome\"}}",
             (int)getpid());
    assert_contains(t, want);
    free(t);
    tp_model_free(&m);
}

/* Each range named "dataloader" is followed by its copy for TensorBoard's plugin: a cpu_op named
 * enumerate(DataLoader)#dataloader.__next__ with the same pid, tid, ts and dur; no other range
 * gets one. */
static void test_dataloader_twin(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    uint32_t tr = tp_model_track(&m, 7, 9, 1, 0);
    add_event(&m, TP_HOST_RANGE, tr, "user_annotation", "dataloader", 1500, 2250);
    add_event(&m, TP_HOST_RANGE, tr, "user_annotation", "dataloader2", 5000, 10);
    add_event(&m, TP_HOST_RANGE, tr, "cpu_op", "aten::mm", 6000, 10);
    char *t = write_to_string(&m, NULL, NULL);
    assert_int_equal(count_of(t, "enumerate(DataLoader)"), 1);
    /* the range's line, then the twin's with the same ,"pid":..,"tid":..,"ts":..,"dur":.. */
    const char *range = strstr(t, "\"name\":\"dataloader\",\"pid\":");
    assert_non_null(range);
    const char *where = strchr(range + 1, ',');
    const char *end = strstr(where, "}");
    assert_non_null(end);
    char want[256];
    snprintf(want, sizeof(want),
             "},\n{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"enumerate(DataLoader)#dataloader."
             "__next__\"%.*s}",
             (int)(end - where), where);
    assert_memory_equal(end, want, strlen(want));
    assert_non_null(strstr(where, ",\"ts\":1.5,\"dur\":2.25}")); /* by hand: 1500 ns, 2250 ns */
    free(t);
    tp_model_free(&m);
}

static void test_devices_and_run_facts(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    tp_device *d = tp_model_device(&m, 1);
    d->name = tp_model_intern_cstr(&m, "NVIDIA H100");
    d->total_mem = 85018279936;
    d->compute_major = 9;
    d->num_sms = 132;
    tp_model_device(&m, 2);
    m.partial = 1;
    m.dropped_events = 12345;
    /* A configuration that is not JSON is kept as a string. */
    tp_chrome_opts o = {.config_json = "{\"a\": "};
    char *t = write_to_string(&m, &o, NULL);
    assert_true(tp_json_valid(t, strlen(t)));
    assert_contains(t, "\"deviceProperties\":[{\"id\":1,\"name\":\"NVIDIA H100\","
                       "\"totalGlobalMem\":85018279936,\"computeMajor\":9,\"computeMinor\":0,"
                       "\"numSms\":132},{\"id\":2,\"name\":\"\"}]");
    assert_contains(t, "\"partial\":true,\"dropped_events\":12345");
    assert_contains(t, "\"config\":\"{\\\"a\\\": \"}");
    free(t);
    tp_model_free(&m);
}

static void test_timestamps_exact(void **state) {
    (void)state;
    static const int64_t values[] = {
        0,         1,  7,     999,  1000,      1001,      1010,         1100,
        123456789, -1, -1500, -999, INT64_MAX, INT64_MIN, 999999999999, 1682725898236567123};
    tp_model m;
    tp_model_init(&m);
    uint32_t tr = tp_model_track(&m, 1, 0, 2, 0);
    size_t n = sizeof(values) / sizeof(values[0]);
    for (size_t i = 0; i < n; i++)
        add_event(&m, TP_HOST_RANGE, tr, "c", "r", values[i], values[n - 1 - i]);
    char *t = write_to_string(&m, NULL, NULL);
    char want[128], ts[48], dur[48];
    for (size_t i = 0; i < n; i++) {
        expected_us(values[i], ts, sizeof(ts));
        int64_t d = values[n - 1 - i];
        expected_us(d > 0 ? d : 0, dur, sizeof(dur));
        snprintf(want, sizeof(want), "\"tid\":2,\"ts\":%s,\"dur\":%s}", ts, dur);
        assert_contains(t, want);
    }
    free(t);
    tp_model_free(&m);
}

/* ---- streaming, gzip, failures ----------------------------------------------------------------
 */

static void build_big(tp_model *m, size_t n) {
    uint32_t host = tp_model_track(m, 5, 0, 5, 0);
    uint32_t stream = tp_model_track(m, 0, 0, 7, 0);
    char name[64];
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "op_%zu_with_a_name_long_enough_to_matter", i % 500);
        tp_event *ev = add_event(m, i % 2 ? TP_KERNEL : TP_HOST_RANGE, i % 2 ? stream : host,
                                 "cpu_op", name, (int64_t)i * 1000 + 1, 777);
        ev->corr = i / 2 + 1;
        tp_model_arg_int(m, ev, "index", (int64_t)i);
    }
}

static char *inflate_all(const unsigned char *in, size_t len, size_t *outlen) {
    z_stream z;
    memset(&z, 0, sizeof(z));
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    size_t cap = len * 20 + 1024, n = 0;
    char *out = malloc(cap);
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)len;
    int rc;
    do {
        if (n == cap) {
            char *grown = realloc(out, cap *= 2);
            assert_non_null(grown);
            out = grown;
        }
        z.next_out = (Bytef *)out + n;
        z.avail_out = (uInt)(cap - n);
        rc = inflate(&z, Z_NO_FLUSH);
        n = cap - z.avail_out;
    } while (rc == Z_OK);
    assert_int_equal(rc, Z_STREAM_END);
    assert_int_equal(z.avail_in, 0); /* nothing after the gzip member */
    inflateEnd(&z);
    *outlen = n;
    return out;
}

static void test_chunks_and_gzip(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    build_big(&m, 60000);
    capture plain, gz;
    memset(&plain, 0, sizeof(plain));
    memset(&gz, 0, sizeof(gz));
    assert_int_equal(tp_chrome_write(&m, NULL, capture_write, &plain), 0);
    tp_chrome_opts o = {.gzip = 1};
    assert_int_equal(tp_chrome_write(&m, &o, capture_write, &gz), 0);
    /* Several chunks of about 1 MB, never much more. */
    assert_true(plain.text.len > 5u << 20);
    assert_true(plain.calls >= 5);
    assert_true(plain.max_chunk <= (1u << 20) + 4096);
    assert_true(gz.text.len < plain.text.len / 4);
    size_t n;
    char *unz = inflate_all((const unsigned char *)gz.text.data, gz.text.len, &n);
    assert_int_equal(n, plain.text.len);
    assert_memory_equal(unz, plain.text.data, n);
    assert_true(tp_json_valid(plain.text.data, plain.text.len));
    tp_buf_putc(&plain.text, '\0');
    assert_int_equal(count_of(plain.text.data, "\"ph\":\"s\""), 30000);
    assert_int_equal(count_of(plain.text.data, "\"ph\":\"f\""), 30000);
    free(unz);
    tp_buf_free(&plain.text);
    tp_buf_free(&gz.text);
    tp_model_free(&m);
}

static int64_t monotonic_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* The deadline test_deadline_truncates_validly's writes look at. */
static int64_t *deadline_seen;

/* Sets a deadline already past once the first chunk is written. */
static int deadline_meanwhile(void *ctx, const void *data, size_t len) {
    *deadline_seen = monotonic_ns() - 1;
    return capture_write(ctx, data, len);
}

/* A slow disk: every chunk takes 40 ms. */
static int slow_write(void *ctx, const void *data, size_t len) {
    struct timespec pause = {0, 40 * 1000 * 1000};
    nanosleep(&pause, NULL);
    return capture_write(ctx, data, len);
}

/* A signal's flush: past the deadline no more events are written, and the JSON is closed
 * validly where the writing stood, marked truncated with the counts. */
static void test_deadline_truncates_validly(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    build_big(&m, 60000);
    size_t written = 1;
    /* A deadline already past: nothing but the metadata and the trailer. */
    int64_t deadline = monotonic_ns() - 1;
    deadline_seen = &deadline;
    tp_chrome_opts o = {.deadline_ns = &deadline, .events_written = &written};
    size_t len;
    char *t = write_to_string(&m, &o, &len);
    assert_true(tp_json_valid(t, len));
    assert_int_equal(written, 0);
    assert_int_equal(count_of(t, "\"ph\":\"X\""), 0);
    assert_contains(t, "\"truncated\":true,\"events_written\":0,\"events_recorded\":60000");
    free(t);
    /* A slow writer and a deadline 30 ms away: cut after the first chunks, at a clock look. */
    capture c;
    memset(&c, 0, sizeof(c));
    deadline = monotonic_ns() + 30 * 1000 * 1000;
    assert_int_equal(tp_chrome_write(&m, &o, slow_write, &c), 0);
    tp_buf_putc(&c.text, '\0');
    assert_true(tp_json_valid(c.text.data, c.text.len - 1));
    assert_true(written < 60000 && written % 4096 == 0);
    assert_int_equal(count_of(c.text.data, "\"ph\":\"X\""), written);
    char want[96];
    snprintf(want, sizeof(want), "\"truncated\":true,\"events_written\":%zu,", written);
    assert_contains(c.text.data, want);
    tp_buf_free(&c.text);
    /* A deadline far away: all of it, not marked. */
    deadline = monotonic_ns() + INT64_C(3600) * 1000000000;
    t = write_to_string(&m, &o, &len);
    assert_int_equal(written, 60000);
    assert_null(strstr(t, "truncated"));
    free(t);
    /* No deadline when the writing starts, one set meanwhile (a signal during tprof_shutdown):
     * the writer sees it at its next look at the clock. */
    deadline = 0;
    memset(&c, 0, sizeof(c));
    assert_int_equal(tp_chrome_write(&m, &o, deadline_meanwhile, &c), 0);
    assert_true(written > 0 && written < 60000);
    tp_buf_putc(&c.text, '\0');
    assert_true(tp_json_valid(c.text.data, c.text.len - 1));
    assert_contains(c.text.data, "\"truncated\":true");
    tp_buf_free(&c.text);
    tp_model_free(&m);
}

static void test_failing_callback(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    build_big(&m, 60000);
    for (int gzip = 0; gzip <= 1; gzip++) {
        capture c;
        memset(&c, 0, sizeof(c));
        c.fail_at = 2;
        tp_chrome_opts o = {.gzip = gzip};
        assert_int_equal(tp_chrome_write(&m, &o, capture_write, &c), -1);
        assert_int_equal(c.calls, 2); /* stopped at the first failure */
        tp_buf_free(&c.text);
    }
    tp_model_free(&m);
}

static size_t entries_in(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static void test_write_file(void **state) {
    (void)state;
    char dir[] = "/tmp/tprof_test_chrome_XXXXXX", path[256], err[512];
    assert_non_null(mkdtemp(dir));
    tp_model m;
    tp_model_init(&m);
    build_every_kind(&m);
    for (int gzip = 0; gzip <= 1; gzip++) {
        snprintf(path, sizeof(path), "%s/trace.json%s", dir, gzip ? ".gz" : "");
        tp_chrome_opts o = {.gzip = gzip};
        assert_int_equal(tp_chrome_write_file(&m, path, &o, err, sizeof(err)), 0);
        struct stat st;
        assert_int_equal(stat(path, &st), 0);
        assert_true(st.st_size > 100);
        FILE *f = fopen(path, "rb");
        unsigned char magic[2];
        assert_int_equal(fread(magic, 1, 2, f), 2);
        fclose(f);
        assert_int_equal(magic[0] == 0x1f && magic[1] == 0x8b, gzip);
    }
    assert_int_equal(entries_in(dir), 2); /* no temporary file left */
    /* A directory that does not exist: one line naming the path. */
    snprintf(path, sizeof(path), "%s/missing/trace.json", dir);
    assert_int_equal(tp_chrome_write_file(&m, path, NULL, err, sizeof(err)), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, strerror(ENOENT)));
    assert_null(strchr(err, '\n'));
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    tp_model_free(&m);
}

/* Runs fn in a child, which exits 0 when fn's checks hold; returns after asserting that. */
static void in_child(int (*fn)(const char *dir, const tp_model *m), const char *dir,
                     const tp_model *m) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) _exit(fn(dir, m));
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* 0 when the write failed with one line naming the path and the reason. */
static int expect_failure(const char *dir, const tp_model *m, const char *reason) {
    char path[256], err[512];
    snprintf(path, sizeof(path), "%s/trace.json", dir);
    for (int gzip = 0; gzip <= 1; gzip++) {
        tp_chrome_opts o = {.gzip = gzip};
        if (tp_chrome_write_file(m, path, &o, err, sizeof(err)) != -1) return 1;
        if (!strstr(err, path) || !strstr(err, reason) || strchr(err, '\n')) return 2;
    }
    return 0;
}

static int unwritable_dir(const char *dir, const tp_model *m) {
    /* Root writes anywhere: drop to an ordinary user for this child. */
    if (geteuid() == 0 && setuid(65534) != 0) return 10;
    return expect_failure(dir, m, strerror(EACCES));
}

static int file_size_limit(const char *dir, const tp_model *m) {
    /* A full disk, as the file-size limit produces it: writes fail midway. */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {64 << 10, 64 << 10};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 10;
    return expect_failure(dir, m, strerror(EFBIG));
}

static void test_failed_writes_leave_nothing(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    build_big(&m, 60000);
    char dir[] = "/tmp/tprof_test_chrome_XXXXXX", cmd[300];
    assert_non_null(mkdtemp(dir));
    assert_int_equal(chmod(dir, 0555), 0);
    in_child(unwritable_dir, dir, &m);
    assert_int_equal(entries_in(dir), 0);
    assert_int_equal(chmod(dir, 0755), 0);
    in_child(file_size_limit, dir, &m);
    assert_int_equal(entries_in(dir), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    tp_model_free(&m);
}

/* One rank of a stream: a thread of process pid launching one kernel (correlation 1, as in
 * every rank: flows stay within their model). */
static void build_rank(tp_model *m, int64_t pid, int64_t base_ns) {
    tp_model_init(m);
    m->base_ns = base_ns;
    uint32_t host = tp_model_track(m, pid, 0, 1, 0), stream = tp_model_track(m, pid, 0, 7, 0);
    m->tracks[host].process_name = tp_model_intern_cstr(m, pid ? "rank 1" : "rank 0");
    tp_event *ev = add_event(m, TP_HOST_RANGE, host, "cuda_runtime", "cudaLaunchKernel",
                             1000 * (pid + 1), 500);
    ev->corr = 1;
    ev = add_event(m, TP_KERNEL, stream, "kernel", pid ? "k1" : "k0", 2000 * (pid + 1), 300);
    ev->corr = 1;
}

static char *read_whole(const char *path) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    tp_buf b;
    tp_buf_init(&b);
    char chunk[4096];
    for (size_t n; (n = fread(chunk, 1, sizeof(chunk), f)) > 0;)
        tp_buf_put(&b, chunk, n);
    fclose(f);
    tp_buf_putc(&b, '\0');
    assert_false(b.failed);
    return b.data;
}

static void test_stream_of_models(void **state) {
    (void)state;
    char dir[] = "/tmp/tprof_test_chrome_XXXXXX", path[256], err[512], cmd[300];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/merged.json", dir);
    tp_model doc, r0, r1;
    tp_model_init(&doc);
    doc.base_ns = 5000000;
    tp_model_device(&doc, 0)->name = tp_model_intern_cstr(&doc, "GPU zero");
    build_rank(&r0, 0, doc.base_ns);
    build_rank(&r1, 1, doc.base_ns);
    tp_chrome_opts o = {.trace_name = "streamed"};
    tp_chrome_stream *s = tp_chrome_stream_open(&doc, path, &o, err, sizeof(err));
    assert_non_null(s);
    assert_int_equal(tp_chrome_stream_add(s, &r0), 0);
    assert_int_equal(entries_in(dir), 1); /* only the temporary file so far */
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(tp_chrome_stream_add(s, &r1), 0);
    size_t written = 0;
    assert_int_equal(tp_chrome_stream_commit(s, &written, err, sizeof(err)), 0);
    assert_int_equal(written, 4);
    char *t = read_whole(path);
    assert_true(tp_json_valid(t, strlen(t)));
    /* the header and trailer once, from doc; each model's metadata, events and flow */
    assert_int_equal(count_of(t, "\"deviceProperties\":[{\"id\":0,\"name\":\"GPU zero\"}]"), 1);
    assert_int_equal(count_of(t, "\"baseTimeNanoseconds\":5000000,"), 1);
    assert_int_equal(count_of(t, "\"traceName\":\"streamed\""), 1);
    assert_contains(t, "\"name\":\"process_name\",\"ph\":\"M\",\"ts\":1,\"pid\":0,\"tid\":0,"
                       "\"args\":{\"name\":\"rank 0\"}}");
    assert_contains(t, "\"name\":\"process_name\",\"ph\":\"M\",\"ts\":2,\"pid\":1,\"tid\":0,"
                       "\"args\":{\"name\":\"rank 1\"}}");
    assert_contains(t, "\"name\":\"k0\",\"pid\":0,\"tid\":7,\"ts\":2,");
    assert_contains(t, "\"name\":\"k1\",\"pid\":1,\"tid\":7,\"ts\":4,");
    assert_contains(t, "{\"ph\":\"f\",\"id\":1,\"pid\":0,\"tid\":7,\"ts\":2,");
    assert_contains(t, "{\"ph\":\"f\",\"id\":1,\"pid\":1,\"tid\":7,\"ts\":4,");
    assert_int_equal(count_of(t, "{\"ph\":\"s\",\"id\":1,"), 2);
    assert_int_equal(count_of(t, "\"truncated\""), 0);
    free(t);
    /* aborted midway: nothing left, not even the temporary file */
    assert_int_equal(unlink(path), 0);
    s = tp_chrome_stream_open(&doc, path, &o, err, sizeof(err));
    assert_non_null(s);
    assert_int_equal(tp_chrome_stream_add(s, &r0), 0);
    tp_chrome_stream_abort(s);
    assert_int_equal(entries_in(dir), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    tp_model_free(&doc);
    tp_model_free(&r0);
    tp_model_free(&r1);
}

/* A streamed window's GPU work goes out with its launches' segments (events only): the last
 * model, which brings every track's metadata, may hold no work of a GPU stream, and the stream is
 * still named as one (src/gpu/cupti.c gives the last model its tracks). */
static void test_stream_names_gpu_streams_of_earlier_segments(void **state) {
    (void)state;
    char dir[] = "/tmp/tprof_test_chrome_XXXXXX", path[256], err[512], cmd[300];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/window.json", dir);
    tp_model doc, seg, last;
    tp_model_init(&doc);
    tp_model_init(&seg);
    tp_model_init(&last);
    uint32_t host = tp_model_track(&seg, 4242, 0, 1, 0), stream = tp_model_track(&seg, 0, 0, 7, 0);
    add_event(&seg, TP_HOST_RANGE, host, "cuda_runtime", "cudaLaunchKernel", 1000, 500)->corr = 3;
    add_event(&seg, TP_KERNEL, stream, "kernel", "k", 2000, 300)->corr = 3;
    add_event(&last, TP_HOST_RANGE, tp_model_track(&last, 4242, 0, 1, 0), "c", "step", 3000, 10);
    tp_model_track(&last, 0, 0, 7, 0); /* no event of its own */
    tp_model_track(&last, 0, 0, 9, 0); /* never carried work: a host thread's name */
    tp_chrome_stream *s = tp_chrome_stream_open(&doc, path, NULL, err, sizeof(err));
    assert_non_null(s);
    assert_int_equal(tp_chrome_stream_add_events(s, &seg), 0);
    assert_int_equal(tp_chrome_stream_end(s, &last, path, NULL, err, sizeof(err)), 0);
    char *t = read_whole(path);
    assert_true(tp_json_valid(t, strlen(t)));
    assert_contains(t, "\"pid\":0,\"tid\":0,\"args\":{\"name\":\"GPU 0\"}}");
    assert_contains(t, "\"pid\":0,\"tid\":7,\"args\":{\"name\":\"stream 7\"}}");
    assert_int_equal(count_of(t, "\"args\":{\"name\":\"stream 9\"}}"), 0);
    free(t);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    assert_int_equal(system(cmd), 0);
    tp_model_free(&doc);
    tp_model_free(&seg);
    tp_model_free(&last);
}

static void test_bad_model_references(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    tp_model_track(&m, 1, 0, 1, 0);
    tp_event *ev = add_event(&m, TP_HOST_RANGE, 12345, "c", "bad track", 1000, 1000);
    ev->name = 999999; /* out of the string table: written as "" */
    ev = add_event(&m, 200, 0, "c", "unknown kind", 2000, 0);
    ev->nargs = 3; /* args past the end of the model's args: left out */
    char *t = write_to_string(&m, NULL, NULL);
    assert_true(tp_json_valid(t, strlen(t)));
    assert_contains(
        t, "{\"ph\":\"X\",\"cat\":\"c\",\"name\":\"\",\"pid\":0,\"tid\":0,\"ts\":1,\"dur\":1}");
    assert_contains(t,
                    "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"c\",\"name\":\"unknown kind\",\"pid\":1,"
                    "\"tid\":1,\"ts\":2}");
    free(t);
    assert_int_equal(tp_chrome_write(NULL, NULL, capture_write, NULL), -1);
    tp_model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_hostile_names),
        cmocka_unit_test(test_empty_model),
        cmocka_unit_test(test_own_process_name),
        cmocka_unit_test(test_dataloader_twin),
        cmocka_unit_test(test_devices_and_run_facts),
        cmocka_unit_test(test_timestamps_exact),
        cmocka_unit_test(test_chunks_and_gzip),
        cmocka_unit_test(test_deadline_truncates_validly),
        cmocka_unit_test(test_failing_callback),
        cmocka_unit_test(test_write_file),
        cmocka_unit_test(test_failed_writes_leave_nothing),
        cmocka_unit_test(test_bad_model_references),
        cmocka_unit_test(test_stream_of_models),
        cmocka_unit_test(test_stream_names_gpu_streams_of_earlier_segments),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
