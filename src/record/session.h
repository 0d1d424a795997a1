/* session.h - the one profiling session of the process: its state and what the rest of the
 * recorder asks of it.
 *
 * Everything in tp_session is guarded by its lock except where a field says otherwise. The hot
 * path never takes the lock: it reads tprof_active_, tp_gen and tp_opts. */
#ifndef TP_RECORD_SESSION_H
#define TP_RECORD_SESSION_H

#include "config/config.h"
#include "record/flight.h"
#include "record/rank.h"
#include "sched/schedule.h"
#include "record/sink.h"
#include "record/writer.h"

#include <pthread.h>
#include <stdint.h>

enum { TP_MAX_SOURCES = 8 };

typedef enum tp_session_state {
    TP_SESSION_IDLE,     /* never started (tprof calls are misuse) */
    TP_SESSION_DISABLED, /* started with profiling disabled (tprof calls do nothing) */
    TP_SESSION_ACTIVE,
    TP_SESSION_ENDING, /* tprof_shutdown is writing the last windows */
    TP_SESSION_ENDED,  /* shut down (tprof calls are misuse until the next start) */
} tp_session_state;

/* Options the annotation calls read without the lock (set before tprof_active_ turns on). */
typedef struct tp_rec_opts {
    int shapes, memory, flops;
    int nsight;   /* mirror ranges to NVTX (tp_session_set_nsight) */
    int ext_corr; /* ops push CUPTI external correlation ids (tp_session_set_ext_corr) */
} tp_rec_opts;
extern tp_rec_opts tp_opts;

/* Turns the NVTX mirroring of ranges on or off: src/gpu/session.c calls it when its Nsight source
 * joins the session and at its shutdown. The recorder alone writes tp_opts, which its hot path
 * reads without the lock (relaxed): one file says when and how those fields change, and the GPU
 * layer above depends on a call, not on the layout of the recorder's options. */
void tp_session_set_nsight(int on);
/* Turns on or off the external correlation ids tp_op_begin pushes to CUPTI: the CUPTI source
 * calls it as its window kinds go on and off, when CUPTI records them. */
void tp_session_set_ext_corr(int on);

typedef struct tp_session {
    pthread_mutex_t lock;
    tp_session_state state;
    tprof_config *cfg;
    tp_schedule sched;
    tp_sched sm;
    tp_rank rank;
    tp_sink sink;
    tp_source sources[TP_MAX_SOURCES];
    size_t nsources;
    tp_writer writer;
    tp_window_env env;
    char process_name[64];
    tp_window *open;           /* the recording window, or NULL */
    tp_window *streaming;      /* it, while it is streamed (atomic: the writer polls it) */
    uint64_t step_start;       /* ticks at which the current step began */
    int64_t stepper;           /* the thread driving steps; 0 until the first tprof_step */
    int64_t step_tid;          /* the ProfilerStep ranges' thread: the stepper, else the starter */
    char step_name[64];        /* that thread's name, noted on it */
    const char *step_name_src; /* the interned name step_name was copied from */
    int stopped;               /* a signal flushed the session: nothing more is recorded */
    int drop_open;             /* the step in progress is no step if the run ends in it */
    int dropped_step;          /* the run ended in such a step (tp_steps_end) */
    int64_t steps_ended;       /* tprof_step calls of this session */
    int finished_by_signal;    /* the sink's finish ran for the signal (writer thread, atomic) */
    size_t windows, partial_windows;
    uint64_t dropped; /* written by the writer thread (atomic) */
    /* for the sink */
    char *run_dir, *config_json;
    tp_stage_def *stages;
    size_t nstages;
    char no_window_reason[512];
    int warned_before, warned_after; /* misuse warnings given (atomic) */
    uint64_t unmatched_ends;         /* atomic */
    tp_flight flight;                /* the flight recorder (flight.h) */
} tp_session;

extern tp_session tp_sess;

/* The lock, through util/lock.h: a SIGINT or SIGTERM that lands while this thread holds it (or
 * any tprof lock) waits for its release, since the handler waits for the writer, which may need
 * the lock. */
void tp_session_lock(void);
void tp_session_unlock(void);

/* ---- steps and windows (steps.c); lock held ---- */
/* The current step (its action set) begins at `now`: a window opens if it records. */
void tp_steps_begin(uint64_t now);
/* Closes the recording window, if any, at `now` as the run ends (shutdown or signal). */
void tp_steps_end(uint64_t now, int partial);
/* On the thread whose track carries the ProfilerStep ranges (the starter, then the stepper):
 * notes its id and name. */
void tp_steps_note_thread(void);
/* Why no window completed, for the summary; "" when one did. */
void tp_steps_no_window_reason(char *buf, size_t n);

/* Takes the lock: the step in progress begins again now (time since the last step is no step). */
void tp_steps_restart(void);
/* Takes the lock: 1 when the step in progress is its window's last (the next tprof_step closes
 * the window), so that a host may first write the ranges open across the whole window
 * (tp_ranges_open_cut). */
int tp_steps_window_ends(void);
/* Takes the lock: if the session ends before the next tprof_step, the step in progress is no
 * step (its time lies in no step, and a window holding nothing else is not written), unless no
 * step ended at all: the run is then its one step, as without the call. */
void tp_steps_drop_open(void);

/* ---- misuse, reported once (session.c) ---- */
void tp_session_unmatched_end(void);
/* A tprof call while no session is active: a warning before init and after shutdown. */
void tp_session_inactive_call(const char *fn);
static inline int tp_api_enter(const char *fn) {
    if (__builtin_expect(__atomic_load_n(&tprof_active_, __ATOMIC_RELAXED), 1)) return 1;
    tp_session_inactive_call(fn);
    return 0;
}

/* Async-signal-safe: the writer flushes the recording window as partial (its trace closed within
 * deadline_ms) and writes the run's files; waits up to timeout_ms. As
 * tp_writer_flush_from_signal: 0, -1 timed out, 1 no writer. */
int tp_session_signal_flush(int deadline_ms, int timeout_ms);

/* The current (or last) session's run directory into buf (truncated to n), "" when none. */
void tp_session_run_dir(char *buf, size_t n);
/* Async-signal-safe: 1 while tprof_shutdown ends the session (writes the last window and the
 * run's files). */
int tp_session_ending(void);
/* Async-signal-safe: the trace being written, and any later one, is closed deadline_ms from
 * now (a signal came while tprof_shutdown writes). */
void tp_session_cut_writes(int deadline_ms);

/* ---- signals.c ---- */
/* flush_timeout_ms: how long a signal's flush may take (profiling.flush_timeout_ms). The
 * handlers stay installed until tp_signals_end, through tprof_shutdown's writing. */
void tp_signals_install(int64_t flush_timeout_ms);
void tp_signals_restore(void);
/* The signal that came during tprof_shutdown (waiting until its files were written), or 0. */
int tp_signals_deferred(void);
/* At the end of tprof_shutdown: restores the host's handlers, then delivers the deferred signal,
 * if any, to them (the default action ends the process as it would have without tprof). */
void tp_signals_end(void);
/* SIGUSR1 asks the flight recorder for a save (flight_signal: true). */
void tp_signals_install_flight(void);
void tp_signals_restore_flight(void);

#endif
