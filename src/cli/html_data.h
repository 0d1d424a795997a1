/* html_data.h - the report data of the tprof command's inputs, with the options of
 * `tprof report` (src/cli/report.c); tp_html_data (src/report/html.h) is its plain form, for
 * `tprof serve`. */
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

/* Appends the report data of inputs to out: 0, or -1 after printing the error (its line also
 * in tp_cli_last_error). With compare, n is 2. */
int tp_cli_html_data(tp_buf *out, char *const *inputs, size_t n, const tp_cli_html_opts *o);

#endif
