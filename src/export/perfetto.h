/* perfetto.h - a tp_model written as Perfetto's native protobuf trace (`trace_format: perfetto`):
 * the content of the Chrome JSON trace (chrome.h) in Perfetto's TrackEvent protocol, several
 * times smaller, loaded by Perfetto UI and trace_processor without JSON's size limits.
 *
 * Layout (one packet sequence, names interned per sequence):
 *   - a TrackDescriptor per process (ProcessDescriptor: pid, process_name) and per track
 *     (ThreadDescriptor: pid, tid, thread_name; a track whose pid or tid is not a number, such
 *     as a GPU's "stream 7", is a named child of its process's track, its id in `description`);
 *   - ranges and device work as TYPE_SLICE_BEGIN/END pairs on their track. Perfetto nests the
 *     slices of a track by time, so ranges of one track that overlap without nesting go to extra
 *     tracks of the same thread ("<name> (overlap N)"), each nested properly;
 *   - instants and "[memory]" events as TYPE_INSTANT; a counter event as one TYPE_COUNTER
 *     packet, its first series on the track "<name> <series>" and the others as extra counter
 *     values; the event name and category are kept on every event (interned: InternedData's
 *     event_names and event_categories, arg keys as debug_annotation_names);
 *   - args as debug annotations (ints, doubles, strings; raw JSON args as legacy_json_value),
 *     the correlation id as the "correlation" annotation and as a flow id linking a launch to
 *     its device work, a range cut by its window's end as "tprof truncated";
 *   - the document's facts (devices, distributedInfo, baseTimeNanoseconds, the tprof object)
 *     as one ChromeMetadata entry "tprof_header", the JSON trace's own header and trailer around
 *     an empty event list, exactly as chrome.c writes them.
 * Timestamps are baseTimeNanoseconds + ts in nanoseconds (the JSON's absolute times). */
#ifndef TP_EXPORT_PERFETTO_H
#define TP_EXPORT_PERFETTO_H

#include "export/chrome.h"
#include "model/model.h"

#include <stddef.h>

/* The metadata entry that holds the JSON header (readers look for this name). */
#define TP_PERFETTO_HEADER "tprof_header"

/* Streams the trace of m through write(ctx, data, len) in chunks of about 1 MB; o as for
 * tp_chrome_write (gzip is ignored: the format is compact already). 0, or -1 when write failed
 * or memory ran out. */
int tp_perfetto_write(const tp_model *m, const tp_chrome_opts *o,
                      int (*write)(void *ctx, const void *data, size_t len), void *ctx);

/* The order the events of m are written in (indices into m->events, all of them): the ranges,
 * track by track in time order, then every other event in the model's. Returns how many of them
 * are ranges. A trace cut short by its deadline (o->deadline_ns) holds the first
 * *o->events_written events of this order, which the caller keeps to describe what it holds. */
size_t tp_perfetto_order(const tp_model *m, size_t *order);

/* The trace of m as the file at path, written atomically (temporary name, then rename). 0, or -1
 * with err = one line naming the path and the reason; nothing is left behind on failure. */
int tp_perfetto_write_file(const tp_model *m, const char *path, const tp_chrome_opts *o, char *err,
                           size_t errlen);

/* A streamed window's trace (`stream: true`, record/window.h's segments), appended segment by
 * segment as the window records, in memory bounded by its tracks and names, not its events:
 * each track's descriptor at its first event, each name interned at its first use (one packet
 * sequence, its incremental state cleared by its first packet only, so an iid holds for the
 * whole file), each range as its begin and end one after the other, on the first lane of its
 * track its nesting fits (ranges come as they end: perfetto.c's slane), counters and instants
 * as the whole window's. After each segment the file is a whole trace: the segment and a
 * provisional header (the tprof object "partial" and "interrupted") in one write, the next
 * segment overwriting that header; named partial_path from the first segment on, renamed to the
 * window's name at its end with the final header. The same events as tp_perfetto_write of the
 * window, in another order (segment by segment) and on other lanes of the same tracks: readers
 * that pair begins and ends by track, in the file's order or by time, read the same ranges. */
typedef struct tp_perfetto_stream tp_perfetto_stream;

/* head: the document's facts known when the window opens (base_ns, rank); o as for
 * tp_perfetto_write, read until the end (its deadline_ns then cuts the last segment). The file is
 * made under a temporary name (O_EXCL|O_NOFOLLOW, util/fs.h). NULL with err = one line naming
 * path and the reason. */
tp_perfetto_stream *tp_perfetto_stream_open(const tp_model *head, const char *path,
                                            const char *partial_path, const tp_chrome_opts *o,
                                            char *err, size_t errlen);
/* Appends segment's events (the caller keeps it). 0, or -1 once the output is lost. */
int tp_perfetto_stream_add(tp_perfetto_stream *s, const tp_model *segment);
/* Appends the last segment and the header (last's facts: devices, partial, dropped events) and
 * renames the file to path (same folder); frees s. events_written (may be NULL): the events
 * written, fewer than recorded when the deadline cut the last segment (then the first ones of
 * last, in its order). 0, or -1 with err filled and nothing left behind. */
int tp_perfetto_stream_end(tp_perfetto_stream *s, const tp_model *last, const char *path,
                           size_t *events_written, char *err, size_t errlen);
/* Removes the file; frees s. */
void tp_perfetto_stream_abort(tp_perfetto_stream *s);

#endif
