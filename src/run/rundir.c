/* rundir.c - lists the artifacts and traces of a run directory (names: src/run/runfiles.c):
 * those of its tprof/ folder when it has one, else those of its top level (runs of tprof before
 * that folder, or any folder of traces). The folder is taken only as a real directory, never
 * through a symbolic link, as state.c takes it: `tprof serve` confines what it reads so. */
#include "run/rundir.h"

#include "util/vec.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int tp_run_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int by_name(const void *a, const void *b) {
    return strcmp(((const tp_run_file *)a)->name, ((const tp_run_file *)b)->name);
}

static int add_file(tp_run_dir *d, const char *dir, const char *name, int kind, int64_t rank) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *path = malloc(n);
    if (!path || TP_GROW(d->files, d->cap, d->n + 1)) {
        free(path);
        return -1;
    }
    snprintf(path, n, "%s%s%s", dir, *dir && dir[strlen(dir) - 1] == '/' ? "" : "/", name);
    d->files[d->n++] = (tp_run_file){
        .path = path, .name = path + strlen(path) - strlen(name), .kind = kind, .rank = rank};
    return 0;
}

char *tp_run_files_dir(const char *dir) {
    char *sub = tp_run_join(dir, TP_RUN_FILES_DIR);
    struct stat st;
    if (sub && lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) return sub;
    free(sub);
    return strdup(dir);
}

int tp_run_dir_list(const char *top, tp_run_dir *out, char *err, size_t errlen) {
    *out = (tp_run_dir){0};
    char *dir = tp_run_files_dir(top);
    if (!dir) {
        snprintf(err, errlen, "%s: cannot read: %s", top, strerror(ENOMEM));
        return -1;
    }
    DIR *dh = opendir(dir);
    if (!dh) {
        snprintf(err, errlen, "%s: cannot read: %s", dir, strerror(errno));
        free(dir);
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    errno = 0;
    while (rc == 0 && (de = readdir(dh))) {
        int64_t rank = -1;
        int kind = tp_run_file_kind(de->d_name, &rank);
        if (kind < 0) continue;
        if (add_file(out, dir, de->d_name, kind, rank)) {
            snprintf(err, errlen, "%s: cannot read: %s", dir, strerror(ENOMEM));
            rc = -1;
            break;
        }
        struct stat st;
        tp_run_file *f = &out->files[out->n - 1];
        if (stat(f->path, &st) != 0 || !S_ISREG(st.st_mode)) free(out->files[--out->n].path);
        errno = 0;
    }
    if (rc == 0 && errno) {
        snprintf(err, errlen, "%s: cannot read: %s", dir, strerror(errno));
        rc = -1;
    }
    closedir(dh);
    free(dir);
    if (rc) {
        tp_run_dir_free(out);
        return -1;
    }
    if (out->n) qsort(out->files, out->n, sizeof(*out->files), by_name);
    return 0;
}

void tp_run_dir_free(tp_run_dir *d) {
    for (size_t i = 0; i < d->n; i++)
        free(d->files[i].path);
    free(d->files);
    *d = (tp_run_dir){0};
}

int64_t tp_run_path_rank(const char *path) {
    const char *slash = strrchr(path, '/');
    int64_t rank = -1;
    return tp_run_file_kind(slash ? slash + 1 : path, &rank) == TP_RUN_TRACE ? rank : -1;
}
