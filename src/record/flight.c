/* flight.c - the flight recorder's ring, its triggers and the windows it saves (see flight.h).
 *
 * The stepping thread moves the ring at each tprof_step (a copy of four numbers, no allocation
 * once the first steps filled it) and, for a slow step, hands a window to the writer. An explicit
 * call does the same on its own thread, the running step cut at the call. SIGUSR1 only asks: the
 * writer thread builds the window from the ring, up to the moment it serves the request, so a
 * stuck step is saved even when tprof_step never comes. */
#include "tprof.h"

#include "record/flight.h"
#include "record/record.h"
#include "record/session.h"
#include "util/log.h"
#include "util/msg.h"
#include "util/vec.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tp_flight_on;

#define F (tp_sess.flight)

int tp_flight_start(const tprof_config *cfg) {
    tp_flight_stop();
    memset(&F, 0, sizeof(F));
    if (!cfg->flight_recorder) return 0;
    F.cap = (size_t)cfg->flight_steps + 1;
    F.ring = calloc(F.cap, sizeof(*F.ring));
    F.hist = calloc(TP_FLIGHT_HISTORY, sizeof(*F.hist));
    F.sorted = calloc(TP_FLIGHT_HISTORY, sizeof(*F.sorted));
    if (!F.ring || !F.hist || !F.sorted) {
        tp_flight_stop();
        tp_log_warn("out of memory: the flight recorder is off");
        return -1;
    }
    F.on = 1;
    F.factor = cfg->slow_step_factor;
    F.warmup = cfg->flight_warmup_steps;
    F.cooldown = cfg->flight_cooldown_steps;
    F.max_saves = cfg->flight_max_saves;
    F.last_save_step = INT64_MIN;
    tp_clock_calibrate(&F.cal);
    TP_STORE_REL(&tp_flight_on, 1);
    return 0;
}

void tp_flight_stop(void) {
    if (F.on) {
        TP_STORE_REL(&tp_flight_on, 0);
        tp_gens_release(F.cur_gen); /* every window is written: nothing is needed any more */
    }
    free(F.ring);
    free(F.hist);
    free(F.sorted);
    free(F.pins);
    memset(&F, 0, sizeof(F));
}

void tp_flight_enter(uint32_t gen) {
    assert(!F.n || gen > F.ring[F.n - 1].gen); /* F1 */
    F.cur_gen = gen;
}

/* The highest generation no one needs (F2), handed to the chunk registry; and the earliest time
 * a window may still ask the sources for (their retain). */
static void release(void) {
    uint32_t upto = F.n ? F.ring[0].gen - 1 : F.cur_gen - 1;
    uint64_t from = F.n ? F.ring[0].start : tp_sess.step_start;
    for (size_t i = 0; i < F.npins; i++) {
        if (F.pins[i].gen - 1 < upto) upto = F.pins[i].gen - 1;
        if (F.pins[i].start < from) from = F.pins[i].start;
    }
    if (upto <= F.released) return;
    F.released = upto;
    assert(!F.n || F.released < F.ring[0].gen); /* F2 */
    for (size_t i = 0; i < F.npins; i++)
        assert(F.released < F.pins[i].gen); /* F2 */
    tp_gens_release(upto);
    int64_t from_ns = tp_clock_to_ns(&F.cal, from);
    for (size_t i = 0; i < tp_sess.nsources; i++)
        if (tp_sess.sources[i].retain) tp_sess.sources[i].retain(tp_sess.sources[i].ctx, from_ns);
}

void tp_flight_pin(uint32_t gen_lo, uint64_t start_ticks) {
    assert(gen_lo > F.released); /* F2: a pinned generation was never released */
    /* NOLINTNEXTLINE(bugprone-sizeof-expression) */
    if (TP_GROW(F.pins, F.cap_pins, F.npins + 1)) {
        /* Without its pin a window could read reused chunks: keep everything from here instead,
         * by never releasing again (memory grows; warned). */
        tp_log_warn("out of memory: the flight recorder stops reusing its memory");
        F.released = UINT32_MAX;
        return;
    }
    F.pins[F.npins++] = (struct tp_flight_pin){gen_lo, start_ticks};
}

/* ---- the median of recent steps ---- */

static size_t lower_bound(const int64_t *a, size_t n, int64_t v) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] < v)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The history keeps its sorted copy by one removal and one insertion per step. */
static void history_add(int64_t d) {
    if (F.nhist == TP_FLIGHT_HISTORY) {
        int64_t old = F.hist[F.hist_pos];
        size_t i = lower_bound(F.sorted, F.nhist, old);
        assert(i < F.nhist && F.sorted[i] == old);
        memmove(F.sorted + i, F.sorted + i + 1, (F.nhist - i - 1) * sizeof(*F.sorted));
        F.nhist--;
    }
    size_t i = lower_bound(F.sorted, F.nhist, d);
    memmove(F.sorted + i + 1, F.sorted + i, (F.nhist - i) * sizeof(*F.sorted));
    F.sorted[i] = d;
    F.nhist++;
    F.hist[F.hist_pos] = d;
    F.hist_pos = (F.hist_pos + 1) % TP_FLIGHT_HISTORY;
}

static int64_t history_median(void) {
    if (!F.nhist) return 0;
    size_t h = F.nhist / 2;
    return F.nhist % 2 ? F.sorted[h] : (F.sorted[h - 1] + F.sorted[h]) / 2;
}

/* ---- saves ---- */

/* F4: may a save happen at `step`? Says why not in `why` when not. */
static int admit(int64_t step, char *why, size_t n) {
    if (F.saves >= F.max_saves) {
        snprintf(why, n, "flight_max_saves=%lld reached", (long long)F.max_saves);
        return 0;
    }
    if (F.saves && step - F.last_save_step < F.cooldown) {
        snprintf(why, n, "within flight_cooldown_steps=%lld of the save at step %lld",
                 (long long)F.cooldown, (long long)F.last_save_step);
        return 0;
    }
    assert(!F.saves || step - F.last_save_step >= F.cooldown); /* F4 */
    F.saves++;
    F.last_save_step = step;
    assert(F.saves <= F.max_saves); /* F4 */
    return 1;
}

/* The window of the ring's steps, and of the running step up to `now` when `cut` (a request
 * served by the writer); NULL when out of memory (warned). */
static tp_window *ring_window(const char *reason, int64_t mark, const char *note, uint64_t now,
                              int cut) {
    tp_window *w = calloc(1, sizeof(*w));
    /* A save holds the marked step and flight_steps before it: cut, the running step is the
     * marked one, and the ring's oldest is left out. */
    size_t skip = cut && F.n == F.cap, nsteps = F.n - skip + (cut != 0);
    if (w) w->steps = calloc(nsteps ? nsteps : 1, sizeof(*w->steps));
    if (!w || !w->steps) {
        free(w);
        tp_log_warn("out of memory: the flight recorder's save \"%s\" is lost", reason);
        return NULL;
    }
    for (size_t i = skip; i < F.n; i++)
        w->steps[i - skip] = (tp_step_span){F.ring[i].step, F.ring[i].start, F.ring[i].end};
    if (cut) w->steps[nsteps - 1] = (tp_step_span){tp_sess.sm.step, tp_sess.step_start, now};
    w->nsteps = w->cap_steps = nsteps;
    w->cut_last = cut;
    w->gen_lo = F.n > skip ? F.ring[skip].gen : F.cur_gen;
    w->gen = cut || !F.n ? F.cur_gen : F.ring[F.n - 1].gen;
    w->start_ticks = w->steps[0].start;
    w->end_ticks = cut ? now : w->steps[nsteps - 1].end;
    w->first_step = w->steps[0].step;
    w->last_step = w->steps[nsteps - 1].step;
    w->flight_step = mark;
    snprintf(w->flight_reason, sizeof(w->flight_reason), "%s", reason);
    snprintf(w->flight_note, sizeof(w->flight_note), "%s", note);
    snprintf(w->name, sizeof(w->name), "flight_%s_steps_%lld-%lld", reason,
             (long long)w->first_step, (long long)w->last_step);
    w->step_tid = tp_sess.step_tid;
    memcpy(w->step_thread, tp_sess.step_name, sizeof(w->step_thread));
    tp_clock_calibrate(&w->cal);
    return w;
}

static void push_save(tp_window *w) {
    if (!w) return;
    tp_flight_pin(w->gen_lo, w->start_ticks);
    tp_sess.windows++; /* the summary's count of windows saved */
    tp_writer_push(&tp_sess.writer, w);
}

static double ms(int64_t ns) {
    return (double)ns / 1e6;
}

static void check_slow(int64_t step, int64_t dur_ns) {
    if (F.factor <= 0 || F.steps_ended < F.warmup || !F.nhist) return;
    int64_t median = history_median();
    if ((double)dur_ns <= F.factor * (double)median) return;
    char why[160];
    if (!admit(step, why, sizeof(why))) return; /* a slow step is no event worth a line each */
    char note[TP_FLIGHT_NOTE_MAX];
    snprintf(note, sizeof(note),
             "step %lld took %.1f ms, %.1fx the median %.1f ms of the last %zu steps",
             (long long)step, ms(dur_ns), median ? (double)dur_ns / (double)median : 0.0,
             ms(median), F.nhist);
    push_save(ring_window("slow_step", step, note, 0, 0));
}

void tp_flight_step_ended(int64_t step, uint64_t start, uint64_t end) {
    if (!F.on) return;
    if (F.n == F.cap) { /* the oldest step leaves the ring: its memory is reused (F1) */
        memmove(F.ring, F.ring + 1, (F.n - 1) * sizeof(*F.ring));
        F.n--;
    }
    F.ring[F.n++] = (tp_flight_step){step, F.cur_gen, start, end};
    assert(F.n <= F.cap && (F.n < 2 || F.ring[F.n - 2].gen < F.ring[F.n - 1].gen)); /* F1 */
    F.steps_ended++;
    if (F.steps_ended % 1024 == 0) tp_clock_calibrate(&F.cal);
    int64_t dur = tp_clock_to_ns(&F.cal, end) - tp_clock_to_ns(&F.cal, start);
    check_slow(step, dur);
    history_add(dur);
    release();
}

/* ---- requests ---- */

static int valid_reason(const char *r) {
    size_t n = r ? strlen(r) : 0;
    if (!n || n > TP_FLIGHT_REASON_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = r[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || c == '-';
        if (!ok) return 0;
    }
    return 1;
}

int tprof_flight_save(const char *reason) {
    if (!tp_api_enter("tprof_flight_save")) return -1;
    if (!valid_reason(reason)) {
        tp_log_warn("tprof_flight_save: the reason must be 1 to %d ASCII letters, digits, '_' or "
                    "'-', as it names the trace file; nothing saved",
                    TP_FLIGHT_REASON_MAX);
        return -1;
    }
    char why[160];
    int rc = -1;
    tp_session_lock();
    if (tp_sess.state != TP_SESSION_ACTIVE || tp_sess.stopped) {
        rc = -1;
    } else if (!F.on) {
        tp_log_warn("tprof_flight_save(\"%s\"): the flight recorder is off (flight_recorder: "
                    "true turns it on); nothing saved",
                    reason);
    } else if (!admit(tp_sess.sm.step, why, sizeof(why))) {
        tp_msg_printf(TP_MSG_WARNING, "tprof: tprof_flight_save(\"%s\") at step %lld not saved: %s",
                      reason, (long long)tp_sess.sm.step, why);
    } else {
        /* The ring as it is now, the running step cut here: the caller's thread only copies
         * the steps' spans; the writer converts. */
        char note[TP_FLIGHT_NOTE_MAX];
        snprintf(note, sizeof(note), "flight save \"%s\" asked at step %lld", reason,
                 (long long)tp_sess.sm.step);
        push_save(ring_window(reason, tp_sess.sm.step, note, tp_clock_ticks(), 1));
        rc = 0;
    }
    tp_session_unlock();
    return rc;
}

void tp_flight_signal(void) {
    TP_STORE_REL(&F.sig_req, 1);
    tp_writer_wake_flight(&tp_sess.writer);
}

void tp_flight_serve(void) {
    tp_session_lock();
    int sig = __atomic_exchange_n(&F.sig_req, 0, __ATOMIC_ACQ_REL);
    if (sig && tp_sess.state == TP_SESSION_ACTIVE && F.on && !tp_sess.stopped) {
        char note[TP_FLIGHT_NOTE_MAX], why[160];
        if (admit(tp_sess.sm.step, why, sizeof(why))) {
            snprintf(note, sizeof(note), "SIGUSR1 at step %lld", (long long)tp_sess.sm.step);
            push_save(ring_window("signal", tp_sess.sm.step, note, tp_clock_ticks(), 1));
        } else {
            tp_msg_printf(TP_MSG_WARNING, "tprof: SIGUSR1 at step %lld not saved: %s",
                          (long long)tp_sess.sm.step, why);
        }
    }
    tp_session_unlock();
}

void tp_flight_window_done(const tp_window *w) {
    tp_session_lock();
    for (size_t i = 0; i < F.npins; i++) {
        if (F.pins[i].gen != w->gen_lo) continue;
        F.pins[i] = F.pins[--F.npins];
        break;
    }
    if (F.on) release();
    tp_session_unlock();
}
