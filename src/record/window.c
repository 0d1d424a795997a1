/* window.c - turning a closed window's thread records into a tp_model (on the writer thread).
 *
 * Per thread, begins and ends are matched with a stack; an end with nothing open closes a range
 * begun before the window and is skipped (tp_range_end_named writes such a range whole, named,
 * with a begin before the window, as tp_ranges_open_cut writes one's begin: it starts at the
 * window's start, flagged TP_EVF_TRUNCATED). A
 * range's args wait on the stack until its end, since tp_model wants an event's args contiguous
 * and nested ranges end first. Ranges still open at the window's end are closed there and
 * flagged TP_EVF_TRUNCATED. */
#include "record/window.h"

#include "model/kineto.h"
#include "record/inputs.h"
#include "record/record.h"
#include "util/jsonvalid.h"
#include "util/log.h"
#include "util/vec.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pending_arg {
    const char *key;
    int type; /* tp_arg_type */
    int64_t i;
    const char *s;
} pending_arg;

typedef struct open_range {
    const char *name;
    const char *cat; /* NULL: user_annotation */
    int64_t ts;
    int before;  /* begun before the window: it starts with it, flagged truncated */
    size_t arg0; /* its args are pending[arg0 ..] */
    uint64_t flops;
    int has_flops;
} open_range;

/* Names are mostly the same few literal pointers: remember each pointer's interned id. */
enum { NAME_CACHE = 1024 };

/* One thread's conversion: its open ranges and their pending args. A whole window converts
 * threads one after the other with one of these; a streamed window keeps one per thread from
 * pass to pass, as its ranges span chunks read at different times. */
typedef struct thread_conv {
    const tp_thread *thr;
    int64_t tid;
    const char *name; /* the thread's name, the owner's copy (valid all session) */
    open_range *stack;
    size_t depth, cap_stack;
    pending_arg *pending;
    size_t npending, cap_pending;
    tp_strtab texts; /* ops' inputs texts the pending args point to (add_inputs) */
    int late;        /* a record past the window's end was met: the rest are later still */
    int64_t last_ts; /* a streamed window's: the time of the last timed record read (or the
                        window's start), a bound on the times of those not read yet */
} thread_conv;

typedef struct convert {
    tp_model *m; /* the window's model, or a streamed window's segment */
    const tp_window *w;
    const tp_window_env *env;
    uint64_t start_ticks; /* the window's start */
    tp_clock_cal cal;     /* ticks to session-clock ns: the window's line, or while a streamed
                             window records the process's rate from its opening anchor */
    int64_t end_ts;       /* the window's end as a model time (INT64_MAX while it records) */
    thread_conv *tc;      /* the thread being converted */
    size_t truncated;
    char first_truncated[96];
    uint64_t too_deep; /* of the dropped events, those nested too deep */
    int bad_dims;
    tp_inputs_text inputs; /* reused from op to op */
    struct {
        const char *p;
        tp_str id;
    } cache[NAME_CACHE];
} convert;

static tp_str name_id(convert *cv, const char *s) {
    if (!s) s = "(null)";
    size_t h = ((uintptr_t)s >> 3) & (NAME_CACHE - 1);
    if (cv->cache[h].p != s) {
        cv->cache[h].p = s;
        cv->cache[h].id = tp_model_intern_cstr(cv->m, s);
    }
    return cv->cache[h].id;
}

/* A record's time; a range begun before the window (tp_range_complete's) starts with it. */
static int64_t model_ts(const convert *cv, uint64_t ticks) {
    if (ticks < cv->start_ticks) ticks = cv->start_ticks;
    return tp_clock_to_ns(&cv->cal, ticks) - cv->env->origin_ns;
}

static tp_event *add_event(convert *cv, int kind, const char *name, int64_t ts, uint32_t track) {
    tp_event *ev = tp_model_add_event(cv->m);
    if (!ev) return NULL;
    ev->kind = (uint8_t)kind;
    ev->name = name_id(cv, name);
    ev->ts = ts;
    ev->track = track;
    return ev;
}

static void add_pending(convert *cv, const char *key, int type, int64_t i, const char *s) {
    if (!cv->tc->depth) return; /* the innermost range began before the window */
    if (TP_GROW(cv->tc->pending, cv->tc->cap_pending, cv->tc->npending + 1)) {
        cv->m->failed = 1;
        return;
    }
    cv->tc->pending[cv->tc->npending++] = (pending_arg){key, type, i, s};
}

/* A range's length in the model (and so in its trace and artifacts): end - ts - 1 ns, never
 * below 0. Readers take ts and dur in µs with 3 decimals as doubles and add them, which can round
 * past the exact end, where the next range on the thread begins: torch-tb-profiler then takes the
 * next ProfilerStep for an intersecting child and drops it with all its ops. ts is relative to the
 * window's base, so the doubles' error is far below 1 ns and 1 ns less always suffices. Every
 * range loses the same 1 ns, so the order of all ends is kept: a child ending with its parent
 * still ends within it (a trim decided range by range would break that nesting). */
static int64_t range_dur(int64_t ts, int64_t end) {
    return end - ts > 1 ? end - ts - 1 : 0;
}

static void close_range(convert *cv, int64_t end, uint32_t track, int truncated) {
    open_range *r = &cv->tc->stack[--cv->tc->depth];
    tp_event *ev = add_event(cv, TP_HOST_RANGE, r->name, r->ts, track);
    if (ev) {
        ev->dur = range_dur(r->ts, end);
        ev->cat = name_id(cv, r->cat ? r->cat : tp_kcat_user_annotation);
        if (truncated || r->before) ev->flags |= TP_EVF_TRUNCATED;
        for (size_t i = r->arg0; i < cv->tc->npending; i++) {
            const pending_arg *a = &cv->tc->pending[i];
            if (a->type == TP_ARG_INT && strcmp(a->key, tp_karg_external_id) == 0) {
                ev->ext = tp_ext_id(a->i); /* a field of the event (tp_event.ext) */
                continue;
            }
            tp_str key = name_id(cv, a->key);
            if (a->type == TP_ARG_INT) {
                tp_model_add_arg(cv->m, ev, key, TP_ARG_INT, &a->i);
            } else {
                tp_str s = tp_model_intern_cstr(cv->m, a->s);
                tp_model_add_arg(cv->m, ev, key, (tp_arg_type)a->type, &s);
            }
        }
        if (r->has_flops) {
            int64_t f = r->flops > INT64_MAX ? INT64_MAX : (int64_t)r->flops;
            tp_model_add_arg(cv->m, ev, name_id(cv, tp_karg_flops), TP_ARG_INT, &f);
        }
    }
    if (truncated && !r->before && cv->truncated++ == 0) /* cut at both ends by design */
        snprintf(cv->first_truncated, sizeof(cv->first_truncated), "%s",
                 r->name ? r->name : "(null)");
    cv->tc->npending = r->arg0;
}

static void open_range_at(convert *cv, const char *name, uint64_t ticks) {
    if (TP_GROW(cv->tc->stack, cv->tc->cap_stack, cv->tc->depth + 1)) {
        cv->m->failed = 1;
        return;
    }
    cv->tc->stack[cv->tc->depth++] = (open_range){.name = name,
                                                  .ts = model_ts(cv, ticks),
                                                  .before = ticks < cv->start_ticks,
                                                  .arg0 = cv->tc->npending};
}

static void add_counter(convert *cv, const tp_rec *r, int64_t ts, uint32_t track) {
    double v;
    memcpy(&v, &r[1].a, sizeof(v));
    tp_event *ev = add_event(cv, TP_COUNTER, tp_rec_str(r->b), ts, track);
    if (ev) tp_model_add_arg(cv->m, ev, name_id(cv, "value"), TP_ARG_DOUBLE, &v);
}

/* A "[memory]" instant with PyTorch's args (Total Reserved is unknown to tprof). */
static void add_memory(convert *cv, const tp_rec *r, int64_t ts, uint32_t track) {
    uint64_t payload = r->b & TP_REC_PAYLOAD;
    int64_t device = (int64_t)(payload & ~TP_REC_RESERVED) - 1;
    int64_t vals[6] = {(int64_t)r[2].a, (int64_t)r[1].b,    (int64_t)r[1].a,
                       device,          device < 0 ? 0 : 1, (int64_t)r[2].b};
    static const char *const keys[6] = {
        tp_karg_total_allocated, tp_karg_bytes,       tp_karg_addr,
        tp_karg_device_id,       tp_karg_device_type, tp_karg_total_reserved};
    tp_event *ev = add_event(cv, TP_MEMORY, tp_kname_memory, ts, track);
    if (!ev) return;
    ev->cat = name_id(cv, tp_kcat_cpu_instant_event);
    int nkeys = (payload & TP_REC_RESERVED) ? 6 : 5;
    for (int i = 0; i < nkeys; i++)
        tp_model_add_arg(cv->m, ev, name_id(cv, keys[i]), TP_ARG_INT, &vals[i]);
}

static void add_shapes(convert *cv, const char *json) {
    int ok = tp_dims_json_valid(json);
    if (!ok) cv->bad_dims++;
    add_pending(cv, tp_karg_input_dims, ok ? TP_ARG_JSON : TP_ARG_STR, 0, json);
}

/* An arg given as JSON text by tp_range_arg_json: checked here, on the writer thread, so a
 * malformed value becomes a string rather than a trace that does not parse. */
static void add_json_arg(convert *cv, const char *key, const char *json) {
    int ok = tp_json_valid(json, strlen(json));
    add_pending(cv, key, ok ? TP_ARG_JSON : TP_ARG_STR, 0, json);
}

/* An op's inputs as the observer recorded them (record/inputs.h): the three texts Kineto writes,
 * formatted here, and its FLOPs from the same texts, as the trace reader counts them. */
static void add_inputs(convert *cv, const tp_rec *r) {
    if (!cv->tc->depth) return; /* the op began before the window */
    tp_inputs_text *t = &cv->inputs;
    if (tp_inputs_format((const uint8_t *)&r[1], (size_t)r->a, t)) return;
    int flags = (int)(r->b & TP_REC_PAYLOAD);
    if (flags & TP_INPUTS_SHAPES) {
        const char *texts[3] = {t->dims.data, t->types.data, t->concrete.data};
        const char *keys[3] = {tp_karg_input_dims, tp_karg_input_type, tp_karg_concrete_inputs};
        tp_strtab *st = &cv->tc->texts; /* kept now: the buffers are reused */
        for (int i = 0; i < 3; i++)
            add_pending(cv, keys[i], TP_ARG_JSON, 0,
                        tp_strtab_get(st, tp_strtab_intern(st, texts[i], strlen(texts[i]))));
    }
    open_range *op = &cv->tc->stack[cv->tc->depth - 1];
    int64_t flops = (flags & TP_INPUTS_FLOPS) ? tp_inputs_flops(op->name, t) : 0;
    if (flops > 0) {
        op->flops += (uint64_t)flops;
        op->has_flops = 1;
    }
}

/* The records of one chunk; returns 1 once past the window's end (late records). */
static int convert_records(convert *cv, const tp_rec *recs, uint32_t n, uint32_t track) {
    for (uint32_t i = 0; i < n; i++) {
        const tp_rec *r = &recs[i];
        int kind = tp_rec_kind(r);
        int timed = kind == TP_REC_BEGIN || kind == TP_REC_END || kind == TP_REC_COUNTER ||
                    kind == TP_REC_MEMORY;
        int64_t ts = timed ? model_ts(cv, r->a) : 0;
        if (timed && ts > cv->end_ts) return 1;
        if (timed) cv->tc->last_ts = ts;
        switch (kind) {
        case TP_REC_BEGIN:
            open_range_at(cv, tp_rec_str(r->b), r->a);
            break;
        case TP_REC_END:
            if (cv->tc->depth) close_range(cv, ts, track, 0);
            break;
        case TP_REC_FLOPS:
            if (cv->tc->depth) {
                cv->tc->stack[cv->tc->depth - 1].flops += r->a;
                cv->tc->stack[cv->tc->depth - 1].has_flops = 1;
            }
            break;
        case TP_REC_ARG_INT:
            add_pending(cv, tp_rec_str(r->b), TP_ARG_INT, (int64_t)r->a, NULL);
            break;
        case TP_REC_ARG_STR:
            add_pending(cv, tp_rec_str(r->b), TP_ARG_STR, 0, tp_rec_str(r->a));
            break;
        case TP_REC_SHAPES:
            add_shapes(cv, tp_rec_str(r->b));
            break;
        case TP_REC_ARG_JSON:
            add_json_arg(cv, tp_rec_str(r->b), tp_rec_str(r->a));
            break;
        case TP_REC_CATEGORY:
            if (cv->tc->depth) cv->tc->stack[cv->tc->depth - 1].cat = tp_rec_str(r->b);
            break;
        case TP_REC_COUNTER:
            if (i + 1 < n) add_counter(cv, r, ts, track);
            i += 1;
            break;
        case TP_REC_MEMORY:
            if (i + 2 < n) add_memory(cv, r, ts, track);
            i += 2;
            break;
        case TP_REC_INPUTS: {
            uint64_t k = (r->a + sizeof(tp_rec) - 1) / sizeof(tp_rec);
            if (k < n - i) add_inputs(cv, r);
            i += (uint32_t)(k < n - i ? k : n - i);
            break;
        }
        default:
            break;
        }
    }
    return 0;
}

static uint32_t track_of(convert *cv, int64_t tid, const char *thread_name) {
    uint32_t t = tp_model_track(cv->m, cv->env->pid, 0, tid, 0);
    if (t == UINT32_MAX) return t;
    tp_track *tr = &cv->m->tracks[t];
    if (cv->env->process_name)
        tr->process_name = tp_model_intern_cstr(cv->m, cv->env->process_name);
    if (thread_name && *thread_name) tr->thread_name = tp_model_intern_cstr(cv->m, thread_name);
    return t;
}

/* Frees what tc holds and makes it empty. */
static void thread_conv_free(thread_conv *tc) {
    free(tc->stack);
    free(tc->pending);
    tp_strtab_free(&tc->texts);
    memset(tc, 0, sizeof(*tc));
    tp_strtab_init(&tc->texts);
}

/* Converts chunks[0 .. n) of the thread tc converts; with `all`, closes its ranges still open at
 * the window's end. */
static void convert_chunks(convert *cv, tp_chunk **chunks, size_t n, int all) {
    thread_conv *tc = cv->tc;
    uint32_t track = track_of(cv, tc->tid, tc->name);
    if (track == UINT32_MAX) return;
    /* Room for the thread's ranges at once (about one event per two records), rather than by
     * repeated doubling of a large array. */
    size_t records = 0;
    for (size_t c = 0; c < n; c++)
        records += TP_LOAD_ACQ(&chunks[c]->count);
    if (TP_GROW(cv->m->events, cv->m->cap_events, cv->m->nevents + records / 2 + 1))
        cv->m->failed = 1;
    for (size_t c = 0; c < n; c++) {
        cv->m->dropped_events += TP_LOAD_ACQ(&chunks[c]->dropped);
        cv->too_deep += TP_LOAD_ACQ(&chunks[c]->too_deep);
        uint32_t count = TP_LOAD_ACQ(&chunks[c]->count);
        assert(count <= TP_CHUNK_RECS); /* record.h, 2 */
        if (!tc->late) tc->late = convert_records(cv, chunks[c]->recs, count, track);
    }
    while (all && tc->depth)
        close_range(cv, cv->end_ts, track, 1);
    if (!tc->npending && tc->texts.n > 1) { /* no arg points into the texts any more */
        tp_strtab_free(&tc->texts);
        tp_strtab_init(&tc->texts);
    }
}

static void visit_thread(void *ctx, tp_thread *thr, tp_chunk **chunks, size_t n) {
    convert *cv = ctx;
    thread_conv_free(cv->tc); /* threads one after the other: each from an empty state */
    cv->tc->thr = thr;
    cv->tc->tid = thr->tid;
    cv->tc->name = TP_LOAD_ACQ(&thr->name);
    convert_chunks(cv, chunks, n, 1);
}

/* A flight save's triggering step: the model's flight_step, and for trace viewers an arg on its
 * ProfilerStep and an instant at its start, both named TP_FLIGHT_MARK (docs/FLIGHT.md). */
static void mark_trigger(convert *cv, tp_event *step, uint32_t track) {
    tp_str reason = tp_model_intern_cstr(cv->m, cv->w->flight_reason);
    int64_t ts = step->ts;
    cv->m->flight_step = cv->w->flight_step;
    cv->m->flight_reason = reason;
    tp_model_add_arg(cv->m, step, name_id(cv, TP_FLIGHT_MARK), TP_ARG_STR, &reason);
    tp_event *ev = add_event(cv, TP_INSTANT, TP_FLIGHT_MARK, ts, track);
    if (!ev) return;
    ev->cat = name_id(cv, tp_kcat_user_annotation);
    tp_model_add_arg(cv->m, ev, name_id(cv, "reason"), TP_ARG_STR, &reason);
}

/* The ProfilerStep ranges of steps[0 .. n) on the track of thread tid (named thread_name);
 * cut_last: the last of them is the window's, cut at its end. */
static void add_steps(convert *cv, const tp_step_span *steps, size_t n, int64_t tid,
                      const char *thread_name, int cut_last) {
    const tp_window *w = cv->w;
    if (!n) return;
    uint32_t track = track_of(cv, tid, thread_name);
    char name[40];
    for (size_t i = 0; i < n && track != UINT32_MAX; i++) {
        snprintf(name, sizeof(name), "%s%lld", tp_kname_step, (long long)steps[i].step);
        int64_t ts = model_ts(cv, steps[i].start), end = model_ts(cv, steps[i].end);
        tp_event *ev = add_event(cv, TP_HOST_RANGE, NULL, ts, track);
        if (!ev) return;
        ev->name = tp_model_intern_cstr(cv->m, name); /* not through the pointer cache */
        ev->dur = range_dur(ts, end);
        ev->cat = name_id(cv, tp_kcat_user_annotation);
        ev->flags = TP_EVF_STEP;
        if (cut_last && i + 1 == n) ev->flags |= TP_EVF_TRUNCATED;
        if (w->flight_reason[0] && steps[i].step == w->flight_step) mark_trigger(cv, ev, track);
    }
}

static tp_model *new_model(const tp_window *w, const tp_window_env *env) {
    tp_model *m = malloc(sizeof(*m));
    if (!m) return NULL;
    tp_model_init(m);
    m->base_ns = env->base_ns;
    m->rank = env->rank;
    m->world_size = env->world_size;
    m->partial = w->partial;
    return m;
}

/* The window's warnings and its info for sources and sinks, once its last records are in. */
static void end_window(convert *cv, tp_window_info *info) {
    const tp_window *w = cv->w;
    if (cv->truncated && !w->flight_reason[0]) /* a flight save cuts its steps by design */
        tp_log_warn("window %s: %zu range%s still open at its end %s closed there and flagged "
                    "truncated (first: \"%s\")",
                    w->name, cv->truncated, cv->truncated == 1 ? "" : "s",
                    cv->truncated == 1 ? "was" : "were", cv->first_truncated);
    if (cv->bad_dims)
        tp_log_warn(
            "window %s: %d tprof_shapes value%s not a JSON array of arrays of integers; kept "
            "as text",
            w->name, cv->bad_dims, cv->bad_dims == 1 ? " is" : "s are");
    if (cv->m->failed) tp_log_warn("window %s: out of memory; the trace is incomplete", w->name);
    if (cv->too_deep)
        tp_log_warn("window %s: %llu events dropped: ranges nested more than %d deep on one "
                    "thread (the nesting limit, docs/RELIABILITY.md); the ranges around them "
                    "are kept",
                    w->name, (unsigned long long)cv->too_deep, TP_MAX_NESTING);
    *info = (tp_window_info){.name = w->name,
                             .start_ns = tp_clock_to_ns(&w->cal, w->start_ticks),
                             .end_ns = tp_clock_to_ns(&w->cal, w->end_ticks),
                             .first_step = w->first_step,
                             .last_step = w->last_step,
                             .partial = w->partial,
                             .model_offset_ns = cv->env->origin_ns,
                             .too_deep = cv->too_deep,
                             .flight_reason = w->flight_reason[0] ? w->flight_reason : NULL,
                             .flight_step = w->flight_step,
                             .flight_note = w->flight_note};
    tp_inputs_text_free(&cv->inputs);
}

tp_model *tp_window_build(const tp_window *w, const tp_window_env *env, tp_window_info *info) {
    tp_model *m = new_model(w, env);
    convert *cv = calloc(1, sizeof(*cv));
    if (!m || !cv) {
        free(m);
        free(cv);
        return NULL;
    }
    thread_conv tc = {0};
    tp_strtab_init(&tc.texts);
    *cv = (convert){
        .m = m, .w = w, .env = env, .start_ticks = w->start_ticks, .cal = w->cal, .tc = &tc};
    cv->end_ts = model_ts(cv, w->end_ticks);
    if (tp_collect_chunks(w->gen_lo ? w->gen_lo : w->gen, w->gen, visit_thread, cv)) m->failed = 1;
    add_steps(cv, w->steps, w->nsteps, w->step_tid, w->step_thread, w->cut_last);
    end_window(cv, info);
    thread_conv_free(&tc);
    tp_strtab_free(&tc.texts);
    free(cv);
    return m;
}

/* ---- a streamed window ---------------------------------------------------------------------- */

/* Each segment says up to when the window is settled (tp_model.settled_ts): the earliest time
 * at which an event of a later segment may start, but for the ranges open on the threads' stacks,
 * which the segment lists (tp_model.open) for the sink to cut across (src/sink/artifacts.c). A
 * thread's later events are the records not read yet, which follow the last one read in time; of
 * those the first unread chunk's first record, when it has a time, is the earliest. A thread with
 * no chunk of the window when the pass lists them takes one before it reads the clock for its
 * first record (record.c: room, then the clock), so its events start after the pass began. The
 * step still running starts where the last step handed over ended. Ranges written whole at their
 * end (record.h's tp_range_complete: those begun before the window, which start with it, and the
 * observer's record_function ranges) are the exception: no stack shows them while they are
 * open, and a sink that cuts the window knows it. */

struct tp_wstream {
    convert cv;
    thread_conv **threads; /* one per thread met, in the order met */
    size_t nthreads, cap_threads;
    int final;        /* the window closed: every chunk is read, every range closed */
    int failed;       /* an earlier segment ran out of memory */
    uint64_t dropped; /* the earlier segments' dropped events */
    /* steps ended while it records (tp_wstream_steps), for the next segment; steps_given of
     * the window's steps were handed over, the last ending at step_end (ticks) */
    tp_step_span *steps;
    size_t nsteps, cap_steps, steps_given;
    int64_t step_tid;
    char step_thread[64];
    uint64_t step_end;
    int64_t settled; /* the pass's bound so far (the head of this section) */
    int settle_none; /* tp_wstream_settle_none: no segment settles any time */
};

tp_wstream *tp_wstream_new(const tp_window *w, const tp_window_env *env) {
    tp_wstream *s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->cv = (convert){.w = w, .env = env, .start_ticks = w->start_ticks, .end_ts = INT64_MAX};
    /* The window's own line needs its closing anchor: its events take the process's rate from
     * the opening anchor, all of them, so that the segments agree (clock.h). */
    tp_clock_cal_span(&s->cv.cal, &w->opened, &w->opened);
    s->step_end = w->start_ticks;
    return s;
}

static thread_conv *thread_of(tp_wstream *s, const tp_thread *thr) {
    for (size_t i = 0; i < s->nthreads; i++)
        if (s->threads[i]->thr == thr) return s->threads[i];
    thread_conv *tc = calloc(1, sizeof(*tc));
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    if (!tc || TP_GROW(s->threads, s->cap_threads, s->nthreads + 1)) {
        free(tc);
        return NULL;
    }
    tp_strtab_init(&tc->texts);
    tc->thr = thr;
    tc->tid = thr->tid;
    tc->last_ts = model_ts(&s->cv, s->cv.start_ticks);
    s->threads[s->nthreads++] = tc;
    return tc;
}

/* The earliest time a later segment may hold an event of tc's at, its first unread chunk being
 * c: its owner may be writing c, so only its published records are looked at (record.h,
 * invariant 2), and only the first, which starts the chunk's records. */
static int64_t thread_settled(const convert *cv, const thread_conv *tc, const tp_chunk *c) {
    int64_t t = tc->last_ts;
    if (TP_LOAD_ACQ(&c->count) > 0) {
        int kind = tp_rec_kind(&c->recs[0]);
        if (kind == TP_REC_BEGIN || kind == TP_REC_END || kind == TP_REC_COUNTER ||
            kind == TP_REC_MEMORY)
            t = model_ts(cv, c->recs[0].a);
    }
    return t;
}

static void stream_visit(void *ctx, tp_thread *thr, tp_chunk **chunks, size_t n) {
    tp_wstream *s = ctx;
    thread_conv *tc = thread_of(s, thr);
    if (!tc) {
        s->cv.m->failed = 1;
        return;
    }
    tc->name = TP_LOAD_ACQ(&thr->name);
    s->cv.tc = tc;
    if (n || s->final) convert_chunks(&s->cv, chunks, n, s->final);
    if (!s->final) { /* chunks[n] is its first unread chunk (tp_stream_chunks) */
        int64_t t = thread_settled(&s->cv, tc, chunks[n]);
        if (t < s->settled) s->settled = t;
    }
}

/* tc's open ranges into the segment's list (tp_model.open), outermost first. */
static void list_open(convert *cv, const thread_conv *tc) {
    if (!tc->depth) return;
    uint32_t track = track_of(cv, tc->tid, tc->name);
    tp_model *m = cv->m;
    if (track == UINT32_MAX || TP_GROW(m->open, m->cap_open, m->nopen + tc->depth)) {
        m->failed = 1;
        return;
    }
    for (size_t d = 0; d < tc->depth; d++) {
        const open_range *r = &tc->stack[d];
        m->open[m->nopen++] =
            (tp_stacked_range){.track = track,
                               .name = name_id(cv, r->name),
                               .cat = name_id(cv, r->cat ? r->cat : tp_kcat_user_annotation),
                               .ts = r->ts};
    }
}

/* An empty model for the next segment, the name cache emptied with it. */
static tp_model *next_segment(tp_wstream *s) {
    tp_model *m = new_model(s->cv.w, s->cv.env);
    s->cv.m = m;
    memset(s->cv.cache, 0, sizeof(s->cv.cache));
    return m;
}

int tp_wstream_steps(tp_wstream *s, const tp_step_span *steps, size_t n, int64_t tid,
                     const char *thread_name) {
    if (!n) return 0;
    if (TP_GROW(s->steps, s->cap_steps, s->nsteps + n)) return -1;
    memcpy(s->steps + s->nsteps, steps, n * sizeof(*steps));
    s->nsteps += n;
    s->steps_given += n;
    s->step_end = steps[n - 1].end;
    s->step_tid = tid;
    snprintf(s->step_thread, sizeof(s->step_thread), "%s", thread_name ? thread_name : "");
    return 0;
}

size_t tp_wstream_given(const tp_wstream *s) {
    return s->steps_given;
}

void tp_wstream_info(const tp_wstream *s, tp_window_info *info) {
    const tp_window *w = s->cv.w;
    *info = (tp_window_info){.start_ns = tp_clock_to_ns(&s->cv.cal, w->start_ticks),
                             .end_ns = INT64_MAX,
                             .first_step = w->first_step,
                             .last_step = w->first_step,
                             .model_offset_ns = s->cv.env->origin_ns};
}

void tp_wstream_settle_none(tp_wstream *s) {
    s->settle_none = 1;
}

/* The steps handed over since the last segment, into this one. */
static void add_given_steps(tp_wstream *s) {
    add_steps(&s->cv, s->steps, s->nsteps, s->step_tid, s->step_thread, 0);
    s->nsteps = 0;
}

tp_model *tp_wstream_pass(tp_wstream *s) {
    tp_model *m = next_segment(s);
    if (!m) return NULL;
    convert *cv = &s->cv;
    s->settled = model_ts(cv, tp_clock_ticks()); /* threads not listed yet start later */
    if (tp_stream_chunks(cv->w->gen, 0, stream_visit, s)) m->failed = 1;
    for (size_t i = 0; i < s->nthreads; i++)
        list_open(cv, s->threads[i]);
    int64_t step = model_ts(cv, s->step_end); /* the step running now began there */
    m->settled_ts = s->settle_none ? INT64_MIN : step < s->settled ? step : s->settled;
    add_given_steps(s);
    s->dropped += m->dropped_events;
    s->failed |= m->failed;
    return m;
}

tp_model *tp_wstream_finish(tp_wstream *s, tp_window_info *info) {
    tp_model *m = next_segment(s);
    if (m) {
        convert *cv = &s->cv;
        const tp_window *w = cv->w;
        s->final = 1;
        cv->end_ts = model_ts(cv, w->end_ticks);
        if (tp_stream_chunks(w->gen, 1, stream_visit, s)) m->failed = 1;
        for (size_t i = 0; i < s->nthreads; i++) { /* threads with nothing left to read too */
            cv->tc = s->threads[i];
            convert_chunks(cv, NULL, 0, 1); /* also every thread's track, for its metadata */
        }
        m->dropped_events += s->dropped;
        m->failed |= s->failed;
        add_given_steps(s);
        size_t given = s->steps_given < w->nsteps ? s->steps_given : w->nsteps;
        add_steps(cv, w->steps + given, w->nsteps - given, w->step_tid, w->step_thread,
                  w->cut_last);
        end_window(cv, info);
    }
    tp_wstream_free(s);
    return m;
}

void tp_wstream_free(tp_wstream *s) {
    if (!s) return;
    for (size_t i = 0; i < s->nthreads; i++) {
        thread_conv_free(s->threads[i]);
        tp_strtab_free(&s->threads[i]->texts);
        free(s->threads[i]);
    }
    free(s->threads);
    free(s->steps);
    tp_inputs_text_free(&s->cv.inputs);
    free(s);
}

/* JSON arrays of integers at any depth, e.g. [[64, 784], [], [[1, 2], [3]]]. */
static const char *dims_value(const char *p, int depth) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        if (*p == '-') p++;
        if (*p < '0' || *p > '9') return NULL;
        while (*p >= '0' && *p <= '9')
            p++;
        return p;
    }
    if (*p != '[' || depth > 32) return NULL;
    p++;
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
        p++;
    if (*p == ']') return p + 1;
    for (;;) {
        if (!(p = dims_value(p, depth + 1))) return NULL;
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
            p++;
        if (*p == ']') return p + 1;
        if (*p++ != ',') return NULL;
    }
}

int tp_dims_json_valid(const char *s) {
    if (!s) return 0;
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    if (*s != '[') return 0;
    const char *end = dims_value(s, 0);
    if (!end) return 0;
    while (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')
        end++;
    return *end == '\0';
}
