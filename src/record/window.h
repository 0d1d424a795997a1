/* window.h - a closed window, and its conversion from thread records into a tp_model.
 *
 * The stepping thread fills a tp_window while the window records (its steps) and hands it to the
 * writer thread when it closes; from then on only the writer touches it. */
#ifndef TP_RECORD_WINDOW_H
#define TP_RECORD_WINDOW_H

#include "model/model.h"
#include "record/clock.h"
#include "record/source.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_wstream tp_wstream;

typedef struct tp_step_span {
    int64_t step;
    uint64_t start, end; /* ticks */
} tp_step_span;

typedef struct tp_window {
    uint32_t gen;    /* the generation of its records, or with the flight recorder the last ... */
    uint32_t gen_lo; /* ... of the range gen_lo .. gen (record/flight.h); 0 = gen alone */
    uint64_t start_ticks, end_ticks;
    int64_t first_step, last_step;
    tp_step_span *steps; /* the ProfilerStep#k ranges, on the stepping thread's track */
    size_t nsteps, cap_steps;
    int64_t step_tid;
    char step_thread[64]; /* the stepping thread's name ("" if unnamed) */
    int partial;
    int empty;              /* it held only a dropped step (tp_steps_drop_open): not written */
    int cut_last;           /* the last step was still running: cut at end_ticks (flagged) */
    char name[96];          /* steps_<first>-<last>, epoch_<e>, flight_<reason>_steps_<a>-<b> */
    int64_t flight_step;    /* a flight save: the triggering step, marked in the trace */
    char flight_reason[40]; /* a flight save's reason ("" for other windows) */
    char flight_note[200];  /* its stderr line's start: "step 500 took 31.2 ms, ..." */
    tp_clock_anchor opened; /* both clocks as the window opened */
    tp_clock_cal cal;       /* taken as the window closed: the line from opened to then */
    struct tp_window *next; /* the writer's queue */
    int stream;             /* streamed (the `stream` key): set as it opens */
    /* writer thread only: a streamed window's conversion, its trace's head and the sink's trace
     * (all NULL until the first segment; the trace NULL too when the sink took none) */
    struct tp_wstream *ws;
    struct tp_model *head;
    void *trace;
} tp_window;

/* What the conversion takes from the session. */
typedef struct tp_window_env {
    int64_t pid;
    const char *process_name;
    int64_t origin_ns;        /* session-clock time of model ts 0 */
    int64_t base_ns;          /* wall-clock time of the same instant */
    int64_t rank, world_size; /* -1 when not distributed */
} tp_window_env;

/* The window's model (the caller owns it: tp_model_free, then free), with w's info filled for
 * sources and sinks. Never NULL unless out of memory; a partial conversion sets m->failed. */
tp_model *tp_window_build(const tp_window *w, const tp_window_env *env, tp_window_info *info);

/* A streamed window (the `stream` key): its model made in segments while it records, so that
 * memory holds a few chunks per thread rather than the window. Each segment holds the ranges
 * that ended in the chunks read for it (complete, with their args) and the thread's other
 * events, in each thread's order; the last one also the ranges still open at the window's end,
 * the steps and every thread's track. Taken together the segments hold the events
 * tp_window_build makes of the same records, with the same figures, times converted at the
 * process's rate from the window's opening anchor (clock.h). Writer thread only. */
/* w must stay until finish; its opening fields are read (gen, start_ticks, opened). NULL when
 * out of memory. */
tp_wstream *tp_wstream_new(const tp_window *w, const tp_window_env *env);
/* A segment of the chunks the threads filled since the last one, up to TP_STREAM_BATCH per
 * thread, and of the steps handed over since (the caller owns it; it may be empty); NULL when out
 * of memory. Their owners may reuse those chunks as it returns. Its settled_ts says how far the
 * window is settled: no later segment holds an event that starts before it, except the ranges
 * still open on the threads' stacks, which it lists (tp_model.open), and ranges written whole at
 * their end (window.c says why; INT64_MIN: nothing is, after tp_wstream_settle_none). */
tp_model *tp_wstream_pass(tp_wstream *s);
/* Steps the window ended while it records, steps[0 .. n) (copied), on thread tid named
 * thread_name, for the next segment: in order, the first being the tp_wstream_given()-th of the
 * window; those never handed over come with the last segment, as without streaming. 0, or -1
 * when out of memory (they are not taken). */
int tp_wstream_steps(tp_wstream *s, const tp_step_span *steps, size_t n, int64_t tid,
                     const char *thread_name);
size_t tp_wstream_given(const tp_wstream *s);
/* The window's info as its sources see it while it records (source.h: collect_settled): its
 * start and the model's offset as the last segment's info will give them, no name, no end. */
void tp_wstream_info(const tp_wstream *s, tp_window_info *info);
/* No segment from now on settles any time (a source adds events at the window's end). */
void tp_wstream_settle_none(tp_wstream *s);
/* The window closed (w's end fields set): the last segment, with w's info as tp_window_build
 * gives it, the dropped events of every segment and its warnings; frees s. */
tp_model *tp_wstream_finish(tp_wstream *s, tp_window_info *info);
void tp_wstream_free(tp_wstream *s);

/* 1 when s is a JSON array of arrays of integers at any depth ("Input Dims"), else 0. */
int tp_dims_json_valid(const char *s);

#endif
