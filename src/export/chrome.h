/* chrome.h - a tp_model written as one Chrome Trace Event JSON file (object form), as PyTorch's
 * Kineto writes it, so that Perfetto UI, chrome://tracing, HTA, TensorBoard's plugin and tprof's
 * own reader all open it. Each window the recorder saves becomes one such file.
 *
 * Layout: {"schemaVersion", "deviceProperties" (when the model has devices), "distributedInfo"
 * (when rank >= 0), "traceEvents": [metadata, then events], "displayTimeUnit",
 * "baseTimeNanoseconds", "traceName" (when given), "tprof": {version, window, partial,
 * [truncated, events_written, events_recorded: when a deadline cut it short], dropped_events,
 * rank, world_size, config}}. Event times are the model's ts (relative to
 * base_ns) in microseconds, exact to the nanosecond. Events keep the model's order, one per
 * line; a launch -> kernel flow ("s"/"f", cat ac2g) follows the range it belongs to.
 *
 * Whatever the model holds, the output is valid JSON that viewers accept: strings are escaped
 * (invalid UTF-8 becomes U+FFFD), raw JSON args and the configuration are embedded only when
 * they are valid JSON (else written as strings), negative durations are written as 0, and an
 * event whose track is out of range is written on pid 0, tid 0. */
#ifndef TP_EXPORT_CHROME_H
#define TP_EXPORT_CHROME_H

#include "model/model.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_chrome_opts {
    int gzip; /* compress the output stream (gzip format, level 1) */
    const char
        *config_json;       /* the effective configuration (a JSON object), embedded; may be NULL */
    const char *window;     /* the window's name, e.g. "steps_4-5" or "epoch_5"; may be NULL */
    const char *trace_name; /* "traceName"; may be NULL */
    /* If not NULL: the CLOCK_MONOTONIC time after which no more events are written (the JSON is
     * closed validly where the writing stands, with "truncated": true in the tprof object; 0 =
     * no limit), read atomically as the writing goes, so a signal can set it meanwhile. */
    const int64_t *deadline_ns;
    size_t *events_written;    /* if not NULL: set to the events written (all, unless truncated) */
    const char *tprof_members; /* JSON members ("\"merged\": {...}") added to the tprof object, as
                                  written (the caller makes them valid); may be NULL */
} tp_chrome_opts;

/* Streams the trace of m through write(ctx, data, len) in chunks of about 1 MB; write returns 0,
 * or -1 to stop. o may be NULL (defaults: plain, nothing optional). Returns 0, or -1 when write
 * failed or memory ran out (the output is then incomplete). */
int tp_chrome_write(const tp_model *m, const tp_chrome_opts *o,
                    int (*write)(void *ctx, const void *data, size_t len), void *ctx);

/* The names the trace gives a process none of whose tracks is named (its "process_name"
 * metadata: the pid when it is a string, "GPU <pid>" when gpu says one of its tracks carries
 * device work, this program's name for this process, else "process <pid>") and a thread without
 * a name ("thread_name": the tid when it is a string, "stream <tid>" for device work, else
 * "thread <tid>"), which JSON readers take for the tracks' names. out (n bytes) may hold the
 * name returned. The Perfetto reader names tracks by them, so that the JSON trace and the
 * .pftrace of one window read alike. */
const char *tp_chrome_process_label(const tp_model *m, const tp_track *t, int gpu, char *out,
                                    size_t n);
const char *tp_chrome_thread_label(const tp_model *m, const tp_track *t, int gpu, char *out,
                                   size_t n);

/* 1 once the deadline that deadline_ns points to (tp_chrome_opts.deadline_ns; none when NULL or
 * 0) has passed: the check of this writer and of export/perfetto.c's, between two events. */
int tp_chrome_past_deadline(const int64_t *deadline_ns);

/* The trace of m as the file at path, written atomically (tp_ofile: temporary name, then
 * rename); the directory must exist. 0, or -1 with err = one line naming the path and the
 * reason; nothing is left behind on failure. */
int tp_chrome_write_file(const tp_model *m, const char *path, const tp_chrome_opts *o, char *err,
                         size_t errlen);

/* A trace file written from several models in turn, so that only one needs to be in memory
 * (`tprof merge`: each rank read, added, freed). doc gives what the document says once, the
 * header (deviceProperties, distributedInfo) and the trailer (baseTimeNanoseconds and the tprof
 * object); the caller keeps it until commit or abort. Each model added writes its tracks'
 * metadata, then its events (their flows within that model only); every model's base_ns must be
 * doc's. The file is written as tp_chrome_write_file writes it: under a temporary name, renamed
 * at commit; nothing is left behind on failure or abort. */
typedef struct tp_chrome_stream tp_chrome_stream;

/* NULL with err = one line naming the path and the reason. */
tp_chrome_stream *tp_chrome_stream_open(const tp_model *doc, const char *path,
                                        const tp_chrome_opts *o, char *err, size_t errlen);
/* 0, or -1 once the output is lost (commit then says why). */
int tp_chrome_stream_add(tp_chrome_stream *s, const tp_model *m);
/* Ends the document and renames the file into place; frees s. events_written (may be NULL): the
 * events written. 0, or -1 with err filled and nothing left behind. */
int tp_chrome_stream_commit(tp_chrome_stream *s, size_t *events_written, char *err, size_t errlen);
/* A streamed window's trace (record/window.h's segments): m's events without its tracks'
 * metadata, which the last segment writes for every track (tp_chrome_stream_end). 0, or -1 once
 * the output is lost. */
int tp_chrome_stream_add_events(tp_chrome_stream *s, const tp_model *m);
/* Ends a streamed trace: last (the last segment, which has every track) is written with its
 * metadata, at the time of the earliest event of every segment; last is the document from now
 * on (the trailer's facts; deviceProperties there when the header had none, as devices are known
 * only once the window closed); the file is renamed to path (same folder) rather than the path
 * it was opened with. As tp_chrome_stream_commit otherwise. */
int tp_chrome_stream_end(tp_chrome_stream *s, const tp_model *last, const char *path,
                         size_t *events_written, char *err, size_t errlen);
/* Removes the temporary file; frees s. */
void tp_chrome_stream_abort(tp_chrome_stream *s);
/* Makes s a trace valid at every checkpoint, one after each model added (a process killed
 * outright, by SIGKILL or the OOM killer, leaves what was written): each model's output goes out
 * with a provisional trailer (the tprof object marked "partial" and "interrupted", no metadata
 * for tracks that have none yet) in one write, which the next model overwrites; at the first
 * checkpoint the file takes the name partial_path (same folder, never the final name: a reader
 * tells it from a finished trace), and keeps it until commit or end renames it. The finished
 * file is byte for byte what it is without checkpoints, except that with gzip it is one member
 * per checkpoint (the same text uncompressed). Before the first model; 0, or -1 when out of
 * memory (then none). */
int tp_chrome_stream_checkpoints(tp_chrome_stream *s, const char *partial_path);

#endif
