/* runfiles.c - tells the artifacts of a run directory from its traces, and each file's rank
 * (see runfiles.h). */
#include "run/runfiles.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* In tp_run_kind order; the part before the extension is the stem. */
static const char *const artifact_names[] = {"config.json", "stage_times.json", "op_stats.csv",
                                             "summary.json"};

const char *tp_run_kind_name(tp_run_kind kind) {
    return kind < TP_RUN_TRACE ? artifact_names[kind] : "trace";
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

int tp_run_is_report(const char *name, int64_t *rank) {
    size_t len = strlen(name);
    *rank = -1;
    if (len < 11 || strncmp(name, "report", 6) != 0 || !ends_with(name, len, ".html")) return 0;
    size_t mid = len - 11;
    return mid == 0 || (*rank = rank_part(name + 6, mid)) >= 0;
}

/* Kind and rank of a file name, or -1 for a file that is neither artifact nor trace. An
 * artifact is <stem><ext> or <stem>.rank<N><ext>. */
int tp_run_file_kind(const char *name, int64_t *rank) {
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
    if (!ends_with(name, len, ".json") && !ends_with(name, len, ".json.gz") &&
        !ends_with(name, len, ".pftrace"))
        return -1;
    *rank = trace_rank(name);
    return TP_RUN_TRACE;
}

int tp_run_is_partial(const char *name) {
    static const char *const exts[] = {".json", ".json.gz", ".pt.trace.json", ".pt.trace.json.gz",
                                       ".pftrace"};
    size_t len = strlen(name), n = strlen(TP_RUN_PARTIAL);
    for (size_t i = 0; i < sizeof(exts) / sizeof(exts[0]); i++) {
        size_t e = strlen(exts[i]);
        if (ends_with(name, len, exts[i]) && len >= e + n &&
            memcmp(name + len - e - n, TP_RUN_PARTIAL, n) == 0)
            return 1;
    }
    return 0;
}

char *tp_run_join(const char *dir, const char *name) {
    size_t n = strlen(dir), size = n + strlen(name) + 2;
    char *p = malloc(size);
    if (p) snprintf(p, size, "%s%s%s", dir, n && dir[n - 1] == '/' ? "" : "/", name);
    return p;
}
