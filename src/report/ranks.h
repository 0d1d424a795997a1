/* ranks.h - the renderers' part for several ranks (analysis/ranks.h): the "ranks" key of the
 * JSON report and the text/Markdown "Ranks" section. Both render nothing for one rank. */
#ifndef TP_REPORT_RANKS_H
#define TP_REPORT_RANKS_H

#include "analysis/analysis.h"
#include "report/doc.h"
#include "report/jsonw.h"
#include "report/report.h"

/* The "ranks" member (docs/ANALYZE_JSON.md), when a->ranks is set. With o's max_list (the HTML
 * report), per_rank keeps the max_list / 2 ranks of shortest mean step and as many of longest,
 * and step_spread the max_list steps of widest spread, in their order; "per_rank_cut" then
 * says so and sums up the mean steps of all ranks (docs/REPORT.md). */
void tp_report_ranks_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o);
/* The "rank_summary" member of summary.json (docs/ANALYZE_JSON.md), when a->rank_summary is set:
 * what `tprof analyze --summaries` needs of this rank, with its last TP_SUMMARY_COLLECTIVES
 * collectives. */
#define TP_SUMMARY_COLLECTIVES 4096
void tp_report_rank_summary_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o);
/* The "Ranks" section, when a->ranks is set. */
void tp_report_ranks_text(tp_doc *d, const tp_analysis *a);

#endif
