/* chrome.c - the Chrome Trace Event JSON writer (see chrome.h): tp_model in, Kineto's JSON out.
 *
 * Speed (budget: 100 ns per event): names repeat across millions of events, so each string is
 * JSON-escaped once per model and copied afterwards; each track's "pid"/"tid" text is rendered
 * once; numbers never go through printf. Output gathers in a buffer flushed (through zlib when
 * asked) in ~1 MB chunks, so memory stays bounded whatever the size of the model. */
#include "export/chrome.h"

#include "model/kineto.h"
#include "tprof.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/jsonvalid.h"
#include "util/sort.h"
#include "util/vec.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

enum {
    CHUNK = 1 << 20,       /* the output buffer is flushed once it holds this much */
    DEADLINE_EVERY = 4096, /* events written between two looks at the clock */
    COPY_SLACK = 16,       /* readable bytes behind every cached rendering (see copy_text) */
    ZCHUNK = 1 << 18,      /* compressed bytes per write call */
    PENDING_MAX = 1 << 20, /* compressed output held for a checkpoint's one write, at most */
    /* process_sort_index of GPU 0: past every Linux pid (pid_max <= 2^22), so host processes
     * sort before GPUs in the viewers, as in Kineto's traces. */
    GPU_SORT_BASE = 0x1000000,
};

/* Where a cached rendering sits in its buffer; len 0 = not rendered yet (never a valid one:
 * every rendering holds at least two bytes). */
typedef struct span {
    size_t off, len;
} span;

/* What an event is in a launch -> device work flow (writer.flow, by event index). */
enum { FLOW_NONE, FLOW_START, FLOW_END };

/* The document's state (output, compression, counts) and the state of the model being written
 * (its caches: escaped strings, track texts, flows), which write_segment makes and frees. */
typedef struct writer {
    const tp_model *doc;     /* the header's and trailer's facts */
    const tp_chrome_opts *o; /* never NULL */
    const tp_model *m;       /* the model being written */
    tp_buf out;
    int (*write)(void *ctx, const void *data, size_t len);
    void *ctx;
    int write_failed;
    int stop;         /* a write or an allocation failed: the output is lost, stop working */
    size_t nentries;  /* entries written to traceEvents (the first takes no comma) */
    size_t nevents;   /* events of the models written so far */
    size_t nwritten;  /* of those, written (fewer when the deadline passed) */
    int64_t first_ts; /* earliest event time, the ts of the metadata entries */
    int64_t seen_ts;  /* the earliest of the segments written without metadata ... */
    int seen;         /* ... when there were any */
    int devices_out;  /* deviceProperties written (in the header) */
    int gzip;
    z_stream z;
    unsigned char *zout;
    /* By string id: its JSON literal in strs, and the verdict on it as raw JSON text
     * (0 not checked yet, 1 valid, 2 not JSON: written as a string instead). */
    size_t nstr;
    span *str;
    tp_buf strs;
    uint8_t *json_ok;
    /* By track (plus one for events whose track is out of range): ,"pid":P,"tid":T in tracks,
     * and whether the track carries device work (a GPU stream). */
    span *track;
    tp_buf tracks;
    uint8_t *gpu;
    /* The GPU streams (numeric pid, tid) of the segments written without metadata: the metadata
     * at the end names them as GPU streams though the last model may hold no work of theirs (a
     * streamed window's GPU work goes out with its launches' segments). */
    int64_t (*gpu_seen)[2];
    size_t ngpu_seen, cap_gpu_seen;
    uint8_t *flow;     /* FLOW_* by event; NULL when no event starts or ends a flow */
    tp_str dataloader; /* the model's id of "dataloader" (UINT32_MAX: none), see put_event */
    /* A checkpointed stream's (tp_chrome_stream_checkpoints): called in place of a flush when
     * the buffer is full, between two entries; NULL otherwise. */
    void (*full)(struct writer *w);
} writer;

/* ---- output stream --------------------------------------------------------------------------- */

static void emit(writer *w, const void *data, size_t len) {
    if (len && !w->write_failed && w->write(w->ctx, data, len) != 0) w->write_failed = 1;
}

static int out_of_memory(const writer *w) {
    return w->out.failed || w->strs.failed || w->tracks.failed;
}

/* Hands the buffered text on (compressed when asked); final ends the gzip stream. */
static void flush(writer *w, int final) {
    if (out_of_memory(w)) {
        w->stop = 1;
        return;
    }
    if (!w->gzip) {
        emit(w, w->out.data, w->out.len);
    } else {
        w->z.next_in = (Bytef *)w->out.data;
        w->z.avail_in = (uInt)w->out.len;
        do {
            w->z.next_out = w->zout;
            w->z.avail_out = ZCHUNK;
            deflate(&w->z, final ? Z_FINISH : Z_NO_FLUSH);
            emit(w, w->zout, ZCHUNK - w->z.avail_out);
        } while (w->z.avail_out == 0 && !w->write_failed);
    }
    w->out.len = 0;
    w->stop = w->write_failed;
}

static void maybe_flush(writer *w) {
    if (w->out.len < CHUNK) return;
    if (w->full)
        w->full(w);
    else
        flush(w, 0);
}

/* ---- strings and tracks ---------------------------------------------------------------------- */

/* Escapes string id into strs; its span stays len 0 when memory ran out (caught at flush).
 * Every rendering in strs and tracks is followed by COPY_SLACK readable bytes, for
 * copy_text's block copies. */
static void cache_str(writer *w, tp_str id) {
    span *s = &w->str[id];
    s->off = w->strs.len;
    tp_buf_json_str(&w->strs, tp_strtab_get(&w->m->strings, id), tp_strtab_len(&w->m->strings, id));
    tp_buf_reserve(&w->strs, COPY_SLACK);
    s->len = w->strs.failed ? 0 : w->strs.len - s->off;
}

/* The cached JSON literal of a string, escaped on first use. */
static inline const span *str_span(writer *w, tp_str id) {
    if (id >= w->nstr) id = TP_STR_EMPTY;
    if (!w->str[id].len) cache_str(w, id);
    return &w->str[id];
}

/* A raw JSON text (an arg) is embedded as it is when valid, else written as a string, so one
 * bad value never makes the trace unreadable. Checked once per distinct text. */
static int json_valid(writer *w, tp_str id) {
    if (id >= w->nstr) id = TP_STR_EMPTY;
    if (!w->json_ok[id])
        w->json_ok[id] =
            tp_json_valid(tp_strtab_get(&w->m->strings, id), tp_strtab_len(&w->m->strings, id)) ? 1
                                                                                                : 2;
    return w->json_ok[id] == 1;
}

static void buf_str(writer *w, tp_buf *dst, tp_str id) {
    const span *s = str_span(w, id);
    tp_buf_put(dst, w->strs.data + s->off, s->len);
}

/* A pid or tid: a string when the trace had one, else the number. */
static void buf_id(writer *w, tp_buf *dst, int64_t num, tp_str str) {
    if (str != TP_STR_EMPTY)
        buf_str(w, dst, str);
    else
        tp_buf_i64(dst, num);
}

const char *tp_chrome_process_label(const tp_model *m, const tp_track *t, int gpu, char *out,
                                    size_t n) {
    if (t->pid_str != TP_STR_EMPTY) return tp_model_str(m, t->pid_str);
    if (!gpu && t->pid == (int64_t)getpid()) return program_invocation_short_name;
    snprintf(out, n, "%s%lld", gpu ? "GPU " : "process ", (long long)t->pid);
    return out;
}

const char *tp_chrome_thread_label(const tp_model *m, const tp_track *t, int gpu, char *out,
                                   size_t n) {
    if (t->tid_str != TP_STR_EMPTY) return tp_model_str(m, t->tid_str);
    snprintf(out, n, "%s%lld", gpu ? "stream " : "thread ", (long long)t->tid);
    return out;
}

static void render_tracks(writer *w) {
    const tp_model *m = w->m;
    for (size_t t = 0; t <= m->ntracks; t++) {
        /* The extra last entry stands for tracks out of range: pid 0, tid 0. */
        static const tp_track none;
        const tp_track *tr = t < m->ntracks ? &m->tracks[t] : &none;
        w->track[t].off = w->tracks.len;
        TP_BUF_LIT(&w->tracks, ",\"pid\":");
        buf_id(w, &w->tracks, tr->pid, tr->pid_str);
        TP_BUF_LIT(&w->tracks, ",\"tid\":");
        buf_id(w, &w->tracks, tr->tid, tr->tid_str);
        w->track[t].len = w->tracks.len - w->track[t].off;
    }
    tp_buf_reserve(&w->tracks, COPY_SLACK);
}

static const span *track_span(const writer *w, uint32_t track) {
    return &w->track[track < w->m->ntracks ? track : w->m->ntracks];
}

/* ---- correlation: launch -> device work ------------------------------------------------------ */

/* Within one id's run of refs (in event order, the sort being stable): the first host range
 * is the launch; when device work carries the id too, the launch starts a flow and each such
 * device range ends one. Without a launch in the model, device work gets no flow. */
static void mark_run(uint8_t *flow, const tp_keyed *r, size_t n) {
    size_t launch = SIZE_MAX;
    int linked = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].val & 1)
            linked = 1;
        else if (launch == SIZE_MAX)
            launch = (size_t)(r[i].val >> 1);
    }
    if (launch == SIZE_MAX || !linked) return;
    flow[launch] = FLOW_START;
    for (size_t i = 0; i < n; i++)
        if (r[i].val & 1) flow[r[i].val >> 1] = FLOW_END;
}

/* refs: the ranges carrying a correlation id, in event order, keyed by the id; val: the event's
 * index << 1 | 1 for device work. Sorted by id (stably, so each id's run stays in event order),
 * then each id's run is marked. */
static int mark_flows(writer *w, tp_keyed *refs, size_t n) {
    w->flow = calloc(w->m->nevents, 1);
    tp_sort_buf spare = {0};
    int rc = !w->flow || tp_sort_keyed(&spare, refs, n) ? -1 : 0;
    tp_sort_buf_free(&spare);
    if (rc) return -1;
    for (size_t a = 0, b; a < n; a = b) {
        for (b = a + 1; b < n && refs[b].key == refs[a].key; b++) {
        }
        mark_run(w->flow, refs + a, b - a);
    }
    return 0;
}

/* ---- events ---------------------------------------------------------------------------------
 * The hot path. Each event reserves its room once (event_room), then writes through a cursor
 * with no further checks: on a trace of millions of events, per-append checks and calls were
 * most of the cost. */

/* Room for an event's literals and numbers, a flow, and copy_text's overshoot; its strings
 * and args are added by event_room. */
enum { EVENT_FIXED_ROOM = 384 };

#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

/* Copies a cached rendering in 16-byte blocks, possibly past its end: the source has
 * COPY_SLACK readable bytes behind it and the destination is inside the event's room. */
static char *copy_text(char *p, const char *s, size_t n) {
    for (size_t i = 0; i < n; i += 16)
        memcpy(p + i, s + i, 16);
    return p + n;
}

static char *put_str(writer *w, char *p, tp_str id) {
    const span *s = str_span(w, id);
    return copy_text(p, w->strs.data + s->off, s->len);
}

static size_t event_nargs(const tp_model *m, const tp_event *ev) {
    return (size_t)ev->arg0 + ev->nargs <= m->nargs ? ev->nargs : 0;
}

static size_t arg_room(writer *w, const tp_arg *a) {
    size_t room = str_span(w, a->key)->len + 2; /* key, colon, comma */
    switch (a->type) {
    case TP_ARG_INT:
        return room + TP_FMT_NUM_MAX;
    case TP_ARG_DOUBLE:
        return room + TP_FMT_DOUBLE_MAX;
    case TP_ARG_JSON:
        if (json_valid(w, a->v.s)) return room + tp_strtab_len(&w->m->strings, a->v.s);
        return room + str_span(w, a->v.s)->len;
    case TP_ARG_STR:
        return room + str_span(w, a->v.s)->len;
    default:
        return room + 4;
    }
}

/* Escapes (and caches) every string the event will write, and returns the room it needs. */
static size_t event_room(writer *w, const tp_event *ev) {
    size_t room = EVENT_FIXED_ROOM + 2 * track_span(w, ev->track)->len + str_span(w, ev->cat)->len +
                  str_span(w, ev->name)->len;
    size_t n = event_nargs(w->m, ev);
    const tp_arg *a = n ? w->m->args + ev->arg0 : NULL; /* a model may have no args at all */
    for (size_t i = 0; i < n; i++)
        room += arg_room(w, &a[i]);
    if (ev->ext) room += sizeof("\"External id\":,") + TP_FMT_NUM_MAX;
    return room;
}

/* Entries are separated by a comma and a newline (one event per line, as Kineto writes). */
static char *put_sep(writer *w, char *p) {
    if (w->nentries++) *p++ = ',';
    *p++ = '\n';
    return p;
}

/* "cat":..,"name":.. ; an empty category is left out, as Kineto does. */
static char *put_names(writer *w, char *p, const tp_event *ev) {
    if (ev->cat != TP_STR_EMPTY) {
        p = PUT_LIT(p, "\"cat\":");
        p = put_str(w, p, ev->cat);
        *p++ = ',';
    }
    p = PUT_LIT(p, "\"name\":");
    return put_str(w, p, ev->name);
}

/* ,"pid":..,"tid":..,"ts":.. */
static char *put_where(writer *w, char *p, uint32_t track, int64_t ts) {
    const span *s = track_span(w, track);
    p = copy_text(p, w->tracks.data + s->off, s->len);
    p = PUT_LIT(p, ",\"ts\":");
    return tp_fmt_us(p, ts);
}

static char *put_arg_value(writer *w, char *p, const tp_arg *a) {
    switch (a->type) {
    case TP_ARG_INT:
        return tp_fmt_i64(p, a->v.i);
    case TP_ARG_DOUBLE:
        return tp_fmt_double(p, a->v.d);
    case TP_ARG_JSON:
        if (json_valid(w, a->v.s)) {
            size_t n = tp_strtab_len(&w->m->strings, a->v.s);
            memcpy(p, tp_strtab_get(&w->m->strings, a->v.s), n);
            return p + n;
        }
        return put_str(w, p, a->v.s);
    case TP_ARG_STR:
        return put_str(w, p, a->v.s);
    default:
        return PUT_LIT(p, "null");
    }
}

/* ,"args":{...} from the External id (first, as Kineto writes it), the model's args, the
 * correlation id and the truncation mark; nothing when all are absent. */
static char *put_args(writer *w, char *p, const tp_event *ev) {
    size_t n = event_nargs(w->m, ev);
    int truncated = (ev->flags & TP_EVF_TRUNCATED) != 0;
    if (!n && !ev->corr && !ev->ext && !truncated) return p;
    p = PUT_LIT(p, ",\"args\":{");
    if (ev->ext) {
        p = PUT_LIT(p, "\"External id\":");
        p = tp_fmt_u64(p, ev->ext);
        if (n || ev->corr || truncated) *p++ = ',';
    }
    const tp_arg *a = n ? w->m->args + ev->arg0 : NULL;
    for (size_t i = 0; i < n; i++) {
        if (i) *p++ = ',';
        p = put_str(w, p, a[i].key);
        *p++ = ':';
        p = put_arg_value(w, p, &a[i]);
    }
    if (ev->corr) {
        if (n) *p++ = ',';
        p = PUT_LIT(p, "\"correlation\":");
        p = tp_fmt_u64(p, ev->corr);
    }
    if (truncated) {
        if (n || ev->corr) *p++ = ',';
        p = PUT_LIT(p, "\"tprof truncated\":true");
    }
    *p++ = '}';
    return p;
}

/* A launch -> device work flow end as Kineto writes it: "s" at the launch, "f" bound to the
 * enclosing slice ("bp":"e") at the device range. Written right after its range: viewers bind
 * a flow to the slice open at its time on its thread, and keep file order among equal times. */
static char *put_flow(writer *w, char *p, int end, const tp_event *ev) {
    p = put_sep(w, p);
    p = end ? PUT_LIT(p, "{\"ph\":\"f\",\"id\":") : PUT_LIT(p, "{\"ph\":\"s\",\"id\":");
    p = tp_fmt_u64(p, ev->corr);
    p = put_where(w, p, ev->track, ev->ts);
    if (end) return PUT_LIT(p, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"bp\":\"e\"}");
    return PUT_LIT(p, ",\"cat\":\"ac2g\",\"name\":\"ac2g\"}");
}

static char *put_range(writer *w, char *p, const tp_event *ev, size_t index) {
    p = PUT_LIT(p, "{\"ph\":\"X\",");
    p = put_names(w, p, ev);
    p = put_where(w, p, ev->track, ev->ts);
    /* Viewers drop or mis-nest slices of negative length. */
    p = PUT_LIT(p, ",\"dur\":");
    p = tp_fmt_us(p, ev->dur > 0 ? ev->dur : 0);
    p = put_args(w, p, ev);
    *p++ = '}';
    if (w->flow && w->flow[index] != FLOW_NONE) p = put_flow(w, p, w->flow[index] == FLOW_END, ev);
    return p;
}

static char *put_instant(writer *w, char *p, const tp_event *ev) {
    switch (ev->kind) {
    case TP_MEMORY:
        /* PyTorch's own spelling, which memory tools look for. */
        p = PUT_LIT(
            p, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_instant_event\",\"name\":\"[memory]\"");
        break;
    case TP_COUNTER:
        p = PUT_LIT(p, "{\"ph\":\"C\",");
        p = put_names(w, p, ev);
        break;
    default:
        p = PUT_LIT(p, "{\"ph\":\"i\",\"s\":\"t\",");
        p = put_names(w, p, ev);
        break;
    }
    p = put_where(w, p, ev->track, ev->ts);
    p = put_args(w, p, ev);
    *p++ = '}';
    return p;
}

/* The copy of a dataloader range that TensorBoard's plugin counts as data loading: it keys on a
 * cpu_op named enumerate(DataLoader)#<...>.__next__ (torch's own range is a user_annotation
 * now, which the plugin ignores). Same thread, start and length; readers of tprof's traces
 * leave it out (model/kineto.h), so every figure is the same with or without it. */
static char *put_dataloader_twin(writer *w, char *p, const tp_event *ev) {
    p = put_sep(w, p);
    p = PUT_LIT(p, "{\"ph\":\"X\",\"cat\":\"");
    p = PUT_LIT(p, tp_kcat_cpu_op);
    p = PUT_LIT(p, "\",\"name\":\"");
    p = PUT_LIT(p, tp_kname_dataloader_twin); /* nothing in it to escape */
    *p++ = '"';
    p = put_where(w, p, ev->track, ev->ts);
    p = PUT_LIT(p, ",\"dur\":");
    p = tp_fmt_us(p, ev->dur > 0 ? ev->dur : 0);
    *p++ = '}';
    return p;
}

static void put_event(writer *w, const tp_event *ev, size_t index) {
    int twin = ev->kind == TP_HOST_RANGE && ev->name == w->dataloader;
    size_t room = event_room(w, ev);
    if (twin)
        room += EVENT_FIXED_ROOM + track_span(w, ev->track)->len + sizeof(tp_kname_dataloader_twin);
    if (tp_buf_reserve(&w->out, room) || w->strs.failed) return;
    char *p = put_sep(w, w->out.data + w->out.len);
    if (ev->kind == TP_HOST_RANGE || tp_kind_is_device(ev->kind))
        p = put_range(w, p, ev, index);
    else
        p = put_instant(w, p, ev);
    if (twin) p = put_dataloader_twin(w, p, ev);
    w->out.len = (size_t)(p - w->out.data);
}

/* ---- metadata: process and thread names, sort order ------------------------------------------ */

static void buf_sep(writer *w) {
    if (tp_buf_reserve(&w->out, 2)) return;
    w->out.len = (size_t)(put_sep(w, w->out.data + w->out.len) - w->out.data);
}

typedef struct track_ref {
    tp_track t;
    uint32_t index;
} track_ref;

static int cmp_i64(int64_t a, int64_t b) {
    return (a > b) - (a < b);
}

static int cmp_track_ref(const void *pa, const void *pb) {
    const track_ref *a = pa, *b = pb;
    int c = cmp_i64(a->t.pid_str, b->t.pid_str);
    if (!c) c = cmp_i64(a->t.pid, b->t.pid);
    if (!c) c = cmp_i64(a->t.tid_str, b->t.tid_str);
    if (!c) c = cmp_i64(a->t.tid, b->t.tid);
    return c ? c : cmp_i64(a->index, b->index);
}

static int same_process(const tp_track *a, const tp_track *b) {
    return a->pid == b->pid && a->pid_str == b->pid_str;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) {
    return v < lo ? lo : v > hi ? hi : v;
}

/* {"name":"<what>","ph":"M","ts":..,"pid":..,"tid":..,"args":{ ; the caller closes it. The
 * process-wide entries use tid 0, as Kineto writes them. */
static void begin_meta(writer *w, const char *what, const tp_track *t, int whole_process) {
    buf_sep(w);
    TP_BUF_LIT(&w->out, "{\"name\":\"");
    tp_buf_puts(&w->out, what);
    TP_BUF_LIT(&w->out, "\",\"ph\":\"M\",\"ts\":");
    tp_buf_us(&w->out, w->first_ts);
    TP_BUF_LIT(&w->out, ",\"pid\":");
    buf_id(w, &w->out, t->pid, t->pid_str);
    TP_BUF_LIT(&w->out, ",\"tid\":");
    if (whole_process)
        tp_buf_putc(&w->out, '0');
    else
        buf_id(w, &w->out, t->tid, t->tid_str);
    TP_BUF_LIT(&w->out, ",\"args\":{");
}

static void put_sort_meta(writer *w, const char *what, const tp_track *t, int whole_process,
                          int64_t index) {
    begin_meta(w, what, t, whole_process);
    TP_BUF_LIT(&w->out, "\"sort_index\":");
    tp_buf_i64(&w->out, index);
    TP_BUF_LIT(&w->out, "}}");
}

/* The process's name: from its tracks, else "GPU <id>" for a device, the pid itself when it
 * is a string, this program's name for this process, "process <pid>" otherwise. */
static void put_process_name(writer *w, const track_ref *r, size_t n, int gpu) {
    const tp_track *t = &r[0].t;
    begin_meta(w, "process_name", t, 1);
    TP_BUF_LIT(&w->out, "\"name\":");
    size_t i = 0;
    while (i < n && r[i].t.process_name == TP_STR_EMPTY)
        i++;
    char label[64];
    if (i < n)
        buf_str(w, &w->out, r[i].t.process_name);
    else
        tp_buf_json_cstr(&w->out, tp_chrome_process_label(w->m, t, gpu, label, sizeof(label)));
    TP_BUF_LIT(&w->out, "}}");
}

static void put_thread_meta(writer *w, const tp_track *t, int gpu) {
    begin_meta(w, "thread_name", t, 0);
    TP_BUF_LIT(&w->out, "\"name\":");
    char label[64];
    if (t->thread_name != TP_STR_EMPTY)
        buf_str(w, &w->out, t->thread_name);
    else
        tp_buf_json_cstr(&w->out, tp_chrome_thread_label(w->m, t, gpu, label, sizeof(label)));
    TP_BUF_LIT(&w->out, "}}");
    if (t->tid_str == TP_STR_EMPTY) put_sort_meta(w, "thread_sort_index", t, 0, t->tid);
}

/* One process: the tracks r[0..n) share its pid. It is a GPU when any of them carries device
 * work; GPUs sort after every host process. */
static void put_process_meta(writer *w, const track_ref *r, size_t n) {
    int gpu = 0;
    for (size_t i = 0; i < n; i++)
        gpu |= w->gpu[r[i].index];
    const tp_track *t = &r[0].t;
    int64_t order =
        t->pid_str != TP_STR_EMPTY ? GPU_SORT_BASE - 1 : clamp(t->pid, 0, GPU_SORT_BASE - 1);
    put_process_name(w, r, n, gpu);
    put_sort_meta(w, "process_sort_index", t, 1, gpu ? GPU_SORT_BASE + order : order);
    for (size_t i = 0; i < n; i++) {
        put_thread_meta(w, &r[i].t, w->gpu[r[i].index]);
        maybe_flush(w);
    }
}

static int put_metadata(writer *w) {
    const tp_model *m = w->m;
    if (!m->ntracks) return 0;
    track_ref *refs = malloc(m->ntracks * sizeof(*refs));
    if (!refs) return -1;
    for (size_t t = 0; t < m->ntracks; t++)
        refs[t] = (track_ref){m->tracks[t], (uint32_t)t};
    qsort(refs, m->ntracks, sizeof(*refs), cmp_track_ref);
    for (size_t a = 0, b; a < m->ntracks && !w->stop; a = b) {
        for (b = a + 1; b < m->ntracks && same_process(&refs[a].t, &refs[b].t); b++) {
        }
        put_process_meta(w, refs + a, b - a);
    }
    free(refs);
    return 0;
}

/* ---- the document ---------------------------------------------------------------------------- */

static void put_device(writer *w, const tp_device *d) {
    TP_BUF_LIT(&w->out, "{\"id\":");
    tp_buf_i64(&w->out, d->id);
    TP_BUF_LIT(&w->out, ",\"name\":");
    /* the document's string: the caches are the models' (write_segment) */
    tp_buf_json_str(&w->out, tp_model_str(w->doc, d->name),
                    tp_strtab_len(&w->doc->strings, d->name));
    /* Unknown properties (0) are left out rather than written as a misleading 0. */
    if (d->total_mem) {
        TP_BUF_LIT(&w->out, ",\"totalGlobalMem\":");
        tp_buf_u64(&w->out, d->total_mem);
    }
    if (d->compute_major || d->compute_minor) {
        TP_BUF_LIT(&w->out, ",\"computeMajor\":");
        tp_buf_i64(&w->out, d->compute_major);
        TP_BUF_LIT(&w->out, ",\"computeMinor\":");
        tp_buf_i64(&w->out, d->compute_minor);
    }
    if (d->num_sms) {
        TP_BUF_LIT(&w->out, ",\"numSms\":");
        tp_buf_i64(&w->out, d->num_sms);
    }
    tp_buf_putc(&w->out, '}');
}

static void put_devices(writer *w) {
    const tp_model *m = w->doc;
    if (!m->ndevices || w->devices_out) return;
    TP_BUF_LIT(&w->out, ",\n\"deviceProperties\":[");
    for (size_t i = 0; i < m->ndevices; i++) {
        if (i) tp_buf_putc(&w->out, ',');
        put_device(w, &m->devices[i]);
    }
    tp_buf_putc(&w->out, ']');
    w->devices_out = 1;
}

static void put_header(writer *w) {
    const tp_model *m = w->doc;
    TP_BUF_LIT(&w->out, "{\"schemaVersion\":1");
    put_devices(w);
    if (m->rank >= 0) {
        /* "rank": N with its space: traceinsight (HTA) finds a file's rank by the pattern
         * "rank":\s+N, and without it takes every rank's trace for rank 0 */
        TP_BUF_LIT(&w->out, ",\n\"distributedInfo\":{\"rank\": ");
        tp_buf_i64(&w->out, m->rank);
        TP_BUF_LIT(&w->out, ",\"world_size\":");
        tp_buf_i64(&w->out, m->world_size);
        tp_buf_putc(&w->out, '}');
    }
    TP_BUF_LIT(&w->out, ",\n\"traceEvents\":[");
}

/* The document's end; `provisional`: a checkpoint's (tp_chrome_stream_checkpoints), marked
 * partial and interrupted, which the next segment overwrites. */
static void put_trailer(writer *w, int provisional) {
    const tp_model *m = w->doc;
    const tp_chrome_opts *o = w->o;
    TP_BUF_LIT(&w->out, "\n],\n\"displayTimeUnit\":\"ms\",\n\"baseTimeNanoseconds\":");
    tp_buf_i64(&w->out, m->base_ns);
    int devices_out = w->devices_out;
    put_devices(w); /* a streamed trace's, known at its end */
    if (provisional) w->devices_out = devices_out;
    if (o->trace_name) {
        TP_BUF_LIT(&w->out, ",\n\"traceName\":");
        tp_buf_json_cstr(&w->out, o->trace_name);
    }
    TP_BUF_LIT(&w->out, ",\n\"tprof\":{\"version\":\"" TPROF_VERSION "\"");
    if (o->window) {
        TP_BUF_LIT(&w->out, ",\"window\":");
        tp_buf_json_cstr(&w->out, o->window);
    }
    if (m->flight_step >= 0) { /* a flight recorder's save (docs/FLIGHT.md) */
        TP_BUF_LIT(&w->out, ",\"flight\":{\"reason\":");
        tp_buf_json_cstr(&w->out, tp_model_str(m, m->flight_reason));
        TP_BUF_LIT(&w->out, ",\"step\":");
        tp_buf_i64(&w->out, m->flight_step);
        TP_BUF_LIT(&w->out, "}");
    }
    if (provisional)
        TP_BUF_LIT(&w->out, ",\"partial\":true,\"interrupted\":true");
    else if (m->partial)
        TP_BUF_LIT(&w->out, ",\"partial\":true");
    else
        TP_BUF_LIT(&w->out, ",\"partial\":false");
    if (w->nwritten < w->nevents && !provisional) { /* (a segment being written) */
        TP_BUF_LIT(&w->out, ",\"truncated\":true,\"events_written\":");
        tp_buf_u64(&w->out, w->nwritten);
        TP_BUF_LIT(&w->out, ",\"events_recorded\":");
        tp_buf_u64(&w->out, w->nevents);
    }
    TP_BUF_LIT(&w->out, ",\"dropped_events\":");
    tp_buf_u64(&w->out, m->dropped_events);
    TP_BUF_LIT(&w->out, ",\"rank\":");
    tp_buf_i64(&w->out, m->rank);
    TP_BUF_LIT(&w->out, ",\"world_size\":");
    tp_buf_i64(&w->out, m->world_size);
    if (o->config_json) {
        /* Kept even when it is not JSON, as a string, so the trace stays readable. */
        size_t n = strlen(o->config_json);
        TP_BUF_LIT(&w->out, ",\"config\":");
        if (tp_json_valid(o->config_json, n))
            tp_buf_put(&w->out, o->config_json, n);
        else
            tp_buf_json_str(&w->out, o->config_json, n);
    }
    if (o->tprof_members) {
        tp_buf_putc(&w->out, ',');
        tp_buf_put(&w->out, o->tprof_members, strlen(o->tprof_members));
    }
    TP_BUF_LIT(&w->out, "}}\n");
}

/* One pass over the events (the model may be far larger than the caches): which tracks are GPU
 * streams, the earliest time, the ranges carrying a correlation id; then the flows, and every
 * track's pid/tid text. */
static int prepare(writer *w) {
    const tp_model *m = w->m;
    w->nstr = m->strings.n ? m->strings.n : 1;
    w->str = calloc(w->nstr, sizeof(*w->str));
    w->json_ok = calloc(w->nstr, 1);
    w->track = calloc(m->ntracks + 1, sizeof(*w->track));
    w->gpu = calloc(m->ntracks + 1, 1);
    w->first_ts = 0;
    w->dataloader = tp_strtab_find(&m->strings, tp_kname_dataloader, TP_KLEN(tp_kname_dataloader));
    if (!w->str || !w->json_ok || !w->track || !w->gpu) return -1;
    tp_keyed *refs = NULL;
    size_t nrefs = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < m->nevents && rc == 0; i++) {
        const tp_event *ev = &m->events[i];
        if (i == 0 || ev->ts < w->first_ts) w->first_ts = ev->ts;
        int dev = tp_kind_is_device(ev->kind);
        if (dev) w->gpu[ev->track < m->ntracks ? ev->track : m->ntracks] = 1;
        if (!ev->corr || (!dev && ev->kind != TP_HOST_RANGE)) continue;
        rc = TP_GROW(refs, cap, nrefs + 1);
        if (rc == 0) refs[nrefs++] = (tp_keyed){ev->corr, (uint64_t)i << 1 | (uint64_t)dev};
    }
    if (rc == 0 && nrefs) rc = mark_flows(w, refs, nrefs);
    free(refs);
    if (rc) return -1;
    render_tracks(w);
    return out_of_memory(w) ? -1 : 0;
}

int tp_chrome_past_deadline(const int64_t *deadline) {
    int64_t deadline_ns = deadline ? __atomic_load_n(deadline, __ATOMIC_ACQUIRE) : 0;
    if (!deadline_ns) return 0;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec >= deadline_ns;
}

/* Frees what prepare made for the model just written. */
static void segment_free(writer *w) {
    tp_buf_free(&w->strs);
    tp_buf_free(&w->tracks);
    free(w->str);
    free(w->json_ok);
    free(w->track);
    free(w->gpu);
    free(w->flow);
    w->str = NULL, w->json_ok = NULL, w->track = NULL, w->gpu = NULL, w->flow = NULL;
    w->m = NULL;
}

static int numeric_track(const tp_track *t) {
    return t->pid_str == TP_STR_EMPTY && t->tid_str == TP_STR_EMPTY;
}

static int gpu_seen(const writer *w, const tp_track *t) {
    for (size_t i = 0; i < w->ngpu_seen; i++)
        if (w->gpu_seen[i][0] == t->pid && w->gpu_seen[i][1] == t->tid) return 1;
    return 0;
}

/* A segment without metadata: its GPU streams are remembered (gpu_seen); one with metadata:
 * those remembered are GPU streams in it too. Out of memory, a stream is named as a host thread. */
static void carry_gpu_tracks(writer *w, int events_only) {
    const tp_model *m = w->m;
    for (size_t t = 0; t < m->ntracks && w->gpu; t++) {
        const tp_track *k = &m->tracks[t];
        if (!numeric_track(k) || w->gpu[t] != events_only) continue;
        if (!events_only) {
            w->gpu[t] = (uint8_t)gpu_seen(w, k);
        } else if (!gpu_seen(w, k) && !TP_GROW(w->gpu_seen, w->cap_gpu_seen, w->ngpu_seen + 1)) {
            w->gpu_seen[w->ngpu_seen][0] = k->pid;
            w->gpu_seen[w->ngpu_seen++][1] = k->tid;
        }
    }
}

/* One model's part of the document: its tracks' metadata (unless `events_only`), then its events.
 * Metadata is dated at the earliest event of its segment and of the segments before it written
 * without metadata. */
static int write_segment(writer *w, const tp_model *m, int events_only) {
    w->m = m;
    w->nevents += m->nevents;
    if (prepare(w)) w->stop = 1;
    carry_gpu_tracks(w, events_only);
    if (w->seen && (!m->nevents || w->seen_ts < w->first_ts)) w->first_ts = w->seen_ts;
    if (events_only && m->nevents) {
        w->seen_ts = w->first_ts;
        w->seen = 1;
    }
    if (!w->stop && !events_only && put_metadata(w)) w->stop = 1;
    size_t i = 0;
    for (; i < m->nevents && !w->stop; i++) {
        if (i % DEADLINE_EVERY == 0 && tp_chrome_past_deadline(w->o->deadline_ns)) break;
        put_event(w, &m->events[i], i);
        maybe_flush(w);
    }
    w->nwritten += i;
    segment_free(w);
    return w->stop ? -1 : 0;
}

/* The header is written at once: the document has begun. */
static int writer_open(writer *w, const tp_model *doc, const tp_chrome_opts *o,
                       int (*write)(void *ctx, const void *data, size_t len), void *ctx) {
    static const tp_chrome_opts defaults;
    memset(w, 0, sizeof(*w));
    w->doc = doc;
    w->o = o ? o : &defaults;
    w->write = write;
    w->ctx = ctx;
    w->gzip = w->o->gzip;
    if (w->gzip) {
        /* Level 1: traces still shrink about 10x, and writing must keep up with the run. */
        w->zout = malloc(ZCHUNK);
        if (!w->zout ||
            deflateInit2(&w->z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            free(w->zout);
            return -1;
        }
    }
    if (tp_buf_reserve(&w->out, CHUNK + 4096)) w->stop = 1;
    put_header(w);
    return 0;
}

/* The trailer, and the end of the output; 0, or -1 when any step failed. */
static int writer_finish(writer *w) {
    if (!w->stop) put_trailer(w, 0);
    if (!w->stop) flush(w, 1);
    return w->stop ? -1 : 0;
}

static void writer_free(writer *w) {
    if (w->gzip) {
        deflateEnd(&w->z);
        free(w->zout);
    }
    tp_buf_free(&w->out);
    segment_free(w);
    free(w->gpu_seen);
}

int tp_chrome_write(const tp_model *m, const tp_chrome_opts *o,
                    int (*write)(void *ctx, const void *data, size_t len), void *ctx) {
    writer w;
    if (!m || !write || writer_open(&w, m, o, write, ctx)) return -1;
    int rc = write_segment(&w, m, 0) || writer_finish(&w) ? -1 : 0;
    if (o && o->events_written) *o->events_written = w.nwritten;
    writer_free(&w);
    return rc;
}

/* ---- files ----------------------------------------------------------------------------------- */

struct tp_chrome_stream {
    writer w; /* first: writer.full gets the stream from it */
    tp_ofile *f;
    int write_failed; /* tp_ofile_write failed: commit reports the system's reason */
    char *path;
    /* Checkpoints (tp_chrome_stream_checkpoints): the name the file takes at the first (NULL:
     * none), and with gzip the compressed output since the last, written with it in one call. */
    char *partial_path;
    int published;
    tp_buf pending;
    int in_checkpoint; /* pending is not spilled while the trailer goes in */
};

static int write_to_file(void *ctx, const void *data, size_t len) {
    tp_chrome_stream *s = ctx;
    int rc = 0;
    if (!s->partial_path || !s->w.gzip) {
        rc = tp_ofile_write(s->f, data, len);
    } else {
        tp_buf_put(&s->pending, data, len);
        rc = s->pending.failed ? -1 : 0;
        if (!rc && s->pending.len >= PENDING_MAX && !s->in_checkpoint) {
            /* a segment past what is held: the file is torn until the checkpoint */
            rc = tp_ofile_write(s->f, s->pending.data, s->pending.len);
            s->pending.len = 0;
        }
    }
    if (rc) s->write_failed = 1;
    return rc;
}

/* With gzip, ends the member under way: what follows starts a new one. */
static void end_member(writer *w) {
    if (!w->gzip) return;
    flush(w, 1);
    deflateReset(&w->z);
}

/* After a segment: its output and a provisional trailer in one write, the trailer's bytes
 * provisional (util/fs.h), so that the file is a whole trace of what was written so far. Plain,
 * the segment's text is still in the output buffer (flushed before only past CHUNK): the trailer
 * joins it there and both go out without a copy. With gzip the segment's member is ended and the
 * trailer is a member of its own, which the next segment's member overwrites, both held in
 * pending: a gzip file may be several members, which zlib, Python's gzip, zcat and tprof's
 * reader all read as one stream; the cost is a member's header and trailer (18 bytes) and a
 * dictionary restarted per segment (about 2% larger files), against a trace that survives a
 * SIGKILL. */
static void checkpoint(tp_chrome_stream *s) {
    writer *w = &s->w;
    if (!s->partial_path || w->stop) return;
    tp_buf *held = w->gzip ? &s->pending : &w->out;
    end_member(w);
    size_t events = held->len;
    s->in_checkpoint = 1;
    put_trailer(w, 1);
    end_member(w);
    s->in_checkpoint = 0;
    if (out_of_memory(w) || held->failed) w->stop = 1;
    if (w->stop) return;
    if (tp_ofile_write_provisional(s->f, held->data, held->len, held->len - events)) {
        s->write_failed = w->write_failed = w->stop = 1;
        return;
    }
    held->len = 0;
    if (!s->published) /* once: a file that cannot take the name keeps its temporary one */
        tp_ofile_publish(s->f, s->partial_path);
    s->published = 1;
}

/* A full buffer in the middle of a segment (a large one, the writer behind the loop): a
 * checkpoint too, so that a kill loses no more than the write under way (at most CHUNK). */
static void checkpoint_full(writer *w) {
    checkpoint((tp_chrome_stream *)w);
}

int tp_chrome_stream_checkpoints(tp_chrome_stream *s, const char *partial_path) {
    s->partial_path = strdup(partial_path);
    if (s->partial_path) s->w.full = checkpoint_full;
    return s->partial_path ? 0 : -1;
}

static void stream_free(tp_chrome_stream *s) {
    tp_buf_free(&s->pending);
    free(s->partial_path);
    free(s->path);
    free(s);
}

static void no_memory(const char *path, char *err, size_t errlen) {
    if (err && errlen) snprintf(err, errlen, "cannot write %s: %s", path, strerror(ENOMEM));
}

tp_chrome_stream *tp_chrome_stream_open(const tp_model *doc, const char *path,
                                        const tp_chrome_opts *o, char *err, size_t errlen) {
    tp_chrome_stream *s = calloc(1, sizeof(*s));
    if (s) s->path = strdup(path);
    if (!s || !s->path) {
        free(s);
        no_memory(path, err, errlen);
        return NULL;
    }
    s->f = tp_ofile_open(path, 0, err, errlen);
    if (s->f && writer_open(&s->w, doc, o, write_to_file, s) == 0) return s;
    if (s->f) {
        tp_ofile_abort(s->f);
        no_memory(path, err, errlen);
    }
    free(s->path);
    free(s);
    return NULL;
}

int tp_chrome_stream_add(tp_chrome_stream *s, const tp_model *m) {
    assert(s && m && m->base_ns == s->w.doc->base_ns); /* times are written relative to it */
    if (s->w.stop || write_segment(&s->w, m, 0)) return -1;
    checkpoint(s);
    return s->w.stop ? -1 : 0;
}

int tp_chrome_stream_add_events(tp_chrome_stream *s, const tp_model *m) {
    assert(s && m && m->base_ns == s->w.doc->base_ns);
    if (s->w.stop || write_segment(&s->w, m, 1)) return -1;
    checkpoint(s);
    return s->w.stop ? -1 : 0;
}

int tp_chrome_stream_end(tp_chrome_stream *s, const tp_model *last, const char *path,
                         size_t *events_written, char *err, size_t errlen) {
    assert(last->base_ns == s->w.doc->base_ns);
    s->w.doc = last;
    if (!s->w.stop) write_segment(&s->w, last, 0);
    if (tp_ofile_rename_to(s->f, path)) s->w.stop = 1;
    return tp_chrome_stream_commit(s, events_written, err, errlen);
}

void tp_chrome_stream_abort(tp_chrome_stream *s) {
    if (!s) return;
    writer_free(&s->w);
    tp_ofile_abort(s->f);
    stream_free(s);
}

int tp_chrome_stream_commit(tp_chrome_stream *s, size_t *events_written, char *err, size_t errlen) {
    int rc = writer_finish(&s->w);
    /* what a checkpointed gzip stream held since the last, with the end, in one write too */
    if (s->partial_path && s->pending.len &&
        tp_ofile_write_provisional(s->f, s->pending.data, s->pending.len, 0))
        s->write_failed = 1;
    if (events_written) *events_written = s->w.nwritten;
    if (rc == 0 || s->write_failed) {
        /* After a failed write, commit is what reports the system's reason and removes the
         * temporary file; it renames only when every write succeeded. */
        writer_free(&s->w);
        rc = tp_ofile_commit(s->f, err, errlen);
        stream_free(s);
        return rc;
    }
    no_memory(s->path, err, errlen);
    tp_chrome_stream_abort(s);
    return -1;
}

int tp_chrome_write_file(const tp_model *m, const char *path, const tp_chrome_opts *o, char *err,
                         size_t errlen) {
    tp_chrome_stream *s = tp_chrome_stream_open(m, path, o, err, errlen);
    if (!s) return -1;
    tp_chrome_stream_add(s, m); /* a failure is the commit's to report */
    return tp_chrome_stream_commit(s, o ? o->events_written : NULL, err, errlen);
}
