/* modules_report.c - the module tree rendered (report/modules.h, docs/ANALYZE_JSON.md
 * "modules", docs/REPORT.md "Modules"): nodes depth first, so that a list cut short still
 * holds every shown node's ancestors. */
#include "report/modules.h"

#include "analysis/modules.h"
#include "report/format.h"

#include <stdio.h>
#include <string.h>

/* The ops of the node at row, from *k on in ops_order (ops come grouped by node, in the nodes'
 * order); *k is left after them. */
static void node_ops(tp_jw *w, const tp_modules *t, size_t row, size_t *k, size_t max) {
    tp_jw_array(w, "ops");
    for (size_t shown = 0; *k < t->nops && t->ops[t->ops_order[*k]].module == row; ++*k) {
        const tp_module_op *op = &t->ops[t->ops_order[*k]];
        if (max && shown++ >= max) continue;
        tp_jw_object(w, NULL);
        tp_jw_str(w, "name", op->name);
        tp_jw_str(w, "pass", op->backward ? "backward" : "forward");
        tp_jw_u64(w, "calls", op->calls);
        tp_jw_us(w, "total_us", op->total_ns);
        tp_jw_double(w, "flops", op->flops);
        tp_jw_us(w, "gpu_us", op->gpu_ns);
        tp_jw_u64(w, "kernels", op->kernels);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
}

static void node(tp_jw *w, const tp_modules *t, const tp_module_row *r) {
    tp_jw_str(w, "name", r->name);
    if (r->parent == SIZE_MAX)
        tp_jw_null(w, "parent");
    else
        tp_jw_u64(w, "parent", t->rows[r->parent].pos);
    tp_jw_u64(w, "depth", r->depth);
    tp_jw_u64(w, "calls", r->calls);
    tp_jw_us(w, "forward_us", r->fwd_ns);
    tp_jw_us(w, "forward_self_us", r->fwd_self_ns);
    tp_jw_u64(w, "backward_calls", r->bwd_calls);
    tp_jw_us(w, "backward_us", r->bwd_ns);
    tp_jw_us(w, "backward_self_us", r->bwd_self_ns);
    tp_jw_double(w, "flops", r->flops);
    tp_jw_double(w, "flops_self", r->flops_self);
    tp_jw_us(w, "gpu_us", r->gpu_ns);
    tp_jw_us(w, "gpu_self_us", r->gpu_self_ns);
    tp_jw_u64(w, "kernels", r->kernels);
}

void tp_report_modules_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    const tp_modules *t = a->modules;
    if (!t || !t->n || !t->order || !t->ops_order) return;
    size_t n = tp_report_list(o, t->n), k = 0;
    tp_jw_object(w, "modules");
    tp_jw_u64(w, "nodes_total", t->n);
    tp_jw_u64(w, "unlinked_backward_calls", t->bwd_unlinked);
    tp_jw_us(w, "unlinked_backward_us", t->bwd_unlinked_ns);
    tp_jw_array(w, "nodes");
    for (size_t i = 0; i < n; i++) {
        const tp_module_row *r = &t->rows[t->order[i]];
        tp_jw_object(w, NULL);
        node(w, t, r);
        node_ops(w, t, t->order[i], &k, o ? o->max_list : 0);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
    tp_jw_end_object(w);
}

void tp_report_modules_text(tp_doc *d, const tp_analysis *a) {
    const tp_modules *t = a->modules;
    if (!t || !t->n || !t->order) return;
    static const char *const head[] = {"module",   "calls",    "forward", "fwd self",
                                       "backward", "bwd self", "FLOPs",   "GPU"};
    static const unsigned flags[] = {TP_COL_NAME,  TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT,
                                     TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
    tp_doc_heading(d, "Modules");
    tp_doc_table(d, 8, head, flags);
    size_t n = t->n < TP_MODULES_SHOWN ? t->n : TP_MODULES_SHOWN;
    for (size_t i = 0; i < n; i++) {
        const tp_module_row *r = &t->rows[t->order[i]];
        /* two no-break spaces a level: Markdown keeps them where it trims spaces */
        static const char nbsp[] = "\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0"
                                   "\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0\u00a0";
        size_t levels = r->depth < 8 ? r->depth : 8;
        tp_doc_cell(d, "%.*s%s", (int)(levels * 2 * 2), nbsp, r->name);
        tp_doc_cell(d, "%llu", (unsigned long long)r->calls);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->fwd_ns).s);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->fwd_self_ns).s);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->bwd_ns).s);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->bwd_self_ns).s);
        tp_doc_cell(d, "%s", r->flops > 0 ? tp_fmt_si(r->flops, "FLOP").s : "-");
        tp_doc_cell(d, "%s", r->kernels ? tp_fmt_dur(r->gpu_ns).s : "-");
    }
    if (t->n > n) tp_doc_line(d, "%zu more modules: see modules in --json", t->n - n);
    if (t->bwd_unlinked)
        tp_doc_line(d, "%llu backward calls (%s) have no forward op inside a module",
                    (unsigned long long)t->bwd_unlinked, tp_fmt_dur(t->bwd_unlinked_ns).s);
}
