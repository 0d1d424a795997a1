/* buf.c - tp_buf's allocation and formatting (see buf.h). */
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void tp_buf_init(tp_buf *b) {
    memset(b, 0, sizeof(*b));
}

void tp_buf_free(tp_buf *b) {
    free(b->data);
    memset(b, 0, sizeof(*b));
}

int tp_buf_reserve_slow(tp_buf *b, size_t extra) {
    if (b->failed) return -1;
    size_t need = b->len + extra;
    size_t ncap = b->cap ? b->cap : 256;
    while (ncap < need)
        ncap *= 2;
    char *p = realloc(b->data, ncap);
    if (!p) {
        b->failed = 1;
        return -1;
    }
    b->data = p;
    b->cap = ncap;
    return 0;
}

void tp_buf_puts(tp_buf *b, const char *s) {
    tp_buf_put(b, s, strlen(s));
}

void tp_buf_printf(tp_buf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0 || tp_buf_reserve(b, (size_t)n + 1)) return;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Two digits at a time: halves the divisions of the naive loop. */
static const char tp_digit_pairs[] =
    "00010203040506070809101112131415161718192021222324252627282930"
    "31323334353637383940414243444546474849505152535455565758596061"
    "6263646566676869707172737475767778798081828384858687888990919293"
    "949596979899";

/* Four digits of v < 10000, zero-padded. */
static void put4(char *p, unsigned v) {
    memcpy(p, tp_digit_pairs + (size_t)(v / 100) * 2, 2);
    memcpy(p + 2, tp_digit_pairs + (size_t)(v % 100) * 2, 2);
}

/* v < 10000 without leading zeros. */
static char *put_small(char *p, unsigned v) {
    if (v < 10) {
        *p = (char)('0' + v);
        return p + 1;
    }
    if (v < 100) {
        memcpy(p, tp_digit_pairs + (size_t)v * 2, 2);
        return p + 2;
    }
    if (v < 1000) {
        *p = (char)('0' + v / 100);
        memcpy(p + 1, tp_digit_pairs + (size_t)(v % 100) * 2, 2);
        return p + 3;
    }
    put4(p, v);
    return p + 4;
}

/* Groups of eight digits from one 64-bit division, each split into halves that the CPU works
 * out in parallel: a digit loop's chain of dependent divisions was the cost. */
char *tp_fmt_u64(char *p, uint64_t v) {
    if (v < 10000) return put_small(p, (unsigned)v);
    if (v < 100000000) {
        p = put_small(p, (unsigned)(v / 10000));
        put4(p, (unsigned)(v % 10000));
        return p + 4;
    }
    unsigned low = (unsigned)(v % 100000000);
    p = tp_fmt_u64(p, v / 100000000); /* at most twice more: UINT64_MAX has 20 digits */
    put4(p, low / 10000);
    put4(p + 4, low % 10000);
    return p + 8;
}

char *tp_fmt_i64(char *p, int64_t v) {
    if (v >= 0) return tp_fmt_u64(p, (uint64_t)v);
    *p++ = '-';
    return tp_fmt_u64(p, (uint64_t)0 - (uint64_t)v);
}

char *tp_fmt_us(char *p, int64_t ns) {
    uint64_t mag = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    if (ns < 0) *p++ = '-';
    p = tp_fmt_u64(p, mag / 1000);
    unsigned frac = (unsigned)(mag % 1000);
    if (frac == 0) return p;
    p[0] = '.';
    p[1] = (char)('0' + frac / 100);
    p[2] = (char)('0' + frac / 10 % 10);
    p[3] = (char)('0' + frac % 10);
    return p + (frac % 10 ? 4 : frac % 100 ? 3 : 2); /* trailing zeros dropped */
}

void tp_buf_u64(tp_buf *b, uint64_t v) {
    if (tp_buf_reserve(b, TP_FMT_NUM_MAX)) return;
    b->len = (size_t)(tp_fmt_u64(b->data + b->len, v) - b->data);
}

void tp_buf_i64(tp_buf *b, int64_t v) {
    if (tp_buf_reserve(b, TP_FMT_NUM_MAX)) return;
    b->len = (size_t)(tp_fmt_i64(b->data + b->len, v) - b->data);
}

void tp_buf_us(tp_buf *b, int64_t ns) {
    if (tp_buf_reserve(b, TP_FMT_NUM_MAX)) return;
    b->len = (size_t)(tp_fmt_us(b->data + b->len, ns) - b->data);
}

void tp_buf_utf8(tp_buf *b, const char *s, size_t n) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        size_t run = i;
        uint64_t w; /* ASCII eight bytes at a time (args texts, CSV names), then byte by byte */
        while (run + 8 <= n && (memcpy(&w, u + run, 8), !(w & TP_BYTES_HIGHS)))
            run += 8;
        while (run < n && u[run] < 0x80)
            run++;
        tp_buf_put(b, s + i, run - i);
        if ((i = run) == n) break;
        size_t len = tp_utf8_seq_len(u + i, n - i);
        if (len) {
            tp_buf_put(b, s + i, len);
            i += len;
        } else {
            tp_buf_put(b, "\xef\xbf\xbd", 3);
            i++;
        }
    }
}

size_t tp_utf8_seq_len(const unsigned char *s, size_t n) {
    unsigned c = s[0];
    size_t len;
    unsigned min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
        min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        min = 0x10000;
    } else {
        return 0;
    }
    if (n < len) return 0;
    unsigned cp = c & (0x3fu >> (len - 1));
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    return len;
}

void tp_buf_json_str(tp_buf *b, const char *str, size_t n) {
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)str;
    /* Worst case: every byte becomes a 6-byte escape. */
    if (tp_buf_reserve(b, n * 6 + 2)) return;
    char *out = b->data + b->len;
    *out++ = '"';
    size_t i = 0;
    while (i < n) {
        uint64_t w;
        /* Names are mostly plain ASCII: eight bytes at a time while nothing needs escaping. */
        while (i + 8 <= n && (memcpy(&w, s + i, 8), !tp_json_word_escapes(w))) {
            memcpy(out, &w, 8);
            out += 8;
            i += 8;
        }
        if (i == n) break;
        unsigned c = s[i];
        if (tp_json_plain_byte((unsigned char)c)) {
            *out++ = (char)c;
            i++;
        } else if (c < 0x80) {
            *out++ = '\\';
            switch (c) {
            case '"':
                *out++ = '"';
                break;
            case '\\':
                *out++ = '\\';
                break;
            case '\n':
                *out++ = 'n';
                break;
            case '\t':
                *out++ = 't';
                break;
            case '\r':
                *out++ = 'r';
                break;
            default:
                *out++ = 'u';
                *out++ = '0';
                *out++ = '0';
                *out++ = hex[c >> 4];
                *out++ = hex[c & 15];
            }
            i++;
        } else {
            size_t len = tp_utf8_seq_len(s + i, n - i);
            if (len) {
                memcpy(out, s + i, len);
                out += len;
                i += len;
            } else {
                *out++ = '\xef'; /* U+FFFD: 3 bytes, within the 6 reserved */
                *out++ = '\xbf';
                *out++ = '\xbd';
                i++;
            }
        }
    }
    *out++ = '"';
    b->len = (size_t)(out - b->data);
}
