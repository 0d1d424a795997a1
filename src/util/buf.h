/* buf.h - a growing byte buffer with the JSON and number formatting every tprof writer shares.
 *
 * The trace writer formats millions of events through these helpers, so the common cases
 * (integers, microseconds from integer nanoseconds, ASCII strings) avoid printf entirely.
 * Invariant: data[0..len) is the output so far; `failed` turns on at the first allocation
 * failure, after which appends are ignored and the writer reports the error once. */
#ifndef TP_UTIL_BUF_H
#define TP_UTIL_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct tp_buf {
    char *data;
    size_t len;
    size_t cap;
    int failed;
} tp_buf;

void tp_buf_init(tp_buf *b);
void tp_buf_free(tp_buf *b);
/* Ensures room for `extra` more bytes; 0 on success, -1 (and failed set) when out of memory. */
int tp_buf_reserve_slow(tp_buf *b, size_t extra);

static inline int tp_buf_reserve(tp_buf *b, size_t extra) {
    return b->cap - b->len >= extra ? 0 : tp_buf_reserve_slow(b, extra);
}
static inline void tp_buf_put(tp_buf *b, const void *p, size_t n) {
    if (n == 0 || tp_buf_reserve(b, n)) return; /* n == 0: data may still be NULL */
    memcpy(b->data + b->len, p, n);
    b->len += n;
}
static inline void tp_buf_putc(tp_buf *b, char c) {
    if (tp_buf_reserve(b, 1)) return;
    b->data[b->len++] = c;
}
#define TP_BUF_LIT(b, lit) tp_buf_put((b), (lit), sizeof(lit) - 1)

/* Word-at-a-time tests of 8 bytes at once, for the plain runs of strings (buf.c's writers,
 * util/jsonvalid.c's check). */
#define TP_BYTES_ONES  UINT64_C(0x0101010101010101)
#define TP_BYTES_HIGHS UINT64_C(0x8080808080808080)

/* The high bit of each byte of w that is below `below` (exact for the lowest such byte: a
 * borrow only comes from a lower byte that is below too). */
static inline uint64_t tp_bytes_below(uint64_t w, unsigned below) {
    return (w - TP_BYTES_ONES * below) & ~w & TP_BYTES_HIGHS;
}

/* The high bit of each byte of w that needs more than a plain copy in a JSON string: a control
 * byte (< 0x20), '"', '\\', DEL or a byte of a multi-byte sequence (>= 0x7f). Exact for the
 * lowest such byte (a carry or borrow only comes from a lower byte that is flagged too); above
 * it a false alarm only sends a byte through the byte loop, which decides exactly. */
static inline uint64_t tp_json_word_escape_bits(uint64_t w) {
    uint64_t high = (w | (w + TP_BYTES_ONES)) & TP_BYTES_HIGHS; /* a byte of 0x7f or more */
    return tp_bytes_below(w, 0x20) | high | tp_bytes_below(w ^ (TP_BYTES_ONES * '"'), 1) |
           tp_bytes_below(w ^ (TP_BYTES_ONES * '\\'), 1);
}

/* Whether any byte of w needs more than a plain copy in a JSON string. */
static inline int tp_json_word_escapes(uint64_t w) {
    return tp_json_word_escape_bits(w) != 0;
}

void tp_buf_puts(tp_buf *b, const char *s);
void tp_buf_printf(tp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tp_buf_u64(tp_buf *b, uint64_t v);
void tp_buf_i64(tp_buf *b, int64_t v);
/* Integer nanoseconds as decimal microseconds, exact, trailing zeros dropped: 12345 -> 12.345,
 * 12000 -> 12, -1500 -> -1.5. */
void tp_buf_us(tp_buf *b, int64_t ns);
/* The same without a buffer, for loops that reserve once for several numbers: each writes at
 * p, which must have TP_FMT_NUM_MAX bytes of room, and returns the end of what it wrote. */
#define TP_FMT_NUM_MAX 24
char *tp_fmt_u64(char *p, uint64_t v);
char *tp_fmt_i64(char *p, int64_t v);
char *tp_fmt_us(char *p, int64_t ns);
/* A double as a JSON number: the first of its %.15g, %.16g, %.17g forms that reads back the
 * same (fmt_double.c: exact, mostly without printf); NaN and infinities, which JSON cannot hold,
 * become null. tp_fmt_double needs TP_FMT_DOUBLE_MAX bytes of room. */
#define TP_FMT_DOUBLE_MAX 32
void tp_buf_double(tp_buf *b, double v);
char *tp_fmt_double(char *p, double v);
/* Whether byte c goes into a JSON string as it is: printable ASCII other than '"' and '\\'
 * (DEL is legal JSON, but Perfetto's tokenizer rejects any raw control byte). */
static inline int tp_json_plain_byte(unsigned char c) {
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}
/* A JSON string literal with quotes. Control characters (DEL too) are escaped; bytes that are
 * not valid UTF-8 become U+FFFD, so the output is always valid JSON whatever the input. */
void tp_buf_json_str(tp_buf *b, const char *s, size_t n);
/* Length of the valid UTF-8 sequence at s (n >= 1 bytes available), or 0 if it is not valid
 * (overlong forms, surrogates and code points past U+10FFFF are not). */
size_t tp_utf8_seq_len(const unsigned char *s, size_t n);
/* s[0..n) with every byte that is not valid UTF-8 as U+FFFD, as tp_buf_json_str does it, so
 * that every artifact spells a name the same way. */
void tp_buf_utf8(tp_buf *b, const char *s, size_t n);
static inline void tp_buf_json_cstr(tp_buf *b, const char *s) {
    tp_buf_json_str(b, s ? s : "", s ? strlen(s) : 0);
}

#endif
