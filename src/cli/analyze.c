/* analyze.c - `tprof analyze`: the bottleneck report of one or more traces or run directories,
 * as text, JSON (docs/SEMANTICS.md §4), CSV or Markdown. */
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
    "INPUT is a Chrome/Kineto trace (.json or .json.gz; torch.profiler's and tprof's), a\n"
    "Perfetto trace tprof wrote (.pftrace), a run directory written by tprof (its traces), or -\n"
    "for standard input (JSON). Several inputs are analysed together, as one run.\n"
    "\n"
    "options:\n"
    "  --json               the JSON report (keys: docs/ANALYZE_JSON.md)\n"
    "  --csv                the op, kernel and stage tables as one CSV table\n"
    "  --markdown           the report as Markdown\n"
    "  --folded             folded stacks of the Python time (with_stack traces), for\n"
    "                       flamegraph.pl and speedscope: \"frame;frame;... microseconds\"\n"
    "  --top K              rows per table (default 10)\n"
    "  --stage NAME=PAT|PAT a stage and its name patterns (case-insensitive, * and ?);\n"
    "                       repeat it for each stage; replaces the run's own (its\n"
    "                       config.json's) or the default stages\n"
    "  --rank N             only the traces of rank N (a run directory with several ranks)\n"
    "  --peak-tflops X      a device's peak TFLOP/s for MFU (default: the GPU's from a table;\n"
    "                       a CPU has none)\n"
    "  -o, --output FILE    write the report to FILE instead of standard output\n"
    "  --summaries          the cross-rank analysis (the Ranks section, the straggler) from\n"
    "                       each rank's summary.json alone, reading no trace: INPUT is run\n"
    "                       directories or summary files of two ranks or more\n"
    "  --threads N          threads that read a plain JSON trace and analyse it (default: the\n"
    "                       cores available; 1: one thread for the whole command)\n"
    "  --max-memory SIZE    the memory the analysis may take (512M, 4G; 0: no limit; default:\n"
    "                       the machine's memory): past it, one line names the file and stops\n"
    "  --progress           show the reading progress even when stderr is not a terminal\n"
    "  --no-progress        never show it (default: inputs over ~100 MB, on a terminal)\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: 0 done, 2 usage error, unreadable input or unwritable output.\n";

/* Every option of analyze is one of the shared ones (args.c). */
static const tp_cli_opt opts[] = {
    {"json", 0, 0},        {"csv", 0, 0},       {"markdown", 0, 0},    {"top", 0, 1},
    {"stage", 0, 1},       {"rank", 0, 1},      {"output", 'o', 1},    {"progress", 0, 0},
    {"no-progress", 0, 0}, {"help", 'h', 0},    {"peak-tflops", 0, 1}, {"threads", 0, 1},
    {"max-memory", 0, 1},  {"summaries", 0, 0}, {"folded", 0, 0},
};
enum { OPT_SUMMARIES = 13, OPT_FOLDED = 14 }; /* analyze's own options, the last of opts */

/* 0 with the inputs gathered in argv (in place, in order) and s set, 1 when --help was printed,
 * -1 after a usage error. */
static int parse(int argc, char **argv, tp_cli_shared *s, size_t *ninputs, int *summaries,
                 int *folded) {
    tp_cli_parser p;
    tp_cli_parser_init(&p, "analyze", argc, argv, opts, sizeof(opts) / sizeof(opts[0]));
    for (int k; (k = tp_cli_next(&p)) != TP_CLI_END;) {
        if (k == TP_CLI_BAD) return -1;
        if (k == TP_CLI_OPERAND) {
            argv[1 + (*ninputs)++] = (char *)p.value;
            continue;
        }
        if (k == OPT_SUMMARIES || k == OPT_FOLDED) {
            *(k == OPT_SUMMARIES ? summaries : folded) = 1;
            continue;
        }
        int rc = tp_cli_shared_option(&p, s);
        if (rc == TP_CLI_HELP) {
            fputs(help, stdout);
            return 1;
        }
        if (rc != TP_CLI_APPLIED) return -1;
    }
    if (*folded && s->format_given) {
        tp_cli_usage("analyze", "give one output format (--folded or --json, --csv, --markdown)");
        return -1;
    }
    if (!*ninputs) {
        tp_cli_usage("analyze", "no input: give a trace file, a run directory or -");
        return -1;
    }
    return 0;
}

static void render(tp_buf *out, const tp_analysis *a, const tp_cli_shared *s, int folded) {
    if (folded) {
        tp_report_folded(out, a);
        return;
    }
    switch (s->format) {
    case TP_FORMAT_JSON:
        tp_report_json(out, a, &s->report);
        break;
    case TP_FORMAT_CSV:
        tp_report_csv(out, a, &s->report);
        break;
    case TP_FORMAT_MARKDOWN:
        tp_report_markdown(out, a, &s->report);
        break;
    default:
        tp_report_text(out, a, &s->report);
    }
}

static int run(int argc, char **argv) {
    tp_cli_shared s;
    tp_cli_shared_init(&s);
    size_t ninputs = 0;
    int summaries = 0, folded = 0;
    int rc = parse(argc, argv, &s, &ninputs, &summaries, &folded);
    if (rc == 0 && tp_cli_check_output(s.output, argv + 1, ninputs)) rc = -1;
    tp_analysis *a = NULL;
    if (rc == 0)
        a = summaries ? tp_cli_analyse_summaries(argv + 1, ninputs)
                      : tp_cli_analyse(argv + 1, ninputs, &s.read);
    if (a) {
        tp_buf out;
        tp_buf_init(&out);
        render(&out, a, &s, folded);
        rc = tp_cli_write(s.output, &out);
        tp_buf_free(&out);
        tp_analysis_free(a);
    } else {
        rc = rc > 0 ? TP_EXIT_OK : TP_EXIT_ERROR;
    }
    tp_cli_shared_free(&s);
    return rc;
}

const tp_cli_verb tp_cli_analyze = {
    .name = "analyze",
    .summary = "the bottleneck report of traces or run directories (text, JSON, CSV, Markdown)",
    .help = help,
    .run = run,
};
