/* reader.h - Chrome/Kineto trace files read into the event model.
 *
 * One streaming pass over the JSON (object or array form, plain or gzip, a file, standard input
 * or memory): no document tree, names interned, only the fields the analyses need kept, so
 * memory grows with the events kept and not with the file. What goes into the model follows
 * docs/SEMANTICS.md §2 and docs/ARCHITECTURE.md ("Event-model conventions"); reader.c lists the
 * details (defects tolerated, what is left out). */
#ifndef TP_TRACE_READER_H
#define TP_TRACE_READER_H

#include "model/model.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_read_opts {
    /* A progress line on stderr for inputs over ~100 MB: 0 never, 1 when stderr is a terminal,
     * 2 always (`tprof analyze --progress`). */
    int progress;
    /* Threads that read a plain JSON file at once: 0 the cores available to the process, 1 one
     * thread. Compressed input and standard input are read by one (gzip's two-stage pipeline).
     * The model is the same, byte for byte, whatever the count. */
    int threads;
    /* For tests: where to cut the input (any offsets, ascending), in place of equal shares;
     * each part begins at the first place after its cut that looks like an event's start. */
    const uint64_t *splits;
    size_t nsplits;
    /* The memory the read may take, as tp_read_memory_estimate counts it (0: no limit): past it
     * the read stops with "PATH: byte N: over the memory budget ...". Checked once per buffer
     * of input (1 MB), never per event. */
    uint64_t max_memory;
    /* What the caller holds already of that budget (the analysis of earlier files). */
    uint64_t memory_used;
    /* How messages name a file (the tprof command's quoted spelling of an odd name); NULL: the
     * path itself. Standard input is always "<stdin>". */
    const char *name;
    /* Keep each range's whole args object ("X" and "B" events), as written, as one more arg of
     * the event: TP_ARG_JSON under the key TP_READ_RAW_ARGS (the report's Trace view shows
     * every arg; the analysis reads args by key and never sees it). Costs the args' text, at
     * most TP_READ_RAW_ARGS_MAX bytes of it per part read at once: the first objects of each
     * part by position (so the file's first TP_READ_RAW_ARGS_MAX bytes of them whatever the
     * thread count; past them which ranges have theirs depends on the parts). */
    int keep_args;
    /* An unfinished trace (run/runfiles.h's TP_RUN_PARTIAL: a streamed window whose process was
     * killed while it wrote a segment): input that ends inside the object form's traceEvents is
     * no error; the events complete before the end are kept, the model is marked partial and
     * cut_short is set (the end of a trace, baseTimeNanoseconds and the tprof object among it,
     * is lost with it). A Perfetto trace likewise: one that ends inside a packet, or without
     * its tprof_header entry, keeps its whole packets (a slice begun in the last, whose end was
     * cut off, left out). */
    int cut_short_ok;
    int *cut_short; /* may be NULL */
} tp_read_opts;

/* What keep_args keeps of args objects, per part: the Trace view shows no more (trace_view.h's
 * TP_TRACE_VIEW_ARGS_MAX), and a huge trace's args must not all stay in memory. */
#define TP_READ_RAW_ARGS_MAX ((size_t)16 << 20)

/* The key of an event's whole args object with tp_read_opts.keep_args: a name no trace's arg
 * has (a control byte, which a JSON key can only spell escaped, and the reader keeps no key so
 * spelled). */
#define TP_READ_RAW_ARGS "\x01args"

/* Bytes an analysis is estimated to take per event beyond the model (its per-thread range
 * lists, keyed records, op table rows): measured at 80-100 for traces of tiny events. */
#define TP_READ_ANALYSIS_EVENT_BYTES 100

/* The memory a model takes once analysed, estimated: its arrays at their capacity, its strings,
 * and TP_READ_ANALYSIS_EVENT_BYTES per event. What tp_read_opts.max_memory is compared with. */
uint64_t tp_read_memory_estimate(const tp_model *m);

/* Reads a Chrome/Kineto trace into m (already tp_model_init'ed; events are appended, so several
 * files can go into one model or each into its own). path "-" is standard input. 0 on success;
 * -1 with err set to one line "PATH: byte N: problem" (N the offset in the decompressed JSON),
 * or "PATH: cannot open: reason"; the model then holds the events read before the problem. The
 * first allocation that fails stops the read ("out of memory"), as does max_memory.
 * o may be NULL. */
int tp_trace_read_file(const char *path, tp_model *m, const tp_read_opts *o, char *err,
                       size_t errlen);
/* The same from memory, on one thread; name (NULL: "<memory>") stands for PATH in messages. */
int tp_trace_read_mem(const void *data, size_t len, const char *name, tp_model *m, char *err,
                      size_t errlen);
/* The same with options (o NULL: one thread). */
int tp_trace_read_mem_opts(const void *data, size_t len, const char *name, tp_model *m,
                           const tp_read_opts *o, char *err, size_t errlen);

#endif
