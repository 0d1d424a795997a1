/* stacks_report.h - the renderers' part for call stacks (analysis/stacks.h): folded stacks, the
 * "call_stacks" key of the JSON report and the text/Markdown "Call stacks" section. Each renders
 * nothing when no input had python_function ranges (with_stack). */
#ifndef TP_REPORT_STACKS_REPORT_H
#define TP_REPORT_STACKS_REPORT_H

#include "analysis/analysis.h"
#include "report/doc.h"
#include "report/jsonw.h"
#include "report/report.h"

/* The "call_stacks" member (docs/ANALYZE_JSON.md): for the top ops by self time and the top
 * kernels by total time, the Python stacks that called them and their shares. */
void tp_report_stacks_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o);
/* The "flame" member of the HTML report data (docs/REPORT.md): the stack tree's nodes, most
 * total time first (parents before children), max_list of them at most. */
void tp_report_flame_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o);
/* The "Call stacks" section: per top op and kernel, its main callers in one line. */
void tp_report_stacks_text(tp_doc *d, const tp_analysis *a, const tp_report_opts *o);

#endif
