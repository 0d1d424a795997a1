/* fast.c - the event fast path (see fast.h): literals of the learned layout (layout.h) matched
 * where the writer repeats itself, members found from the index's quote bits where it does not,
 * values lexed where they stand, structures skipped along the bracket bits. */
#include "trace/fast.h"

#include "trace/layout.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The helpers are inlined into the member loop so the cursor stays in registers. */
#define HOT static inline __attribute__((always_inline))

/* Layout roots: events, then args for each tp_want. */
enum { ROOT_EVENT = 1, ROOT_ARGS = 2 };

/* How each step ends: read on, the object closed, the rest of the event is not needed (its
 * phase adds nothing), or the general path takes over. */
enum { F_DECLINE = -1, F_OK = 0, F_END, F_STOP };

typedef struct fast {
    tp_evread *er;
    tp_scan *sc;
    tp_evfields *f;
    tp_layout *ly;
    const char *end;
} fast;

HOT int is_ws(char c) {
    return tp_scan_class[(unsigned char)c] & TP_CC_WS;
}

HOT int is_delim(char c) {
    return tp_scan_class[(unsigned char)c] & TP_CC_DELIM;
}

/* Whether p[0 .. q) is whitespace around exactly `commas` commas (0 or 1). Writers mostly put
 * ", " or "," between members: those cost two compares. */
HOT int gap_is(const char *p, const char *q, int commas) {
    size_t n = (size_t)(q - p);
    if (commas && p[0] == ',' && (n == 1 || (n == 2 && p[1] == ' '))) return 1;
#ifdef __SSE2__
    if (n <= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p), ws = tp_scan_ws16(v);
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

/* A member the layout does not know, found the long way. *at is where its object's '{' or
 * the previous value ended. F_OK with the key and *value at the value's first byte, F_END with
 * *at past the closing brace, or F_DECLINE. */
HOT int member(fast *fs, const char **at, int first, tp_jstr *key, const char **value) {
    const char *q = tp_scan_closing_quote(fs->sc, *at - 1), *p; /* the next quote */
    if (gap_is(*at, q, !first)) {
        const char *close = tp_scan_closing_quote(fs->sc, q);
        if (close >= fs->end || close[1] != ':') return F_DECLINE;
        p = close + 2;
        p += *p == ' ';
        if (is_ws(*p)) p = tp_scan_ws_run(p);
        if (p >= fs->end) return F_DECLINE;
        key->s = q + 1;
        key->len = (uint32_t)(close - q - 1);
        key->esc = 0; /* tp_fast_event declines events that hold a backslash */
        *value = p;
        return F_OK;
    }
    p = tp_scan_ws_run(*at);
    if (*p != '}' || p >= fs->end) return F_DECLINE;
    *at = p + 1;
    return F_END;
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

/* The first delimiter (whitespace , : " [ ] { }) at or after p; the sentinel is one. Numbers
 * are most tokens: the first byte past a run of digits and points is tried first, and is
 * nearly always the delimiter. */
HOT const char *delimiter(const char *p) {
#ifdef __SSE2__
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    /* bytes from '.' to '9' (the '/' between is a token byte too) */
    __m128i run =
        _mm_cmpeq_epi8(_mm_subs_epu8(_mm_sub_epi8(v, _mm_set1_epi8('.')), _mm_set1_epi8('9' - '.')),
                       _mm_setzero_si128());
    unsigned other = ~(unsigned)_mm_movemask_epi8(run) & 0xffffu;
    if (other && is_delim(p[__builtin_ctz(other)])) return p + __builtin_ctz(other);
    for (;; p += 16) {
        v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i f = _mm_or_si128(v, _mm_set1_epi8(0x20)); /* [ { and ] } alike */
        __m128i d = _mm_or_si128(
            tp_scan_ws16(v),
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(',')),
                                      _mm_cmpeq_epi8(v, _mm_set1_epi8(':'))),
                         _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
                                      _mm_or_si128(_mm_cmpeq_epi8(f, _mm_set1_epi8('{')),
                                                   _mm_cmpeq_epi8(f, _mm_set1_epi8('}'))))));
        int m = _mm_movemask_epi8(d);
        if (m) return p + __builtin_ctz((unsigned)m);
    }
#else
    while (!is_delim(*p))
        p++;
    return p;
#endif
}

/* Whether the value at v is the one node n remembers. A node whose values change (a time, a
 * name) stops comparing for a while after a miss: the comparison would cost more than it saves. */
HOT int same_value(fast *fs, tp_layout_node *n, const char *v, int string) {
    if (!n || !n->val_mask) return 0;
    if (n->val_wait) {
        n->val_wait--;
        return 0;
    }
    if (!tp_layout_diff(v, n->val, n->val_mask) && v + n->val_len < fs->end &&
        (string || is_delim(v[n->val_len])))
        return 1;
    n->val_wait = 8;
    return 0;
}

/* A value at v into out (NULL: not needed): a string, a bare token (read as a number when it
 * is used) or a structure (skipped). n is its node, whose last value is tried first. */
HOT int value_at(fast *fs, tp_layout_node *n, const char *v, tp_jval *out, const char **at) {
    int string = *v == '"';
    size_t len;
    if (same_value(fs, n, v, string)) {
        len = n->val_len;
    } else {
        const char *e;
        if (string) {
            e = tp_scan_closing_quote(fs->sc, v) + 1;
        } else if (*v == '{' || *v == '[') {
            if (out) out->kind = TP_J_OTHER;
            const char *close = close_of(fs->sc, v, 0, 0);
            if (!close) return F_DECLINE;
            *at = close + 1;
            return F_OK;
        } else {
            e = delimiter(v);
            if (e == v) return F_DECLINE; /* no value: the general path says so */
        }
        if (e >= fs->end) return F_DECLINE; /* the data may go on: read it after a refill */
        len = (size_t)(e - v);
        if (n && !n->val_wait) { /* the next value is compared with this one */
            n->val_len = (uint8_t)len;
            n->val_mask = len <= TP_VAL_MAX ? tp_layout_mask(len) : 0;
            memcpy(n->val, v, TP_VAL_MAX);
        }
    }
    *at = v + len;
    if (out) {
        out->kind = string ? TP_J_STRING : TP_J_TOKEN;
        out->s.s = v + string;
        out->s.len = (uint32_t)(len - 2 * (size_t)string);
        out->s.esc = 0;
    }
    return F_OK;
}

static int object_at(fast *fs, uint32_t root, const char *open, const char **at);

/* The value of the member `what` at v; its key is in key, or in the literal of n at p. */
HOT int member_value(fast *fs, uint32_t root, int what, tp_layout_node *n, const tp_jstr *key,
                     const char *p, const char *v, const char **at) {
    tp_evfields *f = fs->f;
    tp_jval series;
    int rc;
    if (what < TP_NSLOTS) {
        if ((rc = value_at(fs, n, v, tp_ev_slot(f, what), at)) != F_OK || what != TP_S_PH)
            return rc;
        tp_ev_phase(fs->sc, f);
        /* Flows and other phases that add nothing: only the closing brace matters. */
        return root == ROOT_EVENT && f->ph_unused ? F_STOP : F_OK;
    }
    switch (what) {
    case TP_K_ARGS:
        /* after ph: the general path reads args that come first twice */
        if (!tp_ev_str(f, TP_S_PH)) return F_DECLINE;
        f->args = v;
        f->args_read = 1;
        if (f->want == TP_W_NONE || *v != '{') return value_at(fs, NULL, v, NULL, at);
        fs->er->ncargs = 0;
        return object_at(fs, ROOT_ARGS + (uint32_t)f->want, v, at);
    case TP_K_SERIES: {
        if ((rc = value_at(fs, n, v, &series, at)) != F_OK) return rc;
        tp_jstr named = n ? (tp_jstr){p + n->key_off, n->key_len, 0} : *key;
        /* out of memory: the general path says so */
        return tp_ev_series(fs->er, &named, &series) == TP_SCAN_OK ? F_OK : F_DECLINE;
    }
    default:
        return value_at(fs, n, v, NULL, at);
    }
}

/* What a member named key means in the objects under root. */
HOT int meaning(uint32_t root, const tp_jstr *key) {
    if (root == ROOT_EVENT) return tp_ev_field(key->s, key->len);
    return tp_ev_arg((int)(root - ROOT_ARGS), key->s, key->len);
}

/* The members of the object whose '{' is at open (an event under ROOT_EVENT, else args),
 * each through its layout literal when one matches, else found and learned. F_OK with *at past
 * the '}', F_STOP with *at past the phase that stops the event, or F_DECLINE. */
static int object_at(fast *fs, uint32_t root, const char *open, const char **at) {
    tp_layout *ly = fs->ly;
    const char *p = open + 1, *v;
    uint32_t node = root;
    for (int first = 1;; first = 0) {
        uint32_t next = tp_layout_match(ly, node, p);
        tp_layout_node *n = NULL;
        tp_jstr key;
        int what, rc;
        if (next) {
            n = &ly->nodes[next];
            v = p + n->lit_len;
            what = n->what;
        } else {
            const char *e = p;
            if ((rc = member(fs, &e, first, &key, &v)) == F_DECLINE) return rc;
            if (rc == F_END) {
                tp_layout_learn(ly, node, p, (size_t)(e - p), TP_LAYOUT_END, 0, 0);
                *at = e;
                return F_OK;
            }
            what = meaning(root, &key);
            next =
                tp_layout_learn(ly, node, p, (size_t)(v - p), what, (size_t)(key.s - p), key.len);
            n = next ? &ly->nodes[next] : NULL;
        }
        if (what == TP_LAYOUT_END) {
            *at = v;
            return F_OK;
        }
        node = next;
        if (what == TP_K_SKIP && *v != '{' && *v != '[') {
            /* The commonest member of all, an arg nobody needs: only where it ends matters. */
            const char *e = *v == '"' ? tp_scan_closing_quote(fs->sc, v) + 1 : delimiter(v);
            if (e == v || e >= fs->end) return F_DECLINE;
            p = e;
            continue;
        }
        if ((rc = member_value(fs, root, what, n, &key, p, v, &p)) != F_OK) {
            *at = p;
            return rc;
        }
    }
}

int tp_fast_event(tp_evread *er, tp_evfields *f) {
    tp_scan *sc = er->sc;
    fast fs = {er, sc, f, &er->layout, sc->end};
    const char *p;
    int rc = object_at(&fs, ROOT_EVENT, sc->p, &p);
    if (rc == F_DECLINE) return TP_FAST_DECLINED;
    /* Keys and strings were taken as written: one escape anywhere sends the event to the
     * general path, which decodes them. */
    if (tp_scan_has_bslash(sc, sc->p, p)) return TP_FAST_DECLINED;
    if (rc == F_STOP) {
        const char *close = close_of(sc, p, 1, 1);
        if (!close) return TP_FAST_DECLINED;
        p = close + 1;
    }
    sc->p = p;
    return TP_SCAN_OK;
}
