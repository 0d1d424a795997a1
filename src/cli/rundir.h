/* rundir.h - the files of a run directory, as the default sink names them (src/export/artifacts.c):
 * config.json, stage_times.json, op_stats.csv, summary.json and the traces, each with a
 * ".rank<N>" part in its name when the run had several ranks.
 *
 * A trace is any other *.json or *.json.gz file, so a directory of torch.profiler traces
 * (<worker>.<time>.pt.trace.json) is read the same way. */
#ifndef TP_CLI_RUNDIR_H
#define TP_CLI_RUNDIR_H

#include <stddef.h>
#include <stdint.h>

typedef enum tp_run_kind {
    TP_RUN_CONFIG,
    TP_RUN_STAGE_TIMES,
    TP_RUN_OP_STATS,
    TP_RUN_SUMMARY,
    TP_RUN_TRACE,
    TP_RUN_NKINDS
} tp_run_kind;

typedef struct tp_run_file {
    char *path;       /* <dir>/<name> */
    const char *name; /* inside path */
    tp_run_kind kind;
    int64_t rank; /* from ".rank<N>" in the name; -1 when the name has none */
} tp_run_file;

typedef struct tp_run_dir {
    tp_run_file *files; /* sorted by name (the traces thus in window order) */
    size_t n, cap;
} tp_run_dir;

/* The artifact file name of a kind, without rank part: "config.json", ... */
const char *tp_run_kind_name(tp_run_kind kind);
/* 1 when path names a directory (following links), else 0. */
int tp_run_is_dir(const char *path);
/* Lists the artifacts and traces directly inside dir (regular files; hidden files, other names
 * and subdirectories are not listed). 0, or -1 with err "DIR: cannot read: reason". */
int tp_run_dir_list(const char *dir, tp_run_dir *out, char *err, size_t errlen);
void tp_run_dir_free(tp_run_dir *d);

#endif
