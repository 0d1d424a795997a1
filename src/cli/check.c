/* check.c - `tprof check RUN...`: is each run directory complete and consistent?
 *
 * Per rank (each file of a run with several ranks carries ".rank<N>"): every artifact present and
 * parseable, at least one trace, and stage_times.json, op_stats.csv and summary.json agreeing with
 * a fresh analysis of the traces (check_tables.c). The small JSON files are read with jansson.
 * --analysis and --report then add each run's text report and report.html (check_report.c). */
#include "cli/check.h"

#include "cli/cli.h"
#include "run/recorded_stages.h"
#include "run/rundir.h"
#include "trace/reader.h"
#include "util/log.h"
#include "util/vec.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tprof check [--analysis] [--report] RUN...\n"
    "\n"
    "Checks that each run directory written by tprof is complete and consistent: config.json,\n"
    "stage_times.json, op_stats.csv, summary.json and at least one trace are present and\n"
    "parseable (for each rank when there are several); the steps of the traces match\n"
    "stage_times.json (numbers and durations, to the nanosecond), and so do its stages (with\n"
    "the run's own, from config.json: count and total time); every op_stats.csv row\n"
    "(calls, total, self, min, max) and summary.json's step count and top ops agree with a\n"
    "fresh analysis of the traces; config.json is a JSON object. These files are in RUN/tprof/\n"
    "(RUN itself for runs of tprof before that folder).\n"
    "\n"
    "Each problem is printed as one line, \"FILE: problem\".\n"
    "\n"
    "options:\n"
    "  --analysis   then print the run's analysis (the text report of tprof analyze RUN)\n"
    "  --report     then write the run's HTML report into it, RUN/tprof/report.html (as tprof\n"
    "               report writes it; replaced whole). A run with a trace that cannot be read\n"
    "               gets the analysis of its other traces and keeps its report.html\n"
    "  -h, --help   this help\n"
    "\n"
    "Exit status, the worst of all runs: 0 clean, 1 problems found, 2 usage error, a\n"
    "directory that cannot be read or a report that cannot be written.\n";

/* ---- problems ---- */

void tp_check_problem(tp_checker *c, const char *path, const char *fmt, ...) {
    c->problems++;
    if (c->last_path && strcmp(c->last_path, path) == 0) {
        if (++c->last_count > TP_CHECK_SHOWN) {
            c->hidden++;
            return;
        }
    } else {
        tp_check_flush(c);
        c->last_path = strdup(path);
        c->last_count = 1;
    }
    /* the file name as a JSON string where it needs one, the problem escaped (tp_log_escape):
     * names from the directory must not forge lines in a CI log */
    char raw[1024], line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    tp_log_escape(line, sizeof(line), raw);
    printf("%s: %s\n", tp_log_name(path), line);
}

void tp_check_flush(tp_checker *c) {
    if (c->hidden) printf("%s: %zu more problems\n", tp_log_name(c->last_path), c->hidden);
    free(c->last_path);
    c->last_path = NULL;
    c->last_count = c->hidden = 0;
}

void tp_check_free(tp_checker *c) {
    for (size_t i = 0; i < c->nunreadable; i++)
        free(c->unreadable[i]);
    free(c->unreadable);
    free(c->last_path);
    *c = (tp_checker){0};
}

/* A trace that cannot be read: its problem line, and its path kept for tp_check_report. */
static void unreadable(tp_checker *c, const char *path, const char *err) {
    size_t n = strlen(path);
    int own = strncmp(err, path, n) == 0 && strncmp(err + n, ": ", 2) == 0;
    tp_check_problem(c, path, "%s", own ? err + n + 2 : err);
    char *copy = strdup(path);
    if (copy && !TP_GROW(c->unreadable, c->cap_unreadable, c->nunreadable + 1))
        c->unreadable[c->nunreadable++] = copy;
    else
        free(copy);
}

json_t *tp_check_load_json(tp_checker *c, const char *path) {
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    if (!doc) tp_check_problem(c, path, "byte %d: invalid JSON: %s", e.position, e.text);
    return doc;
}

int tp_check_json_us(const json_t *v, int64_t *ns) {
    double us = json_number_value(v);
    if (!json_is_number(v) || !(fabs(us) < 9e12)) return -1; /* 9e12 us: 104 days */
    *ns = llround(us * 1000.0);
    return 0;
}

/* ---- one rank's files ---- */

typedef struct group {
    int64_t rank; /* -1: the files without a rank part */
    char label[48];
    const tp_run_file *artifacts[TP_RUN_TRACE];
    tp_run_file *traces; /* copies: the paths belong to the tp_run_dir */
    size_t ntraces, cap;
} group;

static int gather(group *g, const tp_run_dir *d, int64_t rank) {
    *g = (group){.rank = rank};
    if (rank >= 0) snprintf(g->label, sizeof(g->label), " of rank %lld", (long long)rank);
    for (size_t i = 0; i < d->n; i++) {
        const tp_run_file *f = &d->files[i];
        if (f->rank != rank) continue;
        if (f->kind != TP_RUN_TRACE) {
            g->artifacts[f->kind] = f;
        } else if (TP_GROW(g->traces, g->cap, g->ntraces + 1)) {
            return -1;
        } else {
            g->traces[g->ntraces++] = *f;
        }
    }
    return 0;
}

/* A new analysis with the stages the run in dir was recorded with (as `tprof analyze DIR`
 * takes them); *stages_ok 0 when they do not read and the default ones are taken, reported
 * unless config.json is already reported as no JSON object (config_ok 0). */
static tp_analysis *new_analysis(tp_checker *c, const char *dir, const group *g, int config_ok,
                                 int *stages_ok) {
    tp_recorded_stages rs;
    if (tp_recorded_stages_find(&dir, 1, &rs)) {
        tp_recorded_stages_free(&rs);
        return NULL;
    }
    *stages_ok = !rs.warning[0];
    if (rs.warning[0] && config_ok)
        tp_check_problem(c, g->artifacts[TP_RUN_CONFIG] ? g->artifacts[TP_RUN_CONFIG]->path : dir,
                         "%s", rs.warning);
    tp_analysis_opts o = {.stages = rs.defs, .nstages = rs.n};
    tp_analysis *a = tp_analysis_new(&o);
    tp_recorded_stages_free(&rs);
    return a;
}

/* The traces of g read into one analysis; NULL when one cannot be read (each such trace
 * reported: all are read, so that every unreadable one is named). */
static tp_analysis *analyse(tp_checker *c, const char *dir, const group *g, int config_ok,
                            int *stages_ok) {
    tp_analysis *a = new_analysis(c, dir, g, config_ok, stages_ok);
    int ok = a != NULL;
    if (!a) tp_check_problem(c, dir, "out of memory");
    for (size_t i = 0; a && i < g->ntraces; i++) {
        const char *path = g->traces[i].path;
        tp_model m;
        tp_model_init(&m);
        char err[1024];
        if (tp_trace_read_file(path, &m, NULL, err, sizeof(err))) {
            unreadable(c, path, err);
            ok = 0;
        } else if (ok && tp_analysis_add_model(a, &m, path)) {
            tp_check_problem(c, path, "out of memory");
            ok = 0;
        }
        tp_model_free(&m);
    }
    if (!ok) {
        tp_analysis_free(a);
        return NULL;
    }
    tp_analysis_finish(a);
    return a;
}

static int in_list(const json_t *list, const char *name) {
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v) if (json_is_string(v) &&
                                       strcmp(json_string_value(v), name) == 0) return 1;
    return 0;
}

static int in_group(const group *g, const char *name) {
    for (size_t k = 0; k < g->ntraces; k++)
        if (strcmp(g->traces[k].name, name) == 0) return 1;
    return 0;
}

/* summary.json's run.traces against the traces in the directory. */
static void check_trace_list(tp_checker *c, const char *path, const json_t *doc, const group *g) {
    const json_t *list = json_object_get(json_object_get(doc, "run"), "traces");
    if (!json_is_array(list)) {
        tp_check_problem(c, path, "no run.traces list");
        return;
    }
    size_t i;
    const json_t *v;
    json_array_foreach(list, i, v) if (!json_is_string(v) || !in_group(g, json_string_value(v)))
        tp_check_problem(c, path, "run.traces[%zu] %s is not in the directory", i,
                         json_is_string(v) ? json_string_value(v) : "(not a name)");
    for (size_t k = 0; k < g->ntraces; k++)
        if (!in_list(list, g->traces[k].name))
            tp_check_problem(c, path, "trace %s is not listed in run.traces", g->traces[k].name);
}

/* The path an artifact of kind should have in g: <dir>/<stem>[.rank<N>]<ext>. */
static void artifact_path(char *out, size_t n, const char *dir, int kind, int64_t rank) {
    const char *name = tp_run_kind_name(kind), *ext = strchr(name, '.');
    char part[32] = "";
    if (rank >= 0) snprintf(part, sizeof(part), ".rank%lld", (long long)rank);
    snprintf(out, n, "%s/%.*s%s%s", dir, (int)(ext - name), name, part, ext);
}

typedef struct totals {
    size_t traces, steps, ops;
} totals;

/* A flight recorder's run saves a trace only when a trigger fires: none, with no window and no
 * trace listed in its summary, is a healthy run (issue 22), not a missing trace. */
static int flight_without_trigger(const json_t *config, const json_t *summary) {
    const json_t *run = json_object_get(summary, "run");
    const json_t *traces = json_object_get(run, "traces");
    return json_is_true(json_object_get(config, "flight_recorder")) && json_is_array(traces) &&
           json_array_size(traces) == 0 && json_integer_value(json_object_get(run, "windows")) == 0;
}

/* dir: the folder of the run's artifacts (its tprof/ folder, or the run directory of an older
 * run). */
static void check_group(tp_checker *c, const char *dir, const group *g, totals *t) {
    json_t *docs[TP_RUN_TRACE] = {0};
    for (int k = 0; k < TP_RUN_TRACE; k++) {
        char path[4096];
        if (!g->artifacts[k]) {
            artifact_path(path, sizeof(path), dir, k, g->rank);
            tp_check_problem(c, path, "missing");
        } else if (k != TP_RUN_OP_STATS) {
            docs[k] = tp_check_load_json(c, g->artifacts[k]->path);
        }
    }
    if (docs[TP_RUN_CONFIG] && !json_is_object(docs[TP_RUN_CONFIG]))
        tp_check_problem(c, g->artifacts[TP_RUN_CONFIG]->path, "not a JSON object");
    const json_t *summary = docs[TP_RUN_SUMMARY];
    if (summary) check_trace_list(c, g->artifacts[TP_RUN_SUMMARY]->path, summary, g);
    tp_analysis *a = NULL;
    int stages_ok = 0;
    if (!g->ntraces && flight_without_trigger(docs[TP_RUN_CONFIG], summary)) {
        /* nothing to check against a trace */
    } else if (!g->ntraces) {
        const json_t *why = json_object_get(json_object_get(summary, "run"), "no_window_reason");
        tp_check_problem(c, dir, "no trace%s%s%s", g->label, json_is_string(why) ? ": " : "",
                         json_is_string(why) ? json_string_value(why) : "");
    } else if ((a = analyse(c, dir, g, json_is_object(docs[TP_RUN_CONFIG]), &stages_ok))) {
        if (docs[TP_RUN_STAGE_TIMES])
            tp_check_steps(c, g->artifacts[TP_RUN_STAGE_TIMES]->path, docs[TP_RUN_STAGE_TIMES], a);
        if (docs[TP_RUN_STAGE_TIMES] && stages_ok)
            tp_check_stages(c, g->artifacts[TP_RUN_STAGE_TIMES]->path, docs[TP_RUN_STAGE_TIMES], a);
        if (g->artifacts[TP_RUN_OP_STATS])
            tp_check_op_stats(c, g->artifacts[TP_RUN_OP_STATS]->path, a);
        if (summary) tp_check_summary(c, g->artifacts[TP_RUN_SUMMARY]->path, summary, a);
        t->steps += a->nsteps;
        t->ops += a->nops;
    }
    t->traces += g->ntraces;
    tp_analysis_free(a);
    for (int k = 0; k < TP_RUN_TRACE; k++)
        json_decref(docs[k]);
}

/* The ranks present, ascending (-1 for files without a rank part); n of them. */
static int64_t *ranks_of(const tp_run_dir *d, size_t *n) {
    int64_t *ranks = malloc((d->n + 1) * sizeof(*ranks));
    *n = 0;
    for (size_t i = 0; ranks && i < d->n; i++) {
        size_t k = 0;
        while (k < *n && ranks[k] != d->files[i].rank)
            k++;
        if (k == *n) ranks[(*n)++] = d->files[i].rank;
    }
    for (size_t i = 1; ranks && i < *n; i++) /* a handful: insertion sort */
        for (size_t k = i; k > 0 && ranks[k - 1] > ranks[k]; k--) {
            int64_t r = ranks[k];
            ranks[k] = ranks[k - 1];
            ranks[k - 1] = r;
        }
    return ranks;
}

/* The validation of one run directory into c: its problem lines, its verdict, its exit status. */
static int check_dir(const char *dir, tp_checker *c) {
    tp_run_dir d;
    char err[1024];
    if (!tp_run_is_dir(dir))
        return tp_cli_error("%s: not a directory (check takes a run directory)", dir);
    if (tp_run_dir_list(dir, &d, err, sizeof(err))) return tp_cli_error("%s", err);
    size_t nranks;
    int64_t *ranks = ranks_of(&d, &nranks);
    totals t = {0};
    int rc = ranks ? TP_EXIT_OK : tp_cli_error("out of memory");
    char *files = tp_run_files_dir(dir); /* where a missing artifact should be */
    if (!files) rc = tp_cli_error("out of memory");
    if (ranks && nranks == 0) tp_check_problem(c, dir, "no tprof artifacts and no traces");
    for (size_t i = 0; files && ranks && i < nranks; i++) {
        group g;
        if (gather(&g, &d, ranks[i])) {
            rc = tp_cli_error("out of memory");
        } else {
            check_group(c, files, &g, &t);
        }
        free(g.traces);
    }
    free(files);
    tp_check_flush(c);
    if (rc == TP_EXIT_OK && c->problems) {
        fflush(stdout); /* the problem lines first, where both streams go to one file */
        fprintf(stderr, "tprof: check: %zu problem%s in %s\n", c->problems,
                c->problems == 1 ? "" : "s", tp_log_name(dir));
        rc = TP_EXIT_FINDING;
    } else if (rc == TP_EXIT_OK) {
        printf("%s: ok: %zu trace%s, %zu steps, %zu ops", tp_log_name(dir), t.traces,
               t.traces == 1 ? "" : "s", t.steps, t.ops);
        if (nranks > 1) printf(", %zu ranks", nranks);
        putchar('\n');
    }
    free(ranks);
    tp_run_dir_free(&d);
    return rc;
}

/* One run: validated, then its analysis and report when asked; its exit status. */
static int check_run(const char *dir, int analysis, int report) {
    tp_checker c = {0};
    int rc = check_dir(dir, &c);
    if (rc != TP_EXIT_ERROR && (analysis || report)) {
        int more = tp_check_report(dir, &c, analysis, report);
        rc = more > rc ? more : rc;
    }
    tp_check_free(&c);
    fflush(stdout); /* each run's lines before the next run's errors */
    return rc;
}

static int run(int argc, char **argv) {
    static const tp_cli_opt opts[] = {{"help", 'h', 0}, {"analysis", 0, 0}, {"report", 0, 0}};
    tp_cli_parser p;
    tp_cli_parser_init(&p, "check", argc, argv, opts, sizeof(opts) / sizeof(opts[0]));
    int ndirs = 0, want[3] = {0};
    for (int k; (k = tp_cli_next(&p)) != TP_CLI_END;) {
        if (k == TP_CLI_BAD) return TP_EXIT_ERROR;
        if (k == TP_CLI_OPERAND)
            argv[1 + ndirs++] = (char *)p.value; /* in place: p has read past it */
        else
            want[k] = 1;
    }
    if (want[0]) {
        fputs(help, stdout);
        return TP_EXIT_OK;
    }
    if (!ndirs) return tp_cli_usage("check", "no run directory");
    int rc = TP_EXIT_OK;
    for (int i = 0; i < ndirs; i++) {
        int one = check_run(argv[1 + i], want[1], want[2]);
        rc = one > rc ? one : rc;
    }
    return rc;
}

const tp_cli_verb tp_cli_check = {
    .name = "check",
    .summary = "check that run directories are complete and agree with their traces",
    .help = help,
    .run = run,
};
