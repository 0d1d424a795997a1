/* modules.h - the module tree (analysis/modules.h) rendered: the "modules" key of the JSON
 * report (docs/ANALYZE_JSON.md) and the text/Markdown "Modules" section. Both render nothing
 * when no input had module ranges. */
#ifndef TP_REPORT_MODULES_H
#define TP_REPORT_MODULES_H

#include "analysis/analysis.h"
#include "report/doc.h"
#include "report/jsonw.h"
#include "report/report.h"

/* The "modules" member: the nodes depth first, each with its parent's place in the list and its
 * ops; with o's max_list (the HTML report), the first max_list nodes and as many ops each. */
void tp_report_modules_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o);
/* The "Modules" section: the tree, indented, up to TP_MODULES_SHOWN nodes. */
#define TP_MODULES_SHOWN 40
void tp_report_modules_text(tp_doc *d, const tp_analysis *a);

#endif
