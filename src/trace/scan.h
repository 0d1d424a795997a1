/* scan.h - the JSON scanner under the trace reader: a cursor over a padded, indexed buffer.
 *
 * Hand-written on purpose: a generic DOM parser holds the whole document (gigabytes here) and runs
 * 10-30x slower; the reader needs a few fields of each event and skips the rest without
 * materialising it. Each fill of the buffer is indexed first (index.h: the quotes, brackets and
 * backslashes of every 64-byte block as bitmasks), so a string's end or a skipped structure's end
 * is found with bit operations. Functions return TP_SCAN_MORE when the data ends before the token
 * does: the caller refills the buffer and parses its unit (an event) again from its start.
 *
 * Invariant: buf[0..end) is input, indexed from buf[0] (outside any string); end[0] == '"' and
 * TP_SCAN_PAD bytes past end are readable quotes, so every inner loop stops at end without
 * testing for it (a quote ends strings, tokens and whitespace alike; the index has a quote within
 * end[0..1] and a bracket bit at end) and vector loads never leave the allocation. */
#ifndef TP_TRACE_SCAN_H
#define TP_TRACE_SCAN_H

#include "trace/index.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { TP_SCAN_PAD = 128 };

typedef enum tp_scan_rc {
    TP_SCAN_ERR = -1,
    TP_SCAN_OK = 0,
    TP_SCAN_MORE = 1, /* the input ends inside the token: refill and retry the unit */
    TP_SCAN_ITEM = 2, /* tp_scan_member, tp_scan_element: another item follows */
} tp_scan_rc;

/* Character classes (tp_scan_class): whitespace, and the bytes that end a bare token. */
enum { TP_CC_WS = 1, TP_CC_DELIM = 2 };
extern const uint8_t tp_scan_class[256];

/* A string as it appears between its quotes; esc says whether it holds backslash escapes. */
typedef struct tp_jstr {
    const char *s;
    uint32_t len;
    uint32_t esc;
} tp_jstr;

/* A JSON number as up to 19 significant digits: value = mant * 10^exp10 (negated when neg).
 * Of the digits that did not fit only the first matters (for rounding). */
typedef struct tp_jnum {
    const char *text; /* the number as written (inside the scanner's buffer) */
    uint32_t len;
    uint64_t mant;
    int32_t exp10;
    uint8_t neg;
    uint8_t ndigits;  /* significant digits kept in mant */
    uint8_t cut;      /* more significant digits followed */
    uint8_t dropped;  /* the first of them */
    uint8_t integral; /* written without fraction or exponent */
} tp_jnum;

typedef struct tp_scan {
    const char *p;   /* the cursor */
    const char *end; /* end of the input bytes in buf */
    char *buf;       /* cap bytes of room plus TP_SCAN_PAD */
    size_t cap;
    tp_ixblock *ix;         /* the index of buf[0 .. end + 64), rounded up to whole blocks */
    const char *open_quote; /* the quote of the string the data ends inside, else end */
    int bslash;             /* buf[0..end) holds a backslash somewhere (set with the index) */
    uint64_t origin;        /* input offset of buf[0] */
    int eof;                /* no input follows end */
    /* the first error: its position and a static message */
    const char *err_at;
    const char *err_msg;
    /* tp_scan_skip: the open brackets, innermost last ('{' or '[') */
    char *stack;
    size_t depth, cap_stack;
    tp_buf tmp; /* unescaped strings and number text, valid until the next use */
} tp_scan;

void tp_scan_init(tp_scan *sc);
void tp_scan_free(tp_scan *sc);
/* Makes room for cap bytes of input, keeping buf[0..end): 0, or -1 when out of memory. */
int tp_scan_reserve(tp_scan *sc, size_t cap);
/* Marks buf[0..len) as the input that follows offset origin, writes the sentinel and indexes
 * the buffer. */
void tp_scan_set_data(tp_scan *sc, size_t len);
/* Records an error at p (the first one wins) and returns TP_SCAN_ERR. */
int tp_scan_fail(tp_scan *sc, const char *at, const char *msg);
static inline uint64_t tp_scan_offset(const tp_scan *sc, const char *at) {
    return sc->origin + (uint64_t)(at - sc->buf);
}

#ifdef __SSE2__
/* The bytes of v that are whitespace (space, newline, tab, return): 0xff each. */
static inline __m128i tp_scan_ws16(__m128i v) {
    return _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
        _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                     _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
}
#endif

/* The first byte at or after p that is not whitespace (the sentinel is not). */
static inline const char *tp_scan_ws_run(const char *p) {
#ifdef __SSE2__
    for (;; p += 16) {
        __m128i ws = tp_scan_ws16(_mm_loadu_si128((const __m128i *)(const void *)p));
        unsigned other = ~(unsigned)_mm_movemask_epi8(ws) & 0xffffu;
        if (other) return p + __builtin_ctz(other);
    }
#else
    while (tp_scan_class[(unsigned char)*p] & TP_CC_WS)
        p++;
    return p;
#endif
}

/* Skips whitespace. Writers put one space after ':' and ',': that one costs no branch; longer
 * runs (newline and indentation) go 16 bytes at a time. */
static inline void tp_scan_ws(tp_scan *sc) {
    const char *p = sc->p;
    p += *p == ' ';
    if (__builtin_expect(tp_scan_class[(unsigned char)*p] & TP_CC_WS, 0)) p = tp_scan_ws_run(p);
    sc->p = p;
}

/* Whether buf[from .. to) holds a backslash. Most buffers hold none at all: then one test. */
static inline uint32_t tp_scan_has_bslash(const tp_scan *sc, const char *from, const char *to) {
    if (!sc->bslash || from >= to) return 0;
    size_t i = (size_t)(from - sc->buf), last = (size_t)(to - sc->buf) - 1;
    uint64_t m = sc->ix[i >> 6].bslash & (~0ULL << (i & 63));
    for (i >>= 6; i < last >> 6; m = sc->ix[++i].bslash)
        if (m) return 1;
    return (m & (~0ULL >> (63 - (last & 63)))) != 0;
}

/* The quote that closes the string opened at p: the next quote the index has. */
static inline const char *tp_scan_closing_quote(const tp_scan *sc, const char *p) {
    return sc->buf + tp_index_next(sc->ix, (size_t)(p - sc->buf) + 1, 0);
}

/* The first bracket outside strings at or after p (end at the latest). */
static inline const char *tp_scan_next_bracket(const tp_scan *sc, const char *p) {
    return sc->buf + tp_index_next(sc->ix, (size_t)(p - sc->buf), 1);
}

/* The string at p (which is at its opening quote). Raw control bytes and invalid UTF-8 are
 * accepted as they are. */
static inline int tp_scan_string(tp_scan *sc, tp_jstr *out) {
    const char *start = sc->p + 1, *p = tp_scan_closing_quote(sc, sc->p);
    if (p >= sc->end) return TP_SCAN_MORE;
    out->s = start;
    out->len = (uint32_t)(p - start); /* units are bounded far below 4 GB (reader.c) */
    out->esc = tp_scan_has_bslash(sc, start, p);
    sc->p = p + 1;
    return TP_SCAN_OK;
}
/* The bytes of s with escapes decoded (\uXXXX to UTF-8; lone surrogates and \u0000 become
 * U+FFFD). Points into s itself or into sc->tmp: valid until the next call. */
const char *tp_scan_text_slow(tp_scan *sc, const tp_jstr *s, size_t *len);
static inline const char *tp_scan_text(tp_scan *sc, const tp_jstr *s, size_t *len) {
    if (s->esc) return tp_scan_text_slow(sc, s, len);
    *len = s->len;
    return s->s;
}
/* 1 when s, decoded, equals lit[0..n). */
int tp_scan_str_eq_slow(tp_scan *sc, const tp_jstr *s, const char *lit, size_t n);
static inline int tp_scan_str_eq_n(tp_scan *sc, const tp_jstr *s, const char *lit, size_t n) {
    if (!s->esc) return s->len == n && memcmp(s->s, lit, n) == 0;
    return tp_scan_str_eq_slow(sc, s, lit, n);
}
/* The same for a string literal (anything else does not compile). */
#define tp_scan_str_eq(sc, s, lit) tp_scan_str_eq_n((sc), (s), "" lit, sizeof(lit) - 1)

/* Steps through an object, after its '{': TP_SCAN_ITEM with *key set and p at the member's
 * value, or TP_SCAN_OK once the closing brace is consumed. *first is 1 before the first member
 * and is cleared only when a member is returned, so a caller can retry a unit. A trailing comma
 * is tolerated. The inline part takes the common shape `, "key": `; the rest goes to
 * tp_scan_member_slow. */
int tp_scan_member_slow(tp_scan *sc, int *first, tp_jstr *key);
static inline int tp_scan_member(tp_scan *sc, int *first, tp_jstr *key) {
    const char *at = sc->p, *p = at;
    p += *p == ' ';
    if (*p == ',' && !*first) {
        p++;
        p += *p == ' ';
    } else if (!*first) {
        return tp_scan_member_slow(sc, first, key);
    }
    if (__builtin_expect(tp_scan_class[(unsigned char)*p] & TP_CC_WS, 0)) p = tp_scan_ws_run(p);
    if (*p != '"' || p >= sc->end) return tp_scan_member_slow(sc, first, key);
    sc->p = p;
    int rc = tp_scan_string(sc, key);
    if (rc) return rc;
    if (*sc->p != ':') {
        sc->p = at;
        return tp_scan_member_slow(sc, first, key);
    }
    sc->p++;
    tp_scan_ws(sc);
    if (sc->p == sc->end) return TP_SCAN_MORE;
    *first = 0;
    return TP_SCAN_ITEM;
}
/* The same through an array, after its '[': TP_SCAN_ITEM with p at the element, or TP_SCAN_OK
 * once the closing bracket is consumed. The inline part takes the common shape between the
 * events of a trace, a comma right after the element and whitespace; the rest goes to
 * tp_scan_element_slow. */
int tp_scan_element_slow(tp_scan *sc, int *first);
static inline int tp_scan_element(tp_scan *sc, int *first) {
    const char *p = sc->p;
    if (*first || *p != ',') return tp_scan_element_slow(sc, first);
    p++;
    p += *p == ' ';
    if (tp_scan_class[(unsigned char)*p] & TP_CC_WS) p = tp_scan_ws_run(p);
    if (p >= sc->end || *p == ']') return tp_scan_element_slow(sc, first);
    sc->p = p;
    return TP_SCAN_ITEM;
}

/* Skips one value of any kind without validating what it holds beyond balanced brackets and
 * terminated strings: unknown fields are never errors. Iterative: nesting costs one byte per
 * level, up to TP_SCAN_MAX_DEPTH. With resume != NULL the skip can continue after a refill:
 * *resume moves past each complete token and the open brackets stay in sc->stack (the caller
 * sets sc->depth = 0 before the first call); without, a skip cut by the end of the data starts
 * over with its unit. */
enum { TP_SCAN_MAX_DEPTH = 1 << 20 };
int tp_scan_skip(tp_scan *sc, const char **resume);
/* Skips the rest of the object p is in (between members) and its closing brace. */
int tp_scan_skip_rest(tp_scan *sc);
/* tp_scan_skip for a value inside a unit, with numbers and strings inline. */
static inline int tp_scan_skip_value(tp_scan *sc) {
    const unsigned char *p = (const unsigned char *)sc->p;
    if ((unsigned)(*p - '0') < 10 || *p == '-') {
        while (!(tp_scan_class[*p] & TP_CC_DELIM))
            p++;
        if ((const char *)p == sc->end) return TP_SCAN_MORE;
        sc->p = (const char *)p;
        return TP_SCAN_OK;
    }
    if (*p == '"') {
        tp_jstr s;
        return tp_scan_string(sc, &s);
    }
    return tp_scan_skip(sc, NULL);
}

/* The JSON number grammar at *pp (leniently: leading zeros pass) into *out, *pp moved past what
 * matched; 1 when a whole number matched (the caller checks what follows it). */
int tp_jnum_parse(const char **pp, tp_jnum *out);
/* A number at p into *out. Returns TP_SCAN_OK with *isnum = 1 for a JSON number, or *isnum = 0
 * for any other value (string, bare word such as N/A, object or array), which is skipped. */
int tp_scan_number(tp_scan *sc, tp_jnum *out, int *isnum);
/* round(value * 10^scale), half away from zero, into *out: 0, or -1 when |result| > limit. */
int tp_jnum_scaled(const tp_jnum *n, int scale, int64_t limit, int64_t *out);
/* 10^0 .. 10^19. */
extern const uint64_t tp_pow10_u64[20];

/* The leading ASCII digits of the 8 bytes at p: their count, and in *value their number. A
 * byte is a digit when its high nibble is 3 and adding 6 keeps it so; a carry out of a byte
 * only disturbs the bytes after it, which come after the first non-digit. The digits are then
 * moved to the top (as if after leading zeros) and joined in pairs, then the pairs in one step
 * of two multiplications (the first byte is the most significant digit). */
static inline unsigned tp_digits8(const unsigned char *p, uint64_t *value) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t nibble = 0xF0F0F0F0F0F0F0F0ULL, zeros = 0x3030303030303030ULL;
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t bad = ((w & nibble) ^ zeros) | (((w + 0x0606060606060606ULL) & nibble) ^ zeros);
    unsigned n = bad ? (unsigned)__builtin_ctzll(bad) >> 3 : 8;
    if (!n) {
        *value = 0;
        return 0;
    }
    uint64_t x = (w & 0x0F0F0F0F0F0F0F0FULL) << (8 * (8 - n));
    x = x * 10 + (x >> 8); /* pairs: byte 2i holds 10 * d(2i) + d(2i + 1) */
    /* then the four pairs at once: pairs 0 and 2 (bytes 0 and 4) times mul1, pairs 1 and 3
     * times mul2 put pair i times 10^(6 - 2i) in the top half, the bottom half cannot carry */
    const uint64_t pair = 0x000000FF000000FFULL, mul1 = 100 + (1000000ULL << 32),
                   mul2 = 1 + (10000ULL << 32);
    *value = ((x & pair) * mul1 + ((x >> 16) & pair) * mul2) >> 32;
    return n;
#else
    unsigned n = 0;
    uint64_t v = 0;
    while (n < 8 && (unsigned)(p[n] - '0') < 10)
        v = v * 10 + (unsigned)(p[n++] - '0');
    *value = v;
    return n;
#endif
}

/* round(value * 10^scale) for the text s[0 .. len) when it is a plain decimal
 * ([-]digits[.digits], at most 16 digits before the point; with scale 0, digits only) and
 * scale <= 3: 1 with *out set, else 0 (then read the text with tp_jnum_parse: both give the
 * same result where both apply). The common case of a trace's times, without the detour
 * through tp_jnum; inline, so that the reader's constant scale folds. s must have 8 bytes
 * readable past its end. */
static inline int tp_decimal_scaled(const char *s, size_t len, int scale, int64_t limit,
                                    int64_t *out) {
    const unsigned char *p = (const unsigned char *)s, *end = p + len;
    if (scale < 0 || scale > 3) return 0;
    int neg = *p == '-';
    p += neg;
    /* Up to 16 digits before the point, in two groups of eight at most. */
    uint64_t v, low;
    unsigned k = tp_digits8(p, &v);
    if (!k) return 0;
    p += k;
    if (k == 8 && (k = tp_digits8(p, &low)) != 0) {
        v = v * tp_pow10_u64[k] + low;
        p += k;
        if ((unsigned)(*p - '0') < 10) return 0; /* more than 16 */
    }
    uint64_t r = v * tp_pow10_u64[scale];
    if (p < end && *p == '.' && scale > 0) {
        uint64_t f, rest;
        k = tp_digits8(++p, &f);
        if (!k) return 0;
        p += k;
        if (k <= (unsigned)scale) {
            /* Kineto's three decimals at scale 3: exact, nothing to round */
            r += f * tp_pow10_u64[(unsigned)scale - k];
        } else {
            /* The first scale + 1 digits of the fraction: the last one rounds; the rest
             * only has to be digits. */
            unsigned kr = k;
            while (kr == 8) {
                kr = tp_digits8(p, &rest);
                p += kr;
            }
            uint64_t head = f / tp_pow10_u64[k - (unsigned)scale - 1];
            r += head / 10 + (head % 10 >= 5);
        }
    }
    if (p != end) return 0; /* an exponent, or not a number: the general reading decides */
    if (r > (uint64_t)limit) return 0;
    *out = neg ? -(int64_t)r : (int64_t)r;
    return 1;
}
/* The value as an int64 when integral and in range (returns 1), else as the nearest double
 * (returns 0). Integers beyond 64 bits become doubles. */
int tp_jnum_value(tp_scan *sc, const tp_jnum *n, int64_t *i, double *d);

#endif
