/* check.h - what `tprof check`'s files share: the list of problems found and the checks of each
 * artifact against a fresh analysis of the run's traces. */
#ifndef TP_CLI_CHECK_H
#define TP_CLI_CHECK_H

#include "analysis/analysis.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Problems are printed as they are found, one line each, "PATH: problem". After
 * TP_CHECK_SHOWN lines about one file the rest are only counted, then summed up in one line. */
#define TP_CHECK_SHOWN 20

typedef struct tp_checker {
    size_t problems;
    char *last_path; /* the file the latest problems were about */
    size_t last_count, hidden;
    char **unreadable; /* the traces that could not be read (paths) */
    size_t nunreadable, cap_unreadable;
} tp_checker;

/* Frees what c holds (after tp_check_flush). */
void tp_check_free(tp_checker *c);

void tp_check_problem(tp_checker *c, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prints the count of the problems that were not shown; call before the verdict. */
void tp_check_flush(tp_checker *c);

/* A JSON file parsed (jansson), or NULL after reporting why not (with the byte offset). */
json_t *tp_check_load_json(tp_checker *c, const char *path);
/* A JSON number in microseconds as integer nanoseconds; -1 when v is not a number of range. */
int tp_check_json_us(const json_t *v, int64_t *ns);

/* stage_times.json's steps: the same step numbers as the traces, with the same durations. */
void tp_check_steps(tp_checker *c, const char *path, const json_t *doc, const tp_analysis *a);
/* stage_times.json's stages: those of the analysis (taken with the run's own stages, as
 * `tprof analyze RUN` takes them), each with the same count and total time. */
void tp_check_stages(tp_checker *c, const char *path, const json_t *doc, const tp_analysis *a);
/* op_stats.csv: one row per op of the traces, with the same calls, total, self, min and max. */
void tp_check_op_stats(tp_checker *c, const char *path, const tp_analysis *a);
/* summary.json: the step count and the top ops of the traces. */
void tp_check_summary(tp_checker *c, const char *path, const json_t *doc, const tp_analysis *a);

/* check_report.c: after the validation of run directory dir (c: what it found), the text report
 * of its analysis on standard output (analysis) and its HTML report written into it as
 * report.html (report), both from one read of its traces. A run with traces that cannot be read
 * gets the analysis of the others and keeps its report.html. TP_EXIT_OK, TP_EXIT_FINDING when
 * its traces left something undone (said in one line), TP_EXIT_ERROR after printing an error. */
int tp_check_report(const char *dir, const tp_checker *c, int analysis, int report);

#endif
