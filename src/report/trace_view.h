/* trace_view.h - what the report's Trace view draws: every range of the models fed (host ranges,
 * kernels, copies, sets, GPU annotations), each on the lane of its thread or GPU stream (one set
 * of lanes per model: a rank, a window), at its depth of nesting, written as columns.
 *
 * Unlike the timeline's series (series.h), nothing is sampled: the view holds every range, and
 * the page chooses what to draw by zoom. Its bounds, both documented in docs/REPORT.md ("Trace
 * view"), cut by time or leave args out, never drop a range in the middle of the window:
 *  - at most TP_TRACE_VIEW_EVENTS ranges, the earliest by start: past it, the ranges starting
 *    at or after `cut_ns` are left out (counted in `seen`);
 *  - the args of a range (as a JSON object text, the same text kept once) while their distinct
 *    texts take at most TP_TRACE_VIEW_ARGS_MAX bytes; past it a range keeps no args
 *    (`args_left_out` counts them);
 *  - names (each kept once) while they take at most TP_TRACE_VIEW_NAMES_MAX bytes; past it a
 *    new name is TP_TRACE_VIEW_NAME_LEFT (`names_left_out` counts the ranges so named); in the
 *    page each name and lane label takes at most TP_TRACE_VIEW_NAME_MAX bytes (tp_jw_cut).
 * So the view's part of the page is bounded whatever the input: six numbers for each of at most
 * 2 M ranges (about 22 bytes a range on real traces), 16 MB of args, 8 MB of names.
 * Invariant: n <= 2 * TP_TRACE_VIEW_EVENTS; every kept range starts before cut_ns. */
#ifndef TP_REPORT_TRACE_VIEW_H
#define TP_REPORT_TRACE_VIEW_H

#include "model/model.h"
#include "model/strtab.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define TP_TRACE_VIEW_EVENTS    (1u << 21) /* 2,097,152 ranges */
#define TP_TRACE_VIEW_ARGS_MAX  (16u << 20)
#define TP_TRACE_VIEW_NAMES_MAX (8u << 20)
#define TP_TRACE_VIEW_NAME_MAX  256
#define TP_TRACE_VIEW_NAME_LEFT "(name not kept: past the Trace view's bound)"

typedef struct tp_tv_range {
    int64_t start_ns, dur_ns; /* absolute start (base_ns + ts) */
    uint64_t corr;            /* correlation id (launch <-> device work), within its model */
    tp_str name;              /* in tp_trace_view.names */
    tp_str args;              /* in tp_trace_view.args; TP_STR_EMPTY: none kept */
    uint32_t lane;
    uint32_t ext; /* External id (op <-> its launches and device work) */
} tp_tv_range;

typedef struct tp_tv_lane {
    char *label;      /* "rank 1 / pid 12 / thread 34 (name)", "GPU 0 / stream 7" */
    uint32_t model;   /* the model it came from: links join ranges of one model only */
    int device;       /* a GPU stream (drawn after the host threads of its model) */
    int64_t pid, tid; /* its order within the model */
} tp_tv_lane;

typedef struct tp_trace_view {
    tp_strtab names, args;
    tp_tv_lane *lanes;
    size_t nlanes, cap_lanes;
    tp_tv_range *r;
    size_t n, cap;
    uint64_t seen;           /* ranges offered */
    uint64_t args_left_out;  /* ranges kept without their args (TP_TRACE_VIEW_ARGS_MAX) */
    uint64_t names_left_out; /* ranges named TP_TRACE_VIEW_NAME_LEFT (TP_TRACE_VIEW_NAMES_MAX) */
    int64_t cut_ns;          /* INT64_MAX, or the start from which ranges were left out */
    uint32_t nmodels;
    int failed; /* out of memory: the view is partial */
} tp_trace_view;

void tp_trace_view_init(tp_trace_view *v);
void tp_trace_view_free(tp_trace_view *v);
/* Adds a model's ranges (the model may be freed afterwards). */
void tp_trace_view_add_model(tp_trace_view *v, const tp_model *m);
/* Appends the JSON object of the view (docs/REPORT.md, "Trace view"). The ranges come out by
 * lane, depth and start: every row (a lane's depth) is a contiguous run, its starts
 * delta-coded. */
void tp_trace_view_json(tp_buf *out, const tp_trace_view *v);

#endif
