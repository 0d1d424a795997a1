/* scan.c - the JSON scanner's buffer and tokens: strings, objects and arrays step by step,
 * skipped values and numbers kept exact (see scan.h). */
#include "trace/scan.h"

#include "util/vec.h"

#include <locale.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define WS (TP_CC_WS | TP_CC_DELIM)
#define DL TP_CC_DELIM
const uint8_t tp_scan_class[256] = {
    ['\t'] = WS, ['\n'] = WS, ['\r'] = WS, [' '] = WS, [','] = DL, [':'] = DL,
    ['['] = DL,  [']'] = DL,  ['{'] = DL,  ['}'] = DL, ['"'] = DL,
};
#undef WS
#undef DL

const uint64_t tp_pow10_u64[20] = {1ULL,
                                   10ULL,
                                   100ULL,
                                   1000ULL,
                                   10000ULL,
                                   100000ULL,
                                   1000000ULL,
                                   10000000ULL,
                                   100000000ULL,
                                   1000000000ULL,
                                   10000000000ULL,
                                   100000000000ULL,
                                   1000000000000ULL,
                                   10000000000000ULL,
                                   100000000000000ULL,
                                   1000000000000000ULL,
                                   10000000000000000ULL,
                                   100000000000000000ULL,
                                   1000000000000000000ULL,
                                   10000000000000000000ULL};

void tp_scan_init(tp_scan *sc) {
    memset(sc, 0, sizeof(*sc));
    tp_buf_init(&sc->tmp);
}

void tp_scan_free(tp_scan *sc) {
    free(sc->buf);
    free(sc->ix);
    free(sc->stack);
    tp_buf_free(&sc->tmp);
    memset(sc, 0, sizeof(*sc));
}

/* The index covers the input and the sentinel's first 64 bytes, in whole blocks. */
static size_t index_blocks(size_t len) {
    return (len + 64 + 63) / 64;
}

int tp_scan_reserve(tp_scan *sc, size_t cap) {
    size_t keep = sc->buf ? (size_t)(sc->end - sc->buf) : 0;
    char *buf = realloc(sc->buf, cap + TP_SCAN_PAD);
    if (!buf) return -1;
    sc->buf = buf;
    sc->end = buf + keep;
    tp_ixblock *ix = realloc(sc->ix, index_blocks(cap) * sizeof(*ix));
    if (!ix) return -1;
    sc->ix = ix;
    sc->cap = cap;
    return 0;
}

void tp_scan_set_data(tp_scan *sc, size_t len) {
    sc->end = sc->buf + len;
    /* All quotes: whatever a loop reads past end stops it there. */
    memset(sc->buf + len, '"', TP_SCAN_PAD);
    size_t open;
    sc->open_quote =
        tp_index_build(sc->ix, sc->buf, index_blocks(len), len, &open) ? sc->buf + open : sc->end;
    /* A bracket bit at end stops the bracket walks of the skips there. */
    sc->ix[len >> 6].bracket |= 1ULL << (len & 63);
    /* Whether any backslash is there: each event asks whether its bytes hold one (only then
     * are its strings decoded), and a buffer without any answers for all of them at once. The
     * padding past end holds quotes only. */
    uint64_t any = 0;
    for (size_t i = 0, n = index_blocks(len); i < n; i++)
        any |= sc->ix[i].bslash;
    sc->bslash = any != 0;
}

int tp_scan_fail(tp_scan *sc, const char *at, const char *msg) {
    if (!sc->err_msg) {
        sc->err_at = at;
        sc->err_msg = msg;
    }
    return TP_SCAN_ERR;
}

static int hex4(const char *s, size_t n, unsigned *out) {
    if (n < 4) return 0;
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            d = (unsigned)((c | 0x20) - 'a' + 10);
        else
            return 0;
        v = v * 16 + d;
    }
    *out = v;
    return 1;
}

static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* \uXXXX at s (n bytes left, s[0] == '\\', s[1] == 'u') as a code point, joining a surrogate
 * pair; *used gets the bytes consumed, 0 when the escape is malformed. Model strings are C
 * strings, so U+0000 and lone surrogates become U+FFFD. */
static unsigned unicode_escape(const char *s, size_t n, size_t *used) {
    unsigned cp, lo;
    *used = 0;
    if (!hex4(s + 2, n - 2, &cp)) return 0;
    *used = 6;
    if (cp >= 0xd800 && cp <= 0xdbff && n >= 12 && s[6] == '\\' && s[7] == 'u' &&
        hex4(s + 8, n - 8, &lo) && lo >= 0xdc00 && lo <= 0xdfff) {
        *used = 12;
        return 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
    }
    return cp == 0 || (cp >= 0xd800 && cp <= 0xdfff) ? 0xfffd : cp;
}

/* Decodes s[0..n) into out (room for n bytes: no escape grows). An invalid escape is kept as
 * written. Returns the decoded length. */
static size_t unescape(char *out, const char *s, size_t n) {
    char *o = out;
    size_t i = 0;
    while (i < n) {
        if (s[i] != '\\' || i + 1 == n) {
            *o++ = s[i++];
            continue;
        }
        char c = s[i + 1], plain = 0;
        switch (c) {
        case '"':
        case '\\':
        case '/':
            plain = c;
            break;
        case 'b':
            plain = '\b';
            break;
        case 'f':
            plain = '\f';
            break;
        case 'n':
            plain = '\n';
            break;
        case 'r':
            plain = '\r';
            break;
        case 't':
            plain = '\t';
            break;
        case 'u': {
            size_t used;
            unsigned cp = unicode_escape(s + i, n - i, &used);
            if (used) {
                o += put_utf8(o, cp);
                i += used;
                continue;
            }
            break;
        }
        default:
            break;
        }
        if (plain) {
            *o++ = plain;
            i += 2;
        } else {
            *o++ = s[i++]; /* a backslash that escapes nothing valid stays */
        }
    }
    return (size_t)(o - out);
}

const char *tp_scan_text_slow(tp_scan *sc, const tp_jstr *s, size_t *len) {
    if (tp_buf_reserve(&sc->tmp, s->len + 1)) {
        *len = s->len;
        return s->s;
    }
    *len = unescape(sc->tmp.data, s->s, s->len);
    sc->tmp.data[*len] = '\0';
    return sc->tmp.data;
}

int tp_scan_str_eq_slow(tp_scan *sc, const tp_jstr *s, const char *lit, size_t litlen) {
    size_t n;
    const char *t = tp_scan_text(sc, s, &n);
    return n == litlen && memcmp(t, lit, n) == 0;
}

/* Member and element steps share this: after an item, a comma (then possibly the closer: a
 * trailing comma is tolerated) or the closer. */
static inline int next_item(tp_scan *sc, const int *first, char closer, const char *msg) {
    tp_scan_ws(sc);
    if (sc->p == sc->end) return TP_SCAN_MORE;
    if (*sc->p == closer) {
        sc->p++;
        return TP_SCAN_OK;
    }
    if (!*first) {
        if (*sc->p != ',') return tp_scan_fail(sc, sc->p, msg);
        sc->p++;
        tp_scan_ws(sc);
        if (sc->p == sc->end) return TP_SCAN_MORE;
        if (*sc->p == closer) {
            sc->p++;
            return TP_SCAN_OK;
        }
    }
    return TP_SCAN_ITEM;
}

int tp_scan_member_slow(tp_scan *sc, int *first, tp_jstr *key) {
    int rc = next_item(sc, first, '}', "expected ',' or '}' in an object");
    if (rc != TP_SCAN_ITEM) return rc;
    if (*sc->p != '"') return tp_scan_fail(sc, sc->p, "expected a string key in an object");
    rc = tp_scan_string(sc, key);
    if (rc) return rc;
    tp_scan_ws(sc);
    if (sc->p == sc->end) return TP_SCAN_MORE;
    if (*sc->p != ':') return tp_scan_fail(sc, sc->p, "expected ':' after a key");
    sc->p++;
    tp_scan_ws(sc);
    if (sc->p == sc->end) return TP_SCAN_MORE;
    *first = 0;
    return TP_SCAN_ITEM;
}

int tp_scan_element_slow(tp_scan *sc, int *first) {
    int rc = next_item(sc, first, ']', "expected ',' or ']' in an array");
    if (rc == TP_SCAN_ITEM) *first = 0;
    return rc;
}

/* A bare token (a number, true, N/A, ...): up to the next delimiter. */
static int skip_token(tp_scan *sc) {
    const unsigned char *p = (const unsigned char *)sc->p;
    while (!(tp_scan_class[*p] & TP_CC_DELIM))
        p++;
    if ((const char *)p == sc->end) return TP_SCAN_MORE;
    if ((const char *)p == sc->p) return tp_scan_fail(sc, sc->p, "expected a value");
    sc->p = (const char *)p;
    return TP_SCAN_OK;
}

static int skip_bracket(tp_scan *sc, char c) {
    if (c == '{' || c == '[') {
        if (sc->depth >= TP_SCAN_MAX_DEPTH)
            return tp_scan_fail(sc, sc->p, "nesting deeper than 1048576 levels");
        if (TP_GROW(sc->stack, sc->cap_stack, sc->depth + 1))
            return tp_scan_fail(sc, sc->p, "out of memory");
        sc->stack[sc->depth++] = c;
    } else {
        if (sc->depth == 0) return tp_scan_fail(sc, sc->p, "expected a value");
        if ((c == '}') != (sc->stack[sc->depth - 1] == '{'))
            return tp_scan_fail(sc, sc->p, "mismatched bracket");
        sc->depth--;
    }
    sc->p++;
    return TP_SCAN_OK;
}

/* The skip itself, from the brackets already open in sc->stack. Inside a structure it goes from
 * bracket to bracket: the strings, numbers and commas between change nothing, so a resumable
 * skip cut by the end of the data resumes at the end, or at the quote of a string cut there. */
static int skip_from(tp_scan *sc, const char **resume) {
    for (;;) {
        int rc;
        if (sc->depth == 0) {
            tp_scan_ws(sc);
            if (sc->p == sc->end) return TP_SCAN_MORE;
            char c = *sc->p;
            if (c == '"') {
                tp_jstr s;
                rc = tp_scan_string(sc, &s);
            } else if (c == '{' || c == '[') {
                rc = skip_bracket(sc, c);
            } else {
                rc = skip_token(sc); /* "expected a value" for } ] , : */
            }
        } else {
            const char *q = tp_scan_next_bracket(sc, sc->p);
            if (q >= sc->end) {
                if (resume) *resume = sc->open_quote;
                return TP_SCAN_MORE;
            }
            sc->p = q;
            rc = skip_bracket(sc, *q);
        }
        if (rc) return rc;
        if (resume) *resume = sc->p;
        if (sc->depth == 0) return TP_SCAN_OK;
    }
}

int tp_scan_skip(tp_scan *sc, const char **resume) {
    if (!resume) sc->depth = 0;
    return skip_from(sc, resume);
}

int tp_scan_skip_rest(tp_scan *sc) {
    sc->depth = 0;
    if (TP_GROW(sc->stack, sc->cap_stack, 1)) return tp_scan_fail(sc, sc->p, "out of memory");
    sc->stack[sc->depth++] = '{';
    return skip_from(sc, NULL);
}

static inline int is_digit(unsigned char c) {
    return (unsigned)(c - '0') < 10;
}

/* One digit of a number with more than 19: only the first 19 count, the next rounds. */
static inline void add_digit(tp_jnum *n, unsigned d, int frac) {
    if (n->ndigits < 19) {
        n->mant = n->mant * 10 + d;
        n->ndigits++;
        n->exp10 -= frac;
    } else {
        if (!n->cut) n->dropped = (uint8_t)d;
        n->cut = 1;
        n->exp10 += !frac;
    }
}

/* The digits of p[0..len) (integer part) and f[0..flen) (fraction) when together they exceed
 * 19, leading zeros dropped. */
static void long_digits(tp_jnum *n, const unsigned char *p, size_t len, const unsigned char *f,
                        size_t flen) {
    n->mant = 0;
    n->ndigits = 0;
    n->exp10 = 0;
    for (size_t i = 0; i < len; i++)
        if (n->ndigits || p[i] != '0') add_digit(n, (unsigned)(p[i] - '0'), 0);
    for (size_t i = 0; i < flen; i++) {
        if (n->ndigits || f[i] != '0')
            add_digit(n, (unsigned)(f[i] - '0'), 1);
        else
            n->exp10--; /* a leading zero of the fraction still moves the point */
    }
}

/* A run of digits at *pp, eight at a time, appended to *v (which wraps past 19 digits: the
 * caller then reads them again with long_digits). Returns the count. */
static inline size_t digit_run(const unsigned char **pp, uint64_t *v) {
    const unsigned char *p = *pp;
    uint64_t chunk;
    unsigned k;
    while ((k = tp_digits8(p, &chunk)) == 8) {
        *v = *v * 100000000ULL + chunk;
        p += 8;
    }
    *v = *v * tp_pow10_u64[k] + chunk;
    p += k;
    size_t n = (size_t)(p - *pp);
    *pp = p;
    return n;
}

/* The JSON number grammar at p (leniently: leading zeros pass); 1 when it is one. The common
 * case, at most 19 digits, accumulates in one pass; ndigits then counts leading zeros too,
 * which keeps it an upper bound of the significant digits. */
static int number_syntax(const unsigned char **pp, tp_jnum *n) {
    const unsigned char *p = *pp;
    if (*p == '-') {
        n->neg = 1;
        p++;
    }
    const unsigned char *ip = p, *fp = p;
    uint64_t v = 0;
    size_t ni = digit_run(&p, &v), nf = 0;
    if (!ni) return 0;
    if (*p == '.') {
        fp = ++p;
        nf = digit_run(&p, &v);
        if (!nf) return 0;
        n->integral = 0;
    }
    if (ni + nf <= 19) {
        n->mant = v;
        n->ndigits = (uint8_t)(ni + nf);
        n->exp10 = -(int32_t)nf;
    } else {
        long_digits(n, ip, ni, fp, nf);
    }
    if ((*p | 0x20) == 'e') {
        p++;
        int eneg = *p == '-';
        if (*p == '-' || *p == '+') p++;
        if (!is_digit(*p)) return 0;
        int32_t e = 0;
        for (; is_digit(*p); p++)
            if (e < 100000000) e = e * 10 + (*p - '0');
        n->exp10 += eneg ? -e : e;
        n->integral = 0;
    }
    *pp = p;
    return 1;
}

int tp_jnum_parse(const char **pp, tp_jnum *n) {
    const unsigned char *p = (const unsigned char *)*pp;
    n->neg = n->cut = n->dropped = 0;
    n->integral = 1;
    int ok = number_syntax(&p, n);
    n->text = *pp;
    n->len = (uint32_t)((const char *)p - *pp);
    *pp = (const char *)p;
    return ok;
}

int tp_scan_number(tp_scan *sc, tp_jnum *n, int *isnum) {
    *isnum = 0;
    char c = *sc->p;
    if (c == '"' || c == '{' || c == '[') return tp_scan_skip(sc, NULL);
    const char *p = sc->p;
    int ok = tp_jnum_parse(&p, n);
    if (p == sc->end) return TP_SCAN_MORE;
    if (!ok || !(tp_scan_class[(unsigned char)*p] & TP_CC_DELIM))
        return skip_token(sc); /* N/A, true, 1.2.3 */
    sc->p = p;
    *isnum = 1;
    return TP_SCAN_OK;
}

int tp_jnum_scaled(const tp_jnum *n, int scale, int64_t limit, int64_t *out) {
    uint64_t v;
    int64_t e = (int64_t)n->exp10 + scale;
    if (n->mant == 0 || -e > n->ndigits) {
        v = 0; /* zero, or below a tenth of the unit */
    } else if (e >= 0) {
        if (e > 19 || n->mant > UINT64_MAX / tp_pow10_u64[e]) return -1;
        v = n->mant * tp_pow10_u64[e];
        /* Only here can digits beyond the nineteenth decide the rounding. */
        if (e == 0 && n->cut && n->dropped >= 5) v++;
    } else {
        uint64_t p10 = tp_pow10_u64[-e];
        v = n->mant / p10 + (n->mant % p10 >= p10 / 2);
    }
    if (v > (uint64_t)limit) return -1;
    *out = n->neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;
static void c_locale_init(void) {
    c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

int tp_jnum_value(tp_scan *sc, const tp_jnum *n, int64_t *i, double *d) {
    static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                           1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                           1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    if (n->integral && !n->cut && n->mant <= (uint64_t)INT64_MAX + n->neg) {
        *i = n->neg ? (int64_t)(0 - n->mant) : (int64_t)n->mant;
        return 1;
    }
    /* Exact operands give a correctly rounded result (Clinger's fast path). */
    if (!n->cut && n->ndigits <= 15 && n->exp10 >= -22 && n->exp10 <= 22) {
        double v = (double)n->mant;
        v = n->exp10 < 0 ? v / pow10_exact[-n->exp10] : v * pow10_exact[n->exp10];
        *d = n->neg ? -v : v;
        return 0;
    }
    /* The rest through the C library, in the C locale whatever the host set (a comma as the
     * decimal point would stop strtod at the dot). */
    if (tp_buf_reserve(&sc->tmp, n->len + 1)) {
        *d = 0;
        return 0;
    }
    memcpy(sc->tmp.data, n->text, n->len);
    sc->tmp.data[n->len] = '\0';
    pthread_once(&c_locale_once, c_locale_init);
    *d = c_locale ? strtod_l(sc->tmp.data, NULL, c_locale) : strtod(sc->tmp.data, NULL);
    return 0;
}
