/* flight.h - the flight recorder: every step recorded into a ring of the last flight_steps steps,
 * saved as one trace when a step goes wrong (docs/FLIGHT.md).
 *
 * How it fits the per-thread chunks of record.h: with the recorder on, every step is a window
 * generation of its own, so each chunk holds records of one step. The ring remembers the last
 * steps' generations; when a step leaves the ring, its generation is released (chunks of it may
 * be reused by their owners), unless a window being written still needs it (a pin). A save is a
 * tp_window over a range of generations [gen_lo, gen]: the writer thread converts exactly the
 * chunks of those steps, as it does for a scheduled window.
 *
 * Invariants (asserted in Debug and sanitizer builds where a few compares check them; release
 * builds define NDEBUG):
 *  F1. Generations of flight steps increase with the steps; the ring holds the ended steps
 *      ring[0 .. n) oldest first, at most flight_steps + 1 of them, each with its generation.
 *      Asserted by tp_flight_enter and tp_flight_step_ended.
 *  F2. released = the highest generation whose chunks may be reused: it is below the generation
 *      of every step in the ring, of the running step, and below every pin (the first generation
 *      of a window pushed to the writer and not yet written, or of the scheduled window open).
 *      It never decreases. Asserted by release() (against the ring's oldest step and every pin)
 *      and tp_flight_pin. One exception: when a pin cannot be stored (out of memory), released
 *      becomes UINT32_MAX, meaning "never release again", and nothing is reused from then on.
 *  F3. A range still open at a step's end keeps its end: the thread carries its owed ends into a
 *      chunk of the next step's generation (record.h, invariant 7), so a save holding both steps
 *      has both its begin and its end; an end whose begin left the ring is skipped by the writer.
 *      Not asserted here (it spans the recording threads and the writer): it rests on invariant
 *      7, whose carry_owed asserts invariant 4 in the new chunk, and on the writer converting a
 *      save's steps in order (window.c skips an end with no range open).
 *  F4. Saves are admitted at most flight_max_saves times, flight_cooldown_steps apart; the
 *      stepping thread never waits for one: it (or the thread calling tprof_flight_save) hands a
 *      tp_window to the writer, or for SIGUSR1 the writer builds it from the ring itself.
 *      Asserted by admit() for the count and the spacing; the not waiting is by construction
 *      (push_save only queues). */
#ifndef TP_RECORD_FLIGHT_H
#define TP_RECORD_FLIGHT_H

#include "config/config.h"
#include "record/window.h"

#include <stddef.h>
#include <stdint.h>

enum {
    TP_FLIGHT_HISTORY = 100,   /* the steps the median is taken over */
    TP_FLIGHT_REASON_MAX = 32, /* characters of a save's reason */
    TP_FLIGHT_NOTE_MAX = 200
};

typedef struct tp_flight_step {
    int64_t step;
    uint32_t gen;
    uint64_t start, end; /* ticks */
} tp_flight_step;

typedef struct tp_flight {
    int on;
    double factor;
    int64_t warmup, cooldown, max_saves;
    tp_flight_step *ring; /* the ended steps, oldest first (F1) */
    size_t n, cap;
    uint32_t cur_gen;  /* the running step's generation */
    uint32_t released; /* F2 */
    struct tp_flight_pin {
        uint32_t gen;   /* first generation of a window not yet written (F2) */
        uint64_t start; /* its start (ticks): sources keep their events from there */
    } * pins;
    size_t npins, cap_pins;
    int64_t *hist;   /* the last TP_FLIGHT_HISTORY step durations (ns), circular */
    int64_t *sorted; /* the same, sorted: the median without sorting each step */
    size_t nhist, hist_pos;
    int64_t steps_ended;
    tp_clock_cal cal; /* step durations (recalibrated every 1024 steps) */
    int64_t saves, last_save_step;
    int sig_req; /* atomic: SIGUSR1 arrived, for the writer to serve */
} tp_flight;

/* 1 while the session records with the flight recorder on (the hot path's carry, F3). */
extern int tp_flight_on;

/* ---- on the stepping thread, session lock held ---- */
/* Sets up the ring for a session (allocates it); 0, or -1 out of memory (warned). */
int tp_flight_start(const tprof_config *cfg);
/* A new step begins at generation gen (F1). */
void tp_flight_enter(uint32_t gen);
/* The running step `step` ended: into the ring, the oldest out, and the slow-step trigger. */
void tp_flight_step_ended(int64_t step, uint64_t start, uint64_t end);
/* A window over generations from gen_lo, starting at start_ticks, was pushed or opened: they stay
 * until it is written. */
void tp_flight_pin(uint32_t gen_lo, uint64_t start_ticks);

/* ---- on the writer thread ---- */
/* Serves SIGUSR1: builds the ring's window up to now and pushes it. Takes the session lock. */
void tp_flight_serve(void);
/* Window w (pinned at w->gen_lo) is written: unpin and release what the ring let go. Takes the
 * session lock. */
void tp_flight_window_done(const tp_window *w);

/* ---- anywhere ---- */
/* Async-signal-safe: SIGUSR1 asks for a save. */
void tp_flight_signal(void);
/* The session ended and its windows are written: everything is released, memory freed. */
void tp_flight_stop(void);

#endif
