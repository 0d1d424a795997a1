/* csv.c - the analysis as CSV (RFC 4180): `tprof analyze --csv` and the op_stats.csv artifact.
 *
 * Times are microseconds with nanosecond precision, as in the JSON; an empty field is a figure
 * that does not apply to the row's kind. Columns are only ever added at the end (flops_fcm was),
 * so readers by position keep working. */
#include "report/report.h"

#include "report/columns.h"

#include <string.h>

/* A field, quoted when it holds a comma, a quote or a line break (quotes doubled); bytes that
 * are not UTF-8 become U+FFFD, as in the JSON outputs and the traces. */
static void field(tp_buf *out, const char *s) {
    if (!strpbrk(s, ",\"\r\n")) {
        tp_buf_utf8(out, s, strlen(s));
        return;
    }
    tp_buf_putc(out, '"');
    for (const char *quote; (quote = strchr(s, '"')); s = quote + 1) {
        tp_buf_utf8(out, s, (size_t)(quote - s) + 1);
        tp_buf_putc(out, '"');
    }
    tp_buf_utf8(out, s, strlen(s));
    tp_buf_putc(out, '"');
}

static void sep_us(tp_buf *out, int64_t ns) {
    tp_buf_putc(out, ',');
    tp_buf_us(out, ns);
}

static void sep_u64(tp_buf *out, uint64_t v) {
    tp_buf_putc(out, ',');
    tp_buf_u64(out, v);
}

static void sep_double(tp_buf *out, double v) {
    tp_buf_putc(out, ',');
    if (v >= 0) tp_buf_double(out, v);
}

/* The header line: the names of n columns. */
static void header(tp_buf *out, const char *const *cols, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (i) tp_buf_putc(out, ',');
        tp_buf_puts(out, cols[i]);
    }
    TP_BUF_LIT(out, "\r\n");
}

/* [kind,]name,calls,total_us: the columns every row starts with. */
static void lead(tp_buf *out, const char *kind, const char *name, uint64_t calls, int64_t total) {
    if (kind) {
        tp_buf_puts(out, kind);
        tp_buf_putc(out, ',');
    }
    field(out, name);
    sep_u64(out, calls);
    sep_us(out, total);
}

/* ,mean_us,min_us,max_us */
static void spread(tp_buf *out, uint64_t calls, int64_t total, int64_t min, int64_t max) {
    sep_us(out, tp_mean_ns(total, calls));
    sep_us(out, min);
    sep_us(out, max);
}

/* [kind,]name,calls,total_us,self_us,mean_us,min_us,max_us of an op: both files have these. */
static void op_columns(tp_buf *out, const char *kind, const tp_op_row *r) {
    lead(out, kind, r->name, r->calls, r->total_ns);
    sep_us(out, r->self_ns);
    spread(out, r->calls, r->total_ns, r->min_ns, r->max_ns);
}

void tp_report_csv(tp_buf *out, const tp_analysis *a, const tp_report_opts *o) {
    static const char *const cols[] = {tp_col_kind, tp_col_name,  tp_col_calls,    tp_col_total,
                                       tp_col_self, tp_col_mean,  tp_col_min,      tp_col_max,
                                       tp_col_pct,  tp_col_flops, tp_col_flops_fcm};
    header(out, cols, sizeof(cols) / sizeof(cols[0]));
    for (size_t i = 0; i < tp_report_rows(o, a->nops); i++) {
        op_columns(out, "op", &a->ops[i]);
        sep_double(out, a->ops[i].self_pct);
        sep_double(out, a->ops[i].flops);
        sep_double(out, a->ops[i].fcm_flops);
        TP_BUF_LIT(out, "\r\n");
    }
    for (size_t i = 0; i < tp_report_rows(o, a->nkernels); i++) {
        const tp_kernel_row *r = &a->kernels[i];
        lead(out, "kernel", r->name, r->calls, r->total_ns);
        tp_buf_putc(out, ','); /* no self time */
        spread(out, r->calls, r->total_ns, r->min_ns, r->max_ns);
        sep_double(out, r->pct);
        TP_BUF_LIT(out, ",,\r\n"); /* no FLOPs */
    }
    for (size_t st = 0; st <= a->nstages; st++) {
        /* the stages, then "other" (kind other: its count is the steps) */
        const tp_stage_row *r = st < a->nstages ? &a->stages[st] : &a->other;
        lead(out, st < a->nstages ? "stage" : "other", r->name, r->count, r->total_ns);
        tp_buf_putc(out, ',');
        if (r->count)
            spread(out, r->count, r->total_ns, r->min_ns, r->max_ns);
        else
            TP_BUF_LIT(out, ",,,");
        sep_double(out, r->pct);
        TP_BUF_LIT(out, ",,\r\n");
    }
}

void tp_report_op_stats_csv(tp_buf *out, const tp_analysis *a) {
    static const char *const cols[] = {tp_col_name, tp_col_calls, tp_col_total,
                                       tp_col_self, tp_col_mean,  tp_col_min,
                                       tp_col_max,  tp_col_flops, tp_col_flops_fcm};
    header(out, cols, sizeof(cols) / sizeof(cols[0]));
    for (size_t i = 0; i < a->nops; i++) {
        op_columns(out, NULL, &a->ops[i]);
        tp_buf_putc(out, ',');
        tp_buf_double(out, a->ops[i].flops);
        tp_buf_putc(out, ',');
        tp_buf_double(out, a->ops[i].fcm_flops);
        TP_BUF_LIT(out, "\r\n");
    }
}
