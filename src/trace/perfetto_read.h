/* perfetto_read.h - reading back the Perfetto protobuf traces tprof writes (export/perfetto.h),
 * and the track events of other producers' (the Perfetto SDK's).
 *
 * The subset export/perfetto.c writes: track descriptors (processes, threads, named tracks,
 * counter tracks), track events (slice begin/end, instants, counters with extra values) with
 * interned names, categories and annotation names, and the "tprof_header" metadata entry. Of
 * other producers' traces also: packet sequences with their own interned strings, a sequence's
 * default track, names, categories and annotation names written inline, threads without a
 * process track, tracks named under a process, counters named by their track, no header (times
 * then as written, no run facts); annotations of other kinds are skipped, and what cannot be
 * read (timestamps of a sequence's own clock: incremental ones) stops the read. The
 * trace becomes the model the JSON reader (reader.h) makes of the JSON trace of the same window,
 * read straight from the packets (perfetto_read.c says how it keeps to the JSON reader's
 * decisions), so that every figure tprof computes from either file is the same. The model's
 * input_events counts the packets. A packet of another kind, and an unknown field, are skipped;
 * a malformed one (a truncated field, an END without its BEGIN, an unknown track or iid) stops
 * the read with "PATH: packet N: problem", except the cut end of an unfinished trace
 * (tp_read_opts.cut_short_ok: a streamed window's, killed inside a write). */
#ifndef TP_TRACE_PERFETTO_READ_H
#define TP_TRACE_PERFETTO_READ_H

#include "model/model.h"
#include "trace/input.h"
#include "trace/reader.h"

#include <stddef.h>

/* 1 when the first n bytes of a file look like a protobuf trace (a TracePacket at byte 0), not
 * JSON (which may also begin with a newline, the same byte). */
int tp_perfetto_sniff(const unsigned char *p, size_t n);

/* Reads the trace in data into m, as tp_trace_read_mem does for JSON. 0, or -1 with err; m then
 * holds no event of the trace. */
int tp_perfetto_read_mem(const void *data, size_t len, const char *name, tp_model *m,
                         const tp_read_opts *o, char *err, size_t errlen);
/* The same from an input (a file, plain or gzip), read a window of 1 MB at a time (more for a
 * longer packet), so that memory is the model's, not the file's. */
int tp_perfetto_read_input(tp_input *in, const char *name, tp_model *m, const tp_read_opts *o,
                           char *err, size_t errlen);

#endif
