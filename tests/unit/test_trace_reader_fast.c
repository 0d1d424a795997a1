/* test_trace_reader_fast.c - the reader's fast machinery against independent references: the
 * structural index against a byte-by-byte lexer written here, plain decimals against exact
 * 128-bit arithmetic, and the event fast path against the general path on every fixture and on
 * inputs built to leave the layouts profilers write (both must give the same model). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "model/model.h"
#include "read_fixture.h"
#include "reader_same.h"
#include "trace/event.h"
#include "trace/index.h"
#include "trace/reader.h"
#include "trace/scan.h"
#include "util/buf.h"
#include "util/jsonvalid.h"
#include "util/log.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

static char err[512], gerr[512];

/* ---- the index ---------------------------------------------------------------------------- */

/* What a lexer reading one byte at a time from outside any string sees: the quotes that open
 * or close strings, the brackets outside strings, every backslash. */
static void lex_bytes(const char *buf, size_t n, uint64_t *quote, uint64_t *bracket,
                      uint64_t *bslash, int *inside_last, size_t *open_last, size_t len) {
    int inside = 0, escaped = 0;
    size_t open = 0;
    memset(quote, 0, (n + 63) / 64 * 8);
    memset(bracket, 0, (n + 63) / 64 * 8);
    memset(bslash, 0, (n + 63) / 64 * 8);
    for (size_t i = 0; i < n; i++) {
        char c = buf[i];
        uint64_t bit = 1ULL << (i % 64);
        if (c == '\\') bslash[i / 64] |= bit;
        if (inside && escaped) {
            escaped = 0;
        } else if (inside && c == '\\') {
            escaped = 1;
        } else if (c == '"') {
            quote[i / 64] |= bit;
            inside = !inside;
            open = i;
        } else if (!inside && (c == '{' || c == '}' || c == '[' || c == ']')) {
            bracket[i / 64] |= bit;
        }
        if (i + 1 == len) {
            *inside_last = inside;
            *open_last = open;
        }
    }
}

/* Random JSON-ish bytes: mostly quotes, backslashes, brackets and letters, so strings, escape
 * runs of every length and blocks that start inside strings all occur. */
static void check_index(const char *data, size_t len) {
    size_t nblocks = (len + 64 + 63) / 64, n = nblocks * 64;
    char *buf = malloc(n + 64);
    memcpy(buf, data, len);
    memset(buf + len, '"', n + 64 - len);
    tp_ixblock *ix = malloc(nblocks * sizeof(*ix));
    uint64_t *q = malloc(nblocks * 8), *br = malloc(nblocks * 8), *bs = malloc(nblocks * 8);
    int inside = 0;
    size_t open = 0, got_open = 0;
    lex_bytes(buf, n, q, br, bs, &inside, &open, len);
    int got = tp_index_build(ix, buf, nblocks, len, &got_open);
    for (size_t b = 0; b < nblocks; b++) {
        assert_true(ix[b].quote == q[b]);
        assert_true(ix[b].bracket == br[b]);
        assert_true(ix[b].bslash == bs[b]);
    }
    assert_int_equal(got, len ? inside : 0);
    if (got) assert_int_equal(got_open, open);
    free(buf);
    free(ix);
    free(q);
    free(br);
    free(bs);
}

static void test_index_matches_bytewise_lexer(void **state) {
    (void)state;
    static const char alphabet[] = "\"\"\"\\\\\\{}[]ab :,\n";
    srand(11);
    char data[700];
    for (int round = 0; round < 3000; round++) {
        size_t len = (size_t)(rand() % (int)sizeof(data));
        /* Half the rounds keep backslashes inside strings (the vector path's own case), half
         * put some outside (where it hands over to the byte loop). */
        int outside_ok = round % 2;
        int inside = 0;
        for (size_t i = 0; i < len; i++) {
            char c = alphabet[rand() % (int)(sizeof(alphabet) - 1)];
            if (c == '\\' && !inside && !outside_ok) c = 'x';
            if (c == '\\' && i + 1 < len) {
                data[i++] = c; /* an escape and the byte it protects */
                c = alphabet[rand() % (int)(sizeof(alphabet) - 1)];
            } else if (c == '"') {
                inside = !inside;
            }
            data[i] = c;
        }
        check_index(data, len);
    }
    /* A run of backslashes across a block boundary, odd and even. */
    char run[200];
    for (size_t k = 1; k < 70; k++) {
        memset(run, 'a', sizeof(run));
        run[0] = '"';
        memset(run + 60, '\\', k);
        run[60 + k] = '"';
        run[61 + k] = '"';
        check_index(run, 62 + k);
    }
}

/* ---- plain decimals ------------------------------------------------------------------------ */

/* 128 bits: 17 digits and 3 more overflow 64 (a GNU extension, which pedantic C11 flags). */
__extension__ typedef __int128 i128;

/* round(digits * 10^scale) half away from zero, exactly: 1 with *out when |result| <= limit. */
static int exact_scaled(int neg, const char *ip, const char *fp, int scale, int64_t limit,
                        int64_t *out) {
    i128 v = 0;
    for (const char *p = ip; *p; p++)
        v = v * 10 + (*p - '0');
    int nf = (int)strlen(fp);
    for (int i = 0; i < scale; i++)
        v = v * 10 + (i < nf ? fp[i] - '0' : 0);
    if (nf > scale && fp[scale] >= '5') v++;
    if (v > limit) return 0;
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 1;
}

static void test_decimal_scaled(void **state) {
    (void)state;
    srand(5);
    char ip[24], fp[24], text[64];
    for (int round = 0; round < 200000; round++) {
        int ni = 1 + rand() % 17, nf = rand() % 4 ? rand() % 12 : 0, neg = rand() % 5 == 0;
        for (int i = 0; i < ni; i++)
            ip[i] = (char)('0' + rand() % 10);
        ip[ni] = '\0';
        for (int i = 0; i < nf; i++)
            fp[i] = (char)('0' + (rand() % 3 ? rand() % 10 : 9 * (rand() % 2)));
        fp[nf] = '\0';
        int n = snprintf(text, sizeof(text), "%s%s%s%s", neg ? "-" : "", ip, nf ? "." : "", fp);
        char padded[96];
        memcpy(padded, text, (size_t)n);
        memset(padded + n, ',', sizeof(padded) - (size_t)n);
        for (int scale = 0; scale <= 3; scale += 3) {
            int64_t got = 0, want = 0;
            int in_range = exact_scaled(neg, ip, fp, scale, (int64_t)1 << 62, &want);
            int ok = tp_decimal_scaled(padded, (size_t)n, scale, (int64_t)1 << 62, &got);
            if (scale == 0 && nf)
                assert_int_equal(ok, 0); /* no integer: the general reading decides */
            else if (ni <= 16)
                assert_int_equal(ok, in_range); /* it takes every plain time, and gets it right */
            else
                assert_int_equal(ok, 0); /* longer: left to the general reading */
            if (ok) assert_true(got == want);
            /* and the general reading agrees wherever this one answers */
            tp_jnum j;
            const char *p = padded;
            int64_t g;
            if (ok) {
                assert_true(tp_jnum_parse(&p, &j));
                assert_int_equal(tp_jnum_scaled(&j, scale, (int64_t)1 << 62, &g), 0);
                assert_true(g == got);
            }
        }
    }
    int64_t v;
    assert_int_equal(tp_decimal_scaled("1e3,,,,,,,,,,,,,,", 3, 3, 1000000, &v), 0);
    assert_int_equal(tp_decimal_scaled("N/A,,,,,,,,,,,,,,", 3, 3, 1000000, &v), 0);
    assert_int_equal(tp_decimal_scaled("1.,,,,,,,,,,,,,,,", 2, 3, 1000000, &v), 0);
    assert_int_equal(tp_decimal_scaled("-,,,,,,,,,,,,,,,,", 1, 3, 1000000, &v), 0);
}

/* ---- the fast path against the general path --------------------------------------------- */

/* Reads data both ways (through memory: small buffers, many refills) and checks that the
 * results agree; returns the fast path's return code, the model in *m. */
static int read_both(const void *data, size_t len, tp_model *m) {
    tp_model g;
    tp_model_init(m);
    tp_model_init(&g);
    err[0] = gerr[0] = '\0';
    int rc = tp_trace_read_mem(data, len, "t.json", m, err, sizeof(err));
    tp_evread_fast = 0;
    int grc = tp_trace_read_mem(data, len, "t.json", &g, gerr, sizeof(gerr));
    tp_evread_fast = 1;
    assert_int_equal(rc, grc);
    assert_string_equal(err, gerr);
    assert_true(reader_same_model(m, &g));
    tp_model_free(&g);
    return rc;
}

static void test_fixtures_both_paths(void **state) {
    (void)state;
    const char *root = getenv("TPROF_FIXTURES");
    assert_non_null(root);
    static const char *const dirs[] = {"kineto", "torch-legacy"};
    int files = 0;
    tp_log_set_quiet(1);
    for (size_t d = 0; d < 2; d++) {
        char dir[512];
        snprintf(dir, sizeof(dir), "%s/%s", root, dirs[d]);
        DIR *dp = opendir(dir);
        assert_non_null(dp);
        struct dirent *de;
        while ((de = readdir(dp))) {
            if (!strstr(de->d_name, ".json")) continue;
            char path[1024];
            snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
            size_t len;
            char *data = read_fixture(path, &len);
            assert_non_null(data);
            tp_model m, f, g;
            assert_int_equal(read_both(data, len, &m), 0);
            assert_true(m.nevents > 0);
            /* the file through the 1 MB buffer, both ways, is the same model again */
            tp_model_init(&f);
            tp_model_init(&g);
            assert_int_equal(tp_trace_read_file(path, &f, NULL, err, sizeof(err)), 0);
            tp_evread_fast = 0;
            assert_int_equal(tp_trace_read_file(path, &g, NULL, err, sizeof(err)), 0);
            tp_evread_fast = 1;
            assert_true(reader_same_model(&m, &f));
            assert_true(reader_same_model(&f, &g));
            tp_model_free(&m);
            tp_model_free(&f);
            tp_model_free(&g);
            free(data);
            files++;
        }
        closedir(dp);
    }
    tp_log_set_quiet(0);
    assert_true(files >= 8);
}

/* The ranges of m carrying their whole args (TP_READ_RAW_ARGS): each a valid JSON object. */
static size_t raw_args_valid(const tp_model *m) {
    tp_str key = tp_strtab_find(&m->strings, TP_READ_RAW_ARGS, sizeof(TP_READ_RAW_ARGS) - 1);
    size_t n = 0;
    for (size_t i = 0; key != UINT32_MAX && i < m->nevents; i++) {
        const tp_arg *a = m->events[i].nargs ? tp_event_arg(m, &m->events[i], key) : NULL;
        if (!a) continue;
        const char *t = tp_model_str(m, a->v.s);
        assert_int_equal(a->type, TP_ARG_JSON);
        assert_int_equal(t[0], '{');
        assert_true(tp_json_valid(t, tp_strtab_len(&m->strings, a->v.s)));
        n++;
    }
    return n;
}

/* keep_args (the Trace view's whole args): the same model by the fast path, the general path
 * and three parts read at once; the args kept are valid objects, on the ranges that have args;
 * a read without it has no such arg and is otherwise the same (the analysis never sees it). */
static void test_keep_args_all_paths(void **state) {
    (void)state;
    const char *root = getenv("TPROF_FIXTURES");
    assert_non_null(root);
    char path[1024];
    snprintf(path, sizeof(path), "%s/kineto/gaunernst_bert-small-uncased__1016001.json.gz", root);
    size_t len;
    char *data = read_fixture(path, &len);
    assert_non_null(data);
    uint64_t cuts[2] = {len / 3, 2 * len / 3};
    tp_read_opts one = {.threads = 1, .keep_args = 1}, parts = one, plain = {.threads = 1};
    parts.threads = 3;
    parts.splits = cuts;
    parts.nsplits = 2;
    tp_model f, g, p, none;
    tp_model_init(&f), tp_model_init(&g), tp_model_init(&p), tp_model_init(&none);
    assert_int_equal(tp_trace_read_mem_opts(data, len, "t.json", &f, &one, err, sizeof(err)), 0);
    tp_evread_fast = 0;
    assert_int_equal(tp_trace_read_mem_opts(data, len, "t.json", &g, &one, err, sizeof(err)), 0);
    tp_evread_fast = 1;
    assert_int_equal(tp_trace_read_mem_opts(data, len, "t.json", &p, &parts, err, sizeof(err)), 0);
    assert_int_equal(tp_trace_read_mem_opts(data, len, "t.json", &none, &plain, err, sizeof(err)),
                     0);
    assert_true(reader_same_model(&f, &g));
    assert_true(reader_same_model(&f, &p));
    size_t kept = raw_args_valid(&f);
    assert_true(kept > 1000); /* the fixture's ops, runtime calls and kernels have args */
    assert_int_equal(f.nevents, none.nevents);
    assert_int_equal(f.nargs, none.nargs + kept);
    assert_int_equal(raw_args_valid(&none), 0);
    tp_model_free(&f), tp_model_free(&g), tp_model_free(&p), tp_model_free(&none);
    free(data);
}

/* keep_args keeps at most TP_READ_RAW_ARGS_MAX bytes of args objects per part: the first
 * ones; the ranges after them have the args the reader parses, as without it. */
static void test_keep_args_budget(void **state) {
    (void)state;
    enum { N = 20000, PAD = 1000 };
    tp_buf b;
    tp_buf_init(&b);
    char pad[PAD + 1];
    memset(pad, 'x', PAD);
    pad[PAD] = '\0';
    TP_BUF_LIT(&b, "{\"traceEvents\": [");
    for (int i = 0; i < N; i++)
        tp_buf_printf(&b,
                      "%s{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, "
                      "\"tid\": 7, \"ts\": %d, \"dur\": 1, \"args\": {\"correlation\": %d, "
                      "\"pad\": \"%s\"}}",
                      i ? ", " : "", 2 * i, i + 1, pad);
    TP_BUF_LIT(&b, "]}");
    assert_false(b.failed);
    tp_read_opts o = {.threads = 1, .keep_args = 1};
    tp_model m;
    tp_model_init(&m);
    assert_int_equal(tp_trace_read_mem_opts(b.data, b.len, "t.json", &m, &o, err, sizeof(err)), 0);
    assert_int_equal(m.nevents, N);
    size_t one = strlen("{\"correlation\": 1, \"pad\": \"\"}") + PAD; /* ids of 1..5 digits */
    size_t kept = raw_args_valid(&m);
    assert_true(kept >= TP_READ_RAW_ARGS_MAX / (one + 4) && kept <= TP_READ_RAW_ARGS_MAX / one);
    assert_true(kept < N);
    /* the later ranges keep what the reader parses: the correlation id */
    assert_int_equal(m.events[N - 1].corr, N);
    tp_model_free(&m);
    tp_buf_free(&b);
}

/* Shapes the fast path declines or must tell apart, each between ordinary Kineto events (so
 * the layout is learned first): both paths must agree, and a few values are checked. */
static void test_unusual_shapes_agree(void **state) {
    (void)state;
    static const char *const odd[] = {
        /* escaped keys and strings, raw control bytes */
        "{\"\\u0070h\": \"X\", \"cat\": \"cpu_op\", \"name\": \"a\\\"b\", \"pid\": 1, \"tid\": 1, "
        "\"ts\": 5, \"dur\": 1}",
        "{\"ph\": \"X\", \"cat\": \"cpu\\u005fop\", \"name\": \"tab\there\", \"pid\": 1, \"tid\": "
        "1, \"ts\": 5, \"dur\": 1}",
        /* args before ph, and twice */
        "{\"args\": {\"correlation\": 9, \"flops\": 7}, \"ph\": \"X\", \"name\": \"early\", "
        "\"ts\": 5, \"dur\": 1}",
        "{\"ph\": \"X\", \"name\": \"twice\", \"ts\": 5, \"dur\": 1, \"args\": {\"correlation\": "
        "3}, \"args\": {\"flops\": 4}}",
        /* bare words, exponents, long numbers, strings where numbers go */
        "{\"ph\": \"X\", \"name\": \"bare\", \"pid\": N/A, \"tid\": true, \"ts\": 1.5e3, \"dur\": "
        "N/A}",
        "{\"ph\": \"X\", \"name\": \"long\", \"ts\": 1234567890123456789012, \"dur\": 1}",
        "{\"ph\": \"X\", \"name\": \"str\", \"pid\": \"7\", \"tid\": \"stream 7\", \"ts\": \"5\", "
        "\"dur\": 1}",
        /* duplicate keys: the last wins */
        "{\"ph\": \"X\", \"name\": \"dup\", \"ts\": 1, \"ts\": 2, \"dur\": 1, \"args\": "
        "{\"correlation\": 5, \"correlation\": \"x\"}}",
        "{\"ph\": \"i\", \"name\": \"[memory]\", \"ts\": 3, \"args\": {\"Bytes\": 8, \"Bytes\": "
        "\"no\", \"Device Id\": 0}}",
        /* whitespace and separators of every kind, trailing comma, empty object */
        "{ \"ph\" :\"X\",\n\t\"name\":\"ws\" ,\"ts\":1 , \"dur\" : 2 , }",
        "{}",
        /* nested args with brackets inside strings, structures where scalars go */
        "{\"ph\": \"X\", \"name\": \"nest\", \"ts\": 1, \"dur\": 1, \"args\": {\"Input Dims\": "
        "[[1, 2], [\"]\", \"{\"]], \"o\": {\"correlation\": 99}, \"correlation\": 12}}",
        "{\"ph\": \"X\", \"name\": [1], \"cat\": {\"a\": 1}, \"ts\": [2], \"dur\": 1}",
        /* flows with extra members, counters, metadata, B and E */
        "{\"ph\": \"f\", \"id\": 1, \"bp\": \"e\", \"x\": [1, {\"y\": \"}\"}]}",
        "{\"ph\": \"C\", \"name\": \"mem\", \"ts\": 4, \"args\": {\"a\": 1, \"b\": \"s\", \"c\": "
        "2.5, \"d\": N/A}}",
        "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": 1, \"args\": {\"name\": "
        "\"main\"}}",
        "{\"ph\": \"B\", \"name\": \"b\", \"pid\": 1, \"tid\": 1, \"ts\": 10}",
        "{\"ph\": \"E\", \"pid\": 1, \"tid\": 1, \"ts\": 12}",
        /* phases that are not one plain letter, args that are no object (the fast path reads
         * a one-letter phase and an args object its own way) */
        "{\"ph\": \"\", \"name\": \"empty phase\", \"ts\": 1, \"dur\": 1}",
        "{\"ph\": \"\\\"\", \"name\": \"quote phase\", \"ts\": 1, \"dur\": 1}",
        "{\"ph\": \"XX\", \"name\": \"long phase\", \"ts\": 1, \"dur\": 1}",
        "{\"ph\": \"\\u0058\", \"name\": \"escaped X\", \"ts\": 1, \"dur\": 1}",
        "{\"ph\": \"X\", \"name\": \"args string\", \"ts\": 1, \"dur\": 1, \"args\": \"none\"}",
        "{\"ph\": \"X\", \"name\": \"args array\", \"ts\": 1, \"dur\": 1, \"args\": [1, "
        "{\"correlation\": 4}]}",
        /* numbers past 16 bytes, whitespace before the comma after an event */
        "{\"ph\": \"X\", \"name\": \"wide\", \"ts\": 1234567890123456.5, \"dur\": "
        "12345678901234.567}  ",
    };
    static const char kineto[] =
        "{\n    \"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"aten::mm\", \"pid\": 7, \"tid\": "
        "8,\n    \"ts\": 100.5, \"dur\": 2.25,\n    \"args\": {\n      \"External id\": 3,"
        "\"correlation\": 11, \"Ev Idx\": 1\n    }\n  }";
    tp_buf b;
    tp_buf_init(&b);
    TP_BUF_LIT(&b, "{\"traceEvents\": [\n  ");
    size_t nodd = sizeof(odd) / sizeof(odd[0]);
    for (size_t round = 0; round < 3; round++)
        for (size_t i = 0; i < nodd; i++) {
            tp_buf_puts(&b, kineto);
            TP_BUF_LIT(&b, ",\n  ");
            tp_buf_puts(&b, odd[i]);
            TP_BUF_LIT(&b, ",\n  ");
        }
    tp_buf_puts(&b, kineto);
    TP_BUF_LIT(&b, "\n]}");
    tp_model m;
    tp_log_set_quiet(1);
    assert_int_equal(read_both(b.data, b.len, &m), 0);
    tp_log_set_quiet(0);
    assert_int_equal(m.input_events, 3 * 2 * nodd + 1);
    /* spot checks, from the first round */
    int seen_escaped = 0, seen_early = 0, seen_dup = 0, seen_x = 0, seen_wide = 0;
    for (size_t i = 0; i < m.nevents; i++) {
        const tp_event *ev = &m.events[i];
        const char *name = tp_model_str(&m, ev->name);
        if (strcmp(name, "a\"b") == 0) seen_escaped = 1;
        if (strcmp(name, "early") == 0) seen_early = ev->corr == 9 && ev->nargs == 1;
        if (strcmp(name, "dup") == 0) seen_dup = ev->ts == 2000 && ev->corr == 0;
        if (strcmp(name, "escaped X") == 0) seen_x = 1;
        if (strcmp(name, "wide") == 0)
            seen_wide = ev->ts == 1234567890123456500 && ev->dur == 12345678901234567;
        /* phases other than one known letter add nothing */
        assert_true(strcmp(name, "empty phase") && strcmp(name, "quote phase") &&
                    strcmp(name, "long phase"));
        if (strcmp(name, "aten::mm") == 0) {
            assert_true(ev->ts == 100500 && ev->dur == 2250 && ev->corr == 11);
        }
    }
    assert_true(seen_escaped && seen_early && seen_dup && seen_x && seen_wide);
    tp_model_free(&m);
    tp_buf_free(&b);
}

/* Layouts that change: many keys (more literals than the layout keeps), long literals, several
 * shapes in turn, different whitespace. The expected count and sums come from the generator. */
static void test_changing_layouts(void **state) {
    (void)state;
    tp_buf b;
    tp_buf_init(&b);
    TP_BUF_LIT(&b, "[");
    uint64_t want_corr = 0;
    size_t n = 6000;
    srand(3);
    for (size_t i = 0; i < n; i++) {
        int shape = rand() % 6;
        const char *sep = shape == 0 ? ", " : shape == 1 ? ",\n      " : ",";
        tp_buf_printf(&b,
                      "%s{\"ph\": \"X\"%s\"name\": \"op%d\"%s\"pid\": %d%s\"tid\": %d%s\"ts\": "
                      "%zu.%03d%s\"dur\": %d%s\"args\": {",
                      i ? ",\n" : "", sep, rand() % 50, sep, shape, sep, rand() % 3, sep, i,
                      rand() % 1000, sep, rand() % 100, sep);
        int nargs = rand() % 6;
        for (int a = 0; a < nargs; a++) {
            /* long keys are too long to learn; short ones many enough to fill the layout */
            if (a % 2)
                tp_buf_printf(&b, "%s\"key %zu of a kind that makes the literal long\": %d",
                              a ? sep : "", i % 997, rand() % 10);
            else
                tp_buf_printf(&b, "%s\"k%zu\": %d", a ? sep : "", i, rand() % 10);
        }
        unsigned corr = (unsigned)rand() % 100000 + 1;
        want_corr += corr;
        tp_buf_printf(&b, "%s\"correlation\": %u}}", nargs ? sep : "", corr);
    }
    TP_BUF_LIT(&b, "]");
    tp_model m;
    assert_int_equal(read_both(b.data, b.len, &m), 0);
    assert_int_equal(m.nevents, n);
    uint64_t corr = 0;
    for (size_t i = 0; i < m.nevents; i++)
        corr += m.events[i].corr;
    assert_true(corr == want_corr);
    tp_model_free(&m);
    tp_buf_free(&b);
}

/* A skipped top-level value bigger than the buffer, made of strings with brackets inside: the
 * skip resumes after each refill, at the quote of a string the data ends in. */
static void test_skip_resumes_inside_strings(void **state) {
    (void)state;
    tp_buf b;
    tp_buf_init(&b);
    TP_BUF_LIT(&b, "{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a\", \"ts\": 1, \"dur\": "
                   "1}],\n\"metadata\": [");
    for (int i = 0; i < 200000; i++)
        tp_buf_printf(&b, "%s\"]]}}{{[[ %d \\\" ]\"", i ? ", " : "", i);
    TP_BUF_LIT(&b, "], \"baseTimeNanoseconds\": 5000}");
    char path[64];
    snprintf(path, sizeof(path), "/tmp/tprof_test_trace_reader_fast_%d.json", (int)getpid());
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    assert_int_equal(fwrite(b.data, 1, b.len, f), b.len);
    fclose(f);
    tp_buf_free(&b);
    tp_model m;
    tp_model_init(&m);
    assert_int_equal(tp_trace_read_file(path, &m, NULL, err, sizeof(err)), 0);
    assert_int_equal(m.nevents, 1);
    assert_true(m.base_ns == 5000);
    tp_model_free(&m);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_index_matches_bytewise_lexer),
        cmocka_unit_test(test_decimal_scaled),
        cmocka_unit_test(test_fixtures_both_paths),
        cmocka_unit_test(test_unusual_shapes_agree),
        cmocka_unit_test(test_keep_args_all_paths),
        cmocka_unit_test(test_keep_args_budget),
        cmocka_unit_test(test_changing_layouts),
        cmocka_unit_test(test_skip_resumes_inside_strings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
