/* html_data.h - the report data of inputs (run directories, traces, ranks, read as
 * `tprof analyze` reads them: inputs.h), for `tprof report` and `tprof check --report`
 * (src/cli/report.c, check_report.c) and, as tp_html_data and tp_html_trace, for `tprof serve`
 * (src/serve/cache.c).
 * The inputs are read once: the same analysis gives the page and, for `tprof check --report`,
 * the text report. */
#ifndef TP_RUN_HTML_DATA_H
#define TP_RUN_HTML_DATA_H

#include "analysis/analysis.h"
#include "analysis/compare.h"
#include "report/html.h"
#include "report/series.h"
#include "run/inputs.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_run_html_opts {
    const tp_inputs_opts *read; /* --stage, --rank, --peak-tflops, progress */
    const char *title;          /* NULL: the first input */
    const char *artifacts_href; /* how the page links a run directory's files ("" beside them; for
                                   the dashboard, from the run's folder: "tprof/" or "") */
    int compare;                /* inputs are A and B: the Compare view of A against B */
    int trace;                  /* keep every range for the Trace view (`tprof report`) */
} tp_run_html_opts;

/* What the page shows, read from the inputs: their analysis with its timeline and memory curve,
 * and with compare side B's analysis, its timeline and memory curve, and the comparison. */
typedef struct tp_run_html {
    char *const *inputs;
    size_t n;
    tp_analysis *a, *b;
    tp_compare *c;
    tp_series series, series_b;
    tp_trace_view trace; /* with opts.trace: side A's ranges */
    int has_trace;
} tp_run_html;

/* Reads the inputs into r (with compare, n is 2): 0, or -1 with the error in err. Free r with
 * tp_run_html_free either way. */
int tp_run_html_analyse(tp_run_html *r, char *const *inputs, size_t n, const tp_run_html_opts *o,
                        char *err, size_t errlen);
void tp_run_html_free(tp_run_html *r);
/* Appends the report data of r to out: 0, or -1 when memory ran out. */
int tp_run_html_render(tp_buf *out, tp_run_html *r, const tp_run_html_opts *o);

/* The report data for the inputs, their analysis taking at most max_memory
 * (tp_read_opts.max_memory; 0: no limit); with compare, inputs are A and B (n_inputs 2), each
 * analysed apart, and the data is that of `tprof report --compare A B`. Appends the JSON object to
 * `out`; on bad input, or past max_memory, returns -1 with one line in err (control bytes
 * escaped, as the command prints it). */
int tp_html_data(tp_buf *out, const char *const *inputs, size_t n_inputs, int compare,
                 uint64_t max_memory, char *err, size_t errlen);
/* The Trace view of the inputs, as tp_html_data reads them: `{"trace": ...}`, the member the
 * report data of `tprof report` holds (docs/REPORT.md, "Trace view"), for `tprof serve`'s
 * api/trace, which the page asks once per run, apart from the data it polls. */
int tp_html_trace(tp_buf *out, const char *const *inputs, size_t n_inputs, uint64_t max_memory,
                  char *err, size_t errlen);

#endif
