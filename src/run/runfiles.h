/* runfiles.h - the names of a run directory's files, as the default sink writes them
 * (src/sink/artifacts.c) and as `tprof analyze`/`check` read them back (src/run/rundir.c):
 * config.json, stage_times.json, op_stats.csv, summary.json and the traces, each with a
 * ".rank<N>" part in its name when the run had several ranks. They are in the run directory's
 * tprof/ folder (TP_RUN_FILES_DIR), its top level being for TensorBoard and traceinsight; runs
 * of tprof before that folder have them at the top level, and are read so still.
 *
 * A trace is any other *.json or *.json.gz file, so a directory of torch.profiler traces
 * (<worker>.<time>.pt.trace.json) is read the same way. Hidden files are none of them. */
#ifndef TP_RUN_RUNFILES_H
#define TP_RUN_RUNFILES_H

#include <stdint.h>

/* The folder of a run directory that holds tprof's own files. */
#define TP_RUN_FILES_DIR "tprof"

typedef enum tp_run_kind {
    TP_RUN_CONFIG,
    TP_RUN_STAGE_TIMES,
    TP_RUN_OP_STATS,
    TP_RUN_SUMMARY,
    TP_RUN_TRACE,
    TP_RUN_NKINDS
} tp_run_kind;

/* The part of a trace's name that says it is unfinished: a streamed window's (and the run's
 * top-level trace's) name while it is written, valid after each segment, which a process killed
 * outright leaves (trace_0003_streaming.partial.json or .partial.pftrace,
 * <worker>.partial.pt.trace.json). Read as a trace, with a warning that the window was
 * interrupted (run/inputs.c). */
#define TP_RUN_PARTIAL ".partial"

/* 1 when a trace's file name (no folder) says it is unfinished (TP_RUN_PARTIAL before its
 * extension), else 0. */
int tp_run_is_partial(const char *name);

/* The artifact file name of a kind, without rank part: "config.json", ...; "trace". */
const char *tp_run_kind_name(tp_run_kind kind);
/* The kind of a file name and its rank (the ".rank<N>" part; -1 when none), or -1 for a name
 * that is neither artifact nor trace. */
int tp_run_file_kind(const char *name, int64_t *rank);
/* 1 when name is the HTML report, report.html or report.rank<N>.html (its rank in *rank, -1
 * without a rank part), else 0. Not an artifact kind: the html_report key may turn it off, so
 * `tprof check` does not require it; a reused run_id removes it with the other artifacts. */
int tp_run_is_report(const char *name, int64_t *rank);
/* "<dir>/<name>" (malloc'd; one slash between them), or NULL when out of memory. */
char *tp_run_join(const char *dir, const char *name);

#endif
