/* inputs.c - what `tprof analyze`, `compare`, `report` and `serve` read (inputs.h): trace files,
 * run directories (their traces, in window order), standard input; each read into its own model
 * and added to one analysis, so several inputs give exactly the analysis of their union of
 * windows.
 *
 * A trace's rank is the ".rank<N>" part of its file name (how tprof names the traces of several
 * ranks; a file given by itself as one listed in its run directory), else the rank its contents
 * state (distributedInfo), else unknown. A file is read once: given twice (another spelling, a
 * link, inside a run directory also given) it is refused. */
#include "run/inputs.h"

#include "run/recorded_stages.h"
#include "run/rundir.h"
#include "run/runfiles.h"
#include "trace/reader.h"
#include "util/log.h"
#include "util/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void tp_inputs_opts_init(tp_inputs_opts *r) {
    *r = (tp_inputs_opts){.rank = TP_INPUTS_ALL_RANKS, .progress = TP_INPUTS_PROGRESS_AUTO};
}

struct tp_inputs_seen_file {
    dev_t dev;
    ino_t ino;
    char *path;
};

int tp_inputs_seen_add(tp_inputs_seen *s, const char *path, char *err, size_t errlen) {
    struct stat st;
    if (strcmp(path, "-") == 0 || stat(path, &st) != 0) return 0;
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].dev == st.st_dev && s->v[i].ino == st.st_ino)
            return snprintf(err, errlen,
                            "%s: the same file as %s, given twice: each trace is read once",
                            tp_log_name(path), tp_log_name(s->v[i].path)),
                   -1;
    char *copy = strdup(path);
    if (!copy || TP_GROW(s->v, s->cap, s->n + 1)) {
        free(copy);
        return snprintf(err, errlen, "out of memory"), -1;
    }
    s->v[s->n++] = (struct tp_inputs_seen_file){st.st_dev, st.st_ino, copy};
    return 0;
}

void tp_inputs_seen_free(tp_inputs_seen *s) {
    for (size_t i = 0; i < s->n; i++)
        free(s->v[i].path);
    free(s->v);
    *s = (tp_inputs_seen){0};
}

/* What reading the inputs keeps across them: the ranks seen, to warn when several are mixed
 * into one analysis; the files read; the traces added; the memory the analysis holds for them
 * (each trace's events, as tp_read_memory_estimate counts them), which the next read's budget
 * starts from; where the error goes. */
typedef struct ranks_seen {
    int64_t first;
    size_t count;
    tp_inputs_seen files;
    size_t added;
    uint64_t memory;
    char *err;
    size_t errlen;
} ranks_seen;

static void note_rank(ranks_seen *s, int64_t rank) {
    if (rank < 0 || (s->count && (rank == s->first || s->count > 1))) return;
    if (!s->count) s->first = rank;
    s->count++;
}

/* For tests of the parallel reader: TPROF_TEST_READ_CUTS="OFFSET,OFFSET,..." cuts every plain
 * JSON input there (tp_read_opts.splits), whatever its size. The count of offsets taken. */
static size_t test_cuts(uint64_t *cuts, size_t cap) {
    const char *s = getenv("TPROF_TEST_READ_CUTS");
    size_t n = 0;
    while (s && *s && n < cap) {
        char *end;
        unsigned long long v = strtoull(s, &end, 10);
        if (end == s) break;
        cuts[n++] = v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* Reads one trace and adds it to a unless its rank is not the one asked for. 1 when added, 0
 * when skipped, -1 with the error in seen->err. */
static int add_trace(tp_analysis *a, const char *path, int64_t name_rank, const tp_inputs_opts *r,
                     ranks_seen *seen) {
    if (tp_inputs_seen_add(&seen->files, path, seen->err, seen->errlen)) return -1;
    if (r->rank != TP_INPUTS_ALL_RANKS && name_rank >= 0 && name_rank != r->rank) return 0;
    tp_model m;
    tp_model_init(&m);
    tp_read_opts ro = {.progress = r->progress, .threads = r->threads, .name = tp_log_name(path)};
    ro.max_memory = r->max_memory;
    ro.memory_used = seen->memory;
    ro.keep_args = r->keep_args;
    const char *slash = strrchr(path, '/');
    int cut_short = 0;
    ro.cut_short_ok = tp_run_is_partial(slash ? slash + 1 : path);
    ro.cut_short = &cut_short;
    uint64_t cuts[16];
    ro.nsplits = test_cuts(cuts, 16);
    ro.splits = ro.nsplits ? cuts : NULL;
    char err[1024];
    int rc = tp_trace_read_file(path, &m, &ro, err, sizeof(err)) ? -1 : 1;
    int64_t rank = name_rank >= 0 ? name_rank : m.rank;
    m.rank = rank; /* the per-rank analysis groups by it: the file name's rank wins */
    if (rc < 0) {
        snprintf(seen->err, seen->errlen, "%s", err);
    } else if (r->rank != TP_INPUTS_ALL_RANKS && rank != r->rank) {
        rc = 0;
    } else if (tp_analysis_add_model(a, &m, path)) {
        rc = -1;
        snprintf(seen->err, seen->errlen, "%s: out of memory", tp_log_name(path));
    } else {
        if (ro.cut_short_ok)
            tp_analysis_add_warning(a,
                                    "%s: an unfinished trace (the process ended while its "
                                    "window recorded, without writing its end): read up to %s",
                                    tp_log_name(path),
                                    cut_short ? "its last whole event (cut short while a segment "
                                                "was written)"
                                              : "its last flush");
        if (r->on_model) r->on_model(r->on_model_ctx, &m);
    }
    if (rc > 0) note_rank(seen, rank);
    seen->added += rc > 0;
    if (rc > 0) seen->memory += (uint64_t)m.nevents * TP_READ_ANALYSIS_EVENT_BYTES;
    tp_model_free(&m);
    return rc;
}

/* The traces of one input: a run directory's, or the input itself. */
static int add_input(tp_analysis *a, const char *input, const tp_inputs_opts *r, ranks_seen *seen) {
    if (!tp_run_is_dir(input))
        return add_trace(a, input, tp_run_path_rank(input), r, seen) < 0 ? -1 : 0;
    tp_run_dir d;
    if (tp_run_dir_list(input, &d, seen->err, seen->errlen)) return -1;
    size_t traces = 0;
    int rc = 0;
    for (size_t i = 0; i < d.n && rc >= 0; i++) {
        if (d.files[i].kind != TP_RUN_TRACE) continue;
        traces++;
        rc = add_trace(a, d.files[i].path, d.files[i].rank, r, seen);
    }
    tp_run_dir_free(&d);
    if (rc >= 0 && !traces) {
        snprintf(seen->err, seen->errlen,
                 "%s: no trace files in this directory (*.json, *.json.gz, *.pftrace)",
                 tp_log_name(input));
        return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* How many traces the inputs hold (a run directory's, counted; an unreadable one as 1: its
 * error comes when it is read). */
static size_t count_traces(char *const *inputs, size_t n) {
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        tp_run_dir d;
        char err[1024];
        if (!tp_run_is_dir(inputs[i]) || tp_run_dir_list(inputs[i], &d, err, sizeof(err))) {
            count++;
            continue;
        }
        for (size_t f = 0; f < d.n; f++)
            count += d.files[f].kind == TP_RUN_TRACE;
        tp_run_dir_free(&d);
    }
    return count;
}

/* Each rank apart (analysis/ranks.h) costs a second analysis of every trace: only when several
 * traces may be several ranks; one trace may still be a merged one (TP_PER_RANK_MERGED). */
static int per_rank(char *const *inputs, size_t n, const tp_inputs_opts *r) {
    if (r->rank != TP_INPUTS_ALL_RANKS) return TP_PER_RANK_OFF;
    return count_traces(inputs, n) > 1 ? TP_PER_RANK_ON : TP_PER_RANK_MERGED;
}

/* A new analysis with the stages of --stage, else those the inputs (or r->stages_of) were
 * recorded with (a warning when they disagree). */
static tp_analysis *new_analysis(char *const *inputs, size_t n, const tp_inputs_opts *r) {
    tp_analysis_opts ao = {.stages = r->nstages ? r->stages : NULL,
                           .nstages = r->nstages,
                           .peak_tflops = r->peak_tflops,
                           .per_rank = per_rank(inputs, n, r),
                           .threads = r->threads};
    tp_recorded_stages recorded = {0};
    char *const *of = r->stages_of ? r->stages_of : inputs;
    size_t nof = r->stages_of ? r->nstages_of : n;
    if (!r->nstages && tp_recorded_stages_find((const char *const *)of, nof, &recorded)) {
        tp_recorded_stages_free(&recorded);
        return NULL;
    }
    if (recorded.defs) ao.stages = recorded.defs, ao.nstages = recorded.n;
    tp_analysis *a = tp_analysis_new(&ao);
    if (a && recorded.warning[0])
        tp_analysis_add_warning(a, "%s: the default stages are taken (--stage sets them)",
                                recorded.warning);
    tp_recorded_stages_free(&recorded);
    return a;
}

tp_analysis *tp_inputs_analyse(char *const *inputs, size_t n, const tp_inputs_opts *r, char *err,
                               size_t errlen) {
    tp_analysis *a = new_analysis(inputs, n, r);
    if (!a) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    ranks_seen seen = {.err = err, .errlen = errlen};
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = add_input(a, inputs[i], r, &seen);
    tp_inputs_seen_free(&seen.files);
    if (rc) {
        tp_analysis_free(a);
        return NULL;
    }
    if (!seen.added) {
        snprintf(err, errlen, "no trace of rank %lld among the inputs", (long long)r->rank);
        tp_analysis_free(a);
        return NULL;
    }
    if (seen.count > 1)
        tp_analysis_add_warning(a, "traces of several ranks analysed together (steps and times add "
                                   "up across ranks; the Ranks section shows each rank); --rank N "
                                   "analyses one");
    tp_analysis_finish(a);
    return a;
}
