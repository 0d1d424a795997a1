/* part.h - one stretch of a trace read by one thread: the unit of the parallel reader.
 *
 * The one-thread read is a single part from the document's start to its end. The parallel read
 * (parts.c) cuts a plain JSON trace into parts that start at candidate event boundaries; each
 * part reads into its own model and stops where the next part may begin (a "stop": the offset
 * of an event's '{' inside the events array). A part records which stop it reached, so the
 * parts that began at a true boundary can be chained in file order (parts.c explains why the
 * chain equals the one-thread read).
 *
 * Invariant: offsets are absolute offsets in the JSON (the scanner's origin starts at the
 * part's start), so an error message of any part reads as the one-thread path's. */
#ifndef TP_TRACE_PART_H
#define TP_TRACE_PART_H

#include "model/model.h"
#include "trace/event.h"
#include "trace/input.h"

#include <stddef.h>
#include <stdint.h>

enum tp_form { TP_FORM_UNKNOWN, TP_FORM_ARRAY, TP_FORM_OBJECT };

/* What the top level of the document says about the run; applied to the model at the end.
 * A part after the first sees only the members after the events array: each fact says
 * whether it was set, so the parts' facts merge as one read would have set them. */
typedef struct tp_read_facts {
    int64_t base_ns, rank, world_size, tprof_rank, tprof_world_size;
    uint64_t dropped;
    int partial;
    unsigned set;       /* TP_FACT_* bits */
    uint64_t events_in; /* entries of the events array */
    int array_form;
    int events_member;      /* the object form's traceEvents array was found */
    int64_t flight_step;    /* tprof.flight.step (docs/FLIGHT.md), -1 none */
    char flight_reason[64]; /* tprof.flight.reason, cut to fit */
} tp_read_facts;

enum {
    TP_FACT_BASE = 1,
    TP_FACT_RANK = 2,
    TP_FACT_WORLD = 4,
    TP_FACT_TPROF_RANK = 8,
    TP_FACT_TPROF_WORLD = 16,
    TP_FACT_DROPPED = 32,
    TP_FACT_PARTIAL = 64,
    TP_FACT_FLIGHT = 128,
};

/* The memory budget of one read, shared by its parts: each part adds the growth of its model's
 * estimate (tp_read_memory_estimate) at every refill, atomically. */
typedef struct tp_read_budget {
    uint64_t max; /* 0: no limit */
    uint64_t used;
} tp_read_budget;

typedef struct tp_part {
    /* in */
    tp_input *in;
    const char *name; /* the input as messages name it */
    tp_model *m;
    uint64_t start;        /* offset of the part's first byte: 0, or a stop */
    int form;              /* tp_form: UNKNOWN reads the document's start */
    const uint64_t *stops; /* ascending offsets where the part may end (not owned) */
    size_t nstops;
    int progress;     /* as tp_read_opts.progress */
    int keep_args;    /* as tp_read_opts.keep_args */
    int cut_short_ok; /* as tp_read_opts.cut_short_ok; cut_short: the input ended so */
    int cut_short;
    /* part 0 of a parallel read: the inputs of the parts that begin at its stops (peers[i] at
     * stops[i]), so that its progress line counts every part's bytes; else NULL */
    tp_input *const *peers;
    size_t cap; /* the buffer's first size */
    tp_read_budget *budget;
    /* out */
    int rc; /* 0 or -1 with err */
    char err[512];
    size_t stopped; /* 1 + the index of the stop it ended at; 0: it read to the end */
    uint64_t end;   /* offset of the end of the bytes it read (the document's end when stopped
                       is 0) */
    tp_read_facts facts;
    tp_evread ev; /* live until tp_part_free: its process and thread names are pending */
} tp_part;

/* Reads the part into p->m (see above); the results are in p's out fields. */
void tp_part_read(tp_part *p);
/* The end of a read: gives the names to the tracks, the facts to the model, checks that the
 * input was a trace at all. 0, or -1 with p->err set. first_event: the model's event count
 * before the read. */
int tp_part_finish(tp_part *p, size_t first_event);
void tp_part_free(tp_part *p);

#endif
