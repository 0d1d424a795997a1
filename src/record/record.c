/* record.c - the hot path: tprof_begin_/tprof_end_ and the slow path behind every record.
 *
 * A range costs two tick reads and a few stores while recording, and a depth count between
 * windows; everything else takes the slow path. The invariants kept are listed in record.h. */
#include "tprof.h"

#include "record/gpu_calls.h"
#include "record/flight.h"
#include "record/record.h"
#include "record/session.h"

#include <assert.h>
#include <string.h>

__thread tp_tls tp_tls_cur __attribute__((tls_model("initial-exec")));
uint32_t tp_gen;
uint32_t tp_stream_gen;
uint64_t tp_session_serial;
int tprof_active_;

/* The flight recorder's step change: the kept ranges still open go on in a chunk of the new
 * generation, taken now with room for their ends (record.h, 7). */
static void carry_owed(tp_tls *t, uint32_t g, uint32_t owed) {
    tp_chunk *c = tp_chunk_take(t->thr, NULL, g, TP_CHUNK_RECS, 0);
    if (!c) return; /* out of memory: they become ranges begun before this step */
    uint32_t got = TP_LOAD_RLX(&c->reserved);
    t->chunk = c; /* the step's first chunk, kept even without budget: it carries the drops */
    t->recs = c->recs;
    t->cap = got;
    if (got >= owed) t->owed = owed;
    tp_tls_check(t); /* invariant 4 in the new chunk (record.h, 7) */
}

uint32_t tp_tls_sync(tp_tls *t) {
    uint64_t serial = TP_LOAD_ACQ(&tp_session_serial);
    if (t->session != serial) {
        if (!t->thr && !(t->thr = tp_thread_register())) return 0;
        tp_thread *thr = t->thr;
        tp_thread_new_session(thr);
        memset(t, 0, sizeof(*t));
        t->thr = thr;
        t->drop_depth = INT32_MAX;
        t->session = serial;
    }
    uint32_t g = TP_LOAD_ACQ(&tp_gen);
    if (g != t->gen) {
        /* Leave the previous window: its chunk now belongs to the writer (record.h, 1), and the
         * ranges still open in it become ranges begun before the new window, except the kept
         * ones of a flight recorder's step, which are carried (record.h, 7). */
        uint32_t carry =
            TP_LOAD_RLX(&tp_flight_on) && tp_gen_records(g) && t->drop_depth == INT32_MAX && t->thr
                ? t->owed
                : 0;
        t->gen = g;
        t->chunk = NULL;
        t->recs = NULL;
        t->n = t->cap = t->owed = 0;
        t->drop_depth = INT32_MAX;
        t->deep = 0;
        if (carry) carry_owed(t, g, carry);
    }
    return g;
}

/* The copy is looked up by the caller's pointer first (record.h, TP_RECENT_COPIES): a hit is
 * one whose text is still the copy's, so a pointer reused for another text is copied anew. */
const char *tp_intern(tp_tls *t, const char *s) {
    tp_thread *thr = t->thr;
    if (!s) s = "(null)";
    size_t slot = ((uintptr_t)s >> 3) & (TP_RECENT_COPIES - 1);
    if (thr->recent[slot].key == s && strcmp(s, thr->recent[slot].copy) == 0)
        return thr->recent[slot].copy;
    tp_str id = tp_strtab_intern(&thr->strings, s, strlen(s));
    if (id == TP_STR_EMPTY && *s) return NULL;
    const char *copy = tp_strtab_get(&thr->strings, id);
    thr->recent[slot].key = s;
    thr->recent[slot].copy = copy;
    return copy;
}

static tp_rec *count_drop(tp_tls *t) {
    if (t->chunk && t->deep) TP_STORE_REL(&t->chunk->too_deep, t->chunk->too_deep + 1);
    if (t->chunk) TP_STORE_REL(&t->chunk->dropped, t->chunk->dropped + 1);
    return NULL;
}

/* Out of budget (or memory) in this window: keep only the ends already owed (record.h, 5). */
static tp_rec *start_dropping(tp_tls *t) {
    t->drop_depth = t->depth;
    t->cap = t->n + t->owed;
    return count_drop(t);
}

/* The owed ends and this record could not move to any fresh chunk: the ranges open are nested
 * too deep. Only this record, and what is begun inside the range that did not fit, is dropped;
 * the current chunk keeps room for the owed ends (record.h, 4 and 5). */
static tp_rec *start_too_deep(tp_tls *t) {
    t->deep = 1;
    t->deep_cap = t->cap;
    t->drop_depth = t->depth;
    t->cap = t->n + t->owed;
    return count_drop(t);
}

tp_rec *tp_room_slow(tp_tls *t, uint32_t need) {
    uint32_t g = tp_tls_sync(t);
    if (!tp_gen_records(g) || !t->thr) return NULL;
    if (t->drop_depth != INT32_MAX) {
        if (t->depth > t->drop_depth) return count_drop(t);
        if (t->deep) { /* back out of the too-deep ranges: keep again, with the room it had */
            t->deep = 0;
            t->drop_depth = INT32_MAX;
            t->cap = t->deep_cap;
        } else if (TP_LOAD_RLX(&tp_stream_gen) == g && tp_budget_left(t->owed + need)) {
            t->drop_depth = INT32_MAX; /* the writer gave budget back: a new chunk (record.h, 5) */
        } else {
            return count_drop(t);
        }
    }
    if (t->chunk && t->cap - t->n >= t->owed + need) return t->recs + t->n;
    if (t->chunk && t->owed + need > TP_CHUNK_RECS) return start_too_deep(t);
    /* The first chunk of a window is taken even without budget: it carries the drop count. A
     * later one only with room for the owed ends and this record. */
    tp_chunk *c = tp_chunk_take(t->thr, t->chunk, g, TP_CHUNK_RECS, t->chunk ? t->owed + need : 0);
    if (!c) return start_dropping(t);
    uint32_t got = TP_LOAD_RLX(&c->reserved);
    t->chunk = c;
    t->recs = c->recs;
    t->n = 0;
    t->cap = got;
    if (got >= t->owed + need) return t->recs;
    return start_dropping(t);
}

__attribute__((noinline)) static void begin_slow(tp_tls *t, const char *name) {
    tp_rec *r = tp_room_slow(t, 2);
    t->depth++; /* after tp_room_slow, which may start the thread's depth over */
    if (!r) return;
    r->a = tp_clock_ticks();
    r->b = tp_rec_word(TP_REC_BEGIN, (uintptr_t)name);
    tp_publish(t, 1);
    t->owed++;
    tp_tls_check(t);
}

void tprof_begin_(const char *name) {
    tp_tls *t = &tp_tls_cur;
    if (TP_UNLIKELY(TP_LOAD_RLX(&tp_opts.nsight))) tp_nvtx_push(name);
    uint32_t g = TP_LOAD_RLX(&tp_gen);
    if (TP_LIKELY(g == t->gen)) {
        /* room for this begin and, reserved, its end */
        if (TP_LIKELY(t->cap - t->n >= t->owed + 2 && tp_clock_inline())) {
            tp_rec *r = t->recs + t->n;
            r->a = tp_clock_inline_ticks();
            r->b = tp_rec_word(TP_REC_BEGIN, (uintptr_t)name);
            tp_publish(t, 1);
            t->owed++;
            t->depth++;
            tp_tls_check(t);
            return;
        }
        if (g & TP_GEN_IDLE) {
            t->depth++;
            return;
        }
    }
    begin_slow(t, name);
}

void tprof_begin_copy_(const char *name) {
    tp_tls *t = &tp_tls_cur;
    if (TP_UNLIKELY(TP_LOAD_RLX(&tp_opts.nsight))) tp_nvtx_push(name);
    tp_rec *r = tp_room(t, 2);
    t->depth++;
    if (!r) return;
    const char *copy = tp_intern(t, name);
    r->a = tp_clock_ticks();
    r->b = tp_rec_word(TP_REC_BEGIN, (uintptr_t)(copy ? copy : "(out of memory)"));
    tp_publish(t, 1);
    t->owed++;
    tp_tls_check(t);
}

__attribute__((always_inline)) static inline void write_end(tp_tls *t, uint64_t ticks) {
    assert(t->owed > 0 && t->depth <= t->drop_depth); /* a kept range's end (record.h, 5) */
    tp_rec *r = t->recs + t->n;                       /* room reserved by its begin (record.h, 4) */
    r->a = ticks;
    r->b = tp_rec_word(TP_REC_END, 0);
    tp_publish(t, 1);
    t->owed--;
    t->depth--;
    tp_tls_check(t);
}

__attribute__((noinline)) static void end_slow(tp_tls *t) {
    uint32_t g = tp_tls_sync(t);
    if (t->depth <= 0) {
        tp_session_unmatched_end();
        return;
    }
    /* A kept range's end is written (record.h, 5); the end of a dropped range, of one begun
     * before this window, or of one outside any window only lowers the depth. */
    if (tp_gen_records(g) && t->owed && t->depth <= t->drop_depth)
        write_end(t, tp_clock_ticks());
    else
        t->depth--;
}

void tprof_end_(void) {
    tp_tls *t = &tp_tls_cur;
    if (TP_UNLIKELY(TP_LOAD_RLX(&tp_opts.nsight))) tp_nvtx_pop();
    uint32_t g = TP_LOAD_RLX(&tp_gen);
    if (TP_LIKELY(g == t->gen)) {
        if (TP_LIKELY(t->owed && t->depth <= t->drop_depth && tp_clock_inline())) {
            write_end(t, tp_clock_inline_ticks());
            return;
        }
        if ((g & TP_GEN_IDLE) && t->depth > 0) {
            t->depth--;
            return;
        }
    }
    end_slow(t);
}

void tp_range_end_named(const char *name) {
    tp_tls *t = &tp_tls_cur;
    uint32_t g = tp_tls_sync(t);
    /* Bottom of the stack, below the kept ranges (record.h, 5): begun before this window. */
    int before = tp_gen_records(g) && t->depth > 0 && !t->owed && t->depth <= t->drop_depth;
    tprof_end_();
    if (before) tp_range_complete(name, 0); /* begins at the window's start (window.c) */
}

void tp_ranges_open_cut(const char *const *names, size_t n) {
    tp_tls *t = &tp_tls_cur;
    uint32_t g = tp_tls_sync(t);
    if (!tp_gen_records(g) || t->owed || t->drop_depth != INT32_MAX || (size_t)t->depth < n) return;
    for (size_t i = 0; i < n; i++) {
        tp_rec *r = tp_room(t, 2); /* the begin, and room for its end (record.h, 4) */
        const char *copy = r ? tp_intern(t, names[i]) : NULL;
        if (!copy) return;
        r->a = 0; /* before the window: it begins with it (window.c) */
        r->b = tp_rec_word(TP_REC_BEGIN, (uintptr_t)copy);
        tp_publish(t, 1);
        t->owed++; /* a kept range now; already counted in depth */
        tp_tls_check(t);
    }
}

int tprof_is_recording(void) {
    return tp_gen_records(TP_LOAD_RLX(&tp_gen));
}
