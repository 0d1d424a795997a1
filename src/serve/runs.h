/* runs.h - the runs of the served directory: its subdirectories holding tprof artifacts or
 * traces (src/run/runfiles.h tells them), each with what the dashboard's list shows and a
 * change key that moves whenever one of its files is added, removed, renamed or rewritten
 * (src/run/state.h reads them). */
#ifndef TP_SERVE_RUNS_H
#define TP_SERVE_RUNS_H

#include "serve/path.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

#define TP_SERVE_RUNS_MAX 4096 /* subdirectories looked at, at most: the newest */

typedef struct tp_serve_run {
    char name[TP_SERVE_NAME_MAX + 1];
    int64_t mtime_ns; /* the newest modification among the directory and its files */
    uint64_t key;     /* the change key (see above); the data cache is keyed on it */
    size_t windows;   /* traces */
    int partial;      /* no summary.json yet: being written, or stopped before its end */
    int has_link;     /* a symbolic link among its entries: never analysed (it may lead out) */
} tp_serve_run;

/* Scans root_fd/name (a real directory, not a link). 0, or -1 when it is no run directory. */
int tp_serve_run_scan(int root_fd, const char *name, tp_serve_run *out);

/* 1 when the folder root_fd is itself a run directory (a user pointing at one run rather than
 * at the folder of runs), else 0. */
int tp_serve_is_run(int root_fd);

/* The runs among the TP_SERVE_RUNS_MAX newest subdirectories of root_fd (by their own
 * modification time), oldest first (then by name; the page opens the last, the newest), in a
 * malloc'ed array (*out NULL when none). Only names a client can ask for are listed: those
 * tp_serve_name_decode accepts, valid UTF-8 (JSON would spell other bytes as U+FFFD). *left_out:
 * the older subdirectories not looked at, plus the names left out. 0, or -1 when the
 * directory cannot be read or memory ran out. */
int tp_serve_runs_list(int root_fd, tp_serve_run **out, size_t *n, size_t *left_out);

/* The list as the JSON object of api/runs: {"runs": [{"name", "mtime" (Unix seconds),
 * "windows", "partial", "analysable"}], "left_out": N}. */
void tp_serve_runs_json(tp_buf *b, const tp_serve_run *runs, size_t n, size_t left_out);

#endif
