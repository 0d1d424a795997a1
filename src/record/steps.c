/* steps.c - tprof_step and tprof_epoch: the schedule moves and windows open and close.
 *
 * Runs on the stepping thread under the session lock. Closing a window is a generation flip and
 * a queue push; the conversion happens on the writer thread. */
#include "tprof.h"

#include "record/memory.h"
#include "record/record.h"
#include "record/session.h"
#include "util/log.h"
#include "util/vec.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Generations are never reused, not even across sessions (record.h, invariant 6). */
static uint32_t last_window, last_gap;

static uint32_t next_gen(int gap) {
    uint32_t *last = gap ? &last_gap : &last_window;
    assert(*last + 1 < TP_GEN_IDLE); /* invariant 6: the next one is new */
    return (gap ? TP_GEN_IDLE : 0) | (++*last & ~TP_GEN_IDLE);
}

static void notify_sources(void) {
    /* The flight recorder records every step: the sources record them too. */
    tp_action a = tp_sess.flight.on && !tp_sess.stopped ? TP_ACTION_RECORD : tp_sess.sm.action;
    for (size_t i = 0; i < tp_sess.nsources; i++)
        if (tp_sess.sources[i].on_action) tp_sess.sources[i].on_action(tp_sess.sources[i].ctx, a);
}

static void open_window(uint64_t now) {
    tp_window *w = calloc(1, sizeof(*w));
    if (!w) {
        tp_log_warn("out of memory: a window is not recorded");
        return;
    }
    w->start_ticks = now;
    tp_clock_anchor_now(&w->opened);
    w->first_step = tp_sess.sm.step;
    w->flight_step = -1;
    tp_sess.open = w;
    if (tp_sess.flight.on) { /* the step's generation, already current (flight.h) */
        w->gen = w->gen_lo = tp_sess.flight.cur_gen;
        tp_flight_pin(w->gen_lo, now);
    } else {
        w->gen = next_gen(0);
        w->stream = tp_sess.cfg->stream && tp_sess.sink.stream_open;
        TP_STORE_RLX(&tp_stream_gen, w->stream ? w->gen : 0); /* published with tp_gen */
        TP_STORE_REL(&tp_gen, w->gen);
    }
    if (w->stream) { /* the writer takes its chunks from now on */
        TP_STORE_REL(&tp_sess.streaming, w);
        tp_writer_poke(&tp_sess.writer);
    }
    tp_mem_record_snapshot();
}

static void add_step(tp_window *w, int64_t step, uint64_t start, uint64_t end) {
    if (TP_GROW(w->steps, w->cap_steps, w->nsteps + 1)) return; /* the step's range is lost */
    w->steps[w->nsteps++] =
        (tp_step_span){step, start < w->start_ticks ? w->start_ticks : start, end};
}

/* Called on the thread that carries the ProfilerStep ranges: notes its id and name, taking a
 * name set with tprof_thread_name when there is one. */
void tp_steps_note_thread(void) {
    tp_tls *t = &tp_tls_cur;
    const char *named = t->thr ? TP_LOAD_ACQ(&t->thr->name) : NULL;
    int64_t self = (int64_t)gettid();
    if (self != tp_sess.step_tid) {
        tp_sess.step_tid = self;
        tp_sess.step_name_src = NULL;
        if (pthread_getname_np(pthread_self(), tp_sess.step_name, sizeof(tp_sess.step_name)))
            tp_sess.step_name[0] = '\0';
    }
    if (named && named != tp_sess.step_name_src) {
        snprintf(tp_sess.step_name, sizeof(tp_sess.step_name), "%s", named);
        tp_sess.step_name_src = named;
    }
}

static void close_window(uint64_t now, int partial, int64_t last_step) {
    tp_window *w = tp_sess.open;
    if (tp_sess.flight.on)
        w->gen = tp_sess.flight.cur_gen; /* the window's generations are gen_lo .. this one */
    else
        TP_STORE_REL(&tp_gen, next_gen(1));
    tp_sess.open = NULL;
    TP_STORE_REL(&tp_sess.streaming, NULL); /* before the push: the writer polls it no more */
    w->end_ticks = now;
    w->partial = partial;
    w->last_step = last_step;
    if (tp_sess.sched.mode == TP_SCHED_EPOCHS)
        snprintf(w->name, sizeof(w->name), "epoch_%lld", (long long)tp_sess.sm.epoch);
    else
        snprintf(w->name, sizeof(w->name), "steps_%lld-%lld", (long long)w->first_step,
                 (long long)last_step);
    w->step_tid = tp_sess.step_tid;
    memcpy(w->step_thread, tp_sess.step_name, sizeof(w->step_thread));
    tp_clock_calibrate_span(&w->cal, &w->opened);
    if (!w->empty) {
        tp_sess.windows++;
        tp_sess.partial_windows += partial != 0;
    }
    tp_writer_push(&tp_sess.writer, w); /* an empty one too: the writer releases windows in order */
}

/* The current step's action is set: open a window if it records. With the flight recorder every
 * step records, in a generation of its own (record/flight.h). */
static void enter_step(uint64_t now) {
    if (tp_sess.flight.on && !tp_sess.stopped) {
        uint32_t g = next_gen(0);
        tp_flight_enter(g);
        TP_STORE_REL(&tp_gen, g);
    }
    /* Without a schedule the flight recorder's ring is the only recording (no whole-run window,
     * whose memory would grow with the run). */
    int scheduled = !tp_sess.flight.on || tp_sess.sched.mode != TP_SCHED_ALL;
    if (!tp_sess.open && scheduled && tp_action_records(tp_sess.sm.action) && !tp_sess.stopped)
        open_window(now);
    if (!tp_sess.open && TP_LOAD_RLX(&tp_gen) == 0) TP_STORE_REL(&tp_gen, next_gen(1));
    notify_sources();
}

void tp_steps_begin(uint64_t now) {
    tp_sess.step_start = now;
    enter_step(now);
}

void tp_steps_end(uint64_t now, int partial) {
    tp_window *w = tp_sess.open;
    if (tp_sess.flight.on) TP_STORE_REL(&tp_gen, next_gen(1)); /* the ring records no more */
    if (!w) return;
    if (!tp_sess.drop_open || !tp_sess.steps_ended) { /* no step ended: the run is its one */
        add_step(w, tp_sess.sm.step, tp_sess.step_start, now);
        close_window(now, partial, tp_sess.sm.step);
        return;
    }
    /* The step in progress is no step: the window ends with the one before it, and a window that
     * opened for this step alone holds no step at all. */
    tp_sess.dropped_step = 1;
    w->empty = w->nsteps == 0;
    close_window(now, partial, tp_sess.sm.step - 1);
}

/* Steps are driven by one thread, the first to call tprof_step; others are told once. */
static int is_stepper(const char *fn) {
    int64_t self = (int64_t)gettid();
    if (!tp_sess.stepper) tp_sess.stepper = self;
    if (tp_sess.stepper == self) {
        tp_steps_note_thread();
        return 1;
    }
    tp_log_warn("%s from thread %lld ignored: steps are driven by thread %lld, the first to call "
                "tprof_step",
                fn, (long long)self, (long long)tp_sess.stepper);
    return 0;
}

void tprof_step(void) {
    if (!tp_api_enter("tprof_step")) return;
    uint64_t now = tp_clock_ticks();
    tp_session_lock();
    if (tp_sess.state == TP_SESSION_ACTIVE && is_stepper("tprof_step")) {
        tp_window *w = tp_sess.open;
        int64_t ended = tp_sess.sm.step;
        if (w) add_step(w, ended, tp_sess.step_start, now);
        if (w && tp_sess.sm.action == TP_ACTION_RECORD_AND_SAVE) close_window(now, 0, ended);
        if (!tp_sess.stopped) tp_flight_step_ended(ended, tp_sess.step_start, now);
        tp_sess.drop_open = 0; /* it ended: a step */
        tp_sess.steps_ended++;
        tp_sched_step(&tp_sess.sm);
        tp_steps_begin(now);
    }
    tp_session_unlock();
}

/* The step in progress begins again now: the time since the last tprof_step (a validation loop
 * between two training batches) belongs to no step, so that it never counts as training. The
 * schedule does not move; records made meanwhile stay in the window, outside every step. */
void tp_steps_restart(void) {
    if (!tp_api_enter("tprof.step_restart")) return;
    uint64_t now = tp_clock_ticks();
    tp_session_lock();
    if (tp_sess.state == TP_SESSION_ACTIVE && is_stepper("tprof.step_restart"))
        tp_sess.step_start = now;
    tp_session_unlock();
}

/* The time after a loop's last step until the session ends (tprof run, whose steps end at
 * optimizer steps, and the Lightning integrations: the teardown after the last batch) is no
 * step: a step begins at every tprof_step, so without this the run would end in one more, partial
 * step, slowed by the teardown. */
void tp_steps_drop_open(void) {
    if (!tp_api_enter("tprof.drop_open_step")) return;
    tp_session_lock();
    if (tp_sess.state == TP_SESSION_ACTIVE) tp_sess.drop_open = 1; /* any thread: it ends */
    tp_session_unlock();
}

int tp_steps_window_ends(void) {
    if (!tprof_active()) return 0;
    tp_session_lock();
    int ends = tp_sess.state == TP_SESSION_ACTIVE && tp_sess.open && !tp_sess.stopped &&
               tp_sess.sm.action == TP_ACTION_RECORD_AND_SAVE;
    tp_session_unlock();
    return ends;
}

void tprof_epoch(int epoch) {
    if (!tp_api_enter("tprof_epoch")) return;
    uint64_t now = tp_clock_ticks();
    tp_session_lock();
    if (tp_sess.state == TP_SESSION_ACTIVE && is_stepper("tprof_epoch") &&
        tp_sess.sched.mode == TP_SCHED_EPOCHS) {
        if (tp_sess.open) {
            /* The epoch ended while its window recorded: complete only when the window was
             * meant to last the whole epoch (epoch_steps 0). */
            int partial = tp_sess.sched.epoch_steps > 0;
            if (partial)
                tp_log_warn(
                    "epoch %lld ended before its %lld recorded steps; its window is saved as "
                    "partial",
                    (long long)tp_sess.sm.epoch, (long long)tp_sess.sched.epoch_steps);
            close_window(now, partial, tp_sess.sm.step - 1);
        }
        tp_sched_epoch(&tp_sess.sm, epoch);
        tp_steps_begin(now);
    }
    tp_session_unlock();
}

static void list_epochs(char *buf, size_t n) {
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < tp_sess.sched.nepochs && len + 24 < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? ", " : "",
                                (long long)tp_sess.sched.epochs[i]);
}

void tp_steps_no_window_reason(char *buf, size_t n) {
    const tp_schedule *s = &tp_sess.sched;
    const tp_sched *sm = &tp_sess.sm;
    char epochs[128];
    buf[0] = '\0';
    if (tp_sess.windows > tp_sess.partial_windows) return;
    if (!tp_sess.windows && tp_sess.dropped_step) {
        snprintf(buf, n,
                 "no window completed: no recorded step ended before the run did (step %lld, "
                 "still in progress at the end, is no step)",
                 (long long)sm->step);
    } else if (tp_sess.stopped) {
        snprintf(buf, n, "no window completed: a signal interrupted the run at step %lld%s",
                 (long long)sm->step,
                 tp_sess.partial_windows ? "; the open window was saved as partial" : "");
    } else if (tp_sess.partial_windows) {
        snprintf(buf, n,
                 "no window completed: the run ended at step %lld before its window finished; "
                 "it was saved as partial",
                 (long long)sm->step);
    } else if (s->mode == TP_SCHED_STEPS) {
        snprintf(buf, n,
                 "no window completed: the run ended at step %lld (%s), before the first "
                 "recorded step %lld (skip_first=%lld, wait=%lld, warmup=%lld, active=%lld, "
                 "repeat=%lld, skip_first_wait=%d)",
                 (long long)sm->step, tp_action_name(sm->action),
                 (long long)tp_schedule_first_recorded(s), (long long)s->skip_first,
                 (long long)s->wait, (long long)s->warmup, (long long)s->active,
                 (long long)s->repeat, s->skip_first_wait);
    } else if (s->mode == TP_SCHED_EPOCHS) {
        list_epochs(epochs, sizeof(epochs));
        if (sm->epoch < 0)
            snprintf(buf, n,
                     "no window completed: tprof_epoch was never called, so none of the "
                     "epochs [%s] began",
                     epochs);
        else
            snprintf(buf, n,
                     "no window completed: the run ended in epoch %lld at step %lld (%s); "
                     "the epochs to record are [%s]",
                     (long long)sm->epoch, (long long)sm->step, tp_action_name(sm->action), epochs);
    }
}
