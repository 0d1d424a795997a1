/* html_data.c - the report data of inputs (src/report/html.h's tp_html_data): the inputs read
 * as `tprof analyze` reads them, each model also feeding the timeline and memory curve, then
 * rendered by the library's tp_html_data_of, as the default sink renders a run's. */
#include "cli/html_data.h"

#include "cli/rundir.h"

#include <stdio.h>
#include <string.h>

static void series_of_model(void *ctx, const tp_model *m) {
    tp_series_add_model(ctx, m);
}

/* The analysis of inputs with its series; NULL after the error was printed. */
static tp_analysis *analyse(char *const *inputs, size_t n, const tp_cli_read_opts *r,
                            tp_series *series) {
    tp_cli_read_opts with = *r;
    with.on_model = series_of_model;
    with.on_model_ctx = series;
    return tp_cli_analyse(inputs, n, &with);
}

int tp_cli_html_data(tp_buf *out, char *const *inputs, size_t n, const tp_cli_html_opts *o) {
    tp_series series;
    tp_series_init(&series);
    tp_analysis *a = analyse(inputs, o->compare ? 1 : n, o->read, &series), *b = NULL;
    tp_compare *c = NULL;
    int rc = a ? 0 : -1;
    if (a && o->compare) {
        tp_series ignored; /* side B's timeline is not drawn */
        tp_series_init(&ignored);
        b = analyse(inputs + 1, 1, o->read, &ignored);
        tp_series_free(&ignored);
        c = b ? tp_compare_new(a, b) : NULL;
        if (b && !c) tp_cli_error("out of memory");
        rc = c ? 0 : -1;
    }
    if (rc == 0) {
        int one_dir = n == 1 || o->compare ? tp_run_is_dir(inputs[0]) : 0;
        tp_html_extras x = {.title = o->title ? o->title : inputs[0],
                            .run_dir = one_dir ? inputs[0] : NULL,
                            .artifacts_href = o->artifacts_href,
                            .series = &series,
                            .other = b,
                            .compare = c};
        tp_html_data_of(out, a, &x);
        if (out->failed) rc = tp_cli_error("out of memory");
    }
    tp_compare_free(c);
    tp_analysis_free(b);
    tp_analysis_free(a);
    tp_series_free(&series);
    return rc;
}

int tp_html_data(tp_buf *out, const char *const *inputs, size_t n_inputs, uint64_t max_memory,
                 char *err, size_t errlen) {
    tp_cli_read_opts r;
    tp_cli_read_opts_init(&r);
    r.max_memory = max_memory;
    r.progress = TP_CLI_PROGRESS_OFF;
    tp_cli_html_opts o = {.read = &r};
    int rc = tp_cli_html_data(out, (char *const *)inputs, n_inputs, &o);
    if (rc && err && errlen) snprintf(err, errlen, "%s", tp_cli_last_error());
    tp_cli_read_opts_free(&r);
    return rc;
}
