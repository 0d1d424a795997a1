/* perfetto_read.h - reading back the Perfetto protobuf traces tprof writes (export/perfetto.h).
 *
 * The subset export/perfetto.c writes: track descriptors (processes, threads, named tracks,
 * counter tracks), track events (slice begin/end, instants, counters with extra values) with
 * interned names, categories and annotation names, and the "tprof_header" metadata entry. The
 * trace becomes the events of the JSON trace of the same window, and those go through the JSON
 * reader (reader.h), so that every figure tprof computes from either file is the same: one
 * reader decides what a model keeps. A packet of another kind is skipped; a malformed one (a
 * truncated field, an END without its BEGIN, an unknown track or iid) stops the read with
 * "PATH: packet N: problem". */
#ifndef TP_TRACE_PERFETTO_READ_H
#define TP_TRACE_PERFETTO_READ_H

#include "model/model.h"
#include "trace/reader.h"

#include <stddef.h>

/* 1 when the first n bytes of a file look like a protobuf trace (a TracePacket at byte 0), not
 * JSON (which may also begin with a newline, the same byte). */
int tp_perfetto_sniff(const unsigned char *p, size_t n);

/* Reads the trace in data into m, as tp_trace_read_mem does for JSON. 0, or -1 with err. */
int tp_perfetto_read_mem(const void *data, size_t len, const char *name, tp_model *m,
                         const tp_read_opts *o, char *err, size_t errlen);

#endif
