/* report.h - an analysis rendered for people and programs.
 *
 * The same renderers print the library's console summary and `tprof analyze`'s output, and write
 * the run artifacts derived from an analysis (op_stats.csv, stage_times.json, summary.json), so
 * every view of a run agrees. Output goes into a tp_buf; callers write it where they need. */
#ifndef TP_REPORT_REPORT_H
#define TP_REPORT_REPORT_H

#include "analysis/analysis.h"
#include "analysis/compare.h"
#include "util/buf.h"

/* What each FLOP figure counts (docs/METRICS.md, "FLOPs by two conventions"), said next to it
 * in JSON and text. */
#define TP_FLOPS_NOTE                                                                              \
    "torch.profiler's (with_flops, key_averages()): forward aten::conv2d, mm, addmm, bmm, "        \
    "baddbmm, mul, add; no backward convolution"
#define TP_FLOPS_FCM_NOTE                                                                          \
    "FlopCounterMode's (torch.utils.flop_counter): forward and backward aten::convolution, "       \
    "convolution_backward, mm, addmm, bmm, baddbmm, scaled dot-product attention; no "             \
    "elementwise ops"

typedef struct tp_report_opts {
    size_t top_k;           /* rows per table; 0 means 10 */
    const char *title;      /* first line of text/markdown reports; NULL for a default */
    const char *extra_json; /* JSON object members ("\"run\": {...}") added at the top level of
                               tp_report_json's object; NULL for none */
    /* The HTML report's bounds on its JSON (docs/REPORT.md, "Size and time"); 0: none, as analyze.
     */
    size_t max_str;  /* bytes of a string or key (tp_jw_cut) */
    size_t max_list; /* rows of the lists that grow with the input: steps, ranks, devices... */
} tp_report_opts;

/* Rows a table shows: top_k (10 when 0), at most `available`. */
static inline size_t tp_report_rows(const tp_report_opts *o, size_t available) {
    size_t k = o && o->top_k ? o->top_k : 10;
    return k < available ? k : available;
}

/* Rows of a list of `available` that grows with the input: max_list (all when 0) at most. */
static inline size_t tp_report_list(const tp_report_opts *o, size_t available) {
    return o && o->max_list && o->max_list < available ? o->max_list : available;
}
/* The step between the rows kept of such a list when every k-th is (the first included): 1, or
 * the smallest that keeps at most max_list. */
static inline size_t tp_report_stride(const tp_report_opts *o, size_t available) {
    size_t k = tp_report_list(o, available);
    return k < available ? (available + k - 1) / k : 1;
}

/* The readable report: steps, stages, top ops, top kernels, GPU, memory, FLOPs, warnings and
 * recommendations. */
void tp_report_text(tp_buf *out, const tp_analysis *a, const tp_report_opts *o);
/* The stable keys of docs/SEMANTICS.md §4 (documented in docs/ANALYZE_JSON.md), plus extras. */
void tp_report_json(tp_buf *out, const tp_analysis *a, const tp_report_opts *o);
void tp_report_markdown(tp_buf *out, const tp_analysis *a, const tp_report_opts *o);
/* One CSV table: kind,name,calls,total_us,self_us,mean_us,min_us,max_us,pct,flops with kind
 * op, kernel or stage (top_k rows of each). */
void tp_report_csv(tp_buf *out, const tp_analysis *a, const tp_report_opts *o);
/* Folded stacks of the Python time (`tprof analyze --folded`, report/stacks_report.c): one line
 * "frame;frame;... microseconds" per stack; nothing when no input had python_function ranges. */
void tp_report_folded(tp_buf *out, const tp_analysis *a);

/* Run artifacts. op_stats.csv: every op, name,calls,total_us,self_us,mean_us,min_us,max_us,flops.
 * stage_times.json: per stage count/total/mean/p50/p95/max/pct and per step the stage times. */
void tp_report_op_stats_csv(tp_buf *out, const tp_analysis *a);
void tp_report_stage_times_json(tp_buf *out, const tp_analysis *a);

/* `tprof compare A B` (docs/SEMANTICS.md §5): mean step time and its change, then the ops and
 * kernels whose time changed most (top_k rows each), added and removed ones marked. */
void tp_report_compare_text(tp_buf *out, const tp_compare *c, const tp_report_opts *o);
void tp_report_compare_markdown(tp_buf *out, const tp_compare *c, const tp_report_opts *o);
void tp_report_compare_json(tp_buf *out, const tp_compare *c, const tp_report_opts *o);

#endif
