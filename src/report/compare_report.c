/* compare_report.c - a tp_compare as text, Markdown (one tp_doc) and JSON. */
#include "report/report.h"

#include "report/doc.h"
#include "report/format.h"
#include "report/jsonw.h"

#include <math.h>
#include <string.h>

static const char *status_name(tp_delta_status s) {
    return s == TP_DELTA_ADDED ? "added" : s == TP_DELTA_REMOVED ? "removed" : "changed";
}

static const char *side_path(const tp_analysis *x) {
    return x->input_path && *x->input_path ? x->input_path : "(recorded run)";
}

/* The cells of one row: name, A, B, change, change %, and added/removed. */
static void delta_cells(tp_doc *d, const tp_delta_row *r) {
    tp_doc_cell(d, "%s", r->name);
    tp_doc_cell(d, "%s", r->status == TP_DELTA_ADDED ? "-" : tp_fmt_dur(r->a_ns).s);
    tp_doc_cell(d, "%s", r->status == TP_DELTA_REMOVED ? "-" : tp_fmt_dur(r->b_ns).s);
    tp_doc_cell(d, "%s", tp_fmt_delta(r->delta_ns).s);
    tp_doc_cell(d, "%s", tp_fmt_change(r->delta_pct).s);
    tp_doc_cell(d, "%s", r->status == TP_DELTA_CHANGED ? "" : status_name(r->status));
}

static void delta_table(tp_doc *d, const char *what, const char *measure, const tp_delta_row *rows,
                        size_t n, size_t added, size_t removed, const tp_report_opts *o) {
    tp_doc_heading(d, "%ss by change in %s (top %zu of %zu; %zu added, %zu removed)", what, measure,
                   tp_report_rows(o, n), n, added, removed);
    if (!n) {
        tp_doc_line(d, "n/a: no %ss on either side", what);
        return;
    }
    const char *head[] = {what, "A", "B", "change", "change %", ""};
    static const unsigned flags[] = {TP_COL_NAME,  TP_COL_RIGHT, TP_COL_RIGHT,
                                     TP_COL_RIGHT, TP_COL_RIGHT, 0};
    tp_doc_table(d, 6, head, flags);
    for (size_t i = 0; i < tp_report_rows(o, n); i++) {
        delta_cells(d, &rows[i]);
    }
}

/* Every stage and other, per step, in definition order. */
static void stage_table(tp_doc *d, const tp_compare *c) {
    if (!c->nstages) return;
    tp_doc_heading(d, "Stages (time per step)");
    static const char *const head[] = {"stage", "A", "B", "change", "change %", ""};
    static const unsigned flags[] = {0, TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT, 0};
    tp_doc_table(d, 6, head, flags);
    for (size_t i = 0; i < c->nstages; i++) {
        delta_cells(d, &c->stages[i]);
    }
}

static int has_warning(const tp_analysis *x, const char *line) {
    for (size_t i = 0; i < x->nwarnings; i++)
        if (strcmp(x->warnings[i], line) == 0) return 1;
    return 0;
}

/* Each side's warnings (dropped events, partial windows, the stages taken), a line both sides
 * say once. */
static void warnings(tp_doc *d, const tp_compare *c) {
    if (!c->a->nwarnings && !c->b->nwarnings) return;
    tp_doc_heading(d, "Warnings");
    for (size_t i = 0; i < c->a->nwarnings; i++)
        tp_doc_line(d, "%s: %s", has_warning(c->b, c->a->warnings[i]) ? "A, B" : "A",
                    c->a->warnings[i]);
    for (size_t i = 0; i < c->b->nwarnings; i++)
        if (!has_warning(c->a, c->b->warnings[i])) tp_doc_line(d, "B: %s", c->b->warnings[i]);
}

typedef struct compare_args {
    const tp_compare *c;
    const tp_report_opts *o;
} compare_args;

static void build(tp_doc *d, const void *arg) {
    const tp_compare *c = ((const compare_args *)arg)->c;
    const tp_report_opts *o = ((const compare_args *)arg)->o;
    tp_doc_title(d, "%s", o && o->title ? o->title : "tprof compare");
    tp_doc_line(d, "A: %s (%zu steps)", side_path(c->a), c->a->nsteps);
    tp_doc_line(d, "B: %s (%zu steps)", side_path(c->b), c->b->nsteps);
    if (isnan(c->step_change_pct))
        tp_doc_line(d, "mean step time: n/a (%s has no ProfilerStep#<n> ranges)",
                    c->a->nsteps ? "B" : "A");
    else
        tp_doc_line(d, "mean step time: A %s, B %s, change %s", tp_fmt_dur(c->a_mean_ns).s,
                    tp_fmt_dur(c->b_mean_ns).s, tp_fmt_change(c->step_change_pct).s);
    warnings(d, c);
    stage_table(d, c);
    delta_table(d, "op", "self time", c->ops, c->nops, c->ops_added, c->ops_removed, o);
    delta_table(d, "kernel", "total time", c->kernels, c->nkernels, c->kernels_added,
                c->kernels_removed, o);
}

void tp_report_compare_text(tp_buf *out, const tp_compare *c, const tp_report_opts *o) {
    tp_doc_write(out, TP_DOC_TEXT, build, &(compare_args){c, o});
}

void tp_report_compare_markdown(tp_buf *out, const tp_compare *c, const tp_report_opts *o) {
    tp_doc_write(out, TP_DOC_MARKDOWN, build, &(compare_args){c, o});
}

static void side(tp_jw *w, const char *key, const tp_analysis *x, int64_t mean_ns) {
    tp_jw_object(w, key);
    tp_jw_str(w, "path", x->input_path ? x->input_path : "");
    tp_jw_u64(w, "steps", x->nsteps);
    tp_jw_us_opt(w, "mean_step_us", x->nsteps ? mean_ns : -1);
    tp_jw_array(w, "warnings");
    for (size_t i = 0; i < x->nwarnings; i++)
        tp_jw_str(w, NULL, x->warnings[i]);
    tp_jw_end_array(w);
    tp_jw_end_object(w);
}

static void delta_rows(tp_jw *w, const char *key, const tp_delta_row *rows, size_t n,
                       const tp_report_opts *o) {
    tp_jw_array(w, key);
    for (size_t i = 0; i < tp_report_rows(o, n); i++) {
        const tp_delta_row *r = &rows[i];
        tp_jw_object(w, NULL);
        tp_jw_str(w, "name", r->name);
        tp_jw_str(w, "status", status_name(r->status));
        tp_jw_u64(w, "a_calls", r->a_calls);
        tp_jw_u64(w, "b_calls", r->b_calls);
        tp_jw_us(w, "a_us", r->a_ns);
        tp_jw_us(w, "b_us", r->b_ns);
        tp_jw_us(w, "delta_us", r->delta_ns);
        tp_jw_double(w, "delta_pct", r->delta_pct); /* NaN is written as null */
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
}

void tp_report_compare_json(tp_buf *out, const tp_compare *c, const tp_report_opts *o) {
    tp_jw w;
    tp_jw_begin_report(&w, out);
    w.max_str = o ? o->max_str : 0;
    side(&w, "a", c->a, c->a_mean_ns);
    side(&w, "b", c->b, c->b_mean_ns);
    tp_jw_double(&w, "step_change_pct", c->step_change_pct);
    delta_rows(&w, "stages", c->stages, c->nstages, &(tp_report_opts){.top_k = c->nstages + 1});
    delta_rows(&w, "ops", c->ops, c->nops, o);
    tp_jw_u64(&w, "ops_added", c->ops_added);
    tp_jw_u64(&w, "ops_removed", c->ops_removed);
    delta_rows(&w, "kernels", c->kernels, c->nkernels, o);
    tp_jw_u64(&w, "kernels_added", c->kernels_added);
    tp_jw_u64(&w, "kernels_removed", c->kernels_removed);
    tp_jw_end_report(&w, o ? o->extra_json : NULL);
}
