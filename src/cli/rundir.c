/* rundir.c - tells the artifacts of a run directory from its traces, and each file's rank. */
#include "cli/rundir.h"

#include "util/vec.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* In tp_run_kind order; the part before the extension is the stem. */
static const char *const artifact_names[] = {"config.json", "stage_times.json", "op_stats.csv",
                                             "summary.json"};

const char *tp_run_kind_name(tp_run_kind kind) {
    return kind < TP_RUN_TRACE ? artifact_names[kind] : "trace";
}

int tp_run_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int ends_with(const char *s, size_t len, const char *suffix) {
    size_t n = strlen(suffix);
    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* N when s[0..len) is ".rank<N>", else -1. */
static int64_t rank_part(const char *s, size_t len) {
    if (len < 6 || len > 14 || memcmp(s, ".rank", 5) != 0) return -1;
    int64_t v = 0;
    for (size_t i = 5; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* A trace's rank: the last ".rank<N>" part of its name (between dots), else -1. */
static int64_t trace_rank(const char *name) {
    int64_t rank = -1;
    for (const char *p = strstr(name, ".rank"); p; p = strstr(p + 1, ".rank")) {
        const char *end = strchr(p + 1, '.');
        int64_t r = rank_part(p, end ? (size_t)(end - p) : strlen(p));
        if (r >= 0) rank = r;
    }
    return rank;
}

/* Kind and rank of a file name, or -1 for a file that is neither artifact nor trace. An
 * artifact is <stem><ext> or <stem>.rank<N><ext>. */
static int classify(const char *name, int64_t *rank) {
    size_t len = strlen(name);
    *rank = -1;
    if (name[0] == '.') return -1;
    for (int k = 0; k < TP_RUN_TRACE; k++) {
        const char *a = artifact_names[k], *ext = strchr(a, '.');
        size_t stem = (size_t)(ext - a);
        if (len < stem + strlen(ext) || strncmp(name, a, stem) != 0 || !ends_with(name, len, ext))
            continue;
        size_t mid = len - stem - strlen(ext);
        if (mid == 0) return k;
        if ((*rank = rank_part(name + stem, mid)) >= 0) return k;
    }
    if (!ends_with(name, len, ".json") && !ends_with(name, len, ".json.gz")) return -1;
    *rank = trace_rank(name);
    return TP_RUN_TRACE;
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

int tp_run_dir_list(const char *dir, tp_run_dir *out, char *err, size_t errlen) {
    *out = (tp_run_dir){0};
    DIR *dh = opendir(dir);
    if (!dh) {
        snprintf(err, errlen, "%s: cannot read: %s", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    int rc = 0;
    errno = 0;
    while (rc == 0 && (de = readdir(dh))) {
        int64_t rank = -1;
        int kind = classify(de->d_name, &rank);
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
