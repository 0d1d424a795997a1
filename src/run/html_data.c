/* html_data.c - the report data of inputs (html_data.h): the inputs read as `tprof analyze`
 * reads them (inputs.c), each model also feeding the timeline and memory curve (and with
 * opts.trace the Trace view's ranges), then rendered by
 * tp_html_data_of, as the default sink renders a run's. */
#include "run/html_data.h"

#include "run/rundir.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each model read feeds beside the analysis. */
typedef struct feed {
    tp_series *series;
    tp_trace_view *trace; /* NULL: no Trace view */
} feed;

static void feed_model(void *ctx, const tp_model *m) {
    const feed *f = ctx;
    tp_series_add_model(f->series, m);
    if (f->trace) tp_trace_view_add_model(f->trace, m);
}

/* The analysis of inputs with its series (and ranges); NULL with the error in err. */
static tp_analysis *analyse(char *const *inputs, size_t n, const tp_inputs_opts *r, feed f,
                            char *err, size_t errlen) {
    tp_inputs_opts with = *r;
    with.on_model = feed_model;
    with.on_model_ctx = &f;
    with.keep_args = f.trace != NULL; /* the Trace view shows every arg of a range */
    return tp_inputs_analyse(inputs, n, &with, err, errlen);
}

int tp_run_html_analyse(tp_run_html *r, char *const *inputs, size_t n, const tp_run_html_opts *o,
                        char *err, size_t errlen) {
    *r = (tp_run_html){.inputs = inputs, .n = n};
    tp_series_init(&r->series);
    tp_series_init(&r->series_b);
    tp_trace_view_init(&r->trace);
    r->has_trace = o->trace;
    feed fa = {&r->series, o->trace ? &r->trace : NULL}, fb = {&r->series_b, NULL};
    tp_inputs_opts read = *o->read;
    if (o->compare) read.stages_of = inputs, read.nstages_of = 2; /* both sides' stages */
    r->a = analyse(inputs, o->compare ? 1 : n, &read, fa, err, errlen);
    if (!r->a) return -1;
    if (!o->compare) return 0;
    r->b = analyse(inputs + 1, 1, &read, fb, err, errlen);
    r->c = r->b ? tp_compare_new(r->a, r->b) : NULL;
    if (r->b && !r->c) snprintf(err, errlen, "out of memory");
    return r->c ? 0 : -1;
}

void tp_run_html_free(tp_run_html *r) {
    tp_compare_free(r->c);
    tp_analysis_free(r->b);
    tp_analysis_free(r->a);
    tp_series_free(&r->series);
    tp_series_free(&r->series_b);
    tp_trace_view_free(&r->trace);
    *r = (tp_run_html){0};
}

int tp_run_html_render(tp_buf *out, tp_run_html *r, const tp_run_html_opts *o) {
    int one_dir = r->n == 1 || o->compare ? tp_run_is_dir(r->inputs[0]) : 0;
    char *files = one_dir ? tp_run_files_dir(r->inputs[0]) : NULL; /* its tprof/ folder */
    if (one_dir && !files) return -1;
    tp_html_extras x = {.title = o->title ? o->title : r->inputs[0],
                        .run_dir = files,
                        .artifacts_href = o->artifacts_href,
                        .series = &r->series,
                        .series_b = r->b ? &r->series_b : NULL,
                        .other = r->b,
                        .compare = r->c,
                        .trace = r->has_trace ? &r->trace : NULL};
    tp_html_data_of(out, r->a, &x);
    free(files);
    return out->failed ? -1 : 0;
}

/* What `tprof serve` asks of a run (or a pair): the report data, or the Trace view alone. */
static int served(tp_buf *out, const char *const *inputs, size_t n_inputs, int compare, int trace,
                  uint64_t max_memory, char *err, size_t errlen) {
    tp_inputs_opts read;
    tp_inputs_opts_init(&read);
    read.max_memory = max_memory;
    read.progress = TP_INPUTS_PROGRESS_OFF;
    /* The dashboard links a run's files from runs/<run>/: they are in its tprof/ folder, when it
     * has one. */
    char *files = n_inputs ? tp_run_files_dir(inputs[0]) : NULL;
    int sub = files && strcmp(files, inputs[0]) != 0;
    free(files);
    tp_run_html_opts o = {.read = &read,
                          .compare = compare,
                          .trace = trace,
                          .artifacts_href = sub ? TP_RUN_FILES_DIR "/" : ""};
    tp_run_html r;
    char raw[1024], line[1024];
    int rc = tp_run_html_analyse(&r, (char *const *)inputs, n_inputs, &o, raw, sizeof(raw));
    if (rc == 0 && trace) {
        TP_BUF_LIT(out, "{\"trace\":");
        tp_trace_view_json(out, &r.trace);
        TP_BUF_LIT(out, "}\n");
    } else if (rc == 0) {
        tp_run_html_render(out, &r, &o);
    }
    if (rc == 0 && out->failed) {
        snprintf(raw, sizeof(raw), "out of memory");
        rc = -1;
    }
    if (rc) tp_log_escape(line, sizeof(line), raw);
    if (rc && err && errlen) snprintf(err, errlen, "%s", line);
    tp_run_html_free(&r);
    return rc;
}

int tp_html_data(tp_buf *out, const char *const *inputs, size_t n_inputs, int compare,
                 uint64_t max_memory, char *err, size_t errlen) {
    return served(out, inputs, n_inputs, compare, 0, max_memory, err, errlen);
}

int tp_html_trace(tp_buf *out, const char *const *inputs, size_t n_inputs, uint64_t max_memory,
                  char *err, size_t errlen) {
    return served(out, inputs, n_inputs, 0, 1, max_memory, err, errlen);
}
