/* report.c - `tprof report`: one self-contained HTML file of the analysis of traces or run
 * directories (docs/REPORT.md), the same page `tprof serve` shows and the library writes into
 * each run directory. Two run directories are two runs (the ranks of one job share one run
 * directory), so `tprof report A B` compares them, as `--compare A B` does for any two inputs. */
#include "cli/cli.h"

#include "report/html.h"
#include "run/rundir.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tprof report [options] INPUT... [-o FILE]\n"
    "       tprof report RUN_A RUN_B [-o FILE]\n"
    "       tprof report --compare A B [-o FILE]\n"
    "\n"
    "Writes one HTML file that opens from disk in any current browser, with no network and\n"
    "nothing beside it: the step chart by stage, the op and kernel tables, the memory curve,\n"
    "the timeline, the Trace view (every range, zoomable), ranks, and the run directory's\n"
    "files. Every figure is the one\n"
    "`tprof analyze --json` gives for the same input (docs/REPORT.md).\n"
    "\n"
    "INPUT is what tprof analyze reads: traces (.json, .json.gz, .pftrace), run directories, - "
    "for\n"
    "standard input; several inputs are analysed together, as one run, except two run\n"
    "directories: two runs, compared (A the baseline, B the candidate), both in the page.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE    the HTML file (default report.html; - for standard output)\n"
    "  --compare            two inputs A and B: the report of A with the Compare view, what\n"
    "                       tprof compare A B computes, and B's views (the A/B switch)\n"
    "  --together           two run directories analysed together as one run, not compared\n"
    "  --no-trace           no Trace view: the page keeps aggregates and samples only (under\n"
    "                       5 MB whatever the input)\n"
    "  --title TEXT         the page's title (default: the first input)\n"
    "  --stage NAME=PAT|PAT a stage and its name patterns (as tprof analyze)\n"
    "  --rank N             only the traces of rank N\n"
    "  --peak-tflops X      a device's peak TFLOP/s for MFU\n"
    "  --max-memory SIZE    the memory each analysis may take (512M, 4G; 0: no limit;\n"
    "                       default: the machine's memory)\n"
    "  --progress           show the reading progress even when stderr is not a terminal\n"
    "  --no-progress        never show it\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: 0 done, 2 usage error, unreadable input or unwritable output.\n";

static const tp_cli_opt opts[] = {
    {"output", 'o', 1},    {"compare", 0, 0},    {"title", 0, 1},       {"stage", 0, 1},
    {"rank", 0, 1},        {"progress", 0, 0},   {"no-progress", 0, 0}, {"help", 'h', 0},
    {"peak-tflops", 0, 1}, {"max-memory", 0, 1}, {"together", 0, 0},    {"no-trace", 0, 0},
};
enum { OPT_COMPARE = 1, OPT_TITLE = 2, OPT_TOGETHER = 10, OPT_NO_TRACE = 11 };

typedef struct report_args {
    tp_cli_shared shared;
    tp_run_html_opts html;
    size_t ninputs;
    int together;
    int no_trace;
} report_args;

/* 0 with the inputs gathered in argv (in place), 1 after --help, -1 after a usage error. */
static int parse(int argc, char **argv, report_args *x) {
    tp_cli_parser p;
    tp_cli_parser_init(&p, "report", argc, argv, opts, sizeof(opts) / sizeof(opts[0]));
    for (int k; (k = tp_cli_next(&p)) != TP_CLI_END;) {
        if (k == TP_CLI_BAD) return -1;
        if (k == TP_CLI_OPERAND) {
            argv[1 + x->ninputs++] = (char *)p.value;
        } else if (k == OPT_COMPARE) {
            x->html.compare = 1;
        } else if (k == OPT_TITLE) {
            x->html.title = p.value;
        } else if (k == OPT_TOGETHER) {
            x->together = 1;
        } else if (k == OPT_NO_TRACE) {
            x->no_trace = 1;
        } else {
            int rc = tp_cli_shared_option(&p, &x->shared);
            if (rc == TP_CLI_HELP) {
                fputs(help, stdout);
                return 1;
            }
            if (rc != TP_CLI_APPLIED) return -1;
        }
    }
    if (!x->ninputs) {
        tp_cli_usage("report", "no input: give a trace file, a run directory or -");
        return -1;
    }
    if (x->html.compare && x->ninputs != 2) {
        tp_cli_usage("report", "--compare takes two inputs, A and B (%zu given)", x->ninputs);
        return -1;
    }
    if (x->html.compare && x->together) {
        tp_cli_usage("report", "--compare and --together exclude each other");
        return -1;
    }
    /* two runs: one job's ranks share a run directory, so two directories are two jobs */
    if (x->ninputs == 2 && !x->together && tp_run_is_dir(argv[1]) && tp_run_is_dir(argv[2]))
        x->html.compare = 1;
    return 0;
}

/* The directory part of path ("." when it has none), in out. */
static void dir_of(const char *path, char *out, size_t n) {
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(out, n, ".");
    else if (slash == path)
        snprintf(out, n, "/");
    else
        snprintf(out, n, "%.*s", (int)(slash - path), path);
}

/* How the report at `output` links the files of run directory `dir`: "" when it lies in that
 * directory, else the directory's absolute path and a slash (a file:// link from disk). */
static char *artifacts_href(const char *output, const char *dir) {
    char out_dir[PATH_MAX], real_out[PATH_MAX], real_dir[PATH_MAX];
    dir_of(output, out_dir, sizeof(out_dir));
    if (!realpath(dir, real_dir)) return strdup("");
    if (realpath(out_dir, real_out) && strcmp(real_out, real_dir) == 0) return strdup("");
    size_t n = strlen(real_dir) + 2;
    char *href = malloc(n);
    if (href) snprintf(href, n, "%s/", real_dir);
    return href;
}

int tp_cli_html_analyse(tp_run_html *r, char *const *inputs, size_t n, const tp_run_html_opts *o) {
    char err[1024];
    if (tp_run_html_analyse(r, inputs, n, o, err, sizeof(err)) == 0) return 0;
    tp_cli_error("%s", err);
    return -1;
}

int tp_cli_html_write(const char *output, tp_run_html *r, const tp_run_html_opts *o) {
    tp_buf page; /* the data is rendered straight into the page */
    tp_buf_init(&page);
    size_t data_start = tp_html_page_open(&page);
    int rc = tp_run_html_render(&page, r, o) ? tp_cli_error("out of memory") : TP_EXIT_OK;
    if (rc == TP_EXIT_OK && tp_html_page_close(&page, data_start))
        rc = tp_cli_error("out of memory");
    if (rc == TP_EXIT_OK) rc = tp_cli_write(output, &page);
    tp_buf_free(&page);
    return rc;
}

static int report(report_args *x, char **inputs) {
    const char *output = x->shared.output ? x->shared.output : "report.html";
    if (tp_cli_check_output(output, inputs, x->ninputs)) return TP_EXIT_ERROR;
    char *files = tp_run_files_dir(inputs[0]); /* where a run directory's files are */
    char *href = files ? artifacts_href(strcmp(output, "-") == 0 ? "./-" : output, files) : NULL;
    free(files);
    x->html.read = &x->shared.read;
    x->html.artifacts_href = href;
    x->html.trace = !x->no_trace; /* the Trace view: every range (docs/REPORT.md) */
    tp_run_html r;
    int rc = tp_cli_html_analyse(&r, inputs, x->ninputs, &x->html) ? TP_EXIT_ERROR : TP_EXIT_OK;
    if (rc == TP_EXIT_OK) rc = tp_cli_html_write(output, &r, &x->html);
    tp_run_html_free(&r);
    free(href);
    return rc;
}

static int run(int argc, char **argv) {
    report_args x = {0};
    tp_cli_shared_init(&x.shared);
    int rc = parse(argc, argv, &x);
    rc = rc < 0 ? TP_EXIT_ERROR : rc > 0 ? TP_EXIT_OK : report(&x, argv + 1);
    tp_cli_shared_free(&x.shared);
    return rc;
}

const tp_cli_verb tp_cli_report = {
    .name = "report",
    .summary = "one self-contained HTML report of traces or run directories (docs/REPORT.md)",
    .help = help,
    .run = run,
};
