/* event.c - one trace event object: read by the fast path when it can, else by the general
 * path here (the token scanner, any JSON), and the model event it becomes (see event.h). */
#include "trace/event.h"

#include "model/kineto.h"
#include "trace/fast.h"
#include "trace/fields.h"
#include "trace/reader.h"
#include "model/flops.h"
#include "util/vec.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { KIND_DROP = 0xff }; /* cat_kind of category Trace: the profiler's own span */

struct tp_range_stack {
    tp_open_range *r;
    size_t n, cap;
};

struct tp_pending_name {
    int thread; /* thread_name (else process_name) */
    int64_t pid, tid;
    tp_str pid_str, tid_str, name;
};

void tp_evread_init(tp_evread *er, tp_model *m, tp_scan *sc) {
    memset(er, 0, sizeof(*er));
    er->m = m;
    er->sc = sc;
    er->k_flops = tp_model_intern_cstr(m, tp_karg_flops);
    er->k_seq = tp_model_intern_cstr(m, tp_karg_seq);
    er->k_async = tp_model_intern_cstr(m, tp_karg_async);
    er->k_coll_name = tp_model_intern_cstr(m, tp_karg_collective_name);
    for (int i = 0; i < TP_NMEM; i++)
        er->k_mem[i] = tp_model_intern_cstr(m, tp_mem_keys[i]);
    for (int i = 0; i < TP_TRACKS_SEEN; i++)
        er->seen[i].track = UINT32_MAX;
    tp_layout_init(&er->layout);
    tp_names_init(&er->name_cache);
}

void tp_evread_free(tp_evread *er) {
    for (size_t i = 0; i < er->cap_stacks; i++)
        free(er->stacks[i].r);
    free(er->stacks);
    free(er->cat_kind);
    free(er->name_step);
    tp_names_free(&er->name_cache);
    free(er->names);
    free(er->cargs);
    tp_layout_free(&er->layout);
    memset(er, 0, sizeof(*er));
}

/* ---- the general path ------------------------------------------------------------------- */

/* Any value: a string, a number, or anything else (skipped). */
static int lex_value(tp_scan *sc, tp_jval *v) {
    if (*sc->p == '"') {
        v->kind = TP_J_STRING;
        return tp_scan_string(sc, &v->s);
    }

    int isnum;
    int rc = tp_scan_number(sc, &v->n, &isnum);
    v->kind = isnum ? TP_J_NUMBER : TP_J_OTHER;
    return rc;
}

/* A value of a slot that keeps arrays ("Input Dims", "Concrete Inputs"): an array's raw text. */
static int lex_array(tp_scan *sc, tp_jval *v) {
    if (*sc->p != '[') return lex_value(sc, v);
    const char *start = sc->p;
    int rc = tp_scan_skip_value(sc);
    v->kind = TP_J_ARRAY;
    v->s = (tp_jstr){start, (uint32_t)(sc->p - start), 0};
    return rc;
}

static int args_value(tp_evread *er, tp_evfields *f, int want) {
    tp_scan *sc = er->sc;
    if (want == TP_W_NONE || *sc->p != '{') return tp_scan_skip_value(sc);
    sc->p++;
    er->ncargs = 0;
    int first = 1, rc;
    tp_jstr key;
    tp_jval series;
    while ((rc = tp_scan_member(sc, &first, &key)) == TP_SCAN_ITEM) {
        size_t n;
        const char *k = tp_scan_text(sc, &key, &n);
        int slot = tp_ev_arg(want, k, n);
        if (tp_slot_keeps_array(slot))
            rc = lex_array(sc, tp_ev_slot(f, slot));
        else if (slot < TP_NSLOTS)
            rc = lex_value(sc, tp_ev_slot(f, slot));
        else if (slot == TP_K_SERIES && (rc = lex_value(sc, &series)) == TP_SCAN_OK)
            rc = tp_ev_series(er, &key, &series);
        else if (slot != TP_K_SERIES)
            rc = tp_scan_skip_value(sc);
        if (rc != TP_SCAN_OK) return rc;
    }
    return rc;
}

static int field_value(tp_evread *er, tp_evfields *f, const tp_jstr *key) {
    tp_scan *sc = er->sc;
    size_t n;
    const char *k = tp_scan_text(sc, key, &n);
    int slot = tp_ev_field(k, n), rc;
    if (slot == TP_K_ARGS) {
        f->args = sc->p;
        /* Kineto and PyTorch write ph before args: then the args are read in the same pass. */
        f->args_read = tp_ev_str(f, TP_S_PH) != NULL;
        rc = f->args_read ? args_value(er, f, f->want) : tp_scan_skip_value(sc);
        f->args_end = sc->p;
        return rc;
    }
    if (slot == TP_K_SKIP) return tp_scan_skip_value(sc);
    if ((rc = lex_value(sc, tp_ev_slot(f, slot))) == TP_SCAN_OK && slot == TP_S_PH)
        tp_ev_phase(sc, f);
    return rc;
}

/* The event at sc->p with the token scanner: any JSON, and every error message. */
static int general_event(tp_evread *er, tp_evfields *f) {
    tp_scan *sc = er->sc;
    sc->p++;
    int first = 1, rc;
    tp_jstr key;
    while ((rc = tp_scan_member(sc, &first, &key)) == TP_SCAN_ITEM) {
        if ((rc = field_value(er, f, &key)) != TP_SCAN_OK) return rc;
        /* Flows and other phases that add nothing: the rest of the object is only skipped. */
        if (f->ph_unused) return tp_scan_skip_rest(sc);
    }
    if (rc != TP_SCAN_OK || !f->args || f->args_read) return rc;
    /* The args came before the phase: read them again, now knowing what is needed. */
    const char *after = sc->p;
    sc->p = f->args;
    rc = args_value(er, f, f->want);
    sc->p = after;
    return rc;
}

/* ---- into the model ----------------------------------------------------------------------- */

/* A string of the event (NULL: absent, ""). Escaped ones are decoded, the others go through
 * the name cache. */
static tp_str intern(tp_evread *er, const tp_jstr *s) {
    size_t n;
    if (!s) return TP_STR_EMPTY;
    /* Names are C strings: a raw NUL would cut them silently. JSON forbids raw control bytes in
     * strings; this one is an error (reported by tp_evread_event). */
    if (!s->esc) return tp_names_intern(&er->name_cache, er->m, s->s, s->len, &er->nul_at);
    const char *nul = memchr(s->s, '\0', s->len);
    if (__builtin_expect(nul != NULL, 0) && !er->nul_at) er->nul_at = nul;
    const char *t = tp_scan_text(er->sc, s, &n);
    return tp_model_intern(er->m, t, n);
}

int tp_evread_decimal(const char *s, size_t n, int64_t *out) {
    size_t i = n && s[0] == '-';
    if (i == n || n - i > 19) return 0;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return 0;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX) return 0;
    *out = s[0] == '-' ? -(int64_t)v : (int64_t)v;
    return 1;
}

/* v as an int64 when it is an integral number in range (1), else 0. */
static int integer(tp_evread *er, tp_jval *v, int64_t *out) {
    if (!v) return 0;
    if (v->kind == TP_J_TOKEN && tp_decimal_scaled(v->s.s, v->s.len, 0, INT64_MAX, out)) return 1;
    const tp_jnum *n = tp_jval_number(v);
    double d;
    return n && tp_jnum_value(er->sc, n, out, &d) == 1;
}

/* A pid or tid as the model keeps it: a number, or a string id for anything else. */
static void resolve_id(tp_evread *er, tp_jval *id, int64_t *num, tp_str *str) {
    *num = 0;
    *str = TP_STR_EMPTY;
    if (integer(er, id, num)) return;
    const tp_jnum *n = id ? tp_jval_number(id) : NULL;
    if (n) {
        double d;
        if (tp_jnum_value(er->sc, n, num, &d) != 1) *str = tp_model_intern(er->m, n->text, n->len);
    } else if (id && id->kind == TP_J_STRING) {
        size_t len;
        const char *s = tp_scan_text(er->sc, &id->s, &len);
        if (!tp_evread_decimal(s, len, num)) *str = tp_model_intern(er->m, s, len);
    }
}

/* The bytes of a pid or tid as written, and whether they were a string (else a number, a
 * bare token, or nothing). */
static const char *id_text(const tp_jval *id, size_t *len, int *string) {
    *string = id && id->kind == TP_J_STRING;
    if (!id || id->kind == TP_J_OTHER) {
        *len = 0;
        return "";
    }
    *len = id->kind == TP_J_NUMBER ? id->n.len : id->s.len;
    return id->kind == TP_J_NUMBER ? id->n.text : id->s.s;
}

/* Whether id is written as the last one was (then it is that one). Ids are short, and their
 * text lies in the scanner's padded buffer: one masked comparison. */
static int id_seen(const struct tp_id_text *last, const tp_jval *id) {
    size_t len;
    int string;
    const char *s = id_text(id, &len, &string);
    return last->len == len && last->string == string &&
           (len == 0 || !tp_layout_diff(s, (const uint8_t *)last->text, tp_layout_mask(len)));
}

static void id_remember(struct tp_id_text *last, const tp_jval *id) {
    size_t len;
    int string;
    const char *s = id_text(id, &len, &string);
    /* Longer ids are resolved every time. */
    last->len = len <= sizeof(last->text) ? (uint32_t)len : UINT32_MAX;
    last->string = string;
    if (len <= sizeof(last->text)) memcpy(last->text, s, len);
}

/* Whether the track of entry e has the ids pid_v and tid_v as written. */
static int track_seen(const struct tp_track_seen *e, const tp_jval *pid_v, const tp_jval *tid_v) {
    return e->track != UINT32_MAX && id_seen(&e->pid, pid_v) && id_seen(&e->tid, tid_v);
}

/* The track of the event: events mostly come from the few threads seen last, which write
 * their ids the same way each time, so the bytes are compared before any number is read. */
static uint32_t track_of(tp_evread *er, tp_evfields *f) {
    tp_jval *pid_v = tp_ev_val(f, TP_S_PID), *tid_v = tp_ev_val(f, TP_S_TID);
    assert(er->seen_last < TP_TRACKS_SEEN && er->seen_next < TP_TRACKS_SEEN);
    if (track_seen(&er->seen[er->seen_last], pid_v, tid_v)) return er->seen[er->seen_last].track;
    for (unsigned i = 0; i < TP_TRACKS_SEEN; i++) {
        if (i != er->seen_last && track_seen(&er->seen[i], pid_v, tid_v)) {
            er->seen_last = i;
            return er->seen[i].track;
        }
    }
    int64_t pid, tid;
    tp_str pid_str, tid_str;
    resolve_id(er, pid_v, &pid, &pid_str);
    resolve_id(er, tid_v, &tid, &tid_str);
    uint32_t t = tp_model_track(er->m, pid, pid_str, tid, tid_str);
    if (t == UINT32_MAX) return t;
    struct tp_track_seen *e = &er->seen[er->seen_next];
    e->track = t;
    id_remember(&e->pid, pid_v);
    id_remember(&e->tid, tid_v);
    er->seen_last = er->seen_next;
    er->seen_next = (er->seen_next + 1) % TP_TRACKS_SEEN;
    return t;
}

static uint8_t classify(const char *cat) {
    if (strcasecmp(cat, tp_kcat_kernel) == 0) return TP_KERNEL;
    if (strcasecmp(cat, tp_kcat_gpu_memcpy) == 0 || strcasecmp(cat, tp_kcat_memcpy) == 0)
        return TP_MEMCPY;
    if (strcasecmp(cat, tp_kcat_gpu_memset) == 0 || strcasecmp(cat, tp_kcat_memset) == 0)
        return TP_MEMSET;
    if (strcasecmp(cat, tp_kcat_gpu_user_annotation) == 0) return TP_GPU_ANNOTATION;
    if (strcasecmp(cat, tp_kcat_trace) == 0) return KIND_DROP;
    return TP_HOST_RANGE;
}

/* The byte of *arr kept for string id, 0 until set (NULL when out of memory). */
static uint8_t *id_byte(uint8_t **arr, size_t *cap, tp_str id) {
    if (id >= *cap) {
        size_t old = *cap;
        if (tp_grow((void **)arr, cap, (size_t)id + 1, 1)) return NULL;
        memset(*arr + old, 0, *cap - old);
    }
    return &(*arr)[id];
}

/* The kind of a range of category cat (or KIND_DROP; 0 when out of memory). */
static uint8_t kind_of(tp_evread *er, tp_str cat) {
    uint8_t *k = id_byte(&er->cat_kind, &er->cap_cat_kind, cat);
    if (!k) return 0;
    if (!*k) *k = classify(tp_model_str(er->m, cat));
    return *k;
}

enum { NAME_PLAIN = 1, NAME_STEP, NAME_TWIN };

static uint8_t classify_name(const char *name) {
    if (strcmp(name, tp_kname_dataloader_twin) == 0) return NAME_TWIN;
    return tp_step_number(name) >= 0 ? NAME_STEP : NAME_PLAIN;
}

/* What a host range named name is: a step (ProfilerStep#<n>), the copy tprof writes of its
 * dataloader range for TensorBoard (left out: model/kineto.h), or any other range. */
static uint8_t name_class(tp_evread *er, tp_str name) {
    uint8_t *s = id_byte(&er->name_step, &er->cap_name_step, name);
    if (!s) return classify_name(tp_model_str(er->m, name));
    if (!*s) *s = classify_name(tp_model_str(er->m, name));
    return *s;
}

/* Counts the event at start as left out for its time. */
static void left_out(tp_evread *er, const char *start) {
    if (!er->bad_time++) er->bad_time_at = tp_scan_offset(er->sc, start);
}

/* The time v (NULL: absent) in ns into *out: 1, 0 when v is no number, -1 when it is one out
 * of range. Plain decimals are read straight from their text. */
static int time_of(tp_jval *v, int64_t *out) {
    if (v && v->kind == TP_J_TOKEN && tp_decimal_scaled(v->s.s, v->s.len, 3, TP_TIME_LIMIT, out))
        return 1;
    const tp_jnum *n = v ? tp_jval_number(v) : NULL;
    if (!n) return 0;
    return tp_jnum_scaled(n, 3, TP_TIME_LIMIT, out) == 0 ? 1 : -1;
}

/* *out = the time v in ns when it is a number in range; else the event is left out. */
static int event_time(tp_evread *er, tp_jval *v, const char *start, int64_t *out) {
    if (time_of(v, out) == 1) return 1;
    left_out(er, start);
    return 0;
}

/* A numeric arg; none when n is NULL. */
static tp_num_arg number_arg(tp_evread *er, const tp_jnum *n) {
    tp_num_arg a = {.type = -1};
    if (n) a.type = tp_jnum_value(er->sc, n, &a.v.i, &a.v.d) ? TP_ARG_INT : TP_ARG_DOUBLE;
    return a;
}

static void add_number_arg(tp_model *m, tp_event *ev, tp_str key, const tp_num_arg *a) {
    if (a->type >= 0) tp_model_add_arg(m, ev, key, (tp_arg_type)a->type, &a->v);
}

static tp_event *new_event(tp_evread *er, uint32_t track, int kind, int64_t ts, tp_str name,
                           tp_str cat) {
    return track == UINT32_MAX ? NULL : tp_model_new_event(er->m, track, kind, ts, name, cat);
}

tp_event *tp_evread_add_range(tp_evread *er, uint32_t track, const tp_open_range *r, int64_t dur) {
    uint8_t kind = kind_of(er, r->cat);
    if (!kind || kind == KIND_DROP) return NULL;
    uint8_t name = kind == TP_HOST_RANGE ? name_class(er, r->name) : NAME_PLAIN;
    if (name == NAME_TWIN) return NULL;
    tp_event *ev = new_event(er, track, kind, r->ts, r->name, r->cat);
    if (!ev) return NULL;
    ev->dur = dur;
    ev->corr = r->corr;
    ev->ext = r->ext;
    if (name == NAME_STEP) ev->flags |= TP_EVF_STEP;
    add_number_arg(er->m, ev, er->k_flops, &r->flops);
    if (r->fcm.type >= 0) {
        if (er->k_fcm == TP_STR_EMPTY) er->k_fcm = tp_model_intern_cstr(er->m, tp_karg_flops_fcm);
        add_number_arg(er->m, ev, er->k_fcm, &r->fcm);
    }
    add_number_arg(er->m, ev, er->k_seq, &r->seq);
    add_number_arg(er->m, ev, er->k_async, &r->async);
    if (r->coll_name != TP_STR_EMPTY)
        tp_model_add_arg(er->m, ev, er->k_coll_name, TP_ARG_STR, &r->coll_name);
    if (r->seqnr.type >= 0) {
        if (er->k_seqnr == TP_STR_EMPTY) {
            er->k_seqnr = tp_model_intern_cstr(er->m, tp_karg_sequence_number);
            er->k_fwd_tid = tp_model_intern_cstr(er->m, tp_karg_fwd_thread_id);
        }
        add_number_arg(er->m, ev, er->k_seqnr, &r->seqnr);
        int zero = r->fwd_tid.type == TP_ARG_INT ? r->fwd_tid.v.i == 0 : r->fwd_tid.v.d == 0;
        if (!zero) add_number_arg(er->m, ev, er->k_fwd_tid, &r->fwd_tid); /* 0: as absent */
    }
    if (r->dims != TP_STR_EMPTY) {
        if (er->k_dims == TP_STR_EMPTY)
            er->k_dims = tp_model_intern_cstr(er->m, tp_karg_input_dims);
        tp_model_add_arg(er->m, ev, er->k_dims, TP_ARG_JSON, &r->dims);
    }
    if (r->itype != TP_STR_EMPTY) {
        if (er->k_itype == TP_STR_EMPTY)
            er->k_itype = tp_model_intern_cstr(er->m, tp_karg_input_type);
        tp_model_add_arg(er->m, ev, er->k_itype, TP_ARG_JSON, &r->itype);
    }
    if (r->setup != TP_STR_EMPTY) {
        if (er->k_setup == TP_STR_EMPTY) er->k_setup = tp_model_intern_cstr(er->m, tp_karg_setup);
        tp_model_add_arg(er->m, ev, er->k_setup, TP_ARG_STR, &r->setup);
    }
    if (r->raw != TP_STR_EMPTY) {
        if (er->k_raw == TP_STR_EMPTY) er->k_raw = tp_model_intern_cstr(er->m, TP_READ_RAW_ARGS);
        tp_model_add_arg(er->m, ev, er->k_raw, TP_ARG_JSON, &r->raw);
    }
    return ev;
}

/* The event's whole args object as written, interned (tp_evread.keep_args): TP_STR_EMPTY when
 * not kept, absent, not an object or past the part's budget. A raw NUL in it is left to the
 * texts' one reader, the Trace view, whose JSON check refuses it: not scanned for here. */
static tp_str raw_args(tp_evread *er, const tp_evfields *f) {
    if (__builtin_expect(!er->keep_args, 1) || !f->args || !f->args_end || *f->args != '{')
        return TP_STR_EMPTY;
    size_t len = (size_t)(f->args_end - f->args);
    if (len <= 2 || len > er->raw_left)
        return TP_STR_EMPTY; /* {} holds nothing; past the budget, the args parsed only */
    er->raw_left -= len;
    return tp_model_intern(er->m, f->args, len);
}

/* An op's input shapes (record_shapes), kept for the op table by shape (analysis/shapes.c),
 * or its input dtypes (slot TP_S_ITYPE): the array's text interned as written; none when
 * absent, not an array, or holding a raw NUL (which the array's scan let through inside a
 * string). */
static tp_str array_of(tp_evread *er, tp_evfields *f, int slot) {
    const tp_jval *dims = tp_ev_val(f, slot);
    if (__builtin_expect(!dims, 1) || dims->kind != TP_J_ARRAY) return TP_STR_EMPTY;
    if (memchr(dims->s.s, '\0', dims->s.len)) return TP_STR_EMPTY;
    return tp_model_intern(er->m, dims->s.s, dims->s.len);
}

tp_num_arg tp_evread_shape_flops(tp_evread *er, tp_str name, const char *dims, size_t dims_len,
                                 const char *conc, size_t conc_len, int fcm) {
    tp_num_arg a = {.type = -1};
    const char *s = tp_model_str(er->m, name);
    size_t len = tp_strtab_len(&er->m->strings, name);
    if (!(fcm ? tp_flops_fcm_counted(s, len) : tp_flops_counted(s, len))) return a;
    int64_t n = fcm ? tp_flops_fcm_of(s, len, dims, dims_len, conc, conc_len)
                    : tp_flops_of(s, len, dims, dims_len, conc, conc_len);
    if (n > 0) {
        a.type = TP_ARG_INT;
        a.v.i = n;
    }
    return a;
}

/* tp_evread_shape_flops of the event's "Input Dims" and "Concrete Inputs" arrays, none without
 * the shapes. */
static tp_num_arg flops_from_shapes(tp_evread *er, tp_evfields *f, tp_str name, int fcm) {
    tp_num_arg none = {.type = -1};
    const tp_jval *dims = tp_ev_val(f, TP_S_DIMS), *conc = tp_ev_val(f, TP_S_CONCRETE);
    if (!dims || dims->kind != TP_J_ARRAY) return none;
    int has_conc = conc && conc->kind == TP_J_ARRAY;
    return tp_evread_shape_flops(er, name, dims->s.s, dims->s.len, has_conc ? conc->s.s : NULL,
                                 has_conc ? conc->s.len : 0, fcm);
}

static int range_start(tp_evread *er, tp_evfields *f, const char *start, tp_open_range *r) {
    if (!event_time(er, tp_ev_val(f, TP_S_TS), start, &r->ts)) return 0;
    r->name = intern(er, tp_ev_str(f, TP_S_NAME));
    r->cat = intern(er, tp_ev_str(f, TP_S_CAT));
    /* A correlation id is a positive integer; anything else means none. */
    int64_t id;
    r->corr = integer(er, tp_ev_val(f, TP_S_CORR), &id) && id > 0 ? (uint64_t)id : 0;
    r->flops = number_arg(er, tp_ev_num(f, TP_S_FLOPS));
    if (r->flops.type < 0) r->flops = flops_from_shapes(er, f, r->name, 0);
    r->fcm = number_arg(er, tp_ev_num(f, TP_S_FLOPS_FCM));
    if (r->fcm.type < 0) r->fcm = flops_from_shapes(er, f, r->name, 1);
    r->seq = number_arg(er, tp_ev_num(f, TP_S_SEQ));
    r->async = number_arg(er, tp_ev_num(f, TP_S_ASYNC));
    r->ext = integer(er, tp_ev_val(f, TP_S_EXT), &id) ? tp_ext_id(id) : 0;
    r->seqnr = number_arg(er, tp_ev_num(f, TP_S_SEQNR));
    r->fwd_tid = number_arg(er, tp_ev_num(f, TP_S_FWDTID));
    r->coll_name = intern(er, tp_ev_str(f, TP_S_COLL_NAME));
    r->dims = array_of(er, f, TP_S_DIMS);
    r->itype = array_of(er, f, TP_S_ITYPE);
    r->setup = intern(er, tp_ev_str(f, TP_S_SETUP));
    r->raw = raw_args(er, f);
    return 1;
}

static void complete_event(tp_evread *er, tp_evfields *f, const char *start) {
    tp_open_range r;
    int64_t dur = 0;
    if (!range_start(er, f, start, &r)) return;
    /* A missing dur reads as 0 (an instant-like range); one that is there but no number (NaN,
     * null, "12"), negative or absurd leaves the event out, counted as a bad ts is. */
    tp_jval *v = tp_ev_val(f, TP_S_DUR);
    int known = time_of(v, &dur);
    if (known == 0 && !v) dur = 0;
    if (known < 0 || (known == 0 && v) || dur < 0) {
        left_out(er, start);
        return;
    }
    tp_evread_add_range(er, track_of(er, f), &r, dur);
}

static struct tp_range_stack *stack_of(tp_evread *er, uint32_t track) {
    if (track == UINT32_MAX) return NULL;
    if (track >= er->cap_stacks) {
        size_t old = er->cap_stacks;
        if (TP_GROW(er->stacks, er->cap_stacks, (size_t)track + 1)) return NULL;
        memset(er->stacks + old, 0, (er->cap_stacks - old) * sizeof(*er->stacks));
    }
    return &er->stacks[track];
}

static void begin_event(tp_evread *er, tp_evfields *f, const char *start) {
    tp_open_range r;
    if (!range_start(er, f, start, &r)) return;
    struct tp_range_stack *st = stack_of(er, track_of(er, f));
    if (!st || TP_GROW(st->r, st->cap, st->n + 1)) {
        er->m->failed = 1;
        return;
    }
    st->r[st->n++] = r;
}

/* Closes the innermost open B of the thread; an E with none open is ignored. */
static void end_event(tp_evread *er, tp_evfields *f, const char *start) {
    uint32_t track = track_of(er, f);
    struct tp_range_stack *st = stack_of(er, track);
    if (!st || !st->n) {
        er->orphan_ends++;
        return;
    }
    tp_open_range r = st->r[--st->n];
    int64_t ts;
    if (!event_time(er, tp_ev_val(f, TP_S_TS), start, &ts)) return;
    if (ts < r.ts) {
        left_out(er, start);
        return;
    }
    tp_evread_add_range(er, track, &r, ts - r.ts);
}

/* A point event (memory instant, counter sample) of the given kind at the event's time, with
 * its name and category; NULL when left out or out of memory. */
static tp_event *point_event(tp_evread *er, tp_evfields *f, const char *start, int kind) {
    int64_t ts;
    if (!event_time(er, tp_ev_val(f, TP_S_TS), start, &ts)) return NULL;
    return new_event(er, track_of(er, f), kind, ts, intern(er, tp_ev_str(f, TP_S_NAME)),
                     intern(er, tp_ev_str(f, TP_S_CAT)));
}

static void memory_event(tp_evread *er, tp_evfields *f, const char *start) {
    tp_event *ev = point_event(er, f, start, TP_MEMORY);
    for (int i = 0; ev && i < TP_NMEM; i++) {
        tp_num_arg a = number_arg(er, tp_ev_num(f, TP_S_MEM + i));
        add_number_arg(er->m, ev, er->k_mem[i], &a);
    }
}

static void counter_event(tp_evread *er, tp_evfields *f, const char *start) {
    tp_event *ev = point_event(er, f, start, TP_COUNTER);
    for (size_t i = 0; ev && i < er->ncargs; i++) {
        tp_num_arg a = number_arg(er, &er->cargs[i].val);
        add_number_arg(er->m, ev, intern(er, &er->cargs[i].key), &a);
    }
}

static void metadata_event(tp_evread *er, tp_evfields *f) {
    const tp_jstr *name = tp_ev_str(f, TP_S_NAME), *value = tp_ev_str(f, TP_S_META_NAME);
    if (!name || !value) return;
    int thread = tp_scan_str_eq(er->sc, name, "thread_name");
    if (!thread && !tp_scan_str_eq(er->sc, name, "process_name")) return;
    if (TP_GROW(er->names, er->cap_names, er->nnames + 1)) {
        er->m->failed = 1;
        return;
    }
    struct tp_pending_name *pn = &er->names[er->nnames++];
    pn->thread = thread;
    resolve_id(er, tp_ev_val(f, TP_S_PID), &pn->pid, &pn->pid_str);
    resolve_id(er, tp_ev_val(f, TP_S_TID), &pn->tid, &pn->tid_str);
    pn->name = intern(er, value);
}

static void add_event(tp_evread *er, tp_evfields *f, const char *start) {
    const tp_jstr *phase = tp_ev_str(f, TP_S_PH), *name = tp_ev_str(f, TP_S_NAME);
    size_t n;
    const char *ph = phase ? tp_scan_text(er->sc, phase, &n) : "";
    er->with_phase += phase != NULL;
    if (!phase || n != 1) return;
    switch (ph[0]) {
    case 'X':
        complete_event(er, f, start);
        break;
    case 'B':
        begin_event(er, f, start);
        break;
    case 'E':
        end_event(er, f, start);
        break;
    case 'i':
    case 'I':
        if (name && tp_scan_str_eq_n(er->sc, name, tp_kname_memory, TP_KLEN(tp_kname_memory)))
            memory_event(er, f, start);
        break;
    case 'C':
        counter_event(er, f, start);
        break;
    case 'M':
        metadata_event(er, f);
        break;
    default:
        break; /* flows, async, samples, ...: not needed */
    }
}

int tp_evread_fast = 1;

int tp_evread_event(tp_evread *er) {
    tp_scan *sc = er->sc;
    const char *start = sc->p;
    tp_evfields f;
    tp_evfields_clear(&f);
    er->ncargs = 0;
    er->nul_at = NULL;
    int rc = tp_evread_fast ? tp_fast_event(er, &f) : TP_FAST_DECLINED;
    if (rc == TP_FAST_DECLINED) {
        sc->p = start;
        tp_evfields_clear(&f);
        er->ncargs = 0;
        rc = general_event(er, &f);
    }
    if (rc != TP_SCAN_OK) return rc;
    add_event(er, &f, start);
    if (er->nul_at) return tp_scan_fail(sc, er->nul_at, "raw NUL byte inside a string");
    return TP_SCAN_OK;
}

size_t tp_evread_open_ranges(const tp_evread *er) {
    size_t n = 0;
    for (size_t i = 0; i < er->cap_stacks; i++)
        n += er->stacks[i].n;
    return n;
}

int tp_evread_adopt_names(tp_evread *dst, const tp_evread *src, const tp_str *map) {
    if (TP_GROW(dst->names, dst->cap_names, dst->nnames + src->nnames)) return -1;
    for (size_t i = 0; i < src->nnames; i++) {
        struct tp_pending_name pn = src->names[i];
        pn.pid_str = map[pn.pid_str];
        pn.tid_str = map[pn.tid_str];
        pn.name = map[pn.name];
        dst->names[dst->nnames++] = pn;
    }
    return 0;
}

static int name_applies(const struct tp_pending_name *pn, const tp_track *t) {
    return t->pid == pn->pid && t->pid_str == pn->pid_str &&
           (!pn->thread || (t->tid == pn->tid && t->tid_str == pn->tid_str));
}

void tp_evread_finish(tp_evread *er) {
    tp_model *m = er->m;
    for (size_t i = 0; i < er->nnames; i++) {
        const struct tp_pending_name *pn = &er->names[i];
        for (size_t t = 0; t < m->ntracks; t++) {
            if (!name_applies(pn, &m->tracks[t])) continue;
            if (pn->thread)
                m->tracks[t].thread_name = pn->name;
            else
                m->tracks[t].process_name = pn->name;
        }
    }
}
