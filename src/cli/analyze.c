/* analyze.c - `tprof analyze`: the bottleneck report of one or more traces or run directories,
 * as text, JSON (SEMANTICS.md §4), CSV or Markdown. */
#include "cli/cli.h"

#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>

static const char help[] =
    "usage: tprof analyze [options] INPUT...\n"
    "\n"
    "Reports where a training loop's time goes: steps, stages, the top CPU ops by self time,\n"
    "the top GPU kernels, GPU utilization, memory peaks, FLOPs and recommendations.\n"
    "\n"
    "INPUT is a Chrome/Kineto trace (.json or .json.gz; torch.profiler's and tprof's), a run\n"
    "directory written by tprof (its traces), or - for standard input. Several inputs are\n"
    "analysed together, as one run.\n"
    "\n"
    "options:\n"
    "  --json               the JSON report (keys: docs/ANALYZE_JSON.md)\n"
    "  --csv                the op, kernel and stage tables as one CSV table\n"
    "  --markdown           the report as Markdown\n"
    "  --top K              rows per table (default 10)\n"
    "  --stage NAME=PAT|PAT a stage and its name patterns (case-insensitive, * and ?);\n"
    "                       repeat it for each stage; replaces the default stages\n"
    "  --rank N             only the traces of rank N (a run directory with several ranks)\n"
    "  -o, --output FILE    write the report to FILE instead of standard output\n"
    "  --progress           show the reading progress even when stderr is not a terminal\n"
    "  --no-progress        never show it (default: inputs over ~100 MB, on a terminal)\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: 0 done, 2 usage error, unreadable input or unwritable output.\n";

enum {
    OPT_JSON,
    OPT_CSV,
    OPT_MARKDOWN,
    OPT_TOP,
    OPT_STAGE,
    OPT_RANK,
    OPT_OUTPUT,
    OPT_PROGRESS,
    OPT_NO_PROGRESS,
    OPT_HELP
};

static const tp_cli_opt opts[] = {
    [OPT_JSON] = {"json", 0, 0},
    [OPT_CSV] = {"csv", 0, 0},
    [OPT_MARKDOWN] = {"markdown", 0, 0},
    [OPT_TOP] = {"top", 0, 1},
    [OPT_STAGE] = {"stage", 0, 1},
    [OPT_RANK] = {"rank", 0, 1},
    [OPT_OUTPUT] = {"output", 'o', 1},
    [OPT_PROGRESS] = {"progress", 0, 0},
    [OPT_NO_PROGRESS] = {"no-progress", 0, 0},
    [OPT_HELP] = {"help", 'h', 0},
};

typedef void (*render_fn)(tp_buf *, const tp_analysis *, const tp_report_opts *);

typedef struct analyze_args {
    render_fn render;
    int format_opt; /* the format option given, or -1 */
    tp_report_opts report;
    const char *output;
    tp_cli_read_opts read;
    char **inputs;
    size_t ninputs;
} analyze_args;

/* A format option: a second, different one is a usage error. */
static int set_format(analyze_args *x, int opt) {
    static const render_fn renderers[] = {[OPT_JSON] = tp_report_json,
                                          [OPT_CSV] = tp_report_csv,
                                          [OPT_MARKDOWN] = tp_report_markdown};
    if (x->format_opt >= 0 && x->format_opt != opt) {
        tp_cli_usage("analyze", "choose one of --json, --csv, --markdown");
        return -1;
    }
    x->format_opt = opt;
    x->render = renderers[opt];
    return 0;
}

/* 0 with x filled, 1 when --help was printed, -1 after a usage error. */
static int parse(analyze_args *x, int argc, char **argv) {
    tp_cli_parser p;
    tp_cli_parser_init(&p, "analyze", argc, argv, opts, sizeof(opts) / sizeof(opts[0]));
    x->inputs = argv + 1; /* operands are gathered in place, in order */
    int64_t v;
    for (int k; (k = tp_cli_next(&p)) != TP_CLI_END;) {
        int rc = 0;
        switch (k) {
        case TP_CLI_BAD:
            return -1;
        case TP_CLI_OPERAND:
            x->inputs[x->ninputs++] = (char *)p.value;
            break;
        case OPT_JSON:
        case OPT_CSV:
        case OPT_MARKDOWN:
            rc = set_format(x, k);
            break;
        case OPT_TOP:
            rc = tp_cli_int_value(&p, 1, 100000000, &v);
            x->report.top_k = (size_t)v;
            break;
        case OPT_OUTPUT:
            x->output = p.value;
            break;
        case OPT_HELP:
            fputs(help, stdout);
            return 1;
        default: /* --stage, --rank, --progress, --no-progress */
            rc = tp_cli_read_option(&p, &x->read) < 0;
        }
        if (rc) return -1;
    }
    if (!x->ninputs) {
        tp_cli_usage("analyze", "no input: give a trace file, a run directory or -");
        return -1;
    }
    return 0;
}

static int run(int argc, char **argv) {
    analyze_args x = {.render = tp_report_text, .format_opt = -1};
    tp_cli_read_opts_init(&x.read);
    int rc = parse(&x, argc, argv);
    if (rc) {
        tp_cli_read_opts_free(&x.read);
        return rc > 0 ? TP_EXIT_OK : TP_EXIT_ERROR;
    }
    tp_analysis *a = tp_cli_analyse(x.inputs, x.ninputs, &x.read);
    rc = TP_EXIT_ERROR;
    if (a) {
        tp_buf out;
        tp_buf_init(&out);
        x.render(&out, a, &x.report);
        rc = tp_cli_write(x.output, &out);
        tp_buf_free(&out);
        tp_analysis_free(a);
    }
    tp_cli_read_opts_free(&x.read);
    return rc;
}

const tp_cli_verb tp_cli_analyze = {
    .name = "analyze",
    .summary = "the bottleneck report of traces or run directories (text, JSON, CSV, Markdown)",
    .help = help,
    .run = run,
};
