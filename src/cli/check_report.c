/* check_report.c - what `tprof check --analysis --report` adds after validating a run
 * directory: the text report of its analysis (what `tprof analyze RUN` prints) and its HTML
 * report written into it as report.html, in its tprof/ folder when it has one (what `tprof report
 * RUN -o RUN/tprof/report.html` would write,
 * were an output inside an input run directory allowed), both from one read of its traces
 * (src/run/html_data.c). A run whose validation found traces that cannot be read gets the analysis
 * of the others, said in one line, and its report.html is left as it was. */
#include "cli/check.h"

#include "cli/cli.h"
#include "run/rundir.h"
#include "util/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The inputs of the analysis: the run directory itself, or, when some of its traces cannot be
 * read, the others (paths owned by files). */
typedef struct inputs {
    char **paths;
    size_t n, cap;
    tp_run_dir files;
} inputs;

static int is_unreadable(const tp_checker *c, const char *path) {
    for (size_t i = 0; i < c->nunreadable; i++)
        if (strcmp(c->unreadable[i], path) == 0) return 1;
    return 0;
}

/* Fills in with the traces of dir that c did not find unreadable. 0, or TP_EXIT_ERROR after
 * printing the error. */
static int readable_traces(inputs *in, const char *dir, const tp_checker *c) {
    char err[1024];
    if (tp_run_dir_list(dir, &in->files, err, sizeof(err))) return tp_cli_error("%s", err);
    for (size_t i = 0; i < in->files.n; i++) {
        const tp_run_file *f = &in->files.files[i];
        if (f->kind != TP_RUN_TRACE || is_unreadable(c, f->path)) continue;
        if (TP_GROW(in->paths, in->cap, in->n + 1)) return tp_cli_error("out of memory");
        in->paths[in->n++] = f->path;
    }
    return 0;
}

static void inputs_free(inputs *in) {
    free(in->paths);
    if (in->files.files) tp_run_dir_free(&in->files);
}

/* dir's report.html, beside its other artifacts (rundir.h's tp_run_files_dir). */
static char *report_path(const char *dir) {
    char *files = tp_run_files_dir(dir);
    char *path = files ? tp_run_join(files, "report.html") : NULL;
    free(files);
    return path;
}

static int print_analysis(const tp_analysis *a) {
    tp_buf out;
    tp_buf_init(&out);
    tp_report_text(&out, a, &(tp_report_opts){0});
    int rc = tp_cli_write(NULL, &out);
    tp_buf_free(&out);
    return rc;
}

static int write_report(const char *dir, tp_run_html *r, const tp_run_html_opts *o) {
    char *path = report_path(dir);
    if (!path) return tp_cli_error("out of memory");
    int rc = tp_cli_html_write(path, r, o);
    if (rc == TP_EXIT_OK) printf("Report: %s\n", path);
    free(path);
    return rc;
}

/* The analysis of the inputs, printed and/or written as report.html. */
static int analyse(const char *dir, char *const *paths, size_t n, int analysis, int report) {
    tp_inputs_opts read;
    tp_cli_read_opts_init(&read);
    tp_run_html_opts o = {.read = &read, .artifacts_href = ""};
    tp_run_html r;
    int rc = tp_cli_html_analyse(&r, paths, n, &o) ? TP_EXIT_ERROR : TP_EXIT_OK;
    if (rc == TP_EXIT_OK && analysis) rc = print_analysis(r.a);
    if (rc == TP_EXIT_OK && report) rc = write_report(dir, &r, &o);
    tp_run_html_free(&r);
    tp_cli_read_opts_free(&read);
    return rc;
}

/* A run with traces that cannot be read: the analysis of the others, no report.html. */
static int analyse_readable(const char *dir, const tp_checker *c, const inputs *in, int analysis,
                            int report) {
    size_t bad = c->nunreadable;
    fflush(stdout); /* the run's problem lines first, where both streams go to one file */
    if (!in->n || !analysis) {
        const char *what = analysis ? "analysis or report" : "report";
        if (bad)
            fprintf(stderr, "tprof: check: %s: no %s: %zu trace%s cannot be read\n", dir, what, bad,
                    bad == 1 ? "" : "s");
        else
            fprintf(stderr, "tprof: check: %s: no %s: no trace\n", dir, what);
        return TP_EXIT_FINDING;
    }
    fprintf(stderr,
            "tprof: check: %s: the analysis of %zu trace%s, without the %zu that cannot "
            "be read%s\n",
            dir, in->n, in->n == 1 ? "" : "s", bad, report ? "; report.html not written" : "");
    int rc = analyse(dir, in->paths, in->n, analysis, 0);
    return rc == TP_EXIT_OK ? TP_EXIT_FINDING : rc;
}

int tp_check_report(const char *dir, const tp_checker *c, int analysis, int report) {
    inputs in = {0};
    int rc = readable_traces(&in, dir, c);
    if (rc == TP_EXIT_OK && (c->nunreadable || !in.n)) {
        rc = analyse_readable(dir, c, &in, analysis, report);
    } else if (rc == TP_EXIT_OK) {
        char *const run[] = {(char *)dir}; /* the run directory itself: as tprof analyze RUN */
        rc = analyse(dir, run, 1, analysis, report);
    }
    inputs_free(&in);
    return rc;
}
