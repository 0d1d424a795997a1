/* html_data.c - the report data of inputs (src/report/html.h's tp_html_data): the inputs read
 * as `tprof analyze` reads them, each model also feeding the timeline and memory curve, then
 * rendered by the library's tp_html_data_of, as the default sink renders a run's; and the page
 * around it, written whole or not at all. */
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

int tp_cli_html_analyse(tp_cli_html_run *r, char *const *inputs, size_t n,
                        const tp_cli_html_opts *o) {
    *r = (tp_cli_html_run){.inputs = inputs, .n = n};
    tp_series_init(&r->series);
    r->a = analyse(inputs, o->compare ? 1 : n, o->read, &r->series);
    if (!r->a) return -1;
    if (!o->compare) return 0;
    tp_series ignored; /* side B's timeline is not drawn */
    tp_series_init(&ignored);
    r->b = analyse(inputs + 1, 1, o->read, &ignored);
    tp_series_free(&ignored);
    r->c = r->b ? tp_compare_new(r->a, r->b) : NULL;
    if (r->b && !r->c) tp_cli_error("out of memory");
    return r->c ? 0 : -1;
}

void tp_cli_html_run_free(tp_cli_html_run *r) {
    tp_compare_free(r->c);
    tp_analysis_free(r->b);
    tp_analysis_free(r->a);
    tp_series_free(&r->series);
    *r = (tp_cli_html_run){0};
}

int tp_cli_html_render(tp_buf *out, tp_cli_html_run *r, const tp_cli_html_opts *o) {
    int one_dir = r->n == 1 || o->compare ? tp_run_is_dir(r->inputs[0]) : 0;
    tp_html_extras x = {.title = o->title ? o->title : r->inputs[0],
                        .run_dir = one_dir ? r->inputs[0] : NULL,
                        .artifacts_href = o->artifacts_href,
                        .series = &r->series,
                        .other = r->b,
                        .compare = r->c};
    tp_html_data_of(out, r->a, &x);
    if (!out->failed) return 0;
    tp_cli_error("out of memory");
    return -1;
}

int tp_cli_html_write(const char *output, tp_cli_html_run *r, const tp_cli_html_opts *o) {
    tp_buf page; /* the data is rendered straight into the page */
    tp_buf_init(&page);
    size_t data_start = tp_html_page_open(&page);
    int rc = tp_cli_html_render(&page, r, o) ? TP_EXIT_ERROR : TP_EXIT_OK;
    if (rc == TP_EXIT_OK && tp_html_page_close(&page, data_start))
        rc = tp_cli_error("out of memory");
    if (rc == TP_EXIT_OK) rc = tp_cli_write(output, &page);
    tp_buf_free(&page);
    return rc;
}

int tp_html_data(tp_buf *out, const char *const *inputs, size_t n_inputs, uint64_t max_memory,
                 char *err, size_t errlen) {
    tp_cli_read_opts read;
    tp_cli_read_opts_init(&read);
    read.max_memory = max_memory;
    read.progress = TP_CLI_PROGRESS_OFF;
    tp_cli_html_opts o = {.read = &read};
    tp_cli_html_run r;
    int rc = tp_cli_html_analyse(&r, (char *const *)inputs, n_inputs, &o);
    if (rc == 0) rc = tp_cli_html_render(out, &r, &o);
    if (rc && err && errlen) snprintf(err, errlen, "%s", tp_cli_last_error());
    tp_cli_html_run_free(&r);
    tp_cli_read_opts_free(&read);
    return rc;
}
