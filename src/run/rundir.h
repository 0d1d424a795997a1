/* rundir.h - the files of a run directory, listed: the artifacts and traces as
 * src/run/runfiles.h tells them apart, each with its kind and rank. */
#ifndef TP_RUN_RUNDIR_H
#define TP_RUN_RUNDIR_H

#include "run/runfiles.h"

#include <stddef.h>
#include <stdint.h>

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

/* 1 when path names a directory (following links), else 0. */
int tp_run_is_dir(const char *path);
/* Lists the artifacts and traces of the run directory dir: directly inside its tprof/ folder
 * when it has one (TP_RUN_FILES_DIR, a real directory), else directly inside dir (regular files;
 * hidden files, other names and subdirectories are not listed). 0, or -1 with err "DIR: cannot
 * read: reason". */
int tp_run_dir_list(const char *dir, tp_run_dir *out, char *err, size_t errlen);
void tp_run_dir_free(tp_run_dir *d);
/* The folder of dir that holds tprof's files: "<dir>/tprof" when it is a directory (not a link to
 * one), else a copy of dir (an older run, or a folder of traces); malloc'd, NULL when out of
 * memory. */
char *tp_run_files_dir(const char *dir);
/* The rank of a trace given by path: the ".rank<N>" part of its file name, as a directory
 * listing reads it, so `analyze run/` and `analyze run/trace_*` agree; -1 when it has none. */
int64_t tp_run_path_rank(const char *path);

#endif
