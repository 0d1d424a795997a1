/* series.h - what the HTML report draws beside the analysis' figures: a timeline and the
 * allocated-memory curve of each device, collected from event models and bounded in size.
 *
 * The analysis keeps aggregates only; the report's Timeline and Memory views need positions in
 * time. A tp_series is fed every model the analysis is fed (the windows of a run, the files of
 * `tprof report`) and keeps, whatever the input's size:
 *  - of the step ranges, and of the other host ranges and device work, the TP_SERIES_RANGES
 *    longest each (all of them when there are fewer), on lanes of one thread or GPU stream
 *    each (only the lanes of kept ranges are written);
 *  - for each device, the points of its [memory] events (allocated bytes over time), written
 *    down-sampled to at most TP_SERIES_MEM_POINTS per device keeping each bucket's highest,
 *    for the first TP_SERIES_MEM_DEVICES devices.
 * Invariant: steps[0..nsteps) and heap[0..nheap) are min-heaps by duration of at most
 * TP_SERIES_RANGES ranges each. */
#ifndef TP_REPORT_SERIES_H
#define TP_REPORT_SERIES_H

#include "model/model.h"
#include "model/strtab.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define TP_SERIES_RANGES      4000
#define TP_SERIES_MEM_POINTS  1500
#define TP_SERIES_MEM_DEVICES 16

typedef struct tp_series_range {
    int64_t start_ns, dur_ns; /* absolute start (base_ns + ts) */
    tp_str name;              /* in tp_series.names */
    uint32_t lane;
    uint8_t kind; /* tp_kind */
    uint8_t step; /* a ProfilerStep#<n> range */
} tp_series_range;

typedef struct tp_series_point {
    int64_t ts_ns; /* absolute */
    int64_t bytes; /* the event's Bytes (negative for a free) */
    int64_t total; /* Total Allocated, when has_total */
    int has_total;
} tp_series_point;

typedef struct tp_series_mem {
    int64_t device_type, device_id;
    tp_series_point *points;
    size_t n, cap;
} tp_series_mem;

typedef struct tp_series {
    tp_strtab names; /* the kept ranges' names, each once */
    char **lanes;    /* "pid 12 / thread 34 (name)", "GPU 0 / stream 7" */
    size_t nlanes, cap_lanes;
    tp_series_range *steps; /* the longest steps */
    size_t nsteps, cap_steps;
    uint64_t steps_seen;   /* all steps offered */
    tp_series_range *heap; /* the longest other ranges */
    size_t nheap, cap_heap;
    uint64_t ranges_seen; /* all non-step ranges offered */
    tp_series_mem *mem;
    size_t nmem, cap_mem;
    int failed; /* out of memory: the series are partial */
} tp_series;

void tp_series_init(tp_series *s);
/* Frees what s holds and zeroes it (a zeroed series may be freed, not fed). */
void tp_series_free(tp_series *s);
/* Adds a model's ranges and memory events (the model may be freed afterwards). */
void tp_series_add_model(tp_series *s, const tp_model *m);
/* The JSON object {"lanes": [...], "names": [...], "steps": [...], "ranges": [...] (each
 * [lane, start_us, dur_us, index in names, "cpu" or "gpu"]), "steps_total": N, "ranges_total":
 * N, "partial", "memory_total": devices, "memory": [{"device_type", "device_id", "points":
 * [[ts_us, bytes], ...]}]}, each string cut to max_str bytes (tp_jw_cut; 0: whole). It sorts
 * the kept ranges by start: no model may be added after it, but it may be written again. */
void tp_series_json(tp_buf *out, tp_series *s, size_t max_str);
/* A track's lane label, in out[0..n): "pid P / thread T (name)" for a host thread, "GPU P /
 * stream T" for a device (the Trace view's lanes too: trace_view.h). */
void tp_series_lane_label(const tp_model *m, const tp_track *t, int device, char *out, size_t n);

#endif
