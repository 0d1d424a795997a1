/* jsonvalid.c - the JSON well-formedness check (see jsonvalid.h).
 *
 * One left-to-right pass with an explicit stack of open containers, so hostile nesting costs
 * a bounded array, never the C stack. */
#include "util/jsonvalid.h"

#include "util/buf.h"

#include <string.h>

typedef struct cursor {
    const unsigned char *p, *end;
} cursor;

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static int is_hex(unsigned ch) {
    return (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f');
}

/* A string, c->p at its opening quote. */
static int scan_string(cursor *c) {
    const unsigned char *p = c->p + 1, *end = c->end;
    while (p < end) {
        uint64_t w; /* eight plain bytes at a time (args texts are long strings) */
        while (end - p >= 8 && (memcpy(&w, p, 8), !tp_json_word_escapes(w)))
            p += 8;
        if (p == end) break;
        unsigned ch = *p;
        if (ch == '"') {
            c->p = p + 1;
            return 1;
        }
        if (ch < 0x20 || ch == 0x7f) return 0;
        if (ch == '\\') {
            if (end - p < 2) return 0;
            ch = p[1];
            if (ch == 'u') {
                if (end - p < 6 || !is_hex(p[2]) || !is_hex(p[3]) || !is_hex(p[4]) || !is_hex(p[5]))
                    return 0;
                p += 6;
            } else if (ch != '\0' && strchr("\"\\/bfnrt", (int)ch)) {
                p += 2;
            } else {
                return 0;
            }
        } else if (ch < 0x80) {
            p++;
        } else {
            size_t len = tp_utf8_seq_len(p, (size_t)(end - p));
            if (!len) return 0;
            p += len;
        }
    }
    return 0;
}

static int scan_digits(cursor *c) {
    const unsigned char *start = c->p;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
        c->p++;
    return c->p > start;
}

static int at(const cursor *c, char ch) {
    return c->p < c->end && *c->p == (unsigned char)ch;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? ; a leading zero followed by digits fails
 * later, where a separator is expected. */
static int scan_number(cursor *c) {
    if (at(c, '-')) c->p++;
    if (at(c, '0'))
        c->p++;
    else if (!scan_digits(c))
        return 0;
    if (at(c, '.')) {
        c->p++;
        if (!scan_digits(c)) return 0;
    }
    if (at(c, 'e') || at(c, 'E')) {
        c->p++;
        if (at(c, '+') || at(c, '-')) c->p++;
        if (!scan_digits(c)) return 0;
    }
    return 1;
}

static int scan_word(cursor *c, const char *word, size_t n) {
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, word, n) != 0) return 0;
    c->p += n;
    return 1;
}

static int scan_scalar(cursor *c) {
    switch (*c->p) {
    case '"':
        return scan_string(c);
    case 't':
        return scan_word(c, "true", 4);
    case 'f':
        return scan_word(c, "false", 5);
    case 'n':
        return scan_word(c, "null", 4);
    default:
        return scan_number(c);
    }
}

/* `"key" :` opening an object member. */
static int scan_key(cursor *c) {
    skip_ws(c);
    if (!at(c, '"') || !scan_string(c)) return 0;
    skip_ws(c);
    if (!at(c, ':')) return 0;
    c->p++;
    return 1;
}

int tp_json_valid(const char *s, size_t n) {
    cursor c = {(const unsigned char *)s, (const unsigned char *)s + n};
    char close[TP_JSON_MAX_DEPTH]; /* the bracket that ends each open container */
    size_t depth = 0;
    for (;;) {
        /* A value starts here. */
        skip_ws(&c);
        if (c.p == c.end) return 0;
        if (*c.p == '{' || *c.p == '[') {
            if (depth == TP_JSON_MAX_DEPTH) return 0;
            close[depth++] = *c.p == '{' ? '}' : ']';
            c.p++;
            skip_ws(&c);
            if (!at(&c, close[depth - 1])) {
                if (close[depth - 1] == '}' && !scan_key(&c)) return 0;
                continue; /* the first member's value */
            }
            c.p++;
            depth--;
        } else if (!scan_scalar(&c)) {
            return 0;
        }
        /* A value ended: close containers until the next member or the end of the text. */
        for (;;) {
            skip_ws(&c);
            if (depth == 0) return c.p == c.end;
            if (at(&c, close[depth - 1])) {
                c.p++;
                depth--;
                continue;
            }
            if (!at(&c, ',')) return 0;
            c.p++;
            if (close[depth - 1] == '}' && !scan_key(&c)) return 0;
            break;
        }
    }
}
