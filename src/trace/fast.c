/* fast.c - the event fast path (see fast.h): members found from the index's quote bits, values
 * lexed where they stand, structures skipped along its bracket bits. */
#include "trace/fast.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The helpers are inlined into the event loop so the cursor and the quote bits stay in
 * registers. */
#define HOT static inline __attribute__((always_inline))

/* How each step ends: the fast path reads on, an object closed, or the general path takes over. */
enum { F_DECLINE = -1, F_END = 0, F_OK = 1 };

/* The reader's state, in registers: its address never leaves the inlined helpers. */
typedef struct fast {
    tp_evread *er;
    tp_scan *sc;
    const char *end;
    /* The quotes not read yet: the bits qbits of the block at qbase (index entry qix), then all
     * of every later block. */
    const tp_ixblock *qix;
    const char *qbase;
    uint64_t qbits;
} fast;

/* The next quote not read yet. The padding's quotes end the loop past the data. */
HOT const char *quote_peek(fast *fs) {
    while (!fs->qbits) {
        fs->qbits = (++fs->qix)->quote;
        fs->qbase += 64;
    }
    return fs->qbase + __builtin_ctzll(fs->qbits);
}

HOT void quote_pop(fast *fs) {
    fs->qbits &= fs->qbits - 1;
}

/* Forgets the quotes before p. */
HOT void quote_seek(fast *fs, const char *p) {
    size_t at = (size_t)(p - fs->sc->buf);
    fs->qix = &fs->sc->ix[at >> 6];
    fs->qbase = fs->sc->buf + (at & ~(size_t)63);
    fs->qbits = fs->qix->quote & (~0ULL << (at & 63));
}

HOT int is_ws(char c) {
    return tp_scan_class[(unsigned char)c] & TP_CC_WS;
}

/* Whether p[0 .. q) is whitespace around exactly `commas` commas (0 or 1). Writers mostly put
 * ", " or "," between members: those cost two compares. */
HOT int gap_is(const char *p, const char *q, int commas) {
    size_t n = (size_t)(q - p);
    if (commas && p[0] == ',' && (n == 1 || (n == 2 && p[1] == ' '))) return 1;
#ifdef __SSE2__
    if (n <= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i ws = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\n'))),
                                  _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\t')),
                                               _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
        unsigned in = (1u << n) - 1;
        unsigned comma = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8(','))) & in;
        unsigned space = (unsigned)_mm_movemask_epi8(ws) & in;
        /* (comma & (comma - 1)) == 0: at most one */
        return (comma | space) == in && (comma != 0) == commas && (comma & (comma - 1)) == 0;
    }
#endif
    int seen = 0;
    for (; p < q; p++) {
        if (*p == ',')
            seen++;
        else if (!is_ws(*p))
            return 0;
    }
    return seen == commas;
}

/* The next member of the object being read. *at is where its '{' or the previous value ended.
 * F_OK with the key and *value at the value's first byte, F_END with *at past the closing
 * brace, or F_DECLINE. */
HOT int member(fast *fs, const char **at, int first, tp_jstr *key, const char **value) {
    const char *q = quote_peek(fs), *p;
    if (q >= *at && gap_is(*at, q, !first)) {
        quote_pop(fs);
        const char *close = quote_peek(fs);
        quote_pop(fs);
        if (close >= fs->end || close[1] != ':') return F_DECLINE;
        p = close + 2;
        p += *p == ' ';
        if (is_ws(*p)) p = tp_scan_ws_run(p);
        if (p >= fs->end) return F_DECLINE;
        key->s = q + 1;
        key->len = (uint32_t)(close - q - 1);
        key->esc = 0;
        *value = p;
        return F_OK;
    }
    p = tp_scan_ws_run(*at);
    if (*p != '}' || p >= fs->end) return F_DECLINE;
    *at = p + 1;
    return F_END;
}

/* The string value whose opening quote is at v. */
HOT int string_at(fast *fs, const char *v, tp_jstr *out, const char **at) {
    if (quote_peek(fs) != v) return F_DECLINE;
    quote_pop(fs);
    const char *close = quote_peek(fs);
    quote_pop(fs);
    if (close >= fs->end) return F_DECLINE;
    out->s = v + 1;
    out->len = (uint32_t)(close - v - 1);
    out->esc = 0; /* tp_fast_event declines events that hold a backslash */
    *at = close + 1;
    return F_OK;
}

/* The bracket that closes the structures open at p, from the bracket bits. stack holds one bit
 * per open level, innermost lowest, 1 for '{'. NULL when brackets do not match, nest deeper
 * than 64 or run into the end of the data: the general path says which. */
static const char *close_of(const tp_scan *sc, const char *p, uint64_t stack, unsigned depth) {
    for (;; p++) {
        p = tp_scan_next_bracket(sc, p);
        if (p >= sc->end) return NULL;
        if (*p == '{' || *p == '[') {
            if (depth == 64) return NULL;
            stack = stack << 1 | (*p == '{');
            depth++;
        } else {
            if ((stack & 1) != (*p == '}')) return NULL;
            stack >>= 1;
            if (--depth == 0) return p;
        }
    }
}

/* A bare token at v (a number, a word such as N/A): to the next delimiter. */
HOT int token_at(fast *fs, const char *v, const char **at) {
    const char *p = v;
    while (!(tp_scan_class[(unsigned char)*p] & TP_CC_DELIM))
        p++;
    if (p == v || p >= fs->end) return F_DECLINE; /* no value, or one the data may go on with */
    *at = p;
    return F_OK;
}

/* Any value, unread. */
HOT int skip_at(fast *fs, const char *v, const char **at) {
    tp_jstr s;
    if (*v == '"') return string_at(fs, v, &s, at);
    if (*v != '{' && *v != '[') return token_at(fs, v, at);
    const char *close = close_of(fs->sc, v, 0, 0);
    if (!close) return F_DECLINE;
    *at = close + 1;
    quote_seek(fs, *at);
    return F_OK;
}

/* Any value, lexed as the general path's lex_value does. */
HOT int value_at(fast *fs, const char *v, tp_jval *out, const char **at) {
    const char *p = v;
    out->kind = TP_J_OTHER;
    if (*v == '"') {
        out->kind = TP_J_STRING;
        return string_at(fs, v, &out->s, at);
    }
    if (*v == '{' || *v == '[') return skip_at(fs, v, at);
    if (!tp_jnum_parse(&p, &out->n) || !(tp_scan_class[(unsigned char)*p] & TP_CC_DELIM))
        return token_at(fs, v, at);
    if (p >= fs->end) return F_DECLINE;
    out->kind = TP_J_NUMBER;
    *at = p;
    return F_OK;
}

/* The args object at v, read for what the phase wants. */
HOT int args_at(fast *fs, tp_evfields *f, const char *v, const char **at) {
    if (f->want == TP_W_NONE || *v != '{') return skip_at(fs, v, at);
    fs->er->ncargs = 0;
    const char *p = v + 1, *val;
    for (int first = 1;; first = 0) {
        tp_jstr key;
        tp_jval jv;
        int rc = member(fs, &p, first, &key, &val);
        if (rc == F_END) break;
        if (rc != F_OK) return rc;
        int use = tp_ev_arg(f->want, key.s, key.len);
        if (use == TP_A_NONE)
            rc = skip_at(fs, val, &p);
        else if ((rc = value_at(fs, val, &jv, &p)) == F_OK &&
                 tp_ev_set_arg(fs->er, f, use, &key, &jv) != TP_SCAN_OK)
            rc = F_DECLINE; /* out of memory: the general path says so */
        if (rc != F_OK) return rc;
    }
    *at = p;
    return F_OK;
}

/* One member's value into f. */
HOT int field_at(fast *fs, tp_evfields *f, const tp_jstr *key, const char *v, const char **at) {
    int field = tp_ev_field(key->s, key->len), rc;
    tp_jval jv;
    switch (field) {
    case TP_F_OTHER:
        return skip_at(fs, v, at);
    case TP_F_ARGS:
        if (!f->ph.s) return F_DECLINE; /* args before ph: the general path reads them twice */
        f->args = v;
        f->args_read = 1;
        return args_at(fs, f, v, at);
    default:
        if ((rc = value_at(fs, v, &jv, at)) == F_OK) tp_ev_set_field(fs->sc, f, field, &jv);
        return rc;
    }
}

int tp_fast_event(tp_evread *er, tp_evfields *f) {
    tp_scan *sc = er->sc;
    fast fs = {er, sc, sc->end, NULL, NULL, 0};
    const char *p = sc->p + 1, *v;
    quote_seek(&fs, p);
    for (int first = 1;; first = 0) {
        tp_jstr key;
        int rc = member(&fs, &p, first, &key, &v);
        if (rc == F_END) break;
        if (rc != F_OK || field_at(&fs, f, &key, v, &p) != F_OK) return TP_FAST_DECLINED;
        if (f->ph_unused) break;
    }
    /* Keys and strings were taken as written: one escape anywhere sends the event to the
     * general path, which decodes them. */
    if (tp_scan_has_bslash(sc, sc->p, p)) return TP_FAST_DECLINED;
    if (f->ph_unused) {
        /* Flows and other phases that add nothing: only the closing brace matters. */
        const char *close = close_of(sc, p, 1, 1);
        if (!close) return TP_FAST_DECLINED;
        p = close + 1;
    }
    sc->p = p;
    return TP_SCAN_OK;
}
