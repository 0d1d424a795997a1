/* perfetto_read.c - the Perfetto protobuf traces tprof writes, read straight into the model (see
 * perfetto_read.h).
 *
 * One walk over the packets, no JSON in between: each slice, memory instant and counter becomes
 * the model event the JSON reader makes of the same event in the JSON trace of the window, so that
 * both files give the same figures. What decides that is shared with the JSON reader, not
 * repeated: which arg key is which field (fields.h's tp_ev_arg), the kind by category, the step
 * flag, the args kept and the FLOPs from shapes (event.h's tp_evread_add_range and
 * tp_evread_shape_flops), and the names the JSON trace gives unnamed tracks (export/chrome.h).
 * What chrome.c's JSON changes on the way is mirrored here: a double written without fraction
 * reads back as an int, raw JSON args only when valid, memory instants under Kineto's category,
 * other instants and flows left out, the run facts from the "tprof_header" metadata entry (the
 * JSON trace's own header and trailer, read by the JSON reader).
 *
 * Other producers' traces (perfetto_read.h lists what is read of them) go the same way, with no
 * header: nothing in them is the JSON trace's, so the only rule is to read what they say.
 *
 * Speed: the interned tables keep what each id means to the reader (an arg name's slot, an event
 * name's "[memory]" mark) as well as its string, so an event costs a few table lookups and no
 * string is interned twice; a track's ids are worked out once, at its first event. */
#include "trace/perfetto_read.h"

#include "export/chrome.h"
#include "export/perfetto.h"
#include "export/perfetto_proto.h"
#include "model/kineto.h"
#include "trace/event.h"
#include "trace/fields.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/hashtab.h"
#include "util/jsonvalid.h"
#include "util/pb.h"
#include "util/vec.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MAX_IID = 1 << 24,         /* interned ids past this are refused (the tables are arrays) */
    MAX_EXTRA = 1 << 10,       /* extra counter values per event */
    BUDGET_EVERY = 1 << 14,    /* packets between two checks of the memory budget */
    NO_IID = 0xff,             /* iid entry flag: never defined */
    WINDOW = 1 << 20,          /* bytes of a file read at a time */
    MAX_PACKET = 256 << 20,    /* a longer packet is refused (its length is likely garbage) */
    FIRST_SEQUENCE_CLOCK = 64, /* clock ids from here on are a sequence's own */
};

/* An interned string and what it means to the reader. */
typedef struct iid_ent {
    tp_str s;
    uint8_t undefined; /* NO_IID until defined */
    uint8_t slot;     /* an arg name: its tp_ev_arg slot for a range; an event name: 1 "[memory]" */
    uint8_t mem_slot; /* an arg name: its slot for a memory instant */
} iid_ent;

/* A track descriptor. A lane or counter track stands for the thread or named track above it
 * (owner); that one holds the ids, names and the model track. */
typedef struct desc {
    uint64_t uuid, parent;
    int64_t pid, tid;
    tp_str name, description, process_name, thread_name;
    uint8_t is_process, is_thread, is_counter, has_parent;
    uint8_t resolved;                      /* owner, and for an owner its ids, are worked out */
    uint32_t owner;                        /* the desc whose ids this track has */
    tp_str pid_str, tid_str, pname, tname; /* an owner's ids and names */
    uint32_t track;                        /* an owner's model track + 1 once made */
    tp_str series, series_event;           /* a counter track's series key, for that event name */
    size_t *open;                          /* events begun and not ended (SIZE_MAX: left out) */
    size_t nopen, capopen;
} desc;

/* What this file says of a model track: made or used by it, device work on it, its names. */
typedef struct mine {
    uint8_t used, gpu;
    tp_str pname, tname;
} mine;

/* A packet sequence's own state: its interned strings and default track. */
typedef struct sequence {
    uint64_t id;
    iid_ent *iid[3];
    size_t capiid[3];
    uint64_t default_track; /* TrackEventDefaults.track_uuid, 0 when none */
    uint64_t default_clock; /* TracePacketDefaults.timestamp_clock_id, 0 when none */
} sequence;

typedef struct rd {
    tp_model *m;
    tp_evread er;   /* the JSON reader's per-model state: kinds, name classes, arg keys */
    sequence *seqs; /* tprof writes one; other producers one per thread */
    size_t nseqs, capseqs, cur;
    desc *d;
    size_t nd, capd;
    tp_hashtab index; /* uuid -> desc + 1 */
    uint32_t last;    /* the desc found last + 1: events come track by track */
    mine *mine;       /* by model track */
    size_t capmine;
    tp_str k_memcat; /* "cpu_instant_event", a memory instant's category in the JSON */
    size_t first_event;
    char *header; /* the tprof_header entry's JSON, copied out of the input's window */
    size_t header_len;
    const tp_read_opts *o;
    uint64_t packet;  /* the packet being read, from 1; 0 for a problem of the whole trace */
    uint64_t packets; /* packets read */
    int cut;          /* an unfinished trace (tp_read_opts.cut_short_ok) ended inside a packet */
    char why[200];    /* the problem, when one stopped the read */
} rd;

static int bad(rd *r, const char *what) {
    if (!r->why[0]) snprintf(r->why, sizeof(r->why), "%s", what);
    return -1;
}

static tp_str intern(rd *r, const void *p, size_t n) {
    if (memchr(p, '\0', n)) return bad(r, "a string holds a NUL byte"), 0;
    return tp_model_intern(r->m, p, n);
}

static tp_str intern_field(rd *r, const tp_pb_field *f) {
    return intern(r, f->data, f->len);
}

/* ---- interned strings ---------------------------------------------------------------------- */

/* The sequence of id, made current (added when new). */
static int use_sequence(rd *r, uint64_t id) {
    if (r->nseqs && r->seqs[r->cur].id == id) return 0;
    for (r->cur = 0; r->cur < r->nseqs; r->cur++)
        if (r->seqs[r->cur].id == id) return 0;
    if (TP_GROW(r->seqs, r->capseqs, r->nseqs + 1)) return bad(r, "out of memory");
    r->seqs[r->nseqs++] = (sequence){.id = id};
    return 0;
}

static iid_ent *iid_slot(rd *r, int which, uint64_t iid) {
    sequence *q = &r->seqs[r->cur];
    if (iid == 0 || iid >= MAX_IID) return NULL;
    if (iid >= q->capiid[which]) {
        size_t old = q->capiid[which];
        if (TP_GROW(q->iid[which], q->capiid[which], (size_t)iid + 1)) return NULL;
        for (size_t i = old; i < q->capiid[which]; i++)
            q->iid[which][i] = (iid_ent){0, NO_IID, 0, 0};
    }
    return &q->iid[which][iid];
}

/* The entry of iid in table which; NULL (and the read stops) when unknown. */
static const iid_ent *iid_get(rd *r, int which, uint64_t iid) {
    const sequence *q = &r->seqs[r->cur];
    const iid_ent *e = iid < q->capiid[which] && iid ? &q->iid[which][iid] : NULL;
    if (!e || e->undefined) return bad(r, "an interned id that was never defined"), NULL;
    return e;
}

/* What an interned string means: an arg name's slots, an event name's memory mark. */
static void classify(iid_ent *e, int which, const uint8_t *s, size_t n) {
    const char *k = (const char *)s;
    if (which == ID_ARG_NAMES - 1) {
        e->slot = (uint8_t)tp_ev_arg(TP_W_RANGE, k, n);
        e->mem_slot = (uint8_t)tp_ev_arg(TP_W_MEMORY, k, n);
    } else if (which == ID_NAMES - 1) {
        e->slot = TP_KIS(k, n, tp_kname_memory);
    }
}

static int interned(rd *r, tp_pb_in in) {
    tp_pb_field f, e;
    while (tp_pb_next(&in, &f)) {
        if (f.num < 1 || f.num > 3 || f.wire != TP_PB_LEN) continue;
        tp_pb_in ein = tp_pb_sub(&f);
        uint64_t iid = 0;
        const tp_pb_field *name = NULL;
        tp_pb_field n = {0};
        while (tp_pb_next(&ein, &e)) {
            if (e.num == IE_IID && e.wire == TP_PB_VARINT) iid = e.u;
            if (e.num == IE_NAME && e.wire == TP_PB_LEN) n = e, name = &n;
        }
        iid_ent *slot = iid_slot(r, (int)f.num - 1, iid);
        if (ein.bad || !slot || !name) return bad(r, "a malformed interned string");
        tp_str s = intern_field(r, name);
        if (r->why[0]) return -1;
        *slot = (iid_ent){s, 0, 0, 0};
        classify(slot, (int)f.num - 1, name->data, name->len);
    }
    return in.bad ? bad(r, "malformed interned data") : 0;
}

/* A string written inline (other producers' names) as an entry of table which, in e. */
static const iid_ent *inline_entry(rd *r, iid_ent *e, int which, const tp_pb_field *f) {
    *e = (iid_ent){intern_field(r, f), 0, 0, 0};
    if (r->why[0]) return NULL;
    classify(e, which, f->data, f->len);
    return e;
}

/* ---- tracks -------------------------------------------------------------------------------- */

static int desc_eq(const void *ctx, const tp_hslot *s, const void *key) {
    return ((const desc *)ctx)[s->ref - 1].uuid == *(const uint64_t *)key;
}

static size_t desc_find(rd *r, uint64_t uuid) {
    return tp_hashtab_find(&r->index, (uint32_t)tp_hash_bytes(&uuid, sizeof(uuid)), desc_eq, r->d,
                           &uuid);
}

static desc *desc_of(rd *r, uint64_t uuid) {
    if (r->last && r->d[r->last - 1].uuid == uuid) return &r->d[r->last - 1];
    if (!r->index.nslots) return NULL;
    uint32_t ref = tp_hashtab_ref(&r->index, desc_find(r, uuid));
    if (ref) r->last = ref;
    return ref ? &r->d[ref - 1] : NULL;
}

static void sub_ids(rd *r, tp_pb_in in, desc *d, int process) {
    tp_pb_field f;
    while (tp_pb_next(&in, &f)) {
        if (f.num == (process ? PD_PID : THD_PID) && f.wire == TP_PB_VARINT)
            d->pid = (int32_t)f.u;
        else if (!process && f.num == THD_TID && f.wire == TP_PB_VARINT)
            d->tid = (int64_t)f.u;
        else if (f.num == (process ? PD_NAME : THD_NAME) && f.wire == TP_PB_LEN)
            *(process ? &d->process_name : &d->thread_name) = intern_field(r, &f);
    }
    if (in.bad) bad(r, "a malformed process or thread descriptor");
}

static int track_descriptor(rd *r, tp_pb_in in) {
    desc d = {0};
    tp_pb_field f;
    int has_uuid = 0;
    while (tp_pb_next(&in, &f)) {
        if (f.num == TD_UUID && f.wire == TP_PB_VARINT) d.uuid = f.u, has_uuid = 1;
        if (f.num == TD_PARENT && f.wire == TP_PB_VARINT) d.parent = f.u, d.has_parent = 1;
        if (f.num == TD_NAME && f.wire == TP_PB_LEN) d.name = intern_field(r, &f);
        if (f.num == TD_DESCRIPTION && f.wire == TP_PB_LEN) d.description = intern_field(r, &f);
        if (f.num == TD_COUNTER && f.wire == TP_PB_LEN) d.is_counter = 1;
        if ((f.num == TD_PROCESS || f.num == TD_THREAD) && f.wire == TP_PB_LEN) {
            *(f.num == TD_PROCESS ? &d.is_process : &d.is_thread) = 1;
            sub_ids(r, tp_pb_sub(&f), &d, f.num == TD_PROCESS);
        }
    }
    if (in.bad || !has_uuid) return bad(r, "a malformed track descriptor");
    if (r->why[0]) return -1;
    if (tp_hashtab_reserve(&r->index, 64)) return bad(r, "out of memory");
    size_t i = desc_find(r, d.uuid);
    if (tp_hashtab_ref(&r->index, i)) return bad(r, "a track described twice");
    if (TP_GROW(r->d, r->capd, r->nd + 1)) return bad(r, "out of memory");
    r->d[r->nd++] = d;
    *tp_hashtab_at(&r->index, i) =
        (tp_hslot){(uint32_t)tp_hash_bytes(&d.uuid, sizeof(d.uuid)), (uint32_t)r->nd};
    r->index.n++;
    return 0;
}

/* An id written as text: a number when it is one in decimal (as the JSON reader reads a pid
 * or tid), else the text. */
static void id_of(rd *r, tp_str text, int64_t *num, tp_str *str) {
    const char *s = tp_model_str(r->m, text);
    size_t i = s[0] == '-', n = strlen(s);
    uint64_t v = 0;
    int ok = i < n && n - i <= 19;
    for (; ok && i < n; i++) {
        ok = s[i] >= '0' && s[i] <= '9';
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (ok && v <= (uint64_t)INT64_MAX) {
        *num = s[0] == '-' ? -(int64_t)v : (int64_t)v, *str = 0;
        return;
    }
    *num = 0, *str = text;
}

/* The ids and names of thread track (or named track) d under its parent p: a process, or a
 * named track standing for one; a thread track may also stand alone (other producers write
 * them so). A named track's own id is its description, else (other producers) its name. */
static int owner_ids(rd *r, desc *d, const desc *p) {
    int64_t pid = d->pid;
    tp_str pid_str = 0, pname = 0;
    if (p && p->is_process) {
        pid = p->pid, pname = p->process_name;
    } else if (p && p->description) {
        id_of(r, p->description, &pid, &pid_str);
        pname = p->name != p->description ? p->name : 0;
    } else if (!d->is_thread) {
        return bad(r, "a track with neither a thread nor a process above it");
    }
    if (d->is_thread && (pid_str || d->pid != pid)) return bad(r, "a thread of another process");
    d->pid = pid, d->pid_str = pid_str, d->pname = pname, d->tid_str = 0;
    tp_str id = d->description ? d->description : d->name;
    if (!d->is_thread && !id) return bad(r, "a track without a name or a thread");
    if (!d->is_thread) id_of(r, id, &d->tid, &d->tid_str);
    d->tname = d->is_thread ? d->thread_name : d->name != id ? d->name : 0;
    return 0;
}

/* The index of the desc whose ids track i has (itself, or the thread above a lane or counter
 * track); UINT32_MAX when malformed. */
static uint32_t resolve(rd *r, uint32_t i, int depth) {
    desc *d = &r->d[i];
    if (d->resolved) return d->owner;
    if (depth > 2) return bad(r, "a track nested too deep"), UINT32_MAX;
    desc *p = d->has_parent ? desc_of(r, d->parent) : NULL;
    uint32_t owner = i;
    if (d->has_parent && !p) return bad(r, "a track whose parent is not described"), UINT32_MAX;
    if (!d->is_thread && !d->description && p && !p->is_process) {
        owner = resolve(r, (uint32_t)(p - r->d), depth + 1); /* a lane, a counter track */
        if (owner == UINT32_MAX) return UINT32_MAX;
    } else if (owner_ids(r, d, p)) {
        return UINT32_MAX;
    }
    d = &r->d[i];
    d->owner = owner, d->resolved = 1;
    return owner;
}

/* The model track of owner desc o, made at its first event as the JSON reader makes a track at
 * the first event on it; UINT32_MAX when out of memory. */
static uint32_t model_track(rd *r, desc *o) {
    if (o->track) return o->track - 1;
    uint32_t t = tp_model_track(r->m, o->pid, o->pid_str, o->tid, o->tid_str);
    if (t == UINT32_MAX) return bad(r, "out of memory"), UINT32_MAX;
    if (t >= r->capmine) {
        size_t old = r->capmine;
        if (TP_GROW(r->mine, r->capmine, (size_t)t + 1)) return bad(r, "out of memory"), UINT32_MAX;
        memset(r->mine + old, 0, (r->capmine - old) * sizeof(*r->mine));
    }
    mine *w = &r->mine[t];
    if (!w->used) *w = (mine){1, 0, o->pname, o->tname};
    o->track = t + 1;
    return t;
}

/* ---- values, as the JSON trace of the window writes them and the JSON reader reads them ---- */

/* A double as it reads back from chrome.c's text of it: an int when written without fraction
 * or exponent, none when not finite (no JSON number). */
static tp_num_arg num_of_double(double d) {
    tp_num_arg a = {.type = -1};
    if (!isfinite(d)) return a;
    char text[TP_FMT_DOUBLE_MAX + 1];
    size_t n = (size_t)(tp_fmt_double(text, d) - text);
    a.type = tp_evread_decimal(text, n, &a.v.i) ? TP_ARG_INT : TP_ARG_DOUBLE;
    if (a.type == TP_ARG_DOUBLE) a.v.d = d;
    return a;
}

/* Raw JSON text without the white space around it; NULL when it is not valid JSON (chrome.c
 * writes it as a string then). */
static const char *json_text(const tp_pb_field *v, size_t *n) {
    const char *s = (const char *)v->data;
    size_t len = v->len;
    *n = 0;
    if (!tp_json_valid(s, len)) return NULL;
    while (len && strchr(" \t\r\n", s[0]))
        s++, len--;
    while (len && strchr(" \t\r\n", s[len - 1]))
        len--;
    *n = len;
    return s;
}

/* A debug annotation's value as a number (int, uint, double, or raw JSON that is a number). */
static tp_num_arg num_of(const tp_pb_field *v) {
    tp_num_arg a = {.type = -1};
    size_t n;
    const char *s;
    char text[32];
    switch (v->num) {
    case DA_UINT:
    case DA_INT:
        a.type = TP_ARG_INT, a.v.i = (int64_t)v->u;
        return a;
    case DA_DOUBLE:
        return v->wire == TP_PB_I64 ? num_of_double(tp_pb_as_double(v)) : a;
    case DA_JSON:
        s = v->wire == TP_PB_LEN ? json_text(v, &n) : NULL;
        if (!s || !n || !(s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))) return a;
        if (tp_evread_decimal(s, n, &a.v.i)) {
            a.type = TP_ARG_INT;
        } else if (n < sizeof(text)) {
            memcpy(text, s, n);
            text[n] = '\0';
            a.type = TP_ARG_DOUBLE, a.v.d = strtod(text, NULL);
        }
        return a;
    default:
        return a;
    }
}

/* A string arg: a string annotation, or raw JSON that chrome.c writes as a string. */
static tp_str str_of(rd *r, const tp_pb_field *v) {
    if (v->wire != TP_PB_LEN || (v->num != DA_STRING && v->num != DA_JSON)) return TP_STR_EMPTY;
    if (v->num == DA_JSON && tp_json_valid((const char *)v->data, v->len)) return TP_STR_EMPTY;
    return intern_field(r, v);
}

/* An array arg's raw text (raw JSON that is an array), or NULL. */
static const char *array_of(const tp_pb_field *v, size_t *n) {
    *n = 0;
    if (v->num != DA_JSON || v->wire != TP_PB_LEN) return NULL;
    const char *s = json_text(v, n);
    return s && *n && s[0] == '[' ? s : NULL;
}

/* ---- events -------------------------------------------------------------------------------- */

/* The scalar fields of a TrackEvent. */
typedef struct te_fields {
    uint64_t type, track, name_iid, cat_iid;
    int has_track, has_name, has_cat, has_int, has_double;
    tp_pb_field name, cat; /* inline ones (num 0: none) */
    int64_t counter;
    double dcounter;
} te_fields;

/* The scalar fields; for a slice's begin or an instant, up to the first annotation (the writer
 * puts them first), where *rest then starts: those kinds have no field after their args that
 * the reader needs. */
static void scalars(tp_pb_in in, te_fields *t, tp_pb_in *rest) {
    tp_pb_field f;
    tp_pb_in all = in, before = in;
    while (tp_pb_next(&in, &f)) {
        if (f.num == TE_ANNOTATIONS && (t->type == TYPE_BEGIN || t->type == TYPE_INSTANT)) {
            *rest = before;
            return;
        }
        before = in;
        if (f.wire == TP_PB_VARINT && f.num == TE_TYPE) t->type = f.u;
        if (f.wire == TP_PB_VARINT && f.num == TE_TRACK) t->track = f.u, t->has_track = 1;
        if (f.wire == TP_PB_VARINT && f.num == TE_NAME_IID) t->name_iid = f.u, t->has_name = 1;
        if (f.wire == TP_PB_VARINT && f.num == TE_CATEGORY_IIDS && !t->has_cat)
            t->cat_iid = f.u, t->has_cat = 1;
        if (f.wire == TP_PB_VARINT && f.num == TE_COUNTER_VALUE)
            t->counter = (int64_t)f.u, t->has_int = 1;
        if (f.wire == TP_PB_I64 && f.num == TE_DOUBLE_COUNTER_VALUE)
            t->dcounter = tp_pb_as_double(&f), t->has_double = 1;
        if (f.wire == TP_PB_LEN && f.num == TE_NAME) t->name = f;
        if (f.wire == TP_PB_LEN && f.num == TE_CATEGORIES && !t->cat.num) t->cat = f;
    }
    *rest = in.bad ? in : all;
}

/* One debug annotation: its name's entry (an interned one, or an inline one kept in own) and its
 * value field; -1 when malformed. A value of a kind tprof does not read (nested, pointer,
 * interned string) leaves v->num 0: the annotation is skipped. */
static int annotation(rd *r, tp_pb_in in, const iid_ent **key, iid_ent *own, tp_pb_field *v) {
    tp_pb_field f;
    *key = NULL;
    v->num = 0;
    while (tp_pb_next(&in, &f)) {
        if (f.num == DA_NAME_IID && f.wire == TP_PB_VARINT) {
            if (!(*key = iid_get(r, ID_ARG_NAMES - 1, f.u))) return -1;
        } else if (f.num == DA_NAME && f.wire == TP_PB_LEN) {
            if (!(*key = inline_entry(r, own, ID_ARG_NAMES - 1, &f))) return -1;
        } else if (f.num >= DA_BOOL && f.num <= DA_JSON && f.num != DA_POINTER &&
                   f.num != DA_NESTED) {
            *v = f;
        }
    }
    if (in.bad || !*key) return bad(r, "a malformed debug annotation");
    return 0;
}

/* What a slice's annotations give its range, as range_start (event.c) takes them from the JSON's
 * args: a later key wins, as there. Concrete Inputs only serve the FLOPs. */
static int range_args(rd *r, tp_pb_in in, tp_open_range *o) {
    tp_pb_field f, v;
    const iid_ent *key;
    iid_ent own;
    const char *dims = NULL, *conc = NULL, *s;
    size_t dlen = 0, clen = 0, n;
    int64_t id;
    while (tp_pb_next(&in, &f)) {
        if (f.num != TE_ANNOTATIONS || f.wire != TP_PB_LEN) continue;
        if (annotation(r, tp_pb_sub(&f), &key, &own, &v)) return -1;
        if (!v.num) continue;
        tp_num_arg a;
        switch (key->slot) {
        case TP_S_CORR:
            a = num_of(&v);
            id = a.type == TP_ARG_INT ? a.v.i : 0;
            o->corr = id > 0 ? (uint64_t)id : 0;
            break;
        case TP_S_EXT:
            a = num_of(&v);
            o->ext = a.type == TP_ARG_INT ? tp_ext_id(a.v.i) : 0;
            break;
        case TP_S_FLOPS:
        case TP_S_FLOPS_FCM:
        case TP_S_SEQ:
        case TP_S_ASYNC:
        case TP_S_SEQNR:
        case TP_S_FWDTID:
            a = num_of(&v);
            *(key->slot == TP_S_FLOPS       ? &o->flops
              : key->slot == TP_S_FLOPS_FCM ? &o->fcm
              : key->slot == TP_S_SEQ       ? &o->seq
              : key->slot == TP_S_ASYNC     ? &o->async
              : key->slot == TP_S_SEQNR     ? &o->seqnr
                                            : &o->fwd_tid) = a;
            break;
        case TP_S_COLL_NAME:
            o->coll_name = str_of(r, &v);
            break;
        case TP_S_SETUP:
            o->setup = str_of(r, &v);
            break;
        case TP_S_DIMS:
        case TP_S_ITYPE:
        case TP_S_CONCRETE:
            s = array_of(&v, &n);
            if (key->slot == TP_S_CONCRETE) {
                conc = s, clen = n;
                break;
            }
            if (key->slot == TP_S_DIMS) dims = s, dlen = n;
            *(key->slot == TP_S_DIMS ? &o->dims : &o->itype) = s ? intern(r, s, n) : TP_STR_EMPTY;
            break;
        default:
            break;
        }
    }
    if (in.bad) return bad(r, "a malformed track event");
    if (o->flops.type < 0 && dims)
        o->flops = tp_evread_shape_flops(&r->er, o->name, dims, dlen, conc, clen, 0);
    if (o->fcm.type < 0 && dims)
        o->fcm = tp_evread_shape_flops(&r->er, o->name, dims, dlen, conc, clen, 1);
    return r->why[0] ? -1 : 0;
}

/* A slice's begin: the range, added now (the model keeps the order of begins), its length
 * set at its end. */
static int slice_begin(rd *r, desc *d, uint32_t track, tp_str name, tp_str cat, tp_pb_in in,
                       int64_t ts) {
    /* field by field: an initializer cleared the whole struct with rep stos, a tenth of the
     * read; the values of the numbers without a type are never read */
    tp_open_range o;
    o.ts = ts, o.name = name, o.cat = cat, o.corr = 0, o.ext = 0;
    o.flops.type = o.fcm.type = o.seq.type = o.async.type = o.seqnr.type = o.fwd_tid.type = -1;
    o.coll_name = o.dims = o.itype = o.setup = o.raw = TP_STR_EMPTY;
    if (range_args(r, in, &o)) return -1;
    tp_event *ev = tp_evread_add_range(&r->er, track, &o, 0);
    if (!ev && r->m->failed) return bad(r, "out of memory");
    if (ev && tp_kind_is_device(ev->kind)) r->mine[track].gpu = 1;
    if (TP_GROW(d->open, d->capopen, d->nopen + 1)) return bad(r, "out of memory");
    d->open[d->nopen++] = ev ? r->m->nevents - 1 : SIZE_MAX;
    return 0;
}

/* A "[memory]" instant: Kineto's category, the args of tp_mem_keys in their order. */
static int memory_instant(rd *r, uint32_t track, tp_str name, tp_pb_in in, int64_t ts) {
    tp_num_arg vals[TP_NMEM];
    for (int i = 0; i < TP_NMEM; i++)
        vals[i].type = -1;
    tp_pb_field f, v;
    const iid_ent *key;
    iid_ent own;
    while (tp_pb_next(&in, &f)) {
        if (f.num != TE_ANNOTATIONS || f.wire != TP_PB_LEN) continue;
        if (annotation(r, tp_pb_sub(&f), &key, &own, &v)) return -1;
        if (v.num && key->mem_slot >= TP_S_MEM && key->mem_slot < TP_NSLOTS)
            vals[key->mem_slot - TP_S_MEM] = num_of(&v);
    }
    if (!r->k_memcat) r->k_memcat = tp_model_intern_cstr(r->m, tp_kcat_cpu_instant_event);
    tp_event *ev = tp_model_new_event(r->m, track, TP_MEMORY, ts, name, r->k_memcat);
    for (int i = 0; ev && i < TP_NMEM; i++)
        if (vals[i].type >= 0)
            tp_model_add_arg(r->m, ev, r->er.k_mem[i], (tp_arg_type)vals[i].type, &vals[i].v);
    return ev && !r->m->failed ? 0 : bad(r, "out of memory");
}

/* The series key of counter track d for the event named event_name: its name after
 * "<event name> " (computed once per track). */
static int series_key(rd *r, desc *d, tp_str event_name, tp_str *key) {
    if (d->series && d->series_event == event_name) {
        *key = d->series;
        return 0;
    }
    const char *n = tp_model_str(r->m, event_name), *t = tp_model_str(r->m, d->name);
    size_t nl = strlen(n);
    if (!d->is_counter || strncmp(t, n, nl) != 0 || (t[nl] != ' ' && t[nl]))
        return bad(r, "a counter value on a track not named for its event");
    /* "<event> <series>" as tprof names them; a track of its event's name alone (other
     * producers') is its one series */
    *key = d->series = t[nl] ? tp_model_intern_cstr(r->m, t + nl + 1) : d->name;
    d->series_event = event_name;
    return 0;
}

static int add_series(rd *r, tp_event *ev, uint64_t uuid, tp_num_arg a) {
    desc *d = desc_of(r, uuid);
    tp_str key;
    if (!d || series_key(r, d, ev->name, &key))
        return bad(r, "a counter value on an unknown track");
    if (a.type >= 0 && tp_model_add_arg(r->m, ev, key, (tp_arg_type)a.type, &a.v))
        return bad(r, "out of memory");
    return 0;
}

static tp_num_arg int_arg(int64_t i) {
    tp_num_arg a = {.type = TP_ARG_INT};
    a.v.i = i;
    return a;
}

/* The extra values of a counter event, each with its track: the n-th value of valf goes with
 * the n-th uuid of trackf (either may be packed). */
static int extras(rd *r, tp_event *ev, tp_pb_in in, uint32_t trackf, uint32_t valf, int dbl) {
    uint64_t uuids[MAX_EXTRA];
    size_t nu = 0, nv = 0;
    tp_pb_in all = in;
    tp_pb_field f, g;
    while (tp_pb_next(&all, &f)) {
        if (f.num != trackf) continue;
        tp_pb_in packed = f.wire == TP_PB_LEN ? tp_pb_sub(&f) : tp_pb_in_of(NULL, 0);
        if (f.wire == TP_PB_VARINT && nu < MAX_EXTRA) uuids[nu++] = f.u;
        while (f.wire == TP_PB_LEN && nu < MAX_EXTRA && tp_pb_next(&packed, &g))
            uuids[nu++] = g.u;
    }
    while (tp_pb_next(&in, &f)) {
        if (f.num != valf) continue;
        if (nv >= nu) return bad(r, "more extra counter values than tracks");
        tp_num_arg a = dbl ? num_of_double(tp_pb_as_double(&f)) : int_arg((int64_t)f.u);
        if (add_series(r, ev, uuids[nv++], a)) return -1;
    }
    return nv == nu ? 0 : bad(r, "fewer extra counter values than tracks");
}

static int counter(rd *r, uint32_t track, const te_fields *t, tp_str name, tp_str cat, tp_pb_in in,
                   int64_t ts) {
    if (t->has_int == t->has_double) return bad(r, "a counter event without one value");
    tp_event *ev = tp_model_new_event(r->m, track, TP_COUNTER, ts, name, cat);
    if (!ev) return bad(r, "out of memory");
    tp_num_arg first = t->has_int ? int_arg(t->counter) : num_of_double(t->dcounter);
    if (add_series(r, ev, t->track, first) ||
        extras(r, ev, in, TE_EXTRA_COUNTER_TRACKS, TE_EXTRA_COUNTER_VALUES, 0) ||
        extras(r, ev, in, TE_EXTRA_DOUBLE_COUNTER_TRACKS, TE_EXTRA_DOUBLE_COUNTER_VALUES, 1))
        return bad(r, "a malformed counter event");
    return 0;
}

static int slice_end(rd *r, desc *d, int64_t ts) {
    if (!d->nopen) return bad(r, "a slice end without its begin");
    size_t i = d->open[--d->nopen];
    if (i == SIZE_MAX) return 0;
    tp_event *ev = &r->m->events[i];
    if (ts < ev->ts) return bad(r, "a slice that ends before it begins");
    ev->dur = ts - ev->ts;
    return 0;
}

static int track_event(rd *r, tp_pb_in in, int64_t ts) {
    te_fields t = {0};
    tp_pb_in rest;
    scalars(in, &t, &rest);
    if (rest.bad) return bad(r, "a malformed track event");
    if (!t.has_track && r->seqs[r->cur].default_track)
        t.track = r->seqs[r->cur].default_track, t.has_track = 1;
    if (!t.has_track) return bad(r, "an event without a track (no track_uuid, no default)");
    desc *d = desc_of(r, t.track);
    if (!d) return bad(r, "an event on an unknown track");
    uint32_t owner = resolve(r, (uint32_t)(d - r->d), 0);
    if (owner == UINT32_MAX) return -1;
    if (t.type == TYPE_END) return slice_end(r, d, ts);
    if (t.type < TYPE_BEGIN || t.type > TYPE_COUNTER) return bad(r, "an event of an unknown type");
    iid_ent inline_name, inline_cat;
    const iid_ent *name = t.has_name   ? iid_get(r, ID_NAMES - 1, t.name_iid)
                          : t.name.num ? inline_entry(r, &inline_name, ID_NAMES - 1, &t.name)
                                       : NULL;
    if (!name && t.type == TYPE_COUNTER && d->name) { /* other producers': the track's name */
        inline_name = (iid_ent){d->name, 0, 0, 0};
        name = &inline_name;
    }
    if (!name) return bad(r, "an event without a name");
    const iid_ent *cat = t.has_cat   ? iid_get(r, ID_CATEGORIES - 1, t.cat_iid)
                         : t.cat.num ? inline_entry(r, &inline_cat, ID_CATEGORIES - 1, &t.cat)
                                     : NULL;
    if ((t.has_cat || t.cat.num) && !cat) return -1;
    if (t.type == TYPE_INSTANT && !name->slot) return 0; /* the JSON reader keeps no other */
    uint32_t track = model_track(r, &r->d[owner]);
    if (track == UINT32_MAX) return -1;
    tp_str c = cat ? cat->s : TP_STR_EMPTY;
    if (t.type == TYPE_BEGIN) return slice_begin(r, d, track, name->s, c, rest, ts);
    if (t.type == TYPE_INSTANT) return memory_instant(r, track, name->s, rest, ts);
    return counter(r, track, &t, name->s, c, in, ts);
}

static int metadata(rd *r, tp_pb_in in) {
    tp_pb_field f, e;
    while (tp_pb_next(&in, &f)) {
        if (f.num != CEB_METADATA || f.wire != TP_PB_LEN) continue;
        tp_pb_in m = tp_pb_sub(&f);
        const uint8_t *json = NULL;
        size_t len = 0;
        int ours = 0;
        while (tp_pb_next(&m, &e)) {
            if (e.num == CM_NAME && e.wire == TP_PB_LEN)
                ours = e.len == strlen(TP_PERFETTO_HEADER) &&
                       memcmp(e.data, TP_PERFETTO_HEADER, e.len) == 0;
            if (e.num == CM_JSON && e.wire == TP_PB_LEN) json = e.data, len = e.len;
        }
        if (!ours || !json) continue;
        free(r->header);
        r->header = malloc(len ? len : 1);
        if (!r->header) return bad(r, "out of memory");
        memcpy(r->header, json, len);
        r->header_len = len;
    }
    return 0;
}

/* TracePacketDefaults: the sequence's default track for events without track_uuid. */
static int packet_defaults(rd *r, tp_pb_in in) {
    tp_pb_field f, g;
    while (tp_pb_next(&in, &f)) {
        if (f.num == PK_CLOCK_ID && f.wire == TP_PB_VARINT) r->seqs[r->cur].default_clock = f.u;
        if (f.num != PKD_TRACK_EVENT_DEFAULTS || f.wire != TP_PB_LEN) continue;
        tp_pb_in d = tp_pb_sub(&f);
        while (tp_pb_next(&d, &g))
            if (g.num == TED_TRACK_UUID && g.wire == TP_PB_VARINT)
                r->seqs[r->cur].default_track = g.u;
        if (d.bad) return bad(r, "malformed packet defaults");
    }
    return in.bad ? bad(r, "malformed packet defaults") : 0;
}

/* One TracePacket, in one walk; then its sequence's state (cleared, defaults, interned strings,
 * which serve the event of the same packet), then its body. */
static int packet(rd *r, tp_pb_in in) {
    tp_pb_field f, body = {0}, strings = {0}, defaults = {0};
    uint64_t seq = 0, flags = 0, clock = 0;
    int64_t ts = 0;
    int has_clock = 0;
    while (tp_pb_next(&in, &f)) {
        if (f.wire == TP_PB_VARINT) {
            if (f.num == PK_SEQ_ID) seq = f.u;
            if (f.num == PK_SEQ_FLAGS) flags = f.u;
            if (f.num == PK_TIMESTAMP) ts = (int64_t)f.u;
            if (f.num == PK_CLOCK_ID) clock = f.u, has_clock = 1;
        } else if (f.wire == TP_PB_LEN) {
            if (f.num == PK_INTERNED) strings = f;
            if (f.num == PK_DEFAULTS) defaults = f;
            if (f.num == PK_TRACK_DESC || f.num == PK_TRACK_EVENT || f.num == PK_CHROME_EVENTS)
                body = f;
        }
    }
    if (in.bad) return bad(r, "a malformed packet");
    if (use_sequence(r, seq)) return -1;
    sequence *q = &r->seqs[r->cur];
    if (flags & SEQ_CLEARED) {
        q->default_track = q->default_clock = 0;
        for (int i = 0; i < 3; i++)
            for (size_t k = 0; k < q->capiid[i]; k++)
                q->iid[i][k].undefined = NO_IID;
    }
    if (defaults.num && packet_defaults(r, tp_pb_sub(&defaults))) return -1;
    if (strings.num && interned(r, tp_pb_sub(&strings))) return -1;
    switch (body.num) {
    case PK_TRACK_DESC:
        return track_descriptor(r, tp_pb_sub(&body));
    case PK_TRACK_EVENT:
        if ((has_clock ? clock : r->seqs[r->cur].default_clock) >= FIRST_SEQUENCE_CLOCK)
            return bad(r, "an event timed by a clock of its sequence (incremental timestamps): "
                          "tprof reads absolute ones only");
        return track_event(r, tp_pb_sub(&body), ts);
    case PK_CHROME_EVENTS:
        return metadata(r, tp_pb_sub(&body));
    default:
        return 0;
    }
}

/* ---- the end of the read: run facts, times, names -------------------------------------- */

int tp_perfetto_sniff(const unsigned char *p, size_t n) {
    if (n < 2 || p[0] != 0x0a) return 0;
    size_t i = 1;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (i == n) return 0;
    if (p[i] != '{' && p[i] != '[') return 1;
    /* JSON's '{' or '[' is followed by a value's start or white space; a length of 123 or 91 by
     * a field's tag. */
    return i + 1 < n && !strchr(" \t\r\n\"{[]}-0123456789tfn", p[i + 1]);
}

static void rd_free(rd *r) {
    for (size_t q = 0; q < r->nseqs; q++)
        for (int i = 0; i < 3; i++)
            free(r->seqs[q].iid[i]);
    free(r->seqs);
    for (size_t i = 0; i < r->nd; i++)
        free(r->d[i].open);
    free(r->d);
    free(r->index.slots);
    free(r->mine);
    free(r->header);
    tp_evread_free(&r->er);
}

static int64_t sat_add(int64_t a, int64_t b) {
    int64_t s;
    if (!__builtin_add_overflow(a, b, &s)) return s;
    return b > 0 ? INT64_MAX : INT64_MIN;
}

/* The run facts of the header (base time, rank, devices, the tprof object's), read by the JSON
 * reader on their own, into the model as the JSON reader applies them (reader.c). Events go
 * from absolute times onto the model's base, checked against the JSON reader's limit. */
static int header_facts(rd *r) {
    tp_model h, *m = r->m;
    tp_model_init(&h); /* without one (another producer's trace): times as they are, no facts */
    char why[256];
    int rc = r->header ? tp_trace_read_mem(r->header, r->header_len, TP_PERFETTO_HEADER, &h, why,
                                           sizeof(why))
                       : 0;
    if (rc || h.nevents) rc = bad(r, "its " TP_PERFETTO_HEADER " metadata is not a trace header");
    if (r->first_event == 0) m->base_ns = h.base_ns;
    for (size_t i = r->first_event; rc == 0 && i < m->nevents; i++) {
        tp_event *ev = &m->events[i];
        int64_t rel = (int64_t)((uint64_t)ev->ts - (uint64_t)h.base_ns);
        if (rel <= -TP_TIME_LIMIT || rel >= TP_TIME_LIMIT || ev->dur >= TP_TIME_LIMIT)
            rc = bad(r, "a time more than 146 years from the trace's base time");
        else
            ev->ts = sat_add(rel, sat_add(h.base_ns, -m->base_ns));
    }
    if (h.rank >= 0) m->rank = h.rank;
    if (h.world_size >= 0) m->world_size = h.world_size;
    m->dropped_events += h.dropped_events;
    m->partial |= h.partial;
    if (h.flight_step >= 0) {
        m->flight_step = h.flight_step;
        m->flight_reason = tp_model_intern_cstr(m, tp_model_str(&h, h.flight_reason));
    }
    for (size_t i = 0; rc == 0 && i < h.ndevices; i++) {
        const tp_device *s = &h.devices[i];
        tp_device *d = tp_model_device(m, s->id);
        if (!d)
            rc = bad(r, "out of memory");
        else
            *d = (tp_device){s->id,
                             tp_model_intern_cstr(m, tp_model_str(&h, s->name)),
                             s->total_mem,
                             s->compute_major,
                             s->compute_minor,
                             s->num_sms};
    }
    tp_model_free(&h);
    return rc;
}

static int same_process(const tp_track *a, const tp_track *b) {
    return a->pid == b->pid && a->pid_str == b->pid_str;
}

/* The names the JSON trace gives the tracks this file has events on (its metadata: a
 * process's name from any of its tracks, else export/chrome.h's label, on every track of the
 * model in that process; a thread's, else its label), as the JSON reader applies them. */
static void name_tracks(rd *r) {
    tp_model *m = r->m;
    char label[64];
    for (size_t t = 0; t < r->capmine && t < m->ntracks; t++) {
        if (!r->mine[t].used) continue;
        const tp_track *tr = &m->tracks[t];
        tp_str pname = 0;
        int gpu = 0, first = 1;
        for (size_t u = 0; u < r->capmine && u < m->ntracks; u++) {
            if (!r->mine[u].used || !same_process(&m->tracks[u], tr)) continue;
            first = first && u >= t;
            gpu |= r->mine[u].gpu;
            if (!pname) pname = r->mine[u].pname;
        }
        if (!first) continue; /* the process was named with its first track */
        if (!pname)
            pname =
                tp_model_intern_cstr(m, tp_chrome_process_label(m, tr, gpu, label, sizeof(label)));
        for (size_t u = 0; u < m->ntracks; u++)
            if (same_process(&m->tracks[u], &m->tracks[t])) m->tracks[u].process_name = pname;
    }
    for (size_t t = 0; t < r->capmine && t < m->ntracks; t++) {
        if (!r->mine[t].used) continue;
        tp_str tname = r->mine[t].tname;
        if (!tname)
            tname = tp_model_intern_cstr(
                m, tp_chrome_thread_label(m, &m->tracks[t], r->mine[t].gpu, label, sizeof(label)));
        m->tracks[t].thread_name = tname;
    }
}

/* Once every BUDGET_EVERY packets: the memory budget, as the JSON reader counts it. */
static int check_budget(rd *r) {
    const tp_read_opts *o = r->o;
    if (r->m->failed || r->m->strings.failed) return bad(r, "out of memory");
    if (!o || !o->max_memory) return 0;
    uint64_t used = o->memory_used + tp_read_memory_estimate(r->m);
    if (used <= o->max_memory) return 0;
    snprintf(r->why, sizeof(r->why),
             "over the memory budget: its events need more than --max-memory %llu MB (about "
             "%llu MB after %zu events; raise --max-memory, or give fewer windows)",
             (unsigned long long)(o->max_memory >> 20), (unsigned long long)(used >> 20),
             r->m->nevents);
    return -1;
}

/* ---- the stream of packets ------------------------------------------------------------- */

/* The input's bytes, a window at a time (a file is not held whole: memory stays the model's);
 * a memory input is its own window. */
typedef struct stream {
    tp_input *in; /* NULL: data is the whole input */
    uint8_t *buf; /* the window, owned when in */
    const uint8_t *data;
    size_t cap, start, end;
    int eof;
    uint64_t consumed; /* bytes before data[0] */
} stream;

/* Keeps data[start..end), moved to the front, and reads behind it until the window holds need
 * bytes (growing it when need is more) or the input ends. */
static int refill(rd *r, stream *s, size_t need) {
    size_t keep = s->end - s->start;
    if (need > s->cap) {
        size_t cap = s->cap * 2 > need ? s->cap * 2 : need;
        uint8_t *p = realloc(s->buf, cap);
        if (!p) return bad(r, "out of memory");
        s->buf = p, s->cap = cap;
    }
    memmove(s->buf, s->buf + s->start, keep);
    s->consumed += s->start;
    s->data = s->buf, s->start = 0, s->end = keep;
    while (s->end < s->cap && !s->eof) {
        ptrdiff_t n = tp_input_read(s->in, (char *)s->buf + s->end, s->cap - s->end);
        if (n < 0) return bad(r, tp_input_error(s->in));
        s->eof = n == 0;
        s->end += (size_t)n;
    }
    return 0;
}

/* The next field of the Trace message: 1 with f (valid until the next call), 0 at the end, -1
 * (r->why) when malformed. */
static int next_field(rd *r, stream *s, tp_pb_field *f) {
    for (;;) {
        tp_pb_in in = tp_pb_in_of(s->data + s->start, s->end - s->start);
        if (in.p == in.end && s->eof) return 0;
        if (tp_pb_next(&in, f)) {
            s->start = (size_t)(in.p - s->data);
            return 1;
        }
        /* cut by the window's end, or malformed: a length-delimited field says its size */
        tp_pb_in h = tp_pb_in_of(s->data + s->start, s->end - s->start);
        uint64_t key = 0, len = 0;
        size_t need = 32, avail = s->end - s->start;
        if (!tp_pb_read_varint(&h, &key) && (key & 7) == TP_PB_LEN && !tp_pb_read_varint(&h, &len))
            need = (size_t)(h.p - (s->data + s->start)) + (len < MAX_PACKET ? len : MAX_PACKET);
        r->packet++;
        if (s->eof && need > avail && r->o && r->o->cut_short_ok) { /* killed inside a write */
            r->packet--;
            r->cut = 1;
            return 0;
        }
        if (s->eof || need <= avail) return bad(r, "a malformed packet");
        if (len >= MAX_PACKET) return bad(r, "a packet longer than 256 MB");
        r->packet--;
        if (refill(r, s, need)) return -1;
    }
}

/* A streamed trace cut inside the packet after a slice's begin (export/perfetto.h: a range's
 * begin and end are written together): that slice, event i, the model's last, is left out. 1
 * when it is (or was left out already), 0 when i is another (not the stream's layout). */
static int drop_last(rd *r, size_t i) {
    tp_model *m = r->m;
    if (i == SIZE_MAX) return 1;
    if (i + 1 != m->nevents) return 0;
    const tp_event *ev = &m->events[i];
    if (ev->nargs && ev->arg0 + ev->nargs == m->nargs) m->nargs = ev->arg0;
    m->nevents--;
    return 1;
}

static int read_packets(rd *r, stream *s) {
    tp_pb_field f;
    int rc;
    while ((rc = next_field(r, s, &f)) == 1) {
        r->packet++;
        if (f.num == TRACE_PACKET && f.wire == TP_PB_LEN && packet(r, tp_pb_sub(&f))) return -1;
        if (r->packet % BUDGET_EVERY == 0 && check_budget(r)) return -1;
        if (r->why[0]) return -1;
    }
    if (rc < 0 || check_budget(r)) return -1;
    r->packets = r->packet;
    r->packet = 0; /* what follows is of the whole trace */
    /* an unfinished trace is cut where it ends without its header, even at a packet's end */
    if (r->o && r->o->cut_short_ok && !r->header) r->cut = 1;
    for (size_t i = 0; i < r->nd; i++) {
        desc *d = &r->d[i];
        if (r->cut && d->nopen == 1 && drop_last(r, d->open[0]))
            d->nopen = 0; /* its end was in the packet cut: the slice goes too */
        if (d->nopen) return bad(r, "a slice begun and never ended");
    }
    return 0;
}

/* The read of s, as perfetto_read.h says. */
static int read_stream(stream *s, const char *name, tp_model *out, const tp_read_opts *o, char *err,
                       size_t errlen) {
    rd r = {.m = out, .o = o, .first_event = out->nevents};
    size_t first_arg = out->nargs;
    tp_evread_init(&r.er, out, NULL);
    int rc = s->in ? refill(&r, s, WINDOW) : 0;
    if (rc == 0) rc = read_packets(&r, s);
    if (rc == 0) rc = header_facts(&r);
    if (rc == 0 && r.cut) { /* as the JSON reader's cut-short trace (reader.h) */
        out->partial = 1;
        if (o->cut_short) *o->cut_short = 1;
    }
    if (rc == 0) {
        name_tracks(&r);
        out->input_events += r.packets; /* its entries: packets, where JSON has events */
        out->input_bytes += s->consumed + s->end;
        if (out->failed || out->strings.failed) rc = bad(&r, "out of memory");
    }
    if (rc) { /* the events of a trace read in part are of no use, their times not even relative */
        out->nevents = r.first_event;
        out->nargs = first_arg;
    }
    if (rc && err && errlen) {
        if (r.packet)
            snprintf(err, errlen, "%s: packet %" PRIu64 ": %s", name, r.packet, r.why);
        else
            snprintf(err, errlen, "%s: %s", name, r.why);
    }
    rd_free(&r);
    return rc;
}

int tp_perfetto_read_mem(const void *data, size_t len, const char *name, tp_model *out,
                         const tp_read_opts *o, char *err, size_t errlen) {
    stream s = {.data = data, .end = len, .eof = 1};
    return read_stream(&s, name ? name : "<memory>", out, o, err, errlen);
}

int tp_perfetto_read_input(tp_input *in, const char *name, tp_model *out, const tp_read_opts *o,
                           char *err, size_t errlen) {
    stream s = {.in = in};
    int rc = read_stream(&s, name, out, o, err, errlen);
    free(s.buf);
    return rc;
}
