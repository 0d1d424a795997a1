/* fields.h - what the members of a trace event mean, decided once for both ways of reading one.
 *
 * An event is read by the general path (event.c: the token scanner, any JSON) or by the fast
 * path (fast.c: the structural index, the layouts profilers write). Each finds the members and
 * lexes their values; which key is which field or arg, and what a value of each type does to it,
 * is decided here, so both fill the same tp_evfields from the same bytes. Strings and numbers
 * point into the scanner's buffer: valid until the next refill. */
#ifndef TP_TRACE_FIELDS_H
#define TP_TRACE_FIELDS_H

#include "model/kineto.h"
#include "trace/event.h"

#include <string.h>

/* The args an event's phase needs; others are skipped unread. */
enum tp_want { TP_W_NONE, TP_W_RANGE, TP_W_MEMORY, TP_W_COUNTER, TP_W_META };

/* Where a value the reader uses is kept: the event's members, then the args it needs
 * (TP_S_MEM + i holds tp_mem_keys[i]). */
enum tp_slot {
    TP_S_PH,
    TP_S_NAME,
    TP_S_CAT,
    TP_S_TS,
    TP_S_DUR,
    TP_S_PID,
    TP_S_TID,
    TP_S_CORR,
    TP_S_FLOPS,
    TP_S_FLOPS_FCM, /* "flops_fcm": FlopCounterMode's, as tprof writes it (model/flops.h) */
    TP_S_DIMS,      /* "Input Dims" and "Concrete Inputs": raw JSON arrays, for model/flops.c */
    TP_S_CONCRETE,
    TP_S_SEQ, /* a collective's "seq", "async" and "Collective name" (analysis/ranks.h) */
    TP_S_ASYNC,
    TP_S_COLL_NAME,
    TP_S_EXT,   /* "External id": an op's, and its launches' (analysis/corr.c) */
    TP_S_ITYPE, /* "Input type": a raw JSON array, kept as the op's dtypes */
    TP_S_SETUP, /* "tprof.setup": the run's setup as tprof.torch records it (a string) */
    TP_S_SEQNR, /* "Sequence number" and "Fwd thread id": autograd's link (analysis/modules.h) */
    TP_S_FWDTID,
    TP_S_META_NAME,
    TP_S_MEM,
    TP_NSLOTS = TP_S_MEM + 5,
};
enum { TP_NMEM = TP_NSLOTS - TP_S_MEM };
extern const char *const tp_mem_keys[TP_NMEM];
/* What a member or an arg is when it has no slot. */
enum {
    TP_K_ARGS = TP_NSLOTS, /* the member args */
    TP_K_SERIES,           /* a counter's arg: each numeric one is a series */
    TP_K_SKIP,             /* anything else */
};

/* A lexed value: a string, a number, a bare token not read yet (the fast path leaves numbers
 * as their text until they are used: most pids and tids only need to equal the last event's),
 * an array's raw text (kept only for the slots that want it), or anything else (skipped). */
enum tp_jkind { TP_J_OTHER, TP_J_STRING, TP_J_NUMBER, TP_J_TOKEN, TP_J_ARRAY };
typedef struct tp_jval {
    int kind;
    union {
        tp_jstr s; /* TP_J_STRING, TP_J_TOKEN (its text), TP_J_ARRAY ([ to ], raw) */
        tp_jnum n; /* TP_J_NUMBER */
    };
} tp_jval;

/* An event's values as read, by slot. Only the slots in `present` were written (clearing the
 * whole struct per event would cost more than reading the event); when a key comes twice the
 * last value wins, as in Python's json module. */
typedef struct tp_evfields {
    unsigned present;     /* bit per slot */
    int want;             /* the args ph needs (TP_W_NONE while ph is absent) */
    int ph_unused;        /* the phase adds nothing to the model: the rest can be skipped */
    const char *args;     /* where args began */
    const char *args_end; /* past their value, once read or skipped (tp_evread.keep_args) */
    int args_read;        /* args were read with want (ph came before them) */
    tp_jval val[TP_NSLOTS];
} tp_evfields;

/* A numeric arg of the counter being read (er->cargs). */
struct tp_counter_arg {
    tp_jstr key;
    tp_jnum val;
};

static inline void tp_evfields_clear(tp_evfields *f) {
    f->present = 0;
    f->want = TP_W_NONE;
    f->ph_unused = f->args_read = 0;
    f->args = f->args_end = NULL;
}

/* Whether a slot keeps an array's raw text (the others skip arrays). */
static inline int tp_slot_keeps_array(int slot) {
    return slot == TP_S_DIMS || slot == TP_S_CONCRETE || slot == TP_S_ITYPE;
}

/* The slot a value is lexed into. */
static inline tp_jval *tp_ev_slot(tp_evfields *f, int slot) {
    f->present |= 1u << slot;
    return &f->val[slot];
}
/* A slot's string, or NULL when absent or of another type. */
static inline const tp_jstr *tp_ev_str(const tp_evfields *f, int slot) {
    return (f->present >> slot & 1) && f->val[slot].kind == TP_J_STRING ? &f->val[slot].s : NULL;
}
/* A slot's value, or NULL when absent. */
static inline tp_jval *tp_ev_val(tp_evfields *f, int slot) {
    return f->present >> slot & 1 ? &f->val[slot] : NULL;
}

/* The number of v, reading a token now (it becomes TP_J_NUMBER or TP_J_OTHER); NULL when v is
 * no number. */
const tp_jnum *tp_jval_number(tp_jval *v);
/* A slot's number, or NULL when absent or of another type. */
static inline const tp_jnum *tp_ev_num(tp_evfields *f, int slot) {
    return f->present >> slot & 1 ? tp_jval_number(&f->val[slot]) : NULL;
}
/* A counter's series: TP_SCAN_OK, or TP_SCAN_ERR when out of memory. */
int tp_ev_series(tp_evread *er, const tp_jstr *key, tp_jval *v);
/* What each one-letter phase wants (enum tp_want), with TP_PH_USED unless the phase adds
 * nothing to the model. */
enum { TP_PH_WANT = 7, TP_PH_USED = 8 };
extern const uint8_t tp_phase_letter[256];
/* After ph was read as one letter: what its phase wants. */
static inline void tp_ev_phase_letter(tp_evfields *f, unsigned char letter) {
    uint8_t c = tp_phase_letter[letter];
    f->want = c & TP_PH_WANT;
    f->ph_unused = !(c & TP_PH_USED);
}
/* After ph was read: what its phase wants. Inline: both paths call it for every event. */
static inline void tp_ev_phase(tp_scan *sc, tp_evfields *f) {
    const tp_jstr *ph = tp_ev_str(f, TP_S_PH);
    size_t n = 0;
    const char *s = ph ? tp_scan_text(sc, ph, &n) : "";
    if (n == 1) {
        tp_ev_phase_letter(f, (unsigned char)s[0]);
        return;
    }
    f->want = TP_W_NONE;
    f->ph_unused = ph != NULL; /* longer phases add nothing */
}

/* The hot ones are inline: both paths call them for every member of every event. */

/* The slot of a member named key[0..n) (decoded), or TP_K_ARGS or TP_K_SKIP. */
static inline int tp_ev_field(const char *k, size_t n) {
    switch (n) {
    case 2:
        if (k[0] == 'p' && k[1] == 'h') return TP_S_PH;
        if (k[0] == 't' && k[1] == 's') return TP_S_TS;
        break;
    case 3:
        if (memcmp(k, "cat", 3) == 0) return TP_S_CAT;
        if (memcmp(k, "dur", 3) == 0) return TP_S_DUR;
        if (memcmp(k, "pid", 3) == 0) return TP_S_PID;
        if (memcmp(k, "tid", 3) == 0) return TP_S_TID;
        break;
    case 4:
        if (memcmp(k, "name", 4) == 0) return TP_S_NAME;
        if (memcmp(k, "args", 4) == 0) return TP_K_ARGS;
        break;
    default:
        break;
    }
    return TP_K_SKIP;
}

/* The slot of an arg named key[0..n) (decoded) of an event whose ph wants `want`, or
 * TP_K_SERIES or TP_K_SKIP. */
static inline int tp_ev_arg(int want, const char *k, size_t n) {
    switch (want) {
    case TP_W_RANGE:
        if (TP_KIS(k, n, tp_karg_correlation)) return TP_S_CORR;
        if (TP_KIS(k, n, tp_karg_flops)) return TP_S_FLOPS;
        if (TP_KIS(k, n, tp_karg_flops_fcm)) return TP_S_FLOPS_FCM;
        if (TP_KIS(k, n, tp_karg_input_dims)) return TP_S_DIMS;
        if (TP_KIS(k, n, tp_karg_concrete_inputs)) return TP_S_CONCRETE;
        if (TP_KIS(k, n, tp_karg_seq)) return TP_S_SEQ;
        if (TP_KIS(k, n, tp_karg_async)) return TP_S_ASYNC;
        if (TP_KIS(k, n, tp_karg_collective_name)) return TP_S_COLL_NAME;
        if (TP_KIS(k, n, tp_karg_external_id)) return TP_S_EXT;
        if (TP_KIS(k, n, tp_karg_input_type)) return TP_S_ITYPE;
        if (TP_KIS(k, n, tp_karg_setup)) return TP_S_SETUP;
        if (TP_KIS(k, n, tp_karg_sequence_number)) return TP_S_SEQNR;
        if (TP_KIS(k, n, tp_karg_fwd_thread_id)) return TP_S_FWDTID;
        break;
    case TP_W_MEMORY:
        for (int i = 0; i < TP_NMEM; i++)
            if (strlen(tp_mem_keys[i]) == n && memcmp(k, tp_mem_keys[i], n) == 0)
                return TP_S_MEM + i;
        break;
    case TP_W_COUNTER:
        return TP_K_SERIES;
    case TP_W_META:
        if (n == 4 && memcmp(k, "name", 4) == 0) return TP_S_META_NAME;
        break;
    default:
        break;
    }
    return TP_K_SKIP;
}

#endif
