/* scan.h - the JSON scanner under the trace reader: a cursor over a padded buffer of input.
 *
 * Hand-written on purpose: a generic DOM parser holds the whole document (gigabytes here) and runs
 * 10-30x slower; the reader needs a few fields of each event and skips the rest without
 * materialising it. Functions return TP_SCAN_MORE when the data ends before the token does: the
 * caller refills the buffer and parses its unit (an event) again from its start.
 *
 * Invariant: buf[0..end) is input; end[0] == '"' and TP_SCAN_PAD bytes past end are readable, so
 * every inner loop stops at end without testing for it (a quote ends strings, tokens and
 * whitespace alike) and 16-byte vector loads never leave the allocation. */
#ifndef TP_SCAN_H
#define TP_SCAN_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

enum { TP_SCAN_PAD = 64 };

typedef enum tp_scan_rc {
    TP_SCAN_ERR = -1,
    TP_SCAN_OK = 0,
    TP_SCAN_MORE = 1, /* the input ends inside the token: refill and retry the unit */
    TP_SCAN_ITEM = 2, /* tp_scan_member, tp_scan_element: another item follows */
} tp_scan_rc;

/* Character classes (tp_scan_class): whitespace, the bytes that end a bare token, digits. */
enum { TP_CC_WS = 1, TP_CC_DELIM = 2, TP_CC_DIGIT = 4 };
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
    uint64_t origin; /* input offset of buf[0] */
    int eof;         /* no input follows end */
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
/* Marks buf[0..len) as the input that follows offset origin and writes the sentinel. */
void tp_scan_set_data(tp_scan *sc, size_t len);
/* Records an error at p (the first one wins) and returns TP_SCAN_ERR. */
int tp_scan_fail(tp_scan *sc, const char *at, const char *msg);
static inline uint64_t tp_scan_offset(const tp_scan *sc, const char *at) {
    return sc->origin + (uint64_t)(at - sc->buf);
}

static inline void tp_scan_ws(tp_scan *sc) {
    const unsigned char *p = (const unsigned char *)sc->p;
    while (tp_scan_class[*p] & TP_CC_WS) p++;
    sc->p = (const char *)p;
}

/* The string at p (which is at its opening quote). Raw control bytes and invalid UTF-8 are
 * accepted as they are. */
int tp_scan_string(tp_scan *sc, tp_jstr *out);
/* The bytes of s with escapes decoded (\uXXXX to UTF-8; lone surrogates and \u0000 become
 * U+FFFD). Points into s itself or into sc->tmp: valid until the next call. */
const char *tp_scan_text(tp_scan *sc, const tp_jstr *s, size_t *len);
/* 1 when s, decoded, equals lit. */
int tp_scan_str_eq(tp_scan *sc, const tp_jstr *s, const char *lit);

/* Steps through an object, after its '{': TP_SCAN_ITEM with *key set and p at the member's
 * value, or TP_SCAN_OK once the closing brace is consumed. *first is 1 before the first member
 * and is cleared only when a member is returned, so a caller can retry a unit. A trailing comma
 * is tolerated. */
int tp_scan_member(tp_scan *sc, int *first, tp_jstr *key);
/* The same through an array, after its '[': TP_SCAN_ITEM with p at the element, or TP_SCAN_OK
 * once the closing bracket is consumed. */
int tp_scan_element(tp_scan *sc, int *first);

/* Skips one value of any kind without validating what it holds beyond balanced brackets and
 * terminated strings: unknown fields are never errors. Iterative: nesting costs one byte per
 * level, up to TP_SCAN_MAX_DEPTH. With resume != NULL the skip can continue after a refill:
 * *resume moves past each complete token and the open brackets stay in sc->stack (the caller
 * sets sc->depth = 0 before the first call); without, a skip cut by the end of the data starts
 * over with its unit. */
enum { TP_SCAN_MAX_DEPTH = 1 << 20 };
int tp_scan_skip(tp_scan *sc, const char **resume);

/* A number at p into *out. Returns TP_SCAN_OK with *isnum = 1 for a JSON number, or *isnum = 0
 * for any other value (string, bare word such as N/A, object or array), which is skipped. */
int tp_scan_number(tp_scan *sc, tp_jnum *out, int *isnum);
/* round(value * 10^scale), half away from zero, into *out: 0, or -1 when |result| > limit. */
int tp_jnum_scaled(const tp_jnum *n, int scale, int64_t limit, int64_t *out);
/* The value as an int64 when integral and in range (returns 1), else as the nearest double
 * (returns 0). Integers beyond 64 bits become doubles. */
int tp_jnum_value(tp_scan *sc, const tp_jnum *n, int64_t *i, double *d);

#endif
