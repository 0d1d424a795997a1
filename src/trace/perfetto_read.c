/* perfetto_read.c - the Perfetto protobuf traces tprof writes, read back (see perfetto_read.h).
 *
 * Two steps. The packets rebuild the model export/perfetto.c was given (every event, arg and
 * track name, times back on baseTimeNanoseconds); that model is then written as its JSON trace by
 * export/chrome.c and read by the JSON reader, so that both files of a window give the same model
 * and every figure agrees (the JSON reader alone decides what an analysis keeps: kinds by
 * category, steps, FLOPs from shapes, the args it reads). The JSON is a transient of the size of
 * the JSON trace; reading the protobuf straight into the final model would save it. */
#include "trace/perfetto_read.h"

#include "export/chrome.h"
#include "export/perfetto.h"
#include "export/perfetto_proto.h"
#include "model/kineto.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/hashtab.h"
#include "util/pb.h"
#include "util/vec.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    MAX_IID = 1 << 24,   /* interned ids past this are refused (the tables are arrays) */
    MAX_EXTRA = 1 << 10, /* extra counter values per event */
};

/* A track descriptor. */
typedef struct desc {
    uint64_t uuid, parent;
    int64_t pid, tid;
    tp_str name, description, process_name, thread_name;
    uint8_t is_process, is_thread, is_counter, has_parent;
    uint32_t track; /* the model track + 1 once resolved */
    size_t *open;   /* the events begun and not ended on it */
    size_t nopen, capopen;
} desc;

typedef struct rd {
    tp_model *m; /* the writer's model, rebuilt */
    tp_str *iid[3];
    size_t capiid[3];
    desc *d;
    size_t nd, capd;
    tp_hashtab index; /* uuid -> desc + 1 */
    const uint8_t *header;
    size_t header_len;
    uint64_t packet; /* the packet being read, from 1 */
    char why[160];   /* the problem, when one stopped the read */
} rd;

static int bad(rd *r, const char *what) {
    if (!r->why[0]) snprintf(r->why, sizeof(r->why), "%s", what);
    return -1;
}

static tp_str intern(rd *r, const tp_pb_field *f) {
    if (memchr(f->data, '\0', f->len)) return bad(r, "a string holds a NUL byte"), 0;
    return tp_model_intern(r->m, (const char *)f->data, f->len);
}

/* ---- interned strings ---------------------------------------------------------------------- */

static tp_str *iid_slot(rd *r, int which, uint64_t iid) {
    if (iid == 0 || iid >= MAX_IID) return NULL;
    if (iid >= r->capiid[which]) {
        size_t old = r->capiid[which];
        if (TP_GROW(r->iid[which], r->capiid[which], (size_t)iid + 1)) return NULL;
        memset(r->iid[which] + old, 0xff, (r->capiid[which] - old) * sizeof(tp_str));
    }
    return &r->iid[which][iid];
}

/* The string of iid in table which; -1 (and the read stops) when unknown. */
static int iid_get(rd *r, int which, uint64_t iid, tp_str *out) {
    tp_str *s = iid < r->capiid[which] && iid ? &r->iid[which][iid] : NULL;
    if (!s || *s == (tp_str)-1) return bad(r, "an interned id that was never defined");
    *out = *s;
    return 0;
}

static int interned(rd *r, tp_pb_in in) {
    tp_pb_field f, e;
    while (tp_pb_next(&in, &f)) {
        if (f.num < 1 || f.num > 3 || f.wire != TP_PB_LEN) continue;
        tp_pb_in ein = tp_pb_sub(&f);
        uint64_t iid = 0;
        tp_str s = (tp_str)-1;
        while (tp_pb_next(&ein, &e)) {
            if (e.num == IE_IID && e.wire == TP_PB_VARINT) iid = e.u;
            if (e.num == IE_NAME && e.wire == TP_PB_LEN) s = intern(r, &e);
        }
        tp_str *slot = iid_slot(r, (int)f.num - 1, iid);
        if (ein.bad || !slot || s == (tp_str)-1) return bad(r, "a malformed interned string");
        *slot = s;
    }
    return in.bad ? bad(r, "malformed interned data") : 0;
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
    if (!r->index.nslots) return NULL;
    uint32_t ref = tp_hashtab_ref(&r->index, desc_find(r, uuid));
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
            *(process ? &d->process_name : &d->thread_name) = intern(r, &f);
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
        if (f.num == TD_NAME && f.wire == TP_PB_LEN) d.name = intern(r, &f);
        if (f.num == TD_DESCRIPTION && f.wire == TP_PB_LEN) d.description = intern(r, &f);
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

/* An id written as text: a number when it is one in decimal, else the text. */
static void id_of(rd *r, tp_str text, int64_t *num, tp_str *str) {
    const char *s = tp_model_str(r->m, text);
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (*s && !*end && !errno && (s[0] == '-' || (s[0] >= '0' && s[0] <= '9'))) {
        *num = v, *str = 0;
        return;
    }
    *num = 0, *str = text;
}

/* The model track of a slice's, instant's or counter's track; UINT32_MAX when malformed. Lanes
 * and counter tracks are their parent's; a named track (description) carries its own id. */
static uint32_t resolve(rd *r, desc *d, int depth) {
    if (d->track) return d->track - 1;
    if (depth > 2) return bad(r, "a track nested too deep"), UINT32_MAX;
    desc *p = d->has_parent ? desc_of(r, d->parent) : NULL;
    uint32_t t;
    if (!d->is_thread && !d->description) {
        if (!p || p->is_process) return bad(r, "an event on a process track"), UINT32_MAX;
        t = resolve(r, p, depth + 1);
    } else {
        int64_t pid = 0, tid = d->tid;
        tp_str pid_str = 0, tid_str = 0, pname = 0;
        if (p && p->is_process)
            pid = p->pid, pname = p->process_name;
        else if (p && p->description)
            id_of(r, p->description, &pid, &pid_str),
                pname = p->name != p->description ? p->name : 0;
        else
            return bad(r, "a thread track without its process"), UINT32_MAX;
        if (!d->is_thread) id_of(r, d->description, &tid, &tid_str);
        if (d->is_thread && d->pid != pid) return bad(r, "a thread of another process"), UINT32_MAX;
        t = tp_model_track(r->m, pid, pid_str, tid, tid_str);
        if (t == UINT32_MAX) return bad(r, "out of memory"), UINT32_MAX;
        tp_track *tr = &r->m->tracks[t];
        if (pname) tr->process_name = pname;
        tp_str tname = d->is_thread ? d->thread_name : d->name != d->description ? d->name : 0;
        if (tname) tr->thread_name = tname;
    }
    if (t != UINT32_MAX) d->track = t + 1;
    return t;
}

/* ---- events -------------------------------------------------------------------------------- */

/* The scalar fields of a TrackEvent. */
typedef struct te_fields {
    uint64_t type, track, name_iid, cat_iid;
    int has_track, has_name, has_cat, has_int, has_double;
    int64_t counter;
    double dcounter;
} te_fields;

static void scalars(tp_pb_in in, te_fields *t) {
    tp_pb_field f;
    while (tp_pb_next(&in, &f)) {
        if (f.wire == TP_PB_VARINT && f.num == TE_TYPE) t->type = f.u;
        if (f.wire == TP_PB_VARINT && f.num == TE_TRACK) t->track = f.u, t->has_track = 1;
        if (f.wire == TP_PB_VARINT && f.num == TE_NAME_IID) t->name_iid = f.u, t->has_name = 1;
        if (f.wire == TP_PB_VARINT && f.num == TE_CATEGORY_IIDS && !t->has_cat)
            t->cat_iid = f.u, t->has_cat = 1;
        if (f.wire == TP_PB_VARINT && f.num == TE_COUNTER_VALUE)
            t->counter = (int64_t)f.u, t->has_int = 1;
        if (f.wire == TP_PB_I64 && f.num == TE_DOUBLE_COUNTER_VALUE)
            t->dcounter = tp_pb_as_double(&f), t->has_double = 1;
    }
}

/* One debug annotation as an arg of ev (the event added last), or as its correlation id,
 * External id or truncation mark, as chrome.c wrote them. */
static int annotation(rd *r, tp_event *ev, tp_pb_in in) {
    tp_pb_field f, v = {0};
    tp_str key = (tp_str)-1;
    while (tp_pb_next(&in, &f)) {
        if (f.num == DA_NAME_IID && f.wire == TP_PB_VARINT) {
            if (iid_get(r, 2, f.u, &key)) return -1;
        } else if (f.num >= DA_BOOL && f.num <= DA_JSON) {
            v = f;
        }
    }
    if (in.bad || key == (tp_str)-1 || !v.num) return bad(r, "a malformed debug annotation");
    const char *k = tp_model_str(r->m, key);
    if (v.num == DA_UINT && strcmp(k, "correlation") == 0) {
        ev->corr = v.u;
        return 0;
    }
    if ((v.num == DA_UINT || v.num == DA_INT) && strcmp(k, tp_karg_external_id) == 0) {
        ev->ext = tp_ext_id((int64_t)v.u); /* tp_event.ext, as export/perfetto.c wrote it */
        return 0;
    }
    if (v.num == DA_BOOL && strcmp(k, "tprof truncated") == 0) {
        ev->flags |= v.u ? TP_EVF_TRUNCATED : 0;
        return 0;
    }
    int64_t i = (int64_t)v.u;
    double d;
    tp_str s;
    switch (v.num) {
    case DA_BOOL:
    case DA_UINT:
    case DA_INT:
        return tp_model_add_arg(r->m, ev, key, TP_ARG_INT, &i);
    case DA_DOUBLE:
        d = tp_pb_as_double(&v);
        return tp_model_add_arg(r->m, ev, key, TP_ARG_DOUBLE, &d);
    case DA_STRING:
    case DA_JSON:
        if (v.wire != TP_PB_LEN) break;
        s = intern(r, &v);
        return tp_model_add_arg(r->m, ev, key, v.num == DA_JSON ? TP_ARG_JSON : TP_ARG_STR, &s);
    default:
        break;
    }
    return bad(r, "a debug annotation of a kind tprof does not write");
}

static tp_event *new_event(rd *r, const te_fields *t, uint32_t track, int kind, int64_t ts) {
    tp_str name, cat = TP_STR_EMPTY;
    if (!t->has_name || iid_get(r, 1, t->name_iid, &name))
        return bad(r, "an event without a name"), NULL;
    if (t->has_cat && iid_get(r, 0, t->cat_iid, &cat)) return NULL;
    tp_event *ev = tp_model_new_event(r->m, track, kind, ts, name, cat);
    if (!ev) return bad(r, "out of memory"), NULL;
    return ev;
}

static int annotations(rd *r, tp_event *ev, tp_pb_in in) {
    tp_pb_field f;
    while (tp_pb_next(&in, &f))
        if (f.num == TE_ANNOTATIONS && f.wire == TP_PB_LEN && annotation(r, ev, tp_pb_sub(&f)))
            return -1;
    return 0;
}

/* The counter track's series key: its name after "<event name> ". */
static int series_key(rd *r, desc *d, tp_str event_name, tp_str *key) {
    const char *n = tp_model_str(r->m, event_name), *t = tp_model_str(r->m, d->name);
    size_t nl = strlen(n);
    if (!d->is_counter || strncmp(t, n, nl) != 0 || t[nl] != ' ')
        return bad(r, "a counter value on a track not named for its event");
    *key = tp_model_intern_cstr(r->m, t + nl + 1);
    return 0;
}

static int add_series(rd *r, tp_event *ev, uint64_t uuid, int type, const void *v) {
    desc *d = desc_of(r, uuid);
    tp_str key;
    if (!d || series_key(r, d, ev->name, &key))
        return bad(r, "a counter value on an unknown track");
    return tp_model_add_arg(r->m, ev, key, (tp_arg_type)type, v);
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
        int64_t i = (int64_t)f.u;
        double d = tp_pb_as_double(&f);
        if (add_series(r, ev, uuids[nv++], dbl ? TP_ARG_DOUBLE : TP_ARG_INT, dbl ? (void *)&d : &i))
            return -1;
    }
    return nv == nu ? 0 : bad(r, "fewer extra counter values than tracks");
}

static int track_event(rd *r, tp_pb_in in, uint64_t ts) {
    te_fields t = {0};
    scalars(in, &t);
    desc *d = t.has_track ? desc_of(r, t.track) : NULL;
    if (!d) return bad(r, "an event on an unknown track");
    uint32_t track = resolve(r, d, 0);
    if (track == UINT32_MAX) return -1;
    if (t.type == TYPE_END) {
        if (!d->nopen) return bad(r, "a slice end without its begin");
        tp_event *ev = &r->m->events[d->open[--d->nopen]];
        if ((int64_t)ts < ev->ts) return bad(r, "a slice that ends before it begins");
        ev->dur = (int64_t)ts - ev->ts;
        return 0;
    }
    int kind = t.type == TYPE_BEGIN     ? TP_HOST_RANGE
               : t.type == TYPE_COUNTER ? TP_COUNTER
                                        : TP_INSTANT;
    if (t.type < TYPE_BEGIN || t.type > TYPE_COUNTER) return bad(r, "an event of an unknown type");
    tp_event *ev = new_event(r, &t, track, kind, (int64_t)ts);
    if (!ev) return -1;
    if (kind == TP_INSTANT && strcmp(tp_model_str(r->m, ev->name), "[memory]") == 0)
        ev->kind = TP_MEMORY;
    if (kind == TP_COUNTER) {
        if (t.has_int == t.has_double) return bad(r, "a counter event without one value");
        int rc = t.has_int ? add_series(r, ev, t.track, TP_ARG_INT, &t.counter)
                           : add_series(r, ev, t.track, TP_ARG_DOUBLE, &t.dcounter);
        if (rc || extras(r, ev, in, TE_EXTRA_COUNTER_TRACKS, TE_EXTRA_COUNTER_VALUES, 0) ||
            extras(r, ev, in, TE_EXTRA_DOUBLE_COUNTER_TRACKS, TE_EXTRA_DOUBLE_COUNTER_VALUES, 1))
            return bad(r, "a malformed counter event");
        return 0;
    }
    if (annotations(r, ev, in)) return -1;
    if (kind == TP_HOST_RANGE) {
        if (TP_GROW(d->open, d->capopen, d->nopen + 1)) return bad(r, "out of memory");
        d->open[d->nopen++] = r->m->nevents - 1;
    }
    return 0;
}

static void metadata(rd *r, tp_pb_in in) {
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
        if (ours && json) r->header = json, r->header_len = len;
    }
}

/* One TracePacket: its interned strings first (they serve the event in the same packet). */
static int packet(rd *r, tp_pb_in in) {
    tp_pb_field f;
    uint64_t ts = 0;
    tp_pb_in scan = in;
    while (tp_pb_next(&scan, &f)) {
        if (f.num == PK_SEQ_FLAGS && f.wire == TP_PB_VARINT && (f.u & SEQ_CLEARED))
            for (int i = 0; i < 3; i++)
                if (r->iid[i]) memset(r->iid[i], 0xff, r->capiid[i] * sizeof(tp_str));
        if (f.num == PK_TIMESTAMP && f.wire == TP_PB_VARINT) ts = f.u;
    }
    if (scan.bad) return bad(r, "a malformed packet");
    scan = in;
    while (tp_pb_next(&scan, &f))
        if (f.num == PK_INTERNED && f.wire == TP_PB_LEN && interned(r, tp_pb_sub(&f))) return -1;
    while (tp_pb_next(&in, &f)) {
        if (f.wire != TP_PB_LEN) continue;
        int rc = f.num == PK_TRACK_DESC    ? track_descriptor(r, tp_pb_sub(&f))
                 : f.num == PK_TRACK_EVENT ? track_event(r, tp_pb_sub(&f), ts)
                                           : 0;
        if (f.num == PK_CHROME_EVENTS) metadata(r, tp_pb_sub(&f));
        if (rc || r->why[0]) return -1;
    }
    return 0;
}

/* ---- the read -------------------------------------------------------------------------------- */

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

static int to_buf(void *ctx, const void *data, size_t len) {
    tp_buf_put(ctx, data, len);
    return ((tp_buf *)ctx)->failed ? -1 : 0;
}

static void rd_free(rd *r) {
    for (int i = 0; i < 3; i++)
        free(r->iid[i]);
    for (size_t i = 0; i < r->nd; i++)
        free(r->d[i].open);
    free(r->d);
    free(r->index.slots);
}

/* The run facts of the header (base time, rank, devices, the tprof object's) into the rebuilt
 * model, read by the JSON reader on their own. */
static int header_facts(rd *r) {
    tp_model h, *m = r->m;
    tp_model_init(&h);
    char why[256];
    int rc = tp_trace_read_mem(r->header, r->header_len, TP_PERFETTO_HEADER, &h, why, sizeof(why));
    if (rc || h.nevents) rc = bad(r, "its " TP_PERFETTO_HEADER " metadata is not a trace header");
    m->base_ns = h.base_ns;
    m->rank = h.rank;
    m->world_size = h.world_size;
    m->dropped_events = h.dropped_events;
    m->partial = h.partial;
    m->flight_step = h.flight_step;
    if (h.flight_step >= 0)
        m->flight_reason = tp_model_intern_cstr(m, tp_model_str(&h, h.flight_reason));
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

/* The rebuilt model as its JSON trace, read into out. */
static int through_json(rd *r, tp_model *out, const char *name, const tp_read_opts *o, char *err,
                        size_t errlen) {
    tp_model *m = r->m;
    if (!r->header) return bad(r, "no " TP_PERFETTO_HEADER " metadata: not a trace tprof wrote");
    if (header_facts(r)) return -1;
    for (size_t i = 0; i < m->nevents; i++)
        m->events[i].ts = (int64_t)((uint64_t)m->events[i].ts - (uint64_t)m->base_ns);
    tp_buf json;
    tp_buf_init(&json);
    int rc = tp_chrome_write(m, NULL, to_buf, &json);
    if (rc == 0)
        rc = tp_trace_read_mem_opts(json.data, json.len, name, out, o, err, errlen);
    else
        bad(r, "out of memory");
    tp_buf_free(&json);
    return rc;
}

int tp_perfetto_read_mem(const void *data, size_t len, const char *name, tp_model *out,
                         const tp_read_opts *o, char *err, size_t errlen) {
    if (!name) name = "<memory>";
    tp_model m;
    tp_model_init(&m);
    rd r = {.m = &m};
    tp_pb_in in = tp_pb_in_of(data, len);
    tp_pb_field f;
    int rc = 0;
    while (rc == 0 && tp_pb_next(&in, &f)) {
        r.packet++;
        if (f.num == TRACE_PACKET && f.wire == TP_PB_LEN) rc = packet(&r, tp_pb_sub(&f));
    }
    if (rc == 0 && in.bad) rc = bad(&r, "a malformed packet");
    if (rc == 0 && m.failed) rc = bad(&r, "out of memory");
    for (size_t i = 0; rc == 0 && i < r.nd; i++)
        if (r.d[i].nopen) rc = bad(&r, "a slice begun and never ended"), r.packet = 0;
    if (rc == 0) {
        uint64_t before = out->input_bytes;
        rc = through_json(&r, out, name, o, err, errlen);
        if (rc == 0) out->input_bytes = before + len; /* the file's bytes, not the JSON's */
    }
    if (rc && r.why[0] && err && errlen) {
        if (r.packet)
            snprintf(err, errlen, "%s: packet %" PRIu64 ": %s", name, r.packet, r.why);
        else
            snprintf(err, errlen, "%s: %s", name, r.why);
    }
    rd_free(&r);
    tp_model_free(&m);
    return rc;
}
