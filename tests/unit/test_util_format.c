/* test_util_format.c - the formatting pieces the trace writer stands on: the printf-free
 * number writers (checked against snprintf over boundaries and a million random values) and
 * the JSON check that guards raw JSON before it is embedded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/buf.h"
#include "util/jsonvalid.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x243f6a8885a308d3ULL;

static uint64_t next_rand(void) {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* A random value of random bit length, so every digit count is covered. */
static uint64_t random_value(void) {
    unsigned bits = (unsigned)(next_rand() % 64) + 1;
    return next_rand() >> (64 - bits);
}

static void check_u64(uint64_t v) {
    char got[TP_FMT_NUM_MAX + 1], want[32];
    *tp_fmt_u64(got, v) = '\0';
    snprintf(want, sizeof(want), "%" PRIu64, v);
    assert_string_equal(got, want);
}

static void check_i64(int64_t v) {
    char got[TP_FMT_NUM_MAX + 1], want[32];
    *tp_fmt_i64(got, v) = '\0';
    snprintf(want, sizeof(want), "%" PRId64, v);
    assert_string_equal(got, want);
}

/* Microseconds through long division by hand, then the decimal point placed by text. */
static void check_us(int64_t ns) {
    char got[TP_FMT_NUM_MAX + 1], want[48];
    *tp_fmt_us(got, ns) = '\0';
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    char digits[32];
    int n = snprintf(digits, sizeof(digits), "%04" PRIu64, mag); /* at least 4 digits */
    snprintf(want, sizeof(want), "%s%.*s.%s", ns < 0 ? "-" : "", n - 3, digits, digits + n - 3);
    size_t len = strlen(want);
    while (want[len - 1] == '0')
        want[--len] = '\0';
    if (want[len - 1] == '.') want[--len] = '\0';
    assert_string_equal(got, want);
}

static void test_integers_match_printf(void **state) {
    (void)state;
    for (uint64_t v = 0; v <= 100000; v++)
        check_u64(v);
    for (uint64_t p = 1, i = 0; i < 20; i++, p *= 10) {
        check_u64(p - 1);
        check_u64(p);
        check_u64(p + 1);
    }
    check_u64(UINT64_MAX);
    check_i64(INT64_MIN);
    check_i64(INT64_MAX);
    check_i64(-1);
    for (int i = 0; i < 1000000; i++) {
        uint64_t v = random_value();
        check_u64(v);
        check_i64((int64_t)v);
    }
}

static void test_microseconds_exact(void **state) {
    (void)state;
    static const int64_t fixed[] = {
        0,  1,   9,     10,    100,       999,       1000,  1001,  1010,  1100,
        -1, -10, -1000, -1500, INT64_MAX, INT64_MIN, 12345, 12000, 12300, 1682725898236567000};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        check_us(fixed[i]);
    for (int i = 0; i < 300000; i++)
        check_us((int64_t)random_value());
}

static void test_doubles_read_back(void **state) {
    (void)state;
    char out[TP_FMT_DOUBLE_MAX + 1];
    for (int i = 0; i < 100000; i++) {
        uint64_t bits = next_rand();
        double v;
        memcpy(&v, &bits, sizeof(v));
        char *end = tp_fmt_double(out, v);
        assert_true(end - out <= TP_FMT_DOUBLE_MAX);
        *end = '\0';
        if (!isfinite(v))
            assert_string_equal(out, "null");
        else
            assert_true(strtod(out, NULL) == v);
    }
    *tp_fmt_double(out, 3.0) = '\0';
    assert_string_equal(out, "3");
    *tp_fmt_double(out, -0.5) = '\0';
    assert_string_equal(out, "-0.5");
    *tp_fmt_double(out, 1e300) = '\0'; /* beyond int64: no undefined conversion */
    assert_true(strtod(out, NULL) == 1e300);
}

/* The reference: what tp_fmt_double promises, the printf way (first of %.15g, %.16g, %.17g
 * that strtod reads back), integers as integers, non-finite values as null. */
static void reference_double(char *out, double v) {
    if (!isfinite(v)) {
        strcpy(out, "null");
        return;
    }
    if (fabs(v) < 9.0e15 && v == (double)(int64_t)v) {
        snprintf(out, 32, "%" PRId64, (int64_t)v);
        return;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, 32, "%.*g", prec, v);
        if (strtod(out, NULL) == v) return;
    }
}

static void check_double(double v) {
    char got[TP_FMT_DOUBLE_MAX + 1], want[40];
    char *end = tp_fmt_double(got, v);
    assert_true(end - got <= TP_FMT_DOUBLE_MAX);
    *end = '\0';
    reference_double(want, v);
    if (strcmp(got, want) != 0) fail_msg("%.17g: got %s, printf gives %s", v, got, want);
}

/* The exact fast path (fmt_double.c) against the printf way, byte for byte: the report's kind of
 * values (percentages and means of integer counts), every decade of its range and just outside,
 * digit carries (0.99999...), powers of two (the narrower gap below), halfway cases of each
 * precision, and random bit patterns. */
static void test_doubles_match_printf(void **state) {
    (void)state;
    for (int i = 0; i < 60000; i++) {
        double a = (double)(random_value() % 1000000007u),
               b = (double)(random_value() % 1000003u + 1);
        check_double(100.0 * a / b);
        check_double(a / b);
        check_double(-a / (b * 1000.0));
    }
    for (int e = -8; e <= 17; e++)
        for (int i = 0; i < 5000; i++) {
            double unit = (double)(next_rand() >> 11) / 9007199254740992.0; /* [0, 1) */
            check_double((1.0 + 9.0 * unit) * pow(10.0, e));
        }
    for (int e = -30; e <= 60; e++) {
        check_double(ldexp(1.0, e));
        check_double(nextafter(ldexp(1.0, e), 0.0));
        check_double(nextafter(ldexp(1.0, e), INFINITY));
    }
    for (int n = 1; n <= 17; n++) {
        double nines = 1.0 - pow(10.0, -n);
        for (int e = -6; e <= 15; e++) {
            check_double(nines * pow(10.0, e));
            check_double(nextafter(nines * pow(10.0, e), INFINITY));
        }
    }
    for (int i = 0; i < 30000; i++) { /* a 15- or 16-digit decimal and a half in its last place */
        uint64_t digits = next_rand() % 900000000000000u + 100000000000000u;
        for (int e = -8; e <= 2; e++) {
            check_double(((double)digits + 0.5) * pow(10.0, e));
            check_double(((double)(digits * 10 + 5)) * pow(10.0, e - 1));
        }
    }
    for (int i = 0; i < 100000; i++) {
        uint64_t bits = next_rand();
        double v;
        memcpy(&v, &bits, sizeof(v));
        check_double(v);
    }
    check_double(1e-6);
    check_double(nextafter(1e-6, 0.0));
    check_double(0.1);
    check_double(1.0 / 3.0);
    check_double(2.0 / 3.0);
    check_double(123456.789);
    check_double(8999999999999999.5); /* just under the integer path's bound */
    check_double(9007199254740991.5);
    check_double(5e-324);
    check_double(-0.0);
}

/* The reference: one byte at a time, as buf.h describes the escaping. */
static void reference_json_str(tp_buf *b, const unsigned char *s, size_t n) {
    tp_buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c >= 0x80 ? tp_utf8_seq_len(s + i, n - i) : 0;
        if (c == '"' || c == '\\') {
            tp_buf_printf(b, "\\%c", c);
        } else if (c == '\n' || c == '\t' || c == '\r') {
            tp_buf_printf(b, "\\%c", c == '\n' ? 'n' : c == '\t' ? 't' : 'r');
        } else if (c < 0x20 || c == 0x7f) {
            tp_buf_printf(b, "\\u%04x", c);
        } else if (c < 0x80) {
            tp_buf_putc(b, (char)c);
        } else if (len) {
            tp_buf_put(b, s + i, len);
            i += len;
            continue;
        } else {
            tp_buf_puts(b, "\xef\xbf\xbd");
        }
        i++;
    }
    tp_buf_putc(b, '"');
}

/* tp_buf_json_str's word-at-a-time copy against the byte loop: strings of every length up to
 * 40 mixing plain runs with each kind of byte that needs care, at every offset of a word. */
static void test_json_strings_match_byte_loop(void **state) {
    (void)state;
    static const unsigned char special[] = {'"',  '\\', '\n', 0x01, 0x1f, 0x7f, 0x80, 0xc3, 0xa9,
                                            0xe2, 0x82, 0xac, 0xf0, 0xff, ' ',  '~',  '<'};
    unsigned char s[40];
    tp_buf got, want;
    tp_buf_init(&got);
    tp_buf_init(&want);
    for (int round = 0; round < 200000; round++) {
        size_t n = (size_t)(next_rand() % (sizeof(s) + 1));
        for (size_t i = 0; i < n; i++) {
            uint64_t r = next_rand();
            s[i] = r % 8 ? (unsigned char)('a' + r % 26) : special[(r >> 8) % sizeof(special)];
        }
        got.len = want.len = 0;
        tp_buf_json_str(&got, (const char *)s, n);
        reference_json_str(&want, s, n);
        assert_int_equal(got.len, want.len);
        assert_memory_equal(got.data, want.data, got.len);
    }
    tp_buf_free(&got);
    tp_buf_free(&want);
}

static int valid(const char *s) {
    return tp_json_valid(s, strlen(s));
}

static void test_json_check(void **state) {
    (void)state;
    static const char *good[] = {
        "0",
        "-0",
        "1.5e-3",
        "-12.25E+4",
        "true",
        "false",
        "null",
        "\"\"",
        " \t\n[ ]\r\n",
        "{}",
        "[[64, 784], [784, 256], []]",
        "{\"a\": {\"b\": [1, \"x\", null]}, \"c\": false}",
        "\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u00e9 \\uD83D\\uDE00\"",
        "\"caf\xc3\xa9 \xf0\x9f\x98\x80\"",
    };
    static const char *bad[] = {
        "",
        " ",
        "01",
        "1.",
        ".5",
        "-",
        "+1",
        "1e",
        "0x10",
        "NaN",
        "Infinity",
        "tru",
        "nul",
        "[1,]",
        "[,1]",
        "{\"a\":1,}",
        "{\"a\" 1}",
        "{1: 2}",
        "[1 2]",
        "[1",
        "{\"a\": [}",
        "]",
        "\"open",
        "\"bad escape \\x\"",
        "\"\\u12g4\"",
        "\"tab\there\"",
        "\"del\x7f\"",
        "\"bad utf8 \xff\"",
        "\"overlong \xc0\xaf\"",
        "\"surrogate \xed\xa0\x80\"",
        "1 2",
        "[] []",
        "{\"a\":1}}",
    };
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
        if (!valid(good[i])) fail_msg("rejected: %s", good[i]);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (valid(bad[i])) fail_msg("accepted: %s", bad[i]);
    assert_false(tp_json_valid("[1]\0", 4));   /* the length counts, not the NUL */
    assert_true(tp_json_valid_z("[1]", 3));    /* the NUL that follows stands for the end */
    assert_false(tp_json_valid_z("[1]\0", 4)); /* one before it is no JSON */
    assert_false(tp_json_valid_z("\"a\0\"", 4));
    assert_false(tp_json_valid_z("[1, \0]", 6));
    /* Nesting: up to the limit is fine, beyond it is refused without recursion. */
    char deep[(size_t)2 * TP_JSON_MAX_DEPTH + 8];
    memset(deep, '[', TP_JSON_MAX_DEPTH);
    memset(deep + TP_JSON_MAX_DEPTH, ']', TP_JSON_MAX_DEPTH);
    assert_true(tp_json_valid(deep, (size_t)2 * TP_JSON_MAX_DEPTH));
    size_t huge = 1000000;
    char *d = malloc(2 * huge);
    memset(d, '[', huge);
    memset(d + huge, ']', huge);
    assert_false(tp_json_valid(d, 2 * huge));
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_integers_match_printf),
        cmocka_unit_test(test_microseconds_exact),
        cmocka_unit_test(test_doubles_read_back),
        cmocka_unit_test(test_doubles_match_printf),
        cmocka_unit_test(test_json_strings_match_byte_loop),
        cmocka_unit_test(test_json_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
