/* fields.h - what the members of a trace event mean, decided once for both ways of reading one.
 *
 * An event is read by the general path (event.c: the token scanner, any JSON) or by the fast
 * path (fast.c: the structural index, the layouts profilers write). Each finds the members and
 * lexes their values; which key is which field or arg, and what a value of each type does to it,
 * is decided here, so both fill the same tp_evfields from the same bytes. Strings and numbers
 * point into the scanner's buffer: valid until the next refill. */
#ifndef TP_FIELDS_H
#define TP_FIELDS_H

#include "trace/event.h"

#include <string.h>

/* The args an event's phase needs; others are skipped unread. */
enum tp_want { TP_W_NONE, TP_W_RANGE, TP_W_MEMORY, TP_W_COUNTER, TP_W_META };
/* The members of an event that the reader uses. */
enum tp_field {
    TP_F_OTHER,
    TP_F_PH,
    TP_F_NAME,
    TP_F_CAT,
    TP_F_TS,
    TP_F_DUR,
    TP_F_PID,
    TP_F_TID,
    TP_F_ARGS,
};
/* The args it uses. TP_A_MEM + i is tp_mem_keys[i]. */
enum tp_arg_use { TP_A_NONE, TP_A_CORR, TP_A_FLOPS, TP_A_SERIES, TP_A_META_NAME, TP_A_MEM };
enum { TP_NMEM = 5 };
extern const char *const tp_mem_keys[TP_NMEM];

/* A lexed value: a string, a number, or anything else (skipped). */
enum tp_jkind { TP_J_OTHER, TP_J_STRING, TP_J_NUMBER };
typedef struct tp_jval {
    int kind;
    tp_jstr s;
    tp_jnum n;
} tp_jval;

enum tp_id_kind { TP_ID_ABSENT, TP_ID_NUMBER, TP_ID_STRING };
typedef struct tp_id_field {
    int kind;
    tp_jnum num;
    tp_jstr str;
} tp_id_field;

/* An event's members as read. Only the fields that tell presence are set by tp_evfields_clear:
 * clearing the whole struct (half a KB) per event showed in profiles; numbers are read only
 * where their has_ flag says. */
typedef struct tp_evfields {
    tp_jstr ph, name, cat;
    int want;      /* the args ph needs (TP_W_NONE while ph is absent) */
    int ph_unused; /* the phase adds nothing to the model: the rest can be skipped */
    tp_jnum ts, dur;
    int has_ts, has_dur;
    tp_id_field pid, tid;
    const char *args; /* where args began */
    int args_read;    /* args were read with want (ph came before them) */
    int64_t corr;
    tp_jnum flops;
    int has_flops;
    tp_jnum mem[TP_NMEM];
    unsigned mem_mask;
    tp_jstr meta_name;
} tp_evfields;

/* A numeric arg of the counter being read (er->cargs). */
struct tp_counter_arg {
    tp_jstr key;
    tp_jnum val;
};

void tp_evfields_clear(tp_evfields *f);
/* An arg's value into f (series go to er->cargs): TP_SCAN_OK, or TP_SCAN_ERR out of memory. */
int tp_ev_set_arg(tp_evread *er, tp_evfields *f, int use, const tp_jstr *key, const tp_jval *v);

/* The hot ones are inline: both paths call them for every member of every event. */

/* The tp_field of a member named key[0..n) (decoded). */
static inline int tp_ev_field(const char *k, size_t n) {
    switch (n) {
    case 2:
        if (k[0] == 'p' && k[1] == 'h') return TP_F_PH;
        if (k[0] == 't' && k[1] == 's') return TP_F_TS;
        break;
    case 3:
        if (memcmp(k, "cat", 3) == 0) return TP_F_CAT;
        if (memcmp(k, "dur", 3) == 0) return TP_F_DUR;
        if (memcmp(k, "pid", 3) == 0) return TP_F_PID;
        if (memcmp(k, "tid", 3) == 0) return TP_F_TID;
        break;
    case 4:
        if (memcmp(k, "name", 4) == 0) return TP_F_NAME;
        if (memcmp(k, "args", 4) == 0) return TP_F_ARGS;
        break;
    default:
        break;
    }
    return TP_F_OTHER;
}

/* The use of an arg named key[0..n) (decoded) by an event whose ph wants `want`. */
static inline int tp_ev_arg(int want, const char *k, size_t n) {
    switch (want) {
    case TP_W_RANGE:
        if (n == 11 && memcmp(k, "correlation", 11) == 0) return TP_A_CORR;
        if (n == 5 && memcmp(k, "flops", 5) == 0) return TP_A_FLOPS;
        break;
    case TP_W_MEMORY:
        for (int i = 0; i < TP_NMEM; i++)
            if (strlen(tp_mem_keys[i]) == n && memcmp(k, tp_mem_keys[i], n) == 0) return TP_A_MEM + i;
        break;
    case TP_W_COUNTER:
        return TP_A_SERIES;
    case TP_W_META:
        if (n == 4 && memcmp(k, "name", 4) == 0) return TP_A_META_NAME;
        break;
    default:
        break;
    }
    return TP_A_NONE;
}

/* The args the phase ph needs. */
static inline int tp_ev_want(tp_scan *sc, const tp_jstr *ph) {
    size_t n;
    const char *s = ph->s ? tp_scan_text(sc, ph, &n) : "";
    if (!ph->s || n != 1) return TP_W_NONE;
    switch (s[0]) {
    case 'X':
    case 'B':
        return TP_W_RANGE;
    case 'i':
    case 'I':
        return TP_W_MEMORY;
    case 'C':
        return TP_W_COUNTER;
    case 'M':
        return TP_W_META;
    default:
        return TP_W_NONE;
    }
}

/* The string, or s = NULL for a value of another type. */
static inline tp_jstr tp_ev_string_of(const tp_jval *v) {
    tp_jstr s = v->s;
    if (v->kind != TP_J_STRING) s.s = NULL;
    return s;
}

static inline void tp_ev_set_id(tp_id_field *id, const tp_jval *v) {
    id->kind = v->kind == TP_J_STRING ? TP_ID_STRING
               : v->kind == TP_J_NUMBER ? TP_ID_NUMBER
                                        : TP_ID_ABSENT;
    id->str = v->s;
    id->num = v->n;
}

/* A field's value (not TP_F_ARGS or TP_F_OTHER) into f. */
static inline void tp_ev_set_field(tp_scan *sc, tp_evfields *f, int field, const tp_jval *v) {
    switch (field) {
    case TP_F_PH: {
        f->ph = tp_ev_string_of(v);
        f->want = tp_ev_want(sc, &f->ph);
        size_t n;
        const char *ph = f->ph.s ? tp_scan_text(sc, &f->ph, &n) : NULL;
        /* E adds nothing itself but closes a B. */
        f->ph_unused = ph && f->want == TP_W_NONE && !(n == 1 && ph[0] == 'E');
        break;
    }
    case TP_F_NAME:
        f->name = tp_ev_string_of(v);
        break;
    case TP_F_CAT:
        f->cat = tp_ev_string_of(v);
        break;
    case TP_F_TS:
        f->ts = v->n;
        f->has_ts = v->kind == TP_J_NUMBER;
        break;
    case TP_F_DUR:
        f->dur = v->n;
        f->has_dur = v->kind == TP_J_NUMBER;
        break;
    case TP_F_PID:
        tp_ev_set_id(&f->pid, v);
        break;
    case TP_F_TID:
        tp_ev_set_id(&f->tid, v);
        break;
    default:
        break;
    }
}


#endif
