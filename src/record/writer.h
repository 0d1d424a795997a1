/* writer.h - the session's background thread: closed windows in, models out to the sink.
 *
 * The stepping thread queues a window and returns at once; the writer converts and delivers it.
 * A signal handler can ask it to flush the open window and wait for that, async-signal-safely. */
#ifndef TP_RECORD_WRITER_H
#define TP_RECORD_WRITER_H

#include "record/window.h"

#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>

/* How often a streamed window's chunks are taken while it records: at 10 M records a second,
 * 50 k records (0.8 MB) wait between two polls. */
enum { TP_POLL_MS = 5 };

typedef struct tp_writer {
    pthread_t thread;
    sem_t wake;    /* posted for each queued window, the flush request and the stop */
    sem_t flushed; /* posted once a requested flush is written */
    pthread_mutex_t lock;
    tp_window *head, *tail; /* the queue, under lock */
    int stop;               /* under lock */
    int flush_req;          /* atomic: set by a signal handler */
    int flight_req;         /* atomic: a flight save asked for (record/flight.h) */
    int running;            /* atomic: the thread exists and takes requests */
    int64_t deadline_ns;    /* atomic: set with flush_req (or a signal during shutdown):
                               CLOCK_MONOTONIC time by which the trace being written must be
                               closed; 0 outside a flush. Read as it is written (source.h) */
    void (*write)(void *ctx, tp_window *w); /* converts, delivers and frees w */
    void (*flush)(void *ctx);               /* closes the open window (queues it) */
    void (*after_flush)(void *ctx);         /* after a flush's windows: the run's files, partial */
    void (*flight)(void *ctx);              /* serves flight_req (queues a window) */
    int (*poll)(void *ctx); /* at every wake: 1 while it wants another call within TP_POLL_MS
                               (a streamed window records) */
    void *ctx;
} tp_writer;

/* Starts the thread with every signal blocked in it (a handler waiting for the writer must never
 * run on the writer). 0, or -1 when the thread cannot be created. */
int tp_writer_start(tp_writer *wr);
void tp_writer_push(tp_writer *wr, tp_window *w);
/* 1 when a closed window waits in the queue. */
int tp_writer_queued(tp_writer *wr);
/* Wakes the thread for a poll (a streamed window opened). */
void tp_writer_poke(tp_writer *wr);
/* Async-signal-safe: asks the thread to call wr->flight. */
void tp_writer_wake_flight(tp_writer *wr);
/* Writes what is queued, then ends and joins the thread. */
void tp_writer_stop(tp_writer *wr);
/* Async-signal-safe: traces written from now on, and the one being written, are closed
 * deadline_ms from now (deadline_ns), e.g. when a signal comes while tprof_shutdown writes. */
void tp_writer_set_deadline(tp_writer *wr, int deadline_ms);
/* Async-signal-safe: asks for a flush whose trace is closed deadline_ms from now (deadline_ns)
 * and waits up to timeout_ms for all of it. 0 when written, -1 when the time ran out, 1 when
 * there is no writer thread. */
int tp_writer_flush_from_signal(tp_writer *wr, int deadline_ms, int timeout_ms);

#endif
