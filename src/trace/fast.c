/* fast.c - the event fast path (see fast.h): literals of the learned layout (layout.h) matched
 * where the writer repeats itself, members found from the index's quote bits where it does not,
 * values lexed where they stand, structures skipped along the bracket bits. */
#include "trace/fast.h"

#include "trace/layout.h"

#include <assert.h>

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
static int member(fast *fs, const char **at, int first, tp_jstr *key, const char **value) {
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

/* The first delimiter (whitespace , : " [ ] { }) at or after p; the sentinel is one. */
static const char *delimiter_search(const char *p) {
#ifdef __SSE2__
    for (;; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
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

/* The same, for the token at p. Numbers are most tokens: the run of digits and points is
 * passed 16 bytes at a time (a Kineto ts has 17), and the byte after it is nearly always the
 * delimiter; anything else in a token (an exponent, N/A) goes to delimiter_search. */
HOT const char *delimiter(const char *p) {
#ifdef __SSE2__
    unsigned other;
    for (;; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        /* bytes from '.' to '9' (the '/' between is a token byte too) */
        __m128i run = _mm_cmpeq_epi8(
            _mm_subs_epu8(_mm_sub_epi8(v, _mm_set1_epi8('.')), _mm_set1_epi8('9' - '.')),
            _mm_setzero_si128());
        other = ~(unsigned)_mm_movemask_epi8(run) & 0xffffu;
        if (other) break; /* the sentinel is no digit: the loop ends there at the latest */
    }
    p += __builtin_ctz(other);
    return is_delim(*p) ? p : delimiter_search(p);
#else
    return delimiter_search(p);
#endif
}

/* The end of the string or bare token at v (a number, true, N/A), or NULL when there is no
 * value there or it runs into the end of the data (read it after a refill). */
HOT const char *scalar_end(const fast *fs, const char *v) {
    const char *e = *v == '"' ? tp_scan_closing_quote(fs->sc, v) + 1 : delimiter(v);
    return e == v || e >= fs->end ? NULL : e;
}

static int object_at(fast *fs, uint32_t root, const char *open, const char **at);

/* The args object at v: read under the root of its event's phase when it needs some of them,
 * else skipped. */
static const char *args_at(fast *fs, const char *v) {
    const tp_evfields *f = fs->f;
    const char *e;
    if (!tp_ev_str(f, TP_S_PH)) return NULL; /* the general path reads args that come first */
    if (f->want == TP_W_NONE || *v != '{') {
        if (*v != '{' && *v != '[') return scalar_end(fs, v);
        e = close_of(fs->sc, v, 0, 0);
        return e ? e + 1 : NULL;
    }
    fs->er->ncargs = 0; /* a repeated args member: the last counts */
    return object_at(fs, ROOT_ARGS + (uint32_t)f->want, v, &e) == F_OK ? e : NULL;
}

/* After ph was stored: F_STOP when its phase adds nothing (flows and the like: only the
 * closing brace matters then), else F_OK. */
HOT int after_phase(fast *fs) {
    tp_ev_phase(fs->sc, fs->f);
    return fs->f->ph_unused ? F_STOP : F_OK;
}

/* A member's value at v stored as `what` says: F_OK with *at past it, F_STOP when it was a
 * phase that needs nothing more, or F_DECLINE. key is the member's name. */
HOT int member_value(fast *fs, int what, const tp_jstr *key, const char *v, const char **at) {
    const char *e;
    if (*v == '{' || *v == '[') {
        if (what == TP_K_ARGS) {
            e = args_at(fs, v);
        } else {
            e = close_of(fs->sc, v, 0, 0);
            e = e ? e + 1 : NULL;
            if (what < TP_NSLOTS) {
                tp_jval *out = tp_ev_slot(fs->f, what);
                int keep = *v == '[' && e && tp_slot_keeps_array(what);
                out->kind = keep ? TP_J_ARRAY : TP_J_OTHER;
                if (keep) out->s = (tp_jstr){v, (uint32_t)(e - v), 0};
            }
        }
    } else if (what == TP_K_ARGS) {
        e = args_at(fs, v);
    } else {
        e = scalar_end(fs, v);
        if (!e) return F_DECLINE;
        tp_jval series, *out = what < TP_NSLOTS ? tp_ev_slot(fs->f, what) : &series;
        int string = *v == '"';
        out->kind = string ? TP_J_STRING : TP_J_TOKEN;
        out->s = (tp_jstr){v + string, (uint32_t)((size_t)(e - v) - (string ? 2u : 0u)), 0};
        /* out of memory: the general path says so */
        if (what == TP_K_SERIES && tp_ev_series(fs->er, key, out) != TP_SCAN_OK) return F_DECLINE;
    }
    if (!e) return F_DECLINE;
    if (what == TP_K_ARGS) fs->f->args = v, fs->f->args_end = e;
    *at = e;
    return what == TP_S_PH ? after_phase(fs) : F_OK;
}

/* How object_at reads the value after a literal (tp_layout_meaning.op), chosen once when the
 * literal is learned. */
enum {
    OP_NONE,        /* no literal: node 0 (its empty mask matches anything) and the roots */
    OP_STRING,      /* a string into slot (the literal holds its opening quote) */
    OP_PHASE,       /* the same for ph, whose phase then says what else is needed */
    OP_TOKEN,       /* a bare token (a number, mostly) into slot as its text */
    OP_SKIP_STRING, /* a string nobody needs */
    OP_SKIP_TOKEN,  /* a bare token nobody needs */
    OP_END,         /* the closing brace */
    OP_ARGS,        /* args: an object read by the same loop, under its phase's root */
    OP_OTHER,       /* anything else: member_value */
};

/* How a member meaning `what` is read when its literal matches; string: the literal holds the
 * value's opening quote. */
static uint8_t op_of(int what, int string) {
    if (what == TP_LAYOUT_END) return OP_END;
    if (what == TP_S_PH) return string ? OP_PHASE : OP_OTHER;
    if (what == TP_K_ARGS) return OP_ARGS;
    if (what == TP_K_SERIES) return OP_OTHER; /* a counter's numeric args become series */
    if (what == TP_K_SKIP) return string ? OP_SKIP_STRING : OP_SKIP_TOKEN;
    assert(what < TP_NSLOTS);
    return string ? OP_STRING : OP_TOKEN;
}

HOT void store(tp_evfields *f, unsigned slot, int kind, const char *s, const char *e) {
    tp_jval *out = tp_ev_slot(f, (int)slot);
    out->kind = kind;
    out->s = (tp_jstr){s, (uint32_t)(e - s), 0};
}

/* What a member named key means in the objects under root. */
HOT int meaning(uint32_t root, const tp_jstr *key) {
    if (root == ROOT_EVENT) return tp_ev_field(key->s, key->len);
    return tp_ev_arg((int)(root - ROOT_ARGS), key->s, key->len);
}

/* The member at p (where the previous value, or the object's '{', ended) when the layout's
 * latest literal after *node does not start it: another successor, or the member found the
 * long way and learned. F_OK with *node, *v (its value) and *what; F_END with *v past the
 * closing brace; or F_DECLINE. */
static int other_member(fast *fs, uint32_t root, int first, const char *p, uint32_t *node,
                        tp_jstr *key, const char **v, int *what) {
    tp_layout *ly = fs->ly;
    tp_layout_node *n = tp_layout_match(ly, *node, p, node);
    if (n) {
        *key = (tp_jstr){p + n->m.key_off, n->m.key_len, 0};
        *v = tp_layout_value(n, p);
        *what = n->m.what;
        return *what == TP_LAYOUT_END ? F_END : F_OK;
    }
    const char *e = p;
    int rc = member(fs, &e, first, key, v);
    if (rc == F_DECLINE) return rc;
    if (rc == F_END) {
        tp_layout_meaning end = {.what = TP_LAYOUT_END, .op = OP_END};
        tp_layout_learn(ly, *node, p, (size_t)(e - p), &end);
        *v = e;
        return F_END;
    }
    *what = meaning(root, key);
    /* A string value's opening quote joins the literal when it fits (layout.h). */
    size_t len = (size_t)(*v - p);
    int string = **v == '"' && len < TP_LIT_MAX;
    tp_layout_meaning m = {(uint8_t)*what,       (uint8_t)(key->s - p),
                           (uint8_t)key->len,    (uint8_t)string,
                           op_of(*what, string), (uint8_t)(*what < TP_NSLOTS ? *what : 0)};
    *node = tp_layout_learn(ly, *node, p, len + (size_t)string, &m);
    return F_OK;
}

/* The members of the object whose '{' is at open (an event under ROOT_EVENT, else args),
 * each through its layout literal when one matches, else found and learned. F_OK with *at past
 * the '}', F_STOP with *at past the phase that stops the event, or F_DECLINE.
 *
 * The loop is the reader's hottest, so the common members are read here, hand-inlined, by
 * the op their literal was learned with (one dispatch, no test of the value's type): a string
 * costs the literal comparison, one quote-bit search and a store; a number (or any bare token)
 * the comparison, one delimiter search and a store; a skipped one the same without the store.
 * An event's args object is read by the same loop (its members under the phase's root, then
 * back to the event's node), not by a call per event. Structures, counter series and anything
 * unusual go to member_value, and a literal that does not match to other_member. */
static int object_at(fast *fs, uint32_t root, const char *open, const char **at) {
    const tp_layout_node *nodes = fs->ly->nodes;
    const char *p = open + 1, *obj = open, *v, *e;
    /* The node of the last literal (a pointer: one load less per member than its number),
     * and while an event's args are read, the event's node and '{' */
    const tp_layout_node *cur = &nodes[root], *outer = NULL;
    const char *outer_obj = NULL;
    for (;;) {
        const tp_layout_node *n = &nodes[cur->next[0]];
        int matched = !tp_layout_diff(p, n->lit, n->lit_mask); /* node 0 always: op NONE */
        int ended = 0;
        tp_jstr key;
        int what, rc;
        if (__builtin_expect(matched, 1)) {
            v = p + n->lit_len;
            switch (n->m.op) {
            case OP_PHASE:
                /* Mostly one letter: its closing quote follows it (unless the letter is a
                 * quote or escapes one), and the letter says what the phase wants. */
                if (v[1] == '"' && v[0] != '"' && v[0] != '\\' && v + 1 < fs->end) {
                    store(fs->f, TP_S_PH, TP_J_STRING, v, v + 1);
                    tp_ev_phase_letter(fs->f, (unsigned char)v[0]);
                    cur = n;
                    p = v + 2;
                    if (!fs->f->ph_unused) continue;
                    *at = p;
                    return F_STOP;
                }
                /* fall through */
            case OP_STRING:
                e = tp_scan_closing_quote(fs->sc, v - 1); /* the literal holds the opening one */
                if (e >= fs->end) return F_DECLINE;
                store(fs->f, n->m.slot, TP_J_STRING, v, e);
                cur = n;
                p = e + 1;
                if (n->m.op == OP_STRING || after_phase(fs) == F_OK) continue;
                *at = p;
                return F_STOP;
            case OP_TOKEN:
                e = delimiter(v);
                if (e == v) break; /* no bare token: member_value reads it */
                if (e >= fs->end) return F_DECLINE;
                store(fs->f, n->m.slot, TP_J_TOKEN, v, e);
                cur = n;
                p = e;
                continue;
            case OP_SKIP_STRING:
                e = tp_scan_closing_quote(fs->sc, v - 1);
                if (e >= fs->end) return F_DECLINE;
                cur = n;
                p = e + 1;
                continue;
            case OP_SKIP_TOKEN:
                e = delimiter(v);
                if (e == v) break;
                if (e >= fs->end) return F_DECLINE;
                cur = n;
                p = e;
                continue;
            case OP_ARGS:
                /* An object of args the phase needs: read here rather than by a call, as
                 * args_at would (anything else goes there through member_value). */
                v = tp_layout_value(n, p);
                if (outer || *v != '{' || !tp_ev_str(fs->f, TP_S_PH) || fs->f->want == TP_W_NONE)
                    break;
                fs->er->ncargs = 0; /* a repeated args member: the last counts */
                fs->f->args = v;
                outer = n;
                outer_obj = obj;
                root = ROOT_ARGS + (uint32_t)fs->f->want;
                cur = &nodes[root];
                obj = v;
                p = v + 1;
                continue;
            case OP_END:
                ended = 1;
                break;
            case OP_NONE:
            case OP_OTHER:
                break;
            default:
                /* every op is one of those (op_of): no range check before the jump */
                __builtin_unreachable();
            }
        }
        if (ended) {
            /* v is past the '}': the object is closed below (this shape of the branches
             * compiles to 1.5% fewer instructions than folding "!ended" into the others) */
        } else if (matched && n->m.op != OP_NONE) {
            cur = n;
            what = n->m.what;
            v = tp_layout_value(n, p);
            key = (tp_jstr){p + n->m.key_off, n->m.key_len, 0};
        } else {
            uint32_t node = (uint32_t)(cur - nodes);
            rc = other_member(fs, root, p == obj + 1, p, &node, &key, &v, &what);
            nodes = fs->ly->nodes; /* the first literal learned allocates them */
            cur = &nodes[node];
            if (rc == F_DECLINE) return rc;
            ended = rc == F_END;
        }
        if (ended) {
            if (!outer) {
                *at = v;
                return F_OK;
            }
            /* the args closed: on with the event's members */
            assert(root != ROOT_EVENT);
            fs->f->args_end = v;
            root = ROOT_EVENT;
            cur = outer;
            obj = outer_obj;
            outer = NULL;
            p = v;
            continue;
        }
        if ((rc = member_value(fs, what, &key, v, &p)) != F_OK) {
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
        /* A flow's other members are scalars: its next bracket is mostly the closing one. */
        const char *close = tp_scan_next_bracket(sc, p);
        if (close >= sc->end || *close != '}') close = close_of(sc, p, 1, 1);
        if (!close) return TP_FAST_DECLINED;
        p = close + 1;
    }
    sc->p = p;
    return TP_SCAN_OK;
}
