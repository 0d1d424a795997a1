/* source.h - how a producer of events other than the tprof_* calls joins a session.
 *
 * The CUPTI activity source (cupti.c) is one: it follows the schedule through on_action (started
 * in WARMUP so its start-up cost stays out of the window, stopped outside windows) and adds its
 * kernels, copies and runtime calls to each window's model through collect, and to a streamed
 * window's segments through collect_settled while it records. */
#ifndef TP_RECORD_SOURCE_H
#define TP_RECORD_SOURCE_H

#include "model/model.h"
#include "sched/schedule.h"

#include <stdint.h>

typedef struct tp_window_info {
    const char *name;         /* file-name stem of the window's trace */
    int64_t start_ns, end_ns; /* on the session clock (tp_clock_now_ns) */
    int64_t first_step, last_step;
    int partial;             /* closed early (shutdown or signal) */
    int64_t model_offset_ns; /* a session-clock time minus this is a time in the window's model */
    uint64_t too_deep;       /* of the model's dropped_events, those nested too deep */
    const int64_t *deadline_ns; /* a signal's: the trace must be closed by this CLOCK_MONOTONIC
                                   time (events past it are left out); 0 = no limit. Read
                                   atomically while writing: a signal may set it meanwhile */
    const char
        *flight_reason;      /* a flight recorder's save (record/flight.h): its reason, else NULL */
    int64_t flight_step;     /* ... the triggering step, marked in the model */
    const char *flight_note; /* ... what happened, for its stderr line */
} tp_window_info;

typedef struct tp_source {
    const char *name;
    void *ctx;
    /* The step that begins now has this action. Called on the stepping thread. */
    void (*on_action)(void *ctx, tp_action action);
    /* A window closed: append the source's events between w->start_ns and w->end_ns to m, with
     * times converted by subtracting w->model_offset_ns. Called on the writer thread. */
    void (*collect)(void *ctx, tp_model *m, const tp_window_info *w);
    /* The session ends: stop and release everything; must not hang. */
    void (*shutdown)(void *ctx);
    /* The flight recorder (record/flight.h) moved its ring: no window will ask for the source's
     * events before from_ns (session clock) any more, so they may be dropped, keeping the
     * source's memory flat however long the run. Called on the stepping thread: it must only
     * note the time. Optional. */
    void (*retain)(void *ctx, int64_t from_ns);
    /* A streamed window (the `stream` key) records: append to m, its next segment, the source's
     * events of the window whose place is final (times converted as for collect), and return the
     * session-clock time T before which it holds no more event of the window: the segment's
     * settled_ts is lowered to T, so that the sink's summary cuts the window only where the
     * source has added all it will (record/window.h). w has no name and an end_ns of INT64_MAX
     * yet. collect still comes at the window's end, with what the segments left. Called on the
     * writer thread at each of its polls (every few ms): it must return quickly. Optional:
     * without it, a source with collect keeps every segment of a streamed window from settling
     * any time. */
    int64_t (*collect_settled)(void *ctx, tp_model *m, const tp_window_info *w);
} tp_source;

/* Registers a source for the active session (the struct is copied). 0, or -1 if none is active
 * or too many sources are registered. */
int tp_session_add_source(const tp_source *src);

#endif
