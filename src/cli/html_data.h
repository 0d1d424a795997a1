/* html_data.h - the report data of the tprof command's inputs, with the options of
 * `tprof report` (src/cli/report.c); tp_html_data (src/report/html.h) is its plain form, for
 * `tprof serve`. The inputs are read once: the same analysis gives the page and, for
 * `tprof check --report`, the text report (src/cli/check_report.c). */
#ifndef TP_CLI_HTML_DATA_H
#define TP_CLI_HTML_DATA_H

#include "cli/cli.h"
#include "report/html.h"

typedef struct tp_cli_html_opts {
    const tp_cli_read_opts *read; /* --stage, --rank, --peak-tflops, progress */
    const char *title;            /* NULL: the first input */
    const char *artifacts_href;   /* how the page links a run directory's files ("" beside) */
    int compare;                  /* inputs are A and B: the Compare view of A against B */
} tp_cli_html_opts;

/* What the page shows, read from the inputs: their analysis with its timeline and memory curve,
 * and with compare side B's analysis and the comparison. */
typedef struct tp_cli_html_run {
    char *const *inputs;
    size_t n;
    tp_analysis *a, *b;
    tp_compare *c;
    tp_series series;
} tp_cli_html_run;

/* Reads the inputs into r (with compare, n is 2): 0, or -1 after printing the error (its line
 * also in tp_cli_last_error). Free r with tp_cli_html_run_free either way. */
int tp_cli_html_analyse(tp_cli_html_run *r, char *const *inputs, size_t n,
                        const tp_cli_html_opts *o);
void tp_cli_html_run_free(tp_cli_html_run *r);
/* Appends the report data of r to out: 0, or -1 after printing the error. */
int tp_cli_html_render(tp_buf *out, tp_cli_html_run *r, const tp_cli_html_opts *o);
/* The report page of r written to output (tp_cli_write: whole or not at all). TP_EXIT_OK, or
 * TP_EXIT_ERROR after printing the error. */
int tp_cli_html_write(const char *output, tp_cli_html_run *r, const tp_cli_html_opts *o);

#endif
