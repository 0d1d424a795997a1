/* jsonvalid.c - the JSON well-formedness check (see jsonvalid.h).
 *
 * One left-to-right pass with an explicit stack of open containers, so hostile nesting costs
 * a bounded array, never the C stack. */
#include "util/jsonvalid.h"

#include "util/buf.h"

#include <assert.h>
#include <string.h>

/* Each step takes the position and returns the one after what it read, NULL when the text is
 * not JSON there: the position stays in a register (the Trace view checks megabytes of args
 * texts, whose whitespace and short tokens are most of the work). With z, the text is followed
 * by a NUL (tp_json_valid_z), which no step reads past (no JSON token holds one, and a string
 * refuses it), so the steps need not compare with the end at each byte. */
typedef const unsigned char *pos;

#define STEP static inline __attribute__((always_inline))

STEP pos skip_ws(pos p, pos end, int z) {
    while ((z || p < end) &&
           (*p == ' ' || (*p <= '\r' && (*p == '\n' || *p == '\t' || *p == '\r'))))
        p++;
    return p;
}

static int is_hex(unsigned ch) {
    return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
}

/* A string, p at its opening quote. */
STEP pos scan_string(pos p, pos end) {
    p++;
    while (p < end) {
        uint64_t w, bits = 0; /* eight plain bytes at a time (args texts are long strings) */
        while (end - p >= 8 && (memcpy(&w, p, 8), !(bits = tp_json_word_escape_bits(w))))
            p += 8;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        p += bits ? (size_t)__builtin_ctzll(bits) / 8 : 0; /* to the first byte flagged */
#endif
        if (p == end) break;
        unsigned ch = *p;
        if (ch == '"') return p + 1;
        if (ch < 0x20 || ch == 0x7f) return NULL;
        if (ch == '\\') {
            if (end - p < 2) return NULL;
            ch = p[1];
            if (ch == 'u') {
                if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5]))
                    return NULL;
                p += 6;
            } else if (ch != '\0' && strchr("\"\\/bfnrt", (int)ch)) {
                p += 2;
            } else {
                return NULL;
            }
        } else if (ch < 0x80) {
            p++;
        } else {
            size_t len = tp_utf8_seq_len(p, (size_t)(end - p));
            if (!len) return NULL;
            p += len;
        }
    }
    return NULL;
}

/* One or more digits. */
STEP pos scan_digits(pos p, pos end, int z) {
    pos start = p;
    while ((z || p < end) && *p >= '0' && *p <= '9')
        p++;
    return p > start ? p : NULL;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; a leading zero followed by digits fails
 * later, where a separator is expected. */
STEP pos scan_number(pos p, pos end, int z) {
    if ((z || p < end) && *p == '-') p++;
    if ((z || p < end) && *p == '0')
        p++;
    else if (!(p = scan_digits(p, end, z)))
        return NULL;
    if ((z || p < end) && *p == '.' && !(p = scan_digits(p + 1, end, z))) return NULL;
    if ((z || p < end) && (*p == 'e' || *p == 'E')) {
        p++;
        if ((z || p < end) && (*p == '+' || *p == '-')) p++;
        p = scan_digits(p, end, z);
    }
    return p;
}

STEP pos scan_word(pos p, pos end, const char *word, size_t n) {
    return (size_t)(end - p) >= n && memcmp(p, word, n) == 0 ? p + n : NULL;
}

/* A value other than an object or array, p at its first byte (p < end). */
STEP pos scan_scalar(pos p, pos end, int z) {
    switch (*p) {
    case '"':
        return scan_string(p, end);
    case 't':
        return scan_word(p, end, "true", 4);
    case 'f':
        return scan_word(p, end, "false", 5);
    case 'n':
        return scan_word(p, end, "null", 4);
    default:
        return scan_number(p, end, z);
    }
}

/* `"key" :` opening an object member. */
STEP pos scan_key(pos p, pos end, int z) {
    p = skip_ws(p, end, z);
    if (p == end || *p != '"' || !(p = scan_string(p, end))) return NULL;
    p = skip_ws(p, end, z);
    return p < end && *p == ':' ? p + 1 : NULL;
}

/* The check of [p, end), z as the steps take it. */
STEP int valid(pos p, pos end, int z) {
    unsigned char close[TP_JSON_MAX_DEPTH]; /* the bracket that ends each open container */
    size_t depth = 0;
    for (;;) {
        /* A value starts here. */
        p = skip_ws(p, end, z);
        if (p == end) return 0;
        if (*p == '{' || *p == '[') {
            if (depth == TP_JSON_MAX_DEPTH) return 0;
            close[depth++] = *p == '{' ? '}' : ']';
            p = skip_ws(p + 1, end, z);
            if (p == end || *p != close[depth - 1]) {
                if (close[depth - 1] == '}' && !(p = scan_key(p, end, z))) return 0;
                continue; /* the first member's value */
            }
            p++;
            depth--;
        } else if (!(p = scan_scalar(p, end, z))) {
            return 0;
        }
        /* A value ended: close containers until the next member or the end of the text. */
        for (;;) {
            p = skip_ws(p, end, z);
            if (depth == 0) return p == end;
            if (p < end && *p == close[depth - 1]) {
                p++;
                depth--;
                continue;
            }
            if (p == end || *p != ',') return 0;
            p++;
            if (close[depth - 1] == '}' && !(p = scan_key(p, end, z))) return 0;
            break;
        }
    }
}

int tp_json_valid(const char *s, size_t n) {
    return valid((pos)s, (pos)s + n, 0);
}

int tp_json_valid_z(const char *s, size_t n) {
    assert(s[n] == '\0');
    return valid((pos)s, (pos)s + n, 1);
}
