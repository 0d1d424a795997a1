/* perfetto.c - the Perfetto protobuf writer (see perfetto.h): tp_model in, TracePackets out.
 *
 * The wire format is written by hand (util/pb.h): the writer uses a dozen fields of five
 * messages, and a generated library would add a dependency and a copy of every event. Field
 * numbers are those of Perfetto's protos/perfetto/trace (perfetto_trace.proto); the tests decode
 * the output with the Perfetto project's own definitions (its PyPI package), not tprof's.
 *
 * Slices: Perfetto pairs a track's begins and ends as a stack, so each track's ranges are sorted
 * by start (longest first on ties) and dealt to lanes: a range goes to the first lane whose open
 * ranges, once those that ended are closed, all contain it. Lane 0 is the track itself.
 *
 * A streamed window (tp_perfetto_stream, last section) cannot sort: its ranges come segment by
 * segment as they end, children before parents, and memory must not hold them. So each range's
 * begin and end are written together (a reader pairing an end with the last begin of its track
 * then pairs them in the file's order), on the first lane where it nests with that lane's
 * earlier ranges by time (slane: a reader that sorts by timestamp, as Perfetto's trace processor
 * does, pairs them too); the tracks and interned names get ids of the stream's own (a tp_model
 * holding only them), as each segment is a model with ids of its own. Rejected: holding a
 * track's ranges until its outermost one ends (a range around the loop holds the window). */
#include "export/perfetto.h"

#include "export/perfetto_proto.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/hashtab.h"
#include "util/pb.h"
#include "util/vec.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    CHUNK = 1 << 20, /* the output is handed on once it holds this much */
    SEQ = 1,         /* the one trusted_packet_sequence_id */
    DEADLINE_EVERY = 4096,
};

/* uuids: a track's lane L is (L << 32 | track + 1); processes and counters have high bits. */
#define PROCESS_UUID(i) (UINT64_C(1) << 63 | (uint64_t)(i))
#define COUNTER_UUID(i) (UINT64_C(1) << 62 | (uint64_t)(i))

/* A lane of a track: the ranges begun on it and not yet ended. */
typedef struct lane {
    int64_t *open; /* the ends of its open ranges, innermost last */
    size_t n, cap;
} lane;

/* A counter track: (model track, event name, series key). */
typedef struct counter_track {
    uint32_t track;
    tp_str name, key;
} counter_track;

typedef struct pw {
    const tp_model *m;
    const tp_chrome_opts *o;
    tp_buf out;
    int (*write)(void *ctx, const void *data, size_t len);
    void *ctx;
    int failed;        /* a write failed or memory ran out */
    int first;         /* the next packet is the sequence's first */
    size_t nwritten;   /* events written */
    uint32_t *iid[3];  /* by string id: its iid as a category, a name, an arg key (0: none yet) */
    uint32_t niid;     /* string ids the iid arrays have room for */
    uint32_t next[3];  /* the next iid of each */
    int marked[3];     /* mark_keys interned */
    size_t ntracks;    /* the model's, plus one for events whose track is out of range */
    uint32_t *process; /* by track: the index of its process */
    uint32_t *nlanes;  /* by track: lanes described so far (lane 0 always is) */
    size_t captracks;  /* room in process (a stream's, which grows) */
    lane *lanes;       /* the lanes of the track being written: nl in use, nalloc made */
    size_t nl, nalloc, capl;
    counter_track *counters;
    size_t ncounters, capcounters;
    tp_hashtab counter_index;
    tp_buf scratch;             /* an interned_data message being gathered */
    tp_perfetto_stream *stream; /* a streamed window's (see its section), else NULL */
} pw;

static const tp_track zero_track;

static const tp_track *track_of(const pw *w, uint32_t t) {
    return t < w->m->ntracks ? &w->m->tracks[t] : &zero_track;
}

/* ---- a streamed window's state (tp_perfetto_stream) --------------------------------------- */

enum { LANE_SPANS = 64 }; /* a streamed lane's outermost ranges kept, at most */

typedef struct span {
    int64_t start, end;
} span;

/* A lane of a streamed track. Ranges come as they end (each thread's in the order they ended),
 * so a range contains those of the lane that start at or after its start, and must start after
 * the end of every other: the lane keeps its outermost ranges (disjoint, in time order), the
 * oldest let go past LANE_SPANS into a floor that no range may start inside. */
typedef struct slane {
    span tops[LANE_SPANS];
    uint32_t n;
    int floored; /* spans were let go: they lie in [floor_start, floor_end) */
    int64_t floor_start, floor_end;
} slane;

typedef struct strack {
    slane *lanes;
    size_t nl, cap;
} strack;

struct tp_perfetto_stream {
    pw w;
    tp_model ids;          /* tracks and strings by ids that hold from segment to segment */
    uint32_t *smap, *tmap; /* the segment's string and track ids to the stream's + 1 (0: not yet) */
    strack *tracks;        /* by stream track: its lanes */
    size_t captracks;
    uint32_t nproc;
    size_t recorded;    /* events of the segments written */
    tp_buf provisional; /* the header packet a checkpoint ends the file with */
    tp_ofile *f;
    char *path, *partial_path;
    int published, write_failed;
};

/* ---- ids ----------------------------------------------------------------------------------- */

/* The id of string s of the model being written that the iid tables use: its own for a whole
 * window, the stream's for a segment (so a name is interned once per sequence). */
static uint32_t str_id(pw *w, tp_str s) {
    tp_perfetto_stream *st = w->stream;
    if (!st || s == TP_STR_EMPTY) return s;
    if (!st->smap[s]) {
        tp_str id = tp_strtab_intern_from(&st->ids.strings, &w->m->strings, s);
        if (st->ids.strings.failed) w->failed = 1;
        st->smap[s] = id + 1;
    }
    return st->smap[s] - 1;
}

static uint32_t stream_track(pw *w, uint32_t t);

/* The track ev is written on: the model's (out of range: one past them, pid 0, tid 0), or in a
 * stream its track of the same ids, described at first sight. */
static uint32_t event_track(pw *w, const tp_event *ev) {
    uint32_t t = ev->track < w->m->ntracks ? ev->track : (uint32_t)w->m->ntracks;
    return w->stream ? stream_track(w, t) : t;
}

/* ---- output ------------------------------------------------------------------------------ */

static void checkpoint(tp_perfetto_stream *st);

static void hand_on(pw *w, int final) {
    if (w->out.failed || w->scratch.failed) w->failed = 1;
    if (w->failed || (!final && w->out.len < CHUNK)) return;
    if (w->stream) { /* a whole trace at every write */
        checkpoint(w->stream);
        return;
    }
    if (w->out.len && w->write(w->ctx, w->out.data, w->out.len) != 0) w->failed = 1;
    w->out.len = 0;
}

/* A packet's start: its sequence and, on the first, that the sequence starts clean. */
static size_t packet_open(pw *w) {
    size_t p = tp_pb_open(&w->out, TRACE_PACKET);
    tp_pb_uint(&w->out, PK_SEQ_ID, SEQ);
    tp_pb_uint(&w->out, PK_SEQ_FLAGS, w->first ? SEQ_CLEARED : SEQ_NEEDS_STATE);
    w->first = 0;
    return p;
}

static void put_str(tp_buf *b, uint32_t field, const tp_model *m, tp_str s) {
    tp_pb_bytes(b, field, tp_model_str(m, s), tp_strtab_len(&m->strings, s));
}

/* ---- interning --------------------------------------------------------------------------- */

/* Room in the iid tables for string id `need` - 1 (a stream's grow); 0, or -1. */
static int grow_iids(pw *w, uint32_t need) {
    uint32_t n = w->niid * 2 > need ? w->niid * 2 : need < 256 ? 256 : need;
    for (int i = 0; i < 3; i++) {
        uint32_t *p = realloc(w->iid[i], n * sizeof(*p));
        if (!p) return -1;
        memset(p + w->niid, 0, (n - w->niid) * sizeof(*p));
        w->iid[i] = p;
    }
    w->niid = n;
    return 0;
}

/* The iid of string s in table which (ID_CATEGORIES, ID_NAMES, ID_ARG_NAMES), adding its entry
 * to the packet's interned_data (w->scratch) when new. */
static uint32_t iid_of(pw *w, int which, tp_str s) {
    uint32_t id = str_id(w, s);
    if (id >= w->niid && grow_iids(w, id + 1)) {
        w->failed = 1;
        return 0;
    }
    uint32_t *slot = &w->iid[which - 1][id];
    if (!*slot) {
        *slot = ++w->next[which - 1];
        size_t e = tp_pb_open(&w->scratch, (uint32_t)which);
        tp_pb_uint(&w->scratch, IE_IID, *slot);
        put_str(&w->scratch, IE_NAME, w->m, s);
        tp_pb_close(&w->scratch, e);
    }
    return *slot;
}

/* ---- tracks ------------------------------------------------------------------------------ */

static void put_id(tp_buf *b, uint32_t field, const tp_model *m, int64_t num, tp_str str) {
    if (str) {
        put_str(b, field, m, str);
        return;
    }
    char text[24];
    int n = snprintf(text, sizeof(text), "%lld", (long long)num);
    tp_pb_bytes(b, field, text, (size_t)n);
}

static int same_process(const tp_track *a, const tp_track *b) {
    return a->pid == b->pid && a->pid_str == b->pid_str;
}

/* A process's descriptor: numeric pids are processes; others named tracks. */
static void put_process(pw *w, size_t index, const tp_track *t) {
    size_t p = packet_open(w);
    size_t d = tp_pb_open(&w->out, PK_TRACK_DESC);
    tp_pb_uint(&w->out, TD_UUID, PROCESS_UUID(index));
    if (t->pid_str) {
        put_str(&w->out, TD_NAME, w->m, t->process_name ? t->process_name : t->pid_str);
        put_str(&w->out, TD_DESCRIPTION, w->m, t->pid_str);
    } else {
        size_t pd = tp_pb_open(&w->out, TD_PROCESS);
        tp_pb_uint(&w->out, PD_PID, (uint64_t)t->pid);
        if (t->process_name) put_str(&w->out, PD_NAME, w->m, t->process_name);
        tp_pb_close(&w->out, pd);
    }
    tp_pb_close(&w->out, d);
    tp_pb_close(&w->out, p);
}

/* Lane l of track t (tr: its ids and names in the model written): the thread itself (lane 0) or
 * an overlap track under it. */
static void put_lane(pw *w, const tp_track *tr, uint32_t t, uint32_t l) {
    size_t p = packet_open(w);
    size_t d = tp_pb_open(&w->out, PK_TRACK_DESC);
    tp_pb_uint(&w->out, TD_UUID, (uint64_t)l << 32 | (t + 1));
    if (l) {
        tp_pb_uint(&w->out, TD_PARENT, (uint64_t)t + 1);
        char name[48];
        int n = snprintf(name, sizeof(name), "(overlap %u)", l);
        tp_pb_bytes(&w->out, TD_NAME, name, (size_t)n);
    } else if (tr->pid_str || tr->tid_str) {
        tp_pb_uint(&w->out, TD_PARENT, PROCESS_UUID(w->process[t]));
        if (tr->thread_name)
            put_str(&w->out, TD_NAME, w->m, tr->thread_name);
        else
            put_id(&w->out, TD_NAME, w->m, tr->tid, tr->tid_str);
        put_id(&w->out, TD_DESCRIPTION, w->m, tr->tid, tr->tid_str);
    } else {
        tp_pb_uint(&w->out, TD_PARENT, PROCESS_UUID(w->process[t]));
        size_t th = tp_pb_open(&w->out, TD_THREAD);
        tp_pb_uint(&w->out, THD_PID, (uint64_t)tr->pid);
        tp_pb_uint(&w->out, THD_TID, (uint64_t)tr->tid);
        if (tr->thread_name) put_str(&w->out, THD_NAME, w->m, tr->thread_name);
        tp_pb_close(&w->out, th);
    }
    tp_pb_close(&w->out, d);
    tp_pb_close(&w->out, p);
}

/* Track t's process (w->process[t]): that of the first of tracks[0 .. t-1] in probe's process,
 * or the next new one (*nproc), described now from tr. probe is tr as tracks' string ids spell it
 * (a stream's tracks hold its own ids). */
static void set_process(pw *w, uint32_t t, const tp_track *tracks, const tp_track *probe,
                        const tp_track *tr, uint32_t *nproc) {
    uint32_t k = 0;
    while (k < t && !same_process(&tracks[k], probe))
        k++;
    if (k < t) {
        w->process[t] = w->process[k];
        return;
    }
    w->process[t] = (*nproc)++;
    put_process(w, w->process[t], tr);
}

/* Every process and track, lane 0 each. */
static int put_tracks(pw *w) {
    w->process = calloc(w->ntracks, sizeof(*w->process));
    w->nlanes = calloc(w->ntracks, sizeof(*w->nlanes));
    if (!w->process || !w->nlanes) return -1;
    uint32_t nproc = 0;
    for (uint32_t t = 0; t < w->ntracks; t++) {
        const tp_track *tr = track_of(w, t);
        set_process(w, t, w->m->tracks, tr, tr, &nproc); /* t <= ntracks: earlier ones are m's */
        put_lane(w, tr, t, 0);
        w->nlanes[t] = 1;
        hand_on(w, 0);
    }
    return 0;
}

/* ---- events ------------------------------------------------------------------------------ */

static size_t event_open(pw *w, int64_t ts, size_t *te) {
    size_t p = packet_open(w);
    tp_pb_uint(&w->out, PK_TIMESTAMP, (uint64_t)w->m->base_ns + (uint64_t)ts);
    *te = tp_pb_open(&w->out, PK_TRACK_EVENT);
    return p;
}

/* The event's packet ends: its track event closed, the strings it interned appended. */
static void event_close(pw *w, size_t p, size_t te) {
    tp_pb_close(&w->out, te);
    if (w->scratch.len) {
        tp_pb_bytes(&w->out, PK_INTERNED, w->scratch.data, w->scratch.len);
        w->scratch.len = 0;
    }
    tp_pb_close(&w->out, p);
}

static void put_names(pw *w, const tp_event *ev) {
    if (ev->cat != TP_STR_EMPTY)
        tp_pb_uint(&w->out, TE_CATEGORY_IIDS, iid_of(w, ID_CATEGORIES, ev->cat));
    tp_pb_uint(&w->out, TE_NAME_IID, iid_of(w, ID_NAMES, ev->name));
}

static size_t annotation_open(pw *w, tp_str key) {
    size_t a = tp_pb_open(&w->out, TE_ANNOTATIONS);
    tp_pb_uint(&w->out, DA_NAME_IID, iid_of(w, ID_ARG_NAMES, key));
    return a;
}

static void put_args(pw *w, const tp_event *ev) {
    const tp_model *m = w->m;
    size_t n = ev->arg0 <= m->nargs ? m->nargs - ev->arg0 : 0;
    if (n > ev->nargs) n = ev->nargs;
    for (size_t i = 0; i < n; i++) {
        const tp_arg *a = &m->args[ev->arg0 + i];
        size_t d = annotation_open(w, a->key);
        switch (a->type) {
        case TP_ARG_INT:
            tp_pb_uint(&w->out, DA_INT, (uint64_t)a->v.i);
            break;
        case TP_ARG_DOUBLE:
            tp_pb_double(&w->out, DA_DOUBLE, a->v.d);
            break;
        case TP_ARG_JSON:
            put_str(&w->out, DA_JSON, m, a->v.s);
            break;
        default:
            put_str(&w->out, DA_STRING, m, a->v.s);
            break;
        }
        tp_pb_close(&w->out, d);
    }
}

/* The arg keys Chrome's writer adds (its put_args) from the event's fields, which the model does
 * not hold as args: iids 1 to 3 of debug_annotation_names, interned at first use. */
static const char *const mark_keys[] = {"correlation", "tprof truncated", "External id"};
_Static_assert(sizeof(mark_keys) / sizeof(mark_keys[0]) == sizeof(((pw *)0)->marked) / sizeof(int),
               "one interned flag per mark");

static size_t mark_open(pw *w, uint32_t k) {
    if (!w->marked[k]) {
        w->marked[k] = 1;
        size_t e = tp_pb_open(&w->scratch, ID_ARG_NAMES);
        tp_pb_uint(&w->scratch, IE_IID, k + 1);
        tp_pb_bytes(&w->scratch, IE_NAME, mark_keys[k], strlen(mark_keys[k]));
        tp_pb_close(&w->scratch, e);
    }
    size_t a = tp_pb_open(&w->out, TE_ANNOTATIONS);
    tp_pb_uint(&w->out, DA_NAME_IID, k + 1);
    return a;
}

static void put_marks(pw *w, const tp_event *ev) {
    if (ev->ext) {
        size_t d = mark_open(w, 2);
        tp_pb_uint(&w->out, DA_UINT, ev->ext);
        tp_pb_close(&w->out, d);
    }
    if (ev->corr) {
        size_t d = mark_open(w, 0);
        tp_pb_uint(&w->out, DA_UINT, ev->corr);
        tp_pb_close(&w->out, d);
        tp_pb_fixed64(&w->out, TE_FLOW_IDS, ev->corr);
    }
    if (ev->flags & TP_EVF_TRUNCATED) {
        size_t d = mark_open(w, 1);
        tp_pb_uint(&w->out, DA_BOOL, 1);
        tp_pb_close(&w->out, d);
    }
}

static void put_begin(pw *w, const tp_event *ev, uint64_t uuid) {
    size_t te, p = event_open(w, ev->ts, &te);
    tp_pb_uint(&w->out, TE_TYPE, TYPE_BEGIN);
    tp_pb_uint(&w->out, TE_TRACK, uuid);
    put_names(w, ev);
    put_args(w, ev);
    put_marks(w, ev);
    event_close(w, p, te);
}

static void put_end(pw *w, int64_t ts, uint64_t uuid) {
    size_t te, p = event_open(w, ts, &te);
    tp_pb_uint(&w->out, TE_TYPE, TYPE_END);
    tp_pb_uint(&w->out, TE_TRACK, uuid);
    event_close(w, p, te);
}

static void put_instant(pw *w, const tp_event *ev) {
    size_t te, p = event_open(w, ev->ts, &te);
    tp_pb_uint(&w->out, TE_TYPE, TYPE_INSTANT);
    tp_pb_uint(&w->out, TE_TRACK, (uint64_t)event_track(w, ev) + 1);
    put_names(w, ev);
    put_args(w, ev);
    put_marks(w, ev);
    event_close(w, p, te);
}

/* ---- counters ----------------------------------------------------------------------------- */

static int counter_eq(const void *ctx, const tp_hslot *s, const void *key) {
    const counter_track *a = &((const counter_track *)ctx)[s->ref - 1], *b = key;
    return a->track == b->track && a->name == b->name && a->key == b->key;
}

/* The uuid of the counter track of (track, name, key), described at its first use; 0 when out
 * of memory. */
static uint64_t counter_uuid(pw *w, uint32_t track, tp_str name, tp_str key) {
    counter_track c = {track, str_id(w, name), str_id(w, key)};
    uint32_t h = (uint32_t)tp_hash_bytes(&c, sizeof(c));
    if (tp_hashtab_reserve(&w->counter_index, 64)) return 0;
    size_t i = tp_hashtab_find(&w->counter_index, h, counter_eq, w->counters, &c);
    uint32_t ref = tp_hashtab_ref(&w->counter_index, i);
    if (ref) return COUNTER_UUID(ref - 1);
    if (TP_GROW(w->counters, w->capcounters, w->ncounters + 1)) return 0;
    w->counters[w->ncounters++] = c;
    *tp_hashtab_at(&w->counter_index, i) = (tp_hslot){h, (uint32_t)w->ncounters};
    w->counter_index.n++;
    uint64_t uuid = COUNTER_UUID(w->ncounters - 1);
    size_t p = packet_open(w);
    size_t d = tp_pb_open(&w->out, PK_TRACK_DESC);
    tp_pb_uint(&w->out, TD_UUID, uuid);
    tp_pb_uint(&w->out, TD_PARENT, (uint64_t)track + 1);
    const char *n = tp_model_str(w->m, name), *k = tp_model_str(w->m, key);
    size_t nl = strlen(n), kl = strlen(k);
    tp_pb_tag(&w->out, TD_NAME, TP_PB_LEN);
    tp_pb_varint(&w->out, nl + 1 + kl);
    tp_buf_put(&w->out, n, nl);
    tp_buf_putc(&w->out, ' ');
    tp_buf_put(&w->out, k, kl);
    size_t cd = tp_pb_open(&w->out, TD_COUNTER);
    tp_pb_close(&w->out, cd);
    tp_pb_close(&w->out, d);
    tp_pb_close(&w->out, p);
    return uuid;
}

/* One packet per counter event: its first numeric series on the event's track, the others as
 * extra values (ints, then doubles), each on the track of its series. */
static void put_counter(pw *w, const tp_event *ev) {
    const tp_model *m = w->m;
    uint32_t track = event_track(w, ev);
    size_t n = ev->arg0 <= m->nargs ? m->nargs - ev->arg0 : 0;
    if (n > ev->nargs) n = ev->nargs;
    const tp_arg *a = m->args + ev->arg0;
    uint64_t uuids[2][64] = {{0}}, first_uuid = 0;
    size_t nu[2] = {0, 0}, first = n;
    for (size_t i = 0; i < n; i++) {
        if (a[i].type != TP_ARG_INT && a[i].type != TP_ARG_DOUBLE) continue;
        uint64_t u = counter_uuid(w, track, ev->name, a[i].key);
        int dbl = a[i].type == TP_ARG_DOUBLE;
        if (first == n)
            first = i, first_uuid = u;
        else if (nu[dbl] < 64)
            uuids[dbl][nu[dbl]++] = u;
        if (!u) w->failed = 1;
    }
    if (first == n || w->failed) return; /* a counter without a number: nothing to draw */
    size_t te, p = event_open(w, ev->ts, &te);
    tp_pb_uint(&w->out, TE_TYPE, TYPE_COUNTER);
    tp_pb_uint(&w->out, TE_TRACK, first_uuid);
    put_names(w, ev);
    if (a[first].type == TP_ARG_INT)
        tp_pb_uint(&w->out, TE_COUNTER_VALUE, (uint64_t)a[first].v.i);
    else
        tp_pb_double(&w->out, TE_DOUBLE_COUNTER_VALUE, a[first].v.d);
    for (size_t i = 0; i < nu[0]; i++)
        tp_pb_uint(&w->out, TE_EXTRA_COUNTER_TRACKS, uuids[0][i]);
    for (size_t i = 0; i < nu[1]; i++)
        tp_pb_uint(&w->out, TE_EXTRA_DOUBLE_COUNTER_TRACKS, uuids[1][i]);
    size_t k[2] = {0, 0};
    for (size_t i = first + 1; i < n; i++) {
        int dbl = a[i].type == TP_ARG_DOUBLE;
        if ((a[i].type != TP_ARG_INT && !dbl) || k[dbl]++ >= 64) continue;
        if (dbl)
            tp_pb_double(&w->out, TE_EXTRA_DOUBLE_COUNTER_VALUES, a[i].v.d);
        else
            tp_pb_uint(&w->out, TE_EXTRA_COUNTER_VALUES, (uint64_t)a[i].v.i);
    }
    event_close(w, p, te);
}

/* ---- slices, lane by lane ------------------------------------------------------------------ */

static int is_slice(const tp_event *ev) {
    return ev->kind == TP_HOST_RANGE || tp_kind_is_device(ev->kind);
}

static int64_t end_of(const tp_event *ev) {
    return ev->ts + (ev->dur > 0 ? ev->dur : 0);
}

/* qsort_r's order of ranges (indices into the model ctx): by track, start, outer first. */
static int cmp_slices(const void *pa, const void *pb, void *ctx) {
    const tp_model *m = ctx;
    const tp_event *a = &m->events[*(const size_t *)pa], *b = &m->events[*(const size_t *)pb];
    uint32_t nt = (uint32_t)m->ntracks;
    uint32_t ta = a->track < nt ? a->track : nt, tb = b->track < nt ? b->track : nt;
    if (ta != tb) return ta < tb ? -1 : 1;
    if (a->ts != b->ts) return a->ts < b->ts ? -1 : 1;
    if (end_of(a) != end_of(b)) return end_of(a) > end_of(b) ? -1 : 1; /* the outer first */
    return *(const size_t *)pa < *(const size_t *)pb ? -1 : 1;
}

/* Ends every range of lane l that ended by ts (all of them when ts is INT64_MAX). */
static void close_until(pw *w, uint32_t track, uint32_t l, int64_t ts) {
    lane *ln = &w->lanes[l];
    while (ln->n && ln->open[ln->n - 1] <= ts) {
        ln->n--;
        put_end(w, ln->open[ln->n], (uint64_t)l << 32 | (track + 1));
    }
}

/* The lane range ev goes to: the first whose open ranges, those ended closed, contain it. */
static uint32_t lane_for(pw *w, uint32_t track, const tp_event *ev) {
    uint32_t l = 0;
    for (; l < w->nl; l++) {
        close_until(w, track, l, ev->ts);
        lane *ln = &w->lanes[l];
        if (!ln->n || ln->open[ln->n - 1] >= end_of(ev)) return l;
    }
    if (w->nl == w->nalloc) { /* lanes are kept, with their room, for the next tracks */
        if (TP_GROW(w->lanes, w->capl, w->nalloc + 1)) return UINT32_MAX;
        w->lanes[w->nalloc++] = (lane){0};
    }
    w->lanes[w->nl++].n = 0;
    if (l >= w->nlanes[track]) {
        put_lane(w, track_of(w, track), track, l);
        w->nlanes[track] = l + 1;
    }
    return l;
}

static void finish_track(pw *w, uint32_t track) {
    for (uint32_t l = 0; l < w->nl; l++)
        close_until(w, track, l, INT64_MAX);
}

size_t tp_perfetto_order(const tp_model *m, size_t *order) {
    size_t ns = 0, k;
    for (size_t i = 0; i < m->nevents; i++)
        if (is_slice(&m->events[i])) order[ns++] = i;
    qsort_r(order, ns, sizeof(*order), cmp_slices, (void *)m);
    k = ns;
    for (size_t i = 0; i < m->nevents; i++)
        if (!is_slice(&m->events[i])) order[k++] = i;
    return ns;
}

/* The events in tp_perfetto_order's order, until the deadline if any. */
static void put_events(pw *w) {
    const tp_model *m = w->m;
    size_t *order = malloc((m->nevents ? m->nevents : 1) * sizeof(*order));
    if (!order) {
        w->failed = 1;
        return;
    }
    size_t ns = tp_perfetto_order(m, order);
    uint32_t cur = UINT32_MAX;
    for (size_t k = 0; k < ns && !w->failed; k++) {
        if (k % DEADLINE_EVERY == 0 && tp_chrome_past_deadline(w->o->deadline_ns)) break;
        const tp_event *ev = &m->events[order[k]];
        uint32_t t = event_track(w, ev);
        if (t != cur && cur != UINT32_MAX) finish_track(w, cur), w->nl = 0;
        cur = t;
        uint32_t l = lane_for(w, t, ev);
        lane *ln = l == UINT32_MAX ? NULL : &w->lanes[l];
        if (!ln || TP_GROW(ln->open, ln->cap, ln->n + 1)) {
            w->failed = 1;
            break;
        }
        ln->open[ln->n++] = end_of(ev);
        put_begin(w, ev, (uint64_t)l << 32 | (t + 1));
        w->nwritten++;
        hand_on(w, 0);
    }
    if (cur != UINT32_MAX) finish_track(w, cur);
    for (size_t k = ns; k < m->nevents && w->nwritten == k && !w->failed; k++) {
        if ((k - ns) % DEADLINE_EVERY == 0 && tp_chrome_past_deadline(w->o->deadline_ns)) break;
        const tp_event *ev = &m->events[order[k]];
        if (ev->kind == TP_COUNTER)
            put_counter(w, ev);
        else
            put_instant(w, ev);
        w->nwritten++;
        hand_on(w, 0);
    }
    free(order);
}

/* ---- the document ------------------------------------------------------------------------- */

static int to_buf(void *ctx, const void *data, size_t len) {
    tp_buf_put(ctx, data, len);
    return ((tp_buf *)ctx)->failed ? -1 : 0;
}

/* The JSON trace's header and trailer of m around no events (chrome.c's own), into json: a
 * trace that holds `written` of `recorded` events says it was cut short in its tprof object, and
 * a provisional one (a streamed trace's at a checkpoint) that it is partial and interrupted.
 * 0, or -1 when out of memory. */
static int header_json(const tp_model *m, const tp_chrome_opts *opts, size_t written,
                       size_t recorded, int provisional, tp_buf *json) {
    tp_model doc = *m;
    doc.nevents = 0;
    doc.ntracks = 0;
    tp_chrome_opts o = *opts;
    o.gzip = 0;
    o.deadline_ns = NULL;
    o.events_written = NULL;
    tp_buf members;
    tp_buf_init(&members);
    if (written < recorded)
        tp_buf_printf(&members, "\"truncated\":true,\"events_written\":%zu,\"events_recorded\":%zu",
                      written, recorded);
    if (provisional) {
        doc.partial = 1;
        tp_buf_printf(&members, "%s\"interrupted\":true", members.len ? "," : "");
    }
    if (members.len) {
        if (o.tprof_members) tp_buf_printf(&members, ",%s", o.tprof_members);
        tp_buf_putc(&members, '\0');
        o.tprof_members = members.data;
    }
    int rc = members.failed || tp_chrome_write(&doc, &o, to_buf, json) ? -1 : 0;
    tp_buf_free(&members);
    return rc;
}

/* json as the metadata entry TP_PERFETTO_HEADER; `stateless`: in a packet that says nothing of
 * the sequence's incremental state (a streamed trace's, which may come first). */
static void put_meta(pw *w, const tp_buf *json, int stateless) {
    size_t p;
    if (stateless) {
        p = tp_pb_open(&w->out, TRACE_PACKET);
        tp_pb_uint(&w->out, PK_SEQ_ID, SEQ);
    } else {
        p = packet_open(w);
    }
    size_t ce = tp_pb_open(&w->out, PK_CHROME_EVENTS);
    size_t md = tp_pb_open(&w->out, CEB_METADATA);
    tp_pb_bytes(&w->out, CM_NAME, TP_PERFETTO_HEADER, strlen(TP_PERFETTO_HEADER));
    tp_pb_bytes(&w->out, CM_JSON, json->data, json->len);
    tp_pb_close(&w->out, md);
    tp_pb_close(&w->out, ce);
    tp_pb_close(&w->out, p);
}

/* The document's facts as the metadata entry (a trace cut short by the deadline says so). */
static void put_header(pw *w) {
    tp_buf json;
    tp_buf_init(&json);
    if (header_json(w->m, w->o, w->nwritten, w->m->nevents, 0, &json))
        w->failed = 1;
    else
        put_meta(w, &json, 0);
    tp_buf_free(&json);
}

static void pw_free(pw *w) {
    for (int i = 0; i < 3; i++)
        free(w->iid[i]);
    free(w->process);
    free(w->nlanes);
    for (size_t l = 0; l < w->nalloc; l++)
        free(w->lanes[l].open);
    free(w->lanes);
    free(w->counters);
    free(w->counter_index.slots);
    tp_buf_free(&w->out);
    tp_buf_free(&w->scratch);
}

int tp_perfetto_write(const tp_model *m, const tp_chrome_opts *o,
                      int (*write)(void *ctx, const void *data, size_t len), void *ctx) {
    static const tp_chrome_opts defaults;
    if (!m || !write) return -1;
    pw w = {.m = m, .o = o ? o : &defaults, .write = write, .ctx = ctx, .first = 1};
    w.ntracks = m->ntracks;
    for (size_t i = 0; i < m->nevents && w.ntracks == m->ntracks; i++)
        if (m->events[i].track >= m->ntracks) w.ntracks++; /* pid 0, tid 0 as chrome.c writes */
    size_t nstr = m->strings.n ? m->strings.n : 1;
    for (int i = 0; i < 3; i++)
        w.iid[i] = calloc(nstr, sizeof(*w.iid[i]));
    w.niid = (uint32_t)nstr;
    w.next[ID_ARG_NAMES - 1] = 3; /* after the marks' */
    if (!w.iid[0] || !w.iid[1] || !w.iid[2] || put_tracks(&w)) w.failed = 1;
    if (!w.failed) put_events(&w);
    if (!w.failed) put_header(&w);
    hand_on(&w, 1);
    if (w.o->events_written) *w.o->events_written = w.nwritten;
    int rc = w.failed ? -1 : 0;
    pw_free(&w);
    return rc;
}

/* ---- files -------------------------------------------------------------------------------- */

typedef struct file_out {
    tp_ofile *f;
    int write_failed; /* commit then reports the system's reason */
} file_out;

static int to_file(void *ctx, const void *data, size_t len) {
    file_out *fo = ctx;
    if (tp_ofile_write(fo->f, data, len) == 0) return 0;
    fo->write_failed = 1;
    return -1;
}

int tp_perfetto_write_file(const tp_model *m, const char *path, const tp_chrome_opts *o, char *err,
                           size_t errlen) {
    file_out fo = {tp_ofile_open(path, 0, err, errlen), 0};
    if (!fo.f) return -1;
    if (tp_perfetto_write(m, o, to_file, &fo) == 0 || fo.write_failed)
        return tp_ofile_commit(fo.f, err, errlen) || fo.write_failed ? -1 : 0;
    tp_ofile_abort(fo.f);
    if (err && errlen) snprintf(err, errlen, "cannot write %s: %s", path, strerror(ENOMEM));
    return -1;
}

/* ---- a streamed window (tp_perfetto_stream) ------------------------------------------------ */

/* The stream's track for track t of the segment (one past its tracks: pid 0, tid 0), made and
 * described (its process first, when new) at first sight; 0 with w->failed when out of memory. */
static uint32_t stream_track(pw *w, uint32_t t) {
    tp_perfetto_stream *st = w->stream;
    if (st->tmap[t]) return st->tmap[t] - 1;
    const tp_track *tr = track_of(w, t);
    tp_model *ids = &st->ids;
    size_t before = ids->ntracks; /* room first: a track made is set up at once */
    uint32_t k = UINT32_MAX;
    if (!TP_GROW(w->process, w->captracks, before + 1) &&
        !TP_GROW(st->tracks, st->captracks, before + 1))
        k = tp_model_track(ids, tr->pid, str_id(w, tr->pid_str), tr->tid, str_id(w, tr->tid_str));
    if (k == UINT32_MAX) {
        w->failed = 1;
        return 0;
    }
    if (ids->ntracks > before) {
        set_process(w, k, ids->tracks, &ids->tracks[k], tr, &st->nproc);
        put_lane(w, tr, k, 0);
        st->tracks[k] = (strack){0};
    }
    st->tmap[t] = k + 1;
    return k;
}

/* Whether range [b, e] fits lane ln (the lane's head comment); *k: its spans that stay outermost
 * (those after them it contains). */
static int slane_fits(const slane *ln, int64_t b, int64_t e, uint32_t *k) {
    if (ln->n && e < ln->tops[ln->n - 1].end) return 0; /* not in end order */
    if (ln->floored && (e < ln->floor_end || (b >= ln->floor_start && b < ln->floor_end))) return 0;
    uint32_t i = ln->n;
    while (i && ln->tops[i - 1].start >= b)
        i--;
    /* the same start: a reader sorting by time alone could not tell which is outer */
    if (i < ln->n && ln->tops[i].start == b) return 0;
    if (ln->floored && b == ln->floor_start) return 0;
    if (i && ln->tops[i - 1].end > b) return 0;
    *k = i;
    return 1;
}

static void slane_put(slane *ln, uint32_t k, int64_t b, int64_t e) {
    if (ln->floored && b < ln->floor_start) ln->floored = 0; /* it contains them */
    ln->n = k;
    if (ln->n == LANE_SPANS) { /* the older half let go, into the floor */
        uint32_t half = LANE_SPANS / 2;
        if (!ln->floored) ln->floor_start = ln->tops[0].start;
        ln->floored = 1;
        ln->floor_end = ln->tops[half - 1].end;
        memmove(ln->tops, ln->tops + half, (LANE_SPANS - half) * sizeof(span));
        ln->n -= half;
    }
    ln->tops[ln->n++] = (span){b, e};
}

/* A range of a segment, begin and end one after the other on the first lane of its track it
 * fits (a new one, described, when none does): each lane's ranges nest, in time order as a
 * reader sorting by time sees them, and in the file's order as a reader pairing each end with
 * the last begin sees them. */
static void stream_slice(pw *w, const tp_event *ev) {
    tp_perfetto_stream *st = w->stream;
    uint32_t t = event_track(w, ev), l = 0, k = 0;
    if (w->failed) return;
    strack *tr = &st->tracks[t];
    int64_t b = ev->ts, e = end_of(ev);
    while (l < tr->nl && !slane_fits(&tr->lanes[l], b, e, &k))
        l++;
    if (l == tr->nl) {
        if (TP_GROW(tr->lanes, tr->cap, tr->nl + 1)) {
            w->failed = 1;
            return;
        }
        tr->lanes[tr->nl++] = (slane){.n = 0};
        k = 0;
        if (l) put_lane(w, &zero_track, t, l); /* (an overlap lane: no names of its track) */
    }
    slane_put(&tr->lanes[l], k, b, e);
    uint64_t uuid = (uint64_t)l << 32 | (t + 1);
    put_begin(w, ev, uuid);
    put_end(w, e, uuid);
}

/* The output so far and the provisional header after it, in one write, the header's bytes
 * provisional (util/fs.h): the file is a whole trace of what was written, under partial_path
 * from the first checkpoint on. */
static void checkpoint(tp_perfetto_stream *st) {
    pw *w = &st->w;
    size_t events = w->out.len;
    tp_buf_put(&w->out, st->provisional.data, st->provisional.len);
    if (w->out.failed || w->scratch.failed) w->failed = 1;
    if (w->failed) return;
    if (tp_ofile_write_provisional(st->f, w->out.data, w->out.len, w->out.len - events)) {
        w->failed = st->write_failed = 1;
        return;
    }
    w->out.len = 0;
    if (!st->published) /* once: a file that cannot take the name keeps its temporary one */
        tp_ofile_publish(st->f, st->partial_path);
    st->published = 1;
}

/* m's events in its order, until the deadline if any (each thread's ranges as they ended). */
static void write_segment(tp_perfetto_stream *st, const tp_model *m) {
    pw *w = &st->w;
    w->m = m;
    st->smap = calloc(m->strings.n ? m->strings.n : 1, sizeof(*st->smap));
    st->tmap = calloc(m->ntracks + 1, sizeof(*st->tmap));
    if (!st->smap || !st->tmap) w->failed = 1;
    for (size_t i = 0; i < m->nevents && !w->failed; i++) {
        if (i % DEADLINE_EVERY == 0 && tp_chrome_past_deadline(w->o->deadline_ns)) break;
        const tp_event *ev = &m->events[i];
        if (is_slice(ev))
            stream_slice(w, ev);
        else if (ev->kind == TP_COUNTER)
            put_counter(w, ev);
        else
            put_instant(w, ev);
        w->nwritten++;
        hand_on(w, 0);
    }
    st->recorded += m->nevents;
    free(st->smap);
    free(st->tmap);
    st->smap = st->tmap = NULL;
}

static void stream_free(tp_perfetto_stream *st) {
    for (size_t t = 0; t < st->ids.ntracks && st->tracks; t++)
        free(st->tracks[t].lanes);
    free(st->tracks);
    tp_model_free(&st->ids);
    tp_buf_free(&st->provisional);
    pw_free(&st->w);
    free(st->path);
    free(st->partial_path);
    free(st);
}

tp_perfetto_stream *tp_perfetto_stream_open(const tp_model *head, const char *path,
                                            const char *partial_path, const tp_chrome_opts *o,
                                            char *err, size_t errlen) {
    static const tp_chrome_opts defaults;
    tp_perfetto_stream *st = calloc(1, sizeof(*st));
    tp_buf json;
    tp_buf_init(&json);
    if (st) {
        tp_model_init(&st->ids);
        st->w = (pw){.o = o ? o : &defaults, .first = 1, .stream = st};
        st->w.next[ID_ARG_NAMES - 1] = 3; /* after the marks' */
        st->path = strdup(path);
        st->partial_path = strdup(partial_path);
    }
    if (!st || !st->path || !st->partial_path || header_json(head, st->w.o, 0, 0, 1, &json)) {
        if (err && errlen) snprintf(err, errlen, "cannot write %s: %s", path, strerror(ENOMEM));
    } else {
        put_meta(&st->w, &json, 1);
        st->provisional = st->w.out; /* the packet, kept; the output starts empty */
        tp_buf_init(&st->w.out);
        if (!st->provisional.failed) st->f = tp_ofile_open(path, 0, err, errlen);
    }
    tp_buf_free(&json);
    if (st && st->f) return st;
    if (st) stream_free(st);
    return NULL;
}

int tp_perfetto_stream_add(tp_perfetto_stream *st, const tp_model *segment) {
    assert(st && segment);
    if (!st->w.failed) write_segment(st, segment);
    if (!st->w.failed) checkpoint(st);
    return st->w.failed ? -1 : 0;
}

int tp_perfetto_stream_end(tp_perfetto_stream *st, const tp_model *last, const char *path,
                           size_t *events_written, char *err, size_t errlen) {
    pw *w = &st->w;
    tp_buf json;
    tp_buf_init(&json);
    if (!w->failed) write_segment(st, last);
    if (!w->failed && header_json(last, w->o, w->nwritten, st->recorded, 0, &json)) w->failed = 1;
    if (!w->failed) put_meta(w, &json, 1);
    tp_buf_free(&json);
    if (w->out.failed) w->failed = 1;
    if (!w->failed && tp_ofile_write_provisional(st->f, w->out.data, w->out.len, 0))
        w->failed = st->write_failed = 1;
    if (!w->failed && tp_ofile_rename_to(st->f, path)) w->failed = 1;
    if (events_written) *events_written = w->nwritten;
    int rc = -1;
    if (!w->failed || st->write_failed) {
        /* commit reports a failed write's reason and removes the file; renames only when whole */
        rc = tp_ofile_commit(st->f, err, errlen) || w->failed ? -1 : 0;
    } else {
        tp_ofile_abort(st->f);
        if (err && errlen) snprintf(err, errlen, "cannot write %s: %s", path, strerror(ENOMEM));
    }
    stream_free(st);
    return rc;
}

void tp_perfetto_stream_abort(tp_perfetto_stream *st) {
    if (!st) return;
    tp_ofile_abort(st->f);
    stream_free(st);
}
