/* test_trace_reader.c - the trace reader on small inline traces: one test per rule of
 * docs/SEMANTICS.md §2 and of reader.c (formats, defects tolerated, errors), and inputs that must
 * never crash. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/model.h"
#include "trace/perfetto_read.h"
#include "trace/reader.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define ZLIB_CONST
#include <zlib.h>

static char err[512];

static int read_json(tp_model *m, const char *json) {
    tp_model_init(m);
    err[0] = '\0';
    return tp_trace_read_mem(json, strlen(json), "t.json", m, err, sizeof(err));
}

/* The only event of a one-event trace (fails when there is not exactly one). */
static const tp_event *only(const tp_model *m) {
    assert_int_equal(m->nevents, 1);
    return &m->events[0];
}

static const char *name_of(const tp_model *m, const tp_event *ev) {
    return tp_model_str(m, ev->name);
}

static int64_t ts_of(const char *ts_text) {
    char json[256];
    snprintf(json, sizeof(json), "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":%s,\"dur\":0}]", ts_text);
    tp_model m;
    assert_int_equal(read_json(&m, json), 0);
    int64_t ts = m.nevents == 1 ? m.events[0].ts : INT64_MIN;
    tp_model_free(&m);
    return ts;
}

static void test_number_formats(void **state) {
    (void)state;
    assert_true(ts_of("12") == 12000);
    assert_true(ts_of("12.5") == 12500);
    assert_true(ts_of("1419247333400.919") == 1419247333400919LL);
    assert_true(ts_of("1682725898236567") == 1682725898236567000LL);
    assert_true(ts_of("-3.25") == -3250);
    assert_true(ts_of("1.5e3") == 1500000);
    assert_true(ts_of("25E-1") == 2500);
    assert_true(ts_of("1e-3") == 1);
    assert_true(ts_of("0.000001e9") == 1000000);
    /* Round half away from zero past the nanosecond digit. */
    assert_true(ts_of("0.0005") == 1);
    assert_true(ts_of("0.00049999") == 0);
    assert_true(ts_of("-0.0005") == -1);
    assert_true(ts_of("2.0015") == 2002);
    assert_true(ts_of("0.00000000000000000000000000001") == 0);
    /* More than 19 significant digits: still exact. */
    assert_true(ts_of("1234567890.12345678901234") == 1234567890123LL);
    assert_true(ts_of("1234567890123456.7895") == 1234567890123456790LL);
    assert_true(ts_of("1234567890123456.78949999") == 1234567890123456789LL);
    assert_true(ts_of("4611686018427387.9035") == 4611686018427387904LL); /* 2^62 rounded up */
}

static void test_out_of_range_times_are_left_out(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    tp_model m;
    assert_int_equal(
        read_json(&m, "[{\"ph\":\"X\",\"name\":\"big\",\"ts\":99999999999999999999999,\"dur\":1},"
                      "{\"ph\":\"X\",\"name\":\"neg\",\"ts\":1,\"dur\":-2},"
                      "{\"ph\":\"X\",\"name\":\"na\",\"ts\":N/A,\"dur\":1},"
                      "{\"ph\":\"X\",\"name\":\"huge\",\"ts\":1e300,\"dur\":1},"
                      "{\"ph\":\"X\",\"name\":\"nodur\",\"ts\":7},"
                      "{\"ph\":\"X\",\"name\":\"nadur\",\"ts\":8,\"dur\":N/A}]"),
        0);
    /* a missing dur reads as 0; one that is no number (N/A) leaves the event out */
    assert_int_equal(m.nevents, 1);
    assert_string_equal(name_of(&m, &m.events[0]), "nodur");
    assert_true(m.events[0].dur == 0);
    assert_int_equal(m.input_events, 6);
    assert_non_null(strstr(tp_log_last(), "t.json: 5 events left out"));
    assert_non_null(strstr(tp_log_last(), "the first at byte 1)"));
    tp_model_free(&m);
    tp_log_set_quiet(0);
}

static void test_args_numbers(void **state) {
    (void)state;
    tp_model m;
    assert_int_equal(read_json(&m,
                               "[{\"ph\":\"C\",\"name\":\"c\",\"ts\":1,\"args\":{\"i\":-42,"
                               "\"big\":123456789012345678901234567890,\"f\":0.1,\"e\":-2.5e-3,"
                               "\"s\":\"7\",\"na\":N/A,\"t\":true,\"n\":null,\"o\":{\"x\":1}}}]"),
                     0);
    const tp_event *ev = only(&m);
    assert_int_equal(ev->kind, TP_COUNTER);
    assert_int_equal(ev->nargs, 4);
    double v;
    const tp_arg *a = tp_event_arg(&m, ev, tp_model_intern_cstr(&m, "i"));
    assert_non_null(a);
    assert_int_equal(a->type, TP_ARG_INT);
    assert_true(a->v.i == -42);
    a = tp_event_arg(&m, ev, tp_model_intern_cstr(&m, "big"));
    assert_int_equal(a->type, TP_ARG_DOUBLE);
    assert_true(a->v.d == 123456789012345678901234567890.0);
    assert_int_equal(tp_event_arg_number(&m, ev, "f", &v), 0);
    assert_true(v == 0.1);
    assert_int_equal(tp_event_arg_number(&m, ev, "e", &v), 0);
    assert_true(v == -2.5e-3);
    assert_int_equal(tp_event_arg_number(&m, ev, "s", &v), -1);
    tp_model_free(&m);
}

static void test_string_escapes(void **state) {
    (void)state;
    tp_model m;
    assert_int_equal(
        read_json(&m, "[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"name\":"
                      "\"q\\\" b\\\\ \\/ \\u00e9 \\ud83d\\ude00 \\ud800x \\u0000 \\n\\t\\x\"}]"),
        0);
    assert_string_equal(name_of(&m, only(&m)),
                        "q\" b\\ / \xc3\xa9 \xf0\x9f\x98\x80 \xef\xbf\xbdx \xef\xbf\xbd \n\t\\x");
    tp_model_free(&m);
    /* Raw control bytes and invalid UTF-8 are kept as they are; escaped keys still match. */
    const char raw[] = "[{\"\\u0070h\":\"X\",\"ts\":1,\"dur\":1,\"name\":\"a\tb\x01\xff\xc3\"}]";
    assert_int_equal(read_json(&m, raw), 0);
    assert_string_equal(name_of(&m, only(&m)), "a\tb\x01\xff\xc3");
    tp_model_free(&m);
}

static void test_pids_and_tids(void **state) {
    (void)state;
    tp_model m;
    assert_int_equal(
        read_json(&m,
                  "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1,\"pid\":7,\"tid\":\"25738\"},"
                  "{\"ph\":\"X\",\"name\":\"b\",\"ts\":1,\"dur\":1,\"pid\":\"7\",\"tid\":25738},"
                  "{\"ph\":\"X\",\"name\":\"c\",\"ts\":1,\"dur\":1,\"pid\":\"CPU "
                  "functions\",\"tid\":\"stream 7\"},"
                  "{\"ph\":\"X\",\"name\":\"d\",\"ts\":1,\"dur\":1,\"pid\":-1,\"tid\":\"-3\"}]"),
        0);
    assert_int_equal(m.nevents, 4);
    assert_int_equal(m.events[0].track, m.events[1].track);
    const tp_track *t = &m.tracks[m.events[0].track];
    assert_true(t->pid == 7 && t->tid == 25738 && !t->pid_str && !t->tid_str);
    t = &m.tracks[m.events[2].track];
    assert_string_equal(tp_model_str(&m, t->pid_str), "CPU functions");
    assert_string_equal(tp_model_str(&m, t->tid_str), "stream 7");
    t = &m.tracks[m.events[3].track];
    assert_true(t->pid == -1 && t->tid == -3);
    tp_model_free(&m);
}

static void test_kinds_by_category(void **state) {
    (void)state;
    static const struct {
        const char *cat;
        int kind; /* 0: not kept */
    } cases[] = {
        {"kernel", TP_KERNEL},
        {"Kernel", TP_KERNEL},
        {"gpu_memcpy", TP_MEMCPY},
        {"Memcpy", TP_MEMCPY},
        {"GPU_MEMSET", TP_MEMSET},
        {"memset", TP_MEMSET},
        {"gpu_user_annotation", TP_GPU_ANNOTATION},
        {"Trace", 0},
        {"cpu_op", TP_HOST_RANGE},
        {"my own category", TP_HOST_RANGE},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char json[256];
        snprintf(json, sizeof(json),
                 "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"n\",\"ts\":1,\"dur\":2,"
                 "\"args\":{\"correlation\":77,\"flops\":4096}}]}",
                 cases[i].cat);
        tp_model m;
        assert_int_equal(read_json(&m, json), 0);
        if (!cases[i].kind) {
            assert_int_equal(m.nevents, 0);
        } else {
            const tp_event *ev = only(&m);
            assert_int_equal(ev->kind, cases[i].kind);
            assert_string_equal(tp_model_str(&m, ev->cat), cases[i].cat);
            assert_true(ev->corr == 77);
            double flops;
            assert_int_equal(tp_event_arg_number(&m, ev, "flops", &flops), 0);
            assert_true(flops == 4096);
        }
        tp_model_free(&m);
    }
}

static void test_steps_flows_and_unknown_phases(void **state) {
    (void)state;
    tp_model m;
    assert_int_equal(
        read_json(
            &m, "[{\"ph\":\"X\",\"name\":\"ProfilerStep#12\",\"ts\":1,\"dur\":9},"
                "{\"ph\":\"X\",\"name\":\"ProfilerStep#x\",\"ts\":1,\"dur\":9},"
                "{\"ph\":\"f\",\"id\":3,\"ts\":2,\"bp\":\"e\",\"name\":\"ac2g\"},"
                "{\"ph\":\"s\",\"id\":4,\"ts\":2},{\"ph\":\"Q\",\"ts\":3},"
                "{\"ph\":\"i\",\"name\":\"Iteration Start\",\"ts\":3,\"s\":\"g\"},"
                "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"ProfilerStep#3\",\"ts\":1,\"dur\":1},"
                "{\"unknown\":[1,{\"a\":[]}],\"ph\":\"X\",\"name\":\"late\",\"ts\":1,\"dur\":1}, "
                "5, \"x\"]"),
        0);
    assert_int_equal(m.input_events, 10);
    assert_int_equal(m.nevents, 4);
    assert_int_equal(m.events[0].flags, TP_EVF_STEP);
    assert_int_equal(m.events[1].flags, 0);
    assert_int_equal(m.events[2].flags, 0); /* a kernel is no step */
    assert_string_equal(name_of(&m, &m.events[3]), "late");
    tp_model_free(&m);
}

static void test_begin_end_pairs(void **state) {
    (void)state;
    tp_model m;
    assert_int_equal(
        read_json(&m,
                  "[{\"ph\":\"E\",\"ts\":0,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"B\",\"name\":\"outer\",\"ts\":1,\"pid\":1,\"tid\":1,\"args\":{"
                  "\"correlation\":5}},"
                  "{\"ph\":\"B\",\"name\":\"other\",\"ts\":2,\"pid\":1,\"tid\":2},"
                  "{\"ph\":\"B\",\"name\":\"inner\",\"ts\":3,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"E\",\"ts\":4.5,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"E\",\"ts\":10,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"B\",\"name\":\"open\",\"ts\":11,\"pid\":1,\"tid\":1},"
                  "{\"ph\":\"B\",\"cat\":\"Trace\",\"name\":\"t\",\"ts\":11,\"pid\":1,\"tid\":3},"
                  "{\"ph\":\"E\",\"ts\":12,\"pid\":1,\"tid\":3}]"),
        0);
    assert_int_equal(m.nevents, 2);
    assert_string_equal(name_of(&m, &m.events[0]), "inner");
    assert_true(m.events[0].ts == 3000 && m.events[0].dur == 1500);
    assert_string_equal(name_of(&m, &m.events[1]), "outer");
    assert_true(m.events[1].ts == 1000 && m.events[1].dur == 9000 && m.events[1].corr == 5);
    assert_int_equal(m.events[1].kind, TP_HOST_RANGE);
    tp_model_free(&m);
}

static void test_memory_events(void **state) {
    (void)state;
    tp_model m;
    assert_int_equal(
        read_json(
            &m,
            "[{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\","
            "\"pid\":1,\"tid\":1,\"ts\":5,\"args\":{\"Total Reserved\":9,\"Total Allocated\":4096,"
            "\"Bytes\":-512,\"Addr\":140000000000000,\"Device Id\":0,\"Device Type\":1}},"
            "{\"args\":{\"Bytes\":4,\"Device Id\":-1},\"ph\":\"I\",\"name\":\"[memory]\",\"ts\":6},"
            "{\"ph\":\"i\",\"name\":\"other\",\"ts\":6,\"args\":{\"Bytes\":4}}]"),
        0);
    assert_int_equal(m.nevents, 2);
    const tp_event *ev = &m.events[0];
    assert_int_equal(ev->kind, TP_MEMORY);
    assert_int_equal(ev->nargs, 5);
    double v;
    assert_int_equal(tp_event_arg_number(&m, ev, "Bytes", &v), 0);
    assert_true(v == -512);
    assert_int_equal(tp_event_arg_number(&m, ev, "Total Allocated", &v), 0);
    assert_true(v == 4096);
    assert_int_equal(tp_event_arg_number(&m, ev, "Addr", &v), 0);
    assert_true(v == 140000000000000.0);
    assert_int_equal(tp_event_arg_number(&m, ev, "Total Reserved", &v), -1);
    /* args before ph are read all the same */
    ev = &m.events[1];
    assert_int_equal(ev->kind, TP_MEMORY);
    assert_int_equal(ev->nargs, 2);
    assert_int_equal(tp_event_arg_number(&m, ev, "Device Id", &v), 0);
    assert_true(v == -1);
    tp_model_free(&m);
}

static void test_metadata_names(void **state) {
    (void)state;
    tp_model m;
    /* Metadata without a name, or with one of another type (found by fuzzing): ignored. */
    assert_int_equal(read_json(&m, "[{\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":\"x\"}},"
                                   "{\"ph\":\"M\",\"name\":5,\"args\":{\"name\":\"x\"}}]"),
                     0);
    assert_int_equal(m.nevents, 0);
    tp_model_free(&m);
    assert_int_equal(
        read_json(
            &m,
            "[{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":1,\"tid\":0,\"args\":{\"name\":"
            "\"python\"}},"
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":\"2\",\"args\":{\"name\":"
            "\"main\"}},"
            "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":9,\"tid\":9,\"args\":{\"name\":"
            "\"unused\"}},"
            "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":1,\"args\":{\"sort_index\":3}},"
            "{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":2},"
            "{\"ph\":\"X\",\"name\":\"b\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":3}]"),
        0);
    assert_int_equal(m.ntracks, 2); /* metadata creates no track */
    const tp_track *t = &m.tracks[m.events[0].track];
    assert_string_equal(tp_model_str(&m, t->process_name), "python");
    assert_string_equal(tp_model_str(&m, t->thread_name), "main");
    t = &m.tracks[m.events[1].track];
    assert_string_equal(tp_model_str(&m, t->process_name), "python");
    assert_int_equal(t->thread_name, TP_STR_EMPTY);
    tp_model_free(&m);
}

static void test_top_level_keys_after_events(void **state) {
    (void)state;
    tp_model m;
    assert_int_equal(
        read_json(
            &m,
            "\xef\xbb\xbf{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1}],"
            "\"metadata\":{\"deep\":[[[{\"x\":\"]\"}]]]},\"INFO\":[\"a\",\"b\"],"
            "\"deviceProperties\":[{\"id\":0,\"name\":\"H100\",\"totalGlobalMem\":85018279936,"
            "\"computeMajor\":9,\"computeMinor\":0,\"numSms\":132,\"warpSize\":32},"
            "{\"name\":\"no id\",\"numSms\":2}],"
            "\"computeProperties\":[{\"id\":5,\"major\":7,\"minor\":5,\"multiProcessorCount\":80}],"
            "\"distributedInfo\":{\"backend\":\"nccl\",\"rank\":3,\"world_size\":8,\"pg_config\":[{"
            "\"ranks\":[0,1]}]},"
            "\"baseTimeNanoseconds\":1711964646000000000,"
            "\"tprof\":{\"version\":\"0.1.0\",\"dropped_events\":17,\"partial\":true,\"config\":{"
            "\"a\":{}}}}\n\n"),
        0);
    assert_int_equal(m.nevents, 1);
    assert_true(m.base_ns == 1711964646000000000LL);
    assert_true(m.rank == 3 && m.world_size == 8);
    assert_true(m.dropped_events == 17 && m.partial == 1);
    assert_int_equal(m.ndevices, 3);
    assert_true(m.devices[0].id == 0 && m.devices[0].total_mem == 85018279936ULL);
    assert_string_equal(tp_model_str(&m, m.devices[0].name), "H100");
    assert_true(m.devices[0].compute_major == 9 && m.devices[0].num_sms == 132);
    assert_true(m.devices[1].id == 1 && m.devices[1].num_sms == 2); /* no id: its index */
    assert_true(m.devices[2].id == 5 && m.devices[2].compute_minor == 5 &&
                m.devices[2].num_sms == 80);
    tp_model_free(&m);
    /* tprof's own rank when distributedInfo is absent */
    assert_int_equal(
        read_json(&m,
                  "{\"tprof\":{\"rank\":2,\"world_size\":4,\"partial\":false},\"traceEvents\":[]}"),
        0);
    assert_true(m.rank == 2 && m.world_size == 4 && m.partial == 0);
    tp_model_free(&m);
}

static void test_array_forms(void **state) {
    (void)state;
    static const char *const ok[] = {
        "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1}]",
        "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1}",
        "[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1},\n",
        "  [ {\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1,} , ]  ",
        "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"a\",\"ts\":1,\"dur\":1},],}",
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        tp_model m;
        assert_int_equal(read_json(&m, ok[i]), 0);
        assert_int_equal(m.nevents, 1);
        assert_int_equal(m.input_events, 1);
        assert_true(m.input_bytes == strlen(ok[i]));
        tp_model_free(&m);
    }
}

static void expect_error(const char *json, size_t len, const char *want) {
    tp_model m;
    tp_model_init(&m);
    assert_int_equal(tp_trace_read_mem(json, len, "bad.json", &m, err, sizeof(err)), -1);
    if (strcmp(err, want) != 0) fail_msg("got \"%s\", want \"%s\"", err, want);
    tp_model_free(&m);
}

static void test_error_messages(void **state) {
    (void)state;
    expect_error("", 0, "bad.json: byte 0: empty input: no JSON trace");
    expect_error("  \n", 3, "bad.json: byte 3: empty input: no JSON trace");
    expect_error("hello", 5, "bad.json: byte 0: not a JSON trace: expected '{' or '['");
    expect_error("[{\"ph\":\"X\"} {}]", 15, "bad.json: byte 12: expected ',' or ']' in an array");
    expect_error("[{\"ph\" \"X\"}]", 12, "bad.json: byte 7: expected ':' after a key");
    expect_error("[{ph:1}]", 8, "bad.json: byte 2: expected a string key in an object");
    expect_error("[{\"a\":[1}]", 10, "bad.json: byte 8: mismatched bracket");
    expect_error("[{\"a\":}]", 8, "bad.json: byte 6: expected a value");
    expect_error("[{\"ph\":\"X\",\"ts\":1}] x", 21,
                 "bad.json: byte 20: unexpected data after the trace");
    expect_error("[{\"ph\":\"X\"},{\"ph\":\"X\",\"na", 25,
                 "bad.json: byte 25: unexpected end of input inside the event at byte 12");
    expect_error("{\"traceEvents\":[{\"ph\":\"X\"}", 26,
                 "bad.json: byte 26: unexpected end of input (the trace is cut short)");
    expect_error("{\"a\":\"unterminated", 18,
                 "bad.json: byte 18: unexpected end of input (the trace is cut short)");
    /* A NUL byte is data, not the end of the input. */
    expect_error("[{\"ph\":\"X\"}\0]", 12, "bad.json: byte 11: expected ',' or ']' in an array");
    tp_model m;
    tp_model_init(&m);
    assert_int_equal(tp_trace_read_file("/nonexistent/t.json", &m, NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "/nonexistent/t.json: cannot open: No such file or directory");
    assert_int_equal(tp_trace_read_file("/", &m, NULL, err, sizeof(err)), -1);
    assert_string_equal(err, "/: cannot open: Is a directory");
    tp_model_free(&m);
}

static const char sample[] =
    "{\"schemaVersion\":1,\"deviceProperties\":[{\"id\":0,\"name\":\"GPU\",\"totalGlobalMem\":1024}"
    "],"
    "\"traceEvents\":[\n"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":2,\"ts\":1.5,\"dur\":"
    "2,"
    "\"args\":{\"External id\":3,\"Input Dims\":[[2,3],[3,4]],\"correlation\":9}},\n"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\\u00e9\",\"pid\":0,\"tid\":\"stream "
    "7\",\"ts\":2,\"dur\":1e0},\n"
    "{\"ph\":\"B\",\"name\":\"b\",\"pid\":1,\"tid\":2,\"ts\":3},{\"ph\":\"E\",\"pid\":1,\"tid\":2,"
    "\"ts\":4},\n"
    "{\"ph\":\"i\",\"name\":\"[memory]\",\"ts\":5,\"args\":{\"Bytes\":8}},\n"
    "{\"ph\":\"C\",\"name\":\"mem\",\"ts\":6,\"args\":{\"v\":1.5}},\n"
    "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":2,\"args\":{\"name\":\"main\"}}],\n"
    "\"distributedInfo\":{\"rank\":0,\"world_size\":2},\"baseTimeNanoseconds\":1000}";

/* Every prefix of a trace either reads (as the whole would, or fewer events) or fails with one
 * line naming the input and an offset inside it. */
static void test_cut_at_every_length(void **state) {
    (void)state;
    size_t n = strlen(sample);
    tp_model whole;
    assert_int_equal(read_json(&whole, sample), 0);
    assert_int_equal(whole.nevents, 5);
    for (size_t len = 0; len < n; len++) {
        tp_model m;
        tp_model_init(&m);
        int rc = tp_trace_read_mem(sample, len, "cut.json", &m, err, sizeof(err));
        if (rc == 0) {
            assert_true(m.nevents <= whole.nevents);
        } else {
            unsigned long long at;
            assert_int_equal(sscanf(err, "cut.json: byte %llu:", &at), 1);
            assert_true(at <= len);
            assert_null(strchr(err, '\n'));
        }
        tp_model_free(&m);
    }
    tp_model_free(&whole);
}

static unsigned char *gzip_bytes(const void *data, size_t len, size_t *outlen) {
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, len) + 64;
    unsigned char *out = malloc(cap);
    zs.next_in = data;
    zs.avail_in = (uInt)len;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    *outlen = cap - zs.avail_out;
    deflateEnd(&zs);
    return out;
}

/* How many bytes zlib itself inflates from gz[0..len) (a stream that may be cut short). */
static size_t inflated_len(const unsigned char *gz, size_t len) {
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(inflateInit2(&zs, 31), Z_OK);
    unsigned char out[4096];
    size_t total = 0;
    zs.next_in = (unsigned char *)gz;
    zs.avail_in = (uInt)len;
    int rc;
    do {
        zs.next_out = out;
        zs.avail_out = sizeof(out);
        rc = inflate(&zs, Z_NO_FLUSH);
        total += sizeof(out) - zs.avail_out;
    } while (rc == Z_OK && zs.avail_out == 0);
    inflateEnd(&zs);
    return total;
}

static void test_gzip_input(void **state) {
    (void)state;
    size_t n = strlen(sample), gzlen;
    unsigned char *gz = gzip_bytes(sample, n, &gzlen);
    tp_model m;
    tp_model_init(&m);
    assert_int_equal(tp_trace_read_mem(gz, gzlen, "t.json.gz", &m, err, sizeof(err)), 0);
    assert_int_equal(m.nevents, 5);
    assert_true(m.input_bytes == n);
    tp_model_free(&m);
    /* Two members read as one stream (as zcat does). */
    size_t half = 100, l1, l2;
    unsigned char *g1 = gzip_bytes(sample, half, &l1),
                  *g2 = gzip_bytes(sample + half, n - half, &l2);
    unsigned char *both = malloc(l1 + l2);
    memcpy(both, g1, l1);
    memcpy(both + l1, g2, l2);
    tp_model_init(&m);
    assert_int_equal(tp_trace_read_mem(both, l1 + l2, "t.json.gz", &m, err, sizeof(err)), 0);
    assert_int_equal(m.nevents, 5);
    tp_model_free(&m);
    /* Truncated and corrupt streams: an error, never a crash. A stream cut past its header
     * fails at the offset of the last byte zlib could inflate. */
    for (size_t len = 2; len < gzlen; len += 7) {
        tp_model_init(&m);
        assert_int_equal(tp_trace_read_mem(gz, len, "t.json.gz", &m, err, sizeof(err)), -1);
        assert_non_null(strstr(err, "t.json.gz: byte "));
        if (len > 20) {
            char want[96];
            snprintf(want, sizeof(want), "t.json.gz: byte %zu: truncated gzip data",
                     inflated_len(gz, len));
            assert_string_equal(err, want);
        }
        tp_model_free(&m);
    }
    gz[gzlen / 2] ^= 0x55;
    tp_model_init(&m);
    assert_int_equal(tp_trace_read_mem(gz, gzlen, "t.json.gz", &m, err, sizeof(err)), -1);
    assert_true(strstr(err, "corrupt gzip data") || strstr(err, "unexpected") ||
                strstr(err, "expected"));
    tp_model_free(&m);
    free(gz);
    free(g1);
    free(g2);
    free(both);
}

/* A file bigger than the reader's buffer, with one event bigger than it, through a pipe too. */
static void test_file_big_event_and_stdin(void **state) {
    (void)state;
    char path[] = "/tmp/tprof_test_reader_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    fputs("[", f);
    for (int i = 0; i < 30000; i++)
        fprintf(f, "{\"ph\":\"X\",\"name\":\"op%d\",\"pid\":1,\"tid\":1,\"ts\":%d.5,\"dur\":1},\n",
                i % 10, i);
    fputs("{\"ph\":\"X\",\"name\":\"", f);
    for (int i = 0; i < 3 << 20; i++)
        fputc('a' + i % 26, f);
    fputs("\",\"ts\":1,\"dur\":1}]", f);
    fclose(f);
    tp_model m;
    tp_model_init(&m);
    assert_int_equal(tp_trace_read_file(path, &m, NULL, err, sizeof(err)), 0);
    assert_int_equal(m.nevents, 30001);
    assert_true(m.events[29999].ts == 29999500);
    assert_int_equal(strlen(name_of(&m, &m.events[30000])), 3 << 20);
    tp_model_free(&m);
    char cmd[512];
    const char *build = getenv("TPROF_BUILD_DIR");
    assert_non_null(build);
    snprintf(cmd, sizeof(cmd), "%s/tests/tp_model_dump - < %s > /dev/null", build, path);
    assert_int_equal(system(cmd), 0);
    unlink(path);
}

static void test_hostile_inputs(void **state) {
    (void)state;
    tp_model m;
    /* 100 000 nested arrays in args: skipped without recursion. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 128);
    size_t n =
        (size_t)sprintf(deep, "[{\"ph\":\"X\",\"name\":\"d\",\"ts\":1,\"dur\":1,\"args\":{\"x\":");
    memset(deep + n, '[', depth);
    memset(deep + n + depth, ']', depth);
    strcpy(deep + n + 2 * depth, "}}]");
    assert_int_equal(read_json(&m, deep), 0);
    assert_int_equal(m.nevents, 1);
    tp_model_free(&m);
    /* Unbalanced: an error at the end, not a crash. */
    deep[n + 2 * depth - 1] = '}';
    assert_int_equal(read_json(&m, deep), -1);
    tp_model_free(&m);
    free(deep);
    /* Absurd numbers */
    assert_int_equal(read_json(&m, "[{\"ph\":\"C\",\"name\":\"c\",\"ts\":1e-99999999999,\"args\":{"
                                   "\"a\":1e99999999999,\"b\":-1e-99999999999,\"c\":0e999999,"
                                   "\"d\":00012,\"e\":-0,\"f\":1.,\"g\":-,\"h\":.5}}]"),
                     0);
    assert_int_equal(m.nevents, 1);
    double v;
    assert_int_equal(tp_event_arg_number(&m, &m.events[0], "b", &v), 0);
    assert_true(v == 0);
    assert_int_equal(tp_event_arg_number(&m, &m.events[0], "d", &v), 0);
    assert_true(v == 12);
    assert_int_equal(tp_event_arg_number(&m, &m.events[0], "g", &v), -1);
    tp_model_free(&m);
    /* Random bytes, and random bytes after a valid start. */
    srand(7);
    char junk[4096];
    for (int round = 0; round < 300; round++) {
        size_t len = (size_t)(rand() % (int)sizeof(junk));
        size_t start = round % 2 ? 0 : 16;
        memcpy(junk, "[{\"ph\":\"X\",\"ts\":", 17); /* with its NUL, overwritten */
        for (size_t i = start; i < len; i++)
            junk[i] = (char)(rand() % 256);
        tp_model_init(&m);
        int rc = tp_trace_read_mem(junk, len, "junk", &m, err, sizeof(err));
        /* bytes that begin as a Perfetto trace go to its reader, whose errors name a packet */
        int pf = tp_perfetto_sniff((const unsigned char *)junk, len < 16 ? len : 16);
        assert_true(rc == 0 || strncmp(err, pf ? "junk: " : "junk: byte ", pf ? 6 : 11) == 0);
        tp_model_free(&m);
    }
}

static void test_files_append_and_align(void **state) {
    (void)state;
    const char *a = "{\"baseTimeNanoseconds\":1000000,\"traceEvents\":[{\"ph\":\"X\",\"name\":"
                    "\"a\",\"ts\":1,\"dur\":1}]}";
    const char *b = "{\"traceEvents\":[{\"ph\":\"X\",\"name\":\"b\",\"ts\":1,\"dur\":1}],"
                    "\"baseTimeNanoseconds\":3000000}";
    tp_model m;
    assert_int_equal(read_json(&m, a), 0);
    assert_int_equal(tp_trace_read_mem(b, strlen(b), "b", &m, err, sizeof(err)), 0);
    assert_int_equal(m.nevents, 2);
    assert_true(m.base_ns == 1000000);
    assert_true(m.events[0].ts == 1000 && m.events[1].ts == 2001000);
    assert_int_equal(m.input_events, 2);
    assert_true(m.input_bytes == strlen(a) + strlen(b));
    tp_model_free(&m);
}

/* The copy tprof writes of each dataloader range for TensorBoard (export/chrome.c) is no event
 * of the model, as a host range of any category or as a B/E pair; the same name as a GPU
 * annotation, or a name that only starts the same, is one. */
static void test_dataloader_twin_left_out(void **state) {
    (void)state;
    tp_model m;
    const char *json =
        "[{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"dataloader\",\"ts\":1,\"dur\":2},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"enumerate(DataLoader)#dataloader.__next__\","
        "\"ts\":1,\"dur\":2},"
        "{\"ph\":\"B\",\"name\":\"enumerate(DataLoader)#dataloader.__next__\",\"ts\":4},"
        "{\"ph\":\"E\",\"ts\":5},"
        "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\","
        "\"name\":\"enumerate(DataLoader)#dataloader.__next__\",\"ts\":1,\"dur\":2},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\","
        "\"name\":\"enumerate(DataLoader)#dataloader.__next__x\",\"ts\":1,\"dur\":2}]";
    assert_int_equal(read_json(&m, json), 0);
    assert_int_equal(m.nevents, 3);
    assert_string_equal(name_of(&m, &m.events[0]), "dataloader");
    assert_int_equal(m.events[1].kind, TP_GPU_ANNOTATION);
    assert_string_equal(name_of(&m, &m.events[2]), "enumerate(DataLoader)#dataloader.__next__x");
    tp_model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_number_formats),
        cmocka_unit_test(test_dataloader_twin_left_out),
        cmocka_unit_test(test_out_of_range_times_are_left_out),
        cmocka_unit_test(test_args_numbers),
        cmocka_unit_test(test_string_escapes),
        cmocka_unit_test(test_pids_and_tids),
        cmocka_unit_test(test_kinds_by_category),
        cmocka_unit_test(test_steps_flows_and_unknown_phases),
        cmocka_unit_test(test_begin_end_pairs),
        cmocka_unit_test(test_memory_events),
        cmocka_unit_test(test_metadata_names),
        cmocka_unit_test(test_top_level_keys_after_events),
        cmocka_unit_test(test_array_forms),
        cmocka_unit_test(test_error_messages),
        cmocka_unit_test(test_cut_at_every_length),
        cmocka_unit_test(test_gzip_input),
        cmocka_unit_test(test_file_big_event_and_stdin),
        cmocka_unit_test(test_hostile_inputs),
        cmocka_unit_test(test_files_append_and_align),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
