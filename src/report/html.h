/* html.h - the HTML report: one page (template, style, script and Debian's Chart.js, embedded
 * at build time) that renders "the report data", one JSON object (docs/REPORT.md).
 *
 * The report data is the analysis exactly as `tprof analyze --json --top TP_HTML_TOP_ROWS` writes
 * it (member "analysis"), plus what only the views need: a down-sampled timeline and memory
 * curve ("series"), the run directory's files ("artifacts"), `tprof compare`'s result
 * ("compare"). The page finds it embedded (the offline report.html) or, without it, fetches it
 * from `tprof serve` (the live dashboard). The page and the data of an analysis are here
 * (the default sink writes report.html into each run directory); the data of inputs read as
 * `tprof analyze` reads them, tp_html_data, is src/run/html_data.h's. */
#ifndef TP_REPORT_HTML_H
#define TP_REPORT_HTML_H

#include "analysis/analysis.h"
#include "analysis/compare.h"
#include "report/series.h"
#include "report/trace_view.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Rows of the op and kernel tables the report carries (the analysis' top_k). */
#define TP_HTML_TOP_ROWS 500
/* The report data's bounds (docs/REPORT.md, "Size and time"): bytes of a name or any other string
 * as the page holds it (cut with an ellipsis), rows of a list that grows with the input (steps,
 * ranks, devices, input paths, files), and the data's size past which it is rendered again under
 * tighter bounds, so that a page stays under 5 MB whatever the input. */
#define TP_HTML_NAME_MAX 4096
#define TP_HTML_LIST_MAX 1000
#define TP_HTML_DATA_MAX (4u << 20)

/* The live dashboard's page: the template without data, whose script fetches
 * "api/data?run=<name>" relative to the page and lists runs from "api/runs". Appends to `out`;
 * 0 on success. */
int tp_html_page(tp_buf *out);

/* The offline report's page, in two halves around its data, which the caller renders straight
 * into the page (one buffer, nothing copied): tp_html_page_open appends everything before the
 * data and returns where the data starts; the caller appends the report data (tp_html_data_of);
 * tp_html_page_close escapes it for its <script> element in place and appends the rest. 0 on
 * success. */
size_t tp_html_page_open(tp_buf *out);
int tp_html_page_close(tp_buf *out, size_t data_start);

/* What the report data holds beside the analysis; every member may be NULL. */
typedef struct tp_html_extras {
    const char *title;          /* the page's title; NULL: the first input's path */
    const char *run_dir;        /* the folder whose files become "artifacts" ... */
    const char *artifacts_href; /* ... linked as <href><name> ("" beside them; NULL: "") */
    tp_series *series;          /* the timeline and memory curve (tp_series_json's) */
    tp_series *series_b;        /* with compare: side B's ("series_b") */
    const tp_analysis *other;   /* with compare: side B's analysis ("analysis_b") */
    const tp_compare *compare;  /* `tprof compare A B` of analysis (A) and other (B) */
    const tp_trace_view *trace; /* the Trace view's ranges ("trace"), under bounds of its own */
} tp_html_extras;

/* The report data of one finished analysis. Appends the JSON object (and a newline) to out. */
void tp_html_data_of(tp_buf *out, const tp_analysis *a, const tp_html_extras *x);

#endif
