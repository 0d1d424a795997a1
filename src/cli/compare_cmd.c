/* compare_cmd.c - `tprof compare A B`: two runs side by side (docs/SEMANTICS.md §5), and CI gates
 * on the mean step time, a stage's or an op's time per step (--fail-above [TARGET=]PCT). */
#include "cli/cli.h"

#include "analysis/compare.h"
#include "report/report.h"
#include "util/vec.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char help[] =
    "usage: tprof compare [options] A B\n"
    "       tprof compare [options] --a A1 [--a A2 ...] --b B1 [--b B2 ...]\n"
    "\n"
    "Compares run B with run A: mean step time and its change, then the ops (self time) and\n"
    "GPU kernels (total time) whose time changed most; those on one side only are marked\n"
    "added (only in B) or removed (only in A).\n"
    "\n"
    "A and B are each a trace (.json, .json.gz, .pftrace), a run directory written by tprof, or "
    "-;\n"
    "with --a and --b a side may be several inputs, analysed together.\n"
    "\n"
    "options:\n"
    "  --json               the comparison as JSON (keys: docs/ANALYZE_JSON.md)\n"
    "  --markdown           as Markdown\n"
    "  --top K              rows per table (default 10)\n"
    "  --fail-above [TARGET=]PCT\n"
    "                       exit 1 when B's TARGET exceeds A's by more than PCT percent; TARGET\n"
    "                       is step (the mean step time, the default), stage:NAME (that stage's\n"
    "                       time per step, other included) or op:NAME (that op's self time per\n"
    "                       step); repeat it for several gates\n"
    "  --rank N             only the traces of rank N on each side\n"
    "  -o, --output FILE    write the comparison to FILE instead of standard output\n"
    "  --max-memory SIZE    the memory each analysis may take (512M, 4G; 0: no limit;\n"
    "                       default: the machine's memory)\n"
    "  --progress           show the reading progress even when stderr is not a terminal\n"
    "  --no-progress        never show it\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: 0 done (and no regression past --fail-above), 1 a gated figure of B is more\n"
    "than PCT percent above A's, 2 usage error, unreadable input, a gate that names nothing or\n"
    "a side without steps under a step gate, or unwritable output.\n";

enum { OPT_A, OPT_B, OPT_FAIL_ABOVE }; /* compare's own; the rest are shared (args.c) */

static const tp_cli_opt opts[] = {
    [OPT_A] = {"a", 0, 1}, [OPT_B] = {"b", 0, 1}, [OPT_FAIL_ABOVE] = {"fail-above", 0, 1},
    {"json", 0, 0},        {"markdown", 0, 0},    {"top", 0, 1},
    {"rank", 0, 1},        {"output", 'o', 1},    {"progress", 0, 0},
    {"no-progress", 0, 0}, {"help", 'h', 0},      {"max-memory", 0, 1},
};

typedef struct side {
    char **inputs;
    size_t n, cap;
} side;

/* One --fail-above: what it gates ("step", "stage:NAME", "op:NAME") and its limit. */
typedef struct gate_def {
    const char *target;
    double pct;
} gate_def;

typedef struct compare_args {
    tp_cli_shared shared;
    gate_def *gates; /* every --fail-above, in order */
    size_t ngates, cap_gates;
    side sides[2]; /* from --a and --b */
    side operands; /* A B */
} compare_args;

static int add_input(side *s, char *input) {
    if (TP_GROW(s->inputs, s->cap, s->n + 1)) {
        tp_cli_error("out of memory");
        return -1;
    }
    s->inputs[s->n++] = input;
    return 0;
}

/* The operands A B become the sides, unless --a and --b gave them. 0, or -1 after the error. */
static int settle_sides(compare_args *x) {
    side *ops = &x->operands;
    if (!x->sides[0].n && !x->sides[1].n) {
        if (ops->n == 2)
            return add_input(&x->sides[0], ops->inputs[0]) ||
                           add_input(&x->sides[1], ops->inputs[1])
                       ? -1
                       : 0;
        tp_cli_usage("compare", "give two inputs, A and B (got %zu)", ops->n);
    } else if (ops->n) {
        tp_cli_usage("compare", "give the inputs either as A B or with --a and --b");
    } else if (!x->sides[0].n || !x->sides[1].n) {
        tp_cli_usage("compare", "side %s has no input", x->sides[0].n ? "B" : "A");
    } else {
        return 0;
    }
    return -1;
}

/* --fail-above [TARGET=]PCT: the target is checked once the runs are read. */
static int add_gate(compare_args *x, tp_cli_parser *p) {
    const char *value = p->value, *eq = strrchr(value, '=');
    gate_def g = {.target = "step"};
    if (eq) {
        g.target = value;
        p->value = eq + 1;
    }
    int rc = tp_cli_number_value(p, &g.pct);
    p->value = value;
    if (rc) return -1;
    if (eq && strncmp(value, "step=", 5) != 0 && strncmp(value, "stage:", 6) != 0 &&
        strncmp(value, "op:", 3) != 0) {
        tp_cli_usage("compare", "--fail-above %s: the target is step, stage:NAME or op:NAME",
                     value);
        return -1;
    }
    if (TP_GROW(x->gates, x->cap_gates, x->ngates + 1)) {
        tp_cli_error("out of memory");
        return -1;
    }
    x->gates[x->ngates++] = g;
    return 0;
}

/* 0 with x filled, 1 when --help was printed, -1 after a usage error. */
static int parse(compare_args *x, int argc, char **argv) {
    tp_cli_parser p;
    tp_cli_parser_init(&p, "compare", argc, argv, opts, sizeof(opts) / sizeof(opts[0]));
    for (int k; (k = tp_cli_next(&p)) != TP_CLI_END;) {
        int rc;
        if (k == TP_CLI_BAD) return -1;
        if (k == TP_CLI_OPERAND) {
            rc = add_input(&x->operands, (char *)p.value);
        } else if (k == OPT_A || k == OPT_B) {
            rc = add_input(&x->sides[k == OPT_B], (char *)p.value);
        } else if (k == OPT_FAIL_ABOVE) {
            rc = add_gate(x, &p);
        } else if ((rc = tp_cli_shared_option(&p, &x->shared)) == TP_CLI_HELP) {
            fputs(help, stdout);
            return 1;
        } else {
            rc = rc == TP_CLI_APPLIED ? 0 : -1;
        }
        if (rc) return -1;
    }
    return settle_sides(x);
}

/* The target of a gate without its "=PCT". */
static int target_len(const gate_def *g) {
    const char *eq = strrchr(g->target, '=');
    return eq ? (int)(eq - g->target) : (int)strlen(g->target);
}

/* The exit status of one gate, after the report was written. */
static int check_gate(const tp_compare *c, const gate_def *g) {
    char target[512];
    snprintf(target, sizeof(target), "%.*s", target_len(g), g->target);
    int found;
    double change = tp_compare_change(c, target, &found);
    if (!found)
        return tp_cli_error("compare: --fail-above %s: no such %s on either side", target,
                            strncmp(target, "op:", 3) == 0 ? "op" : "stage");
    if (strcmp(target, "step") == 0 && isnan(change))
        return tp_cli_error("compare: --fail-above needs steps on both sides, and %s has no "
                            "ProfilerStep#<n> ranges",
                            c->a->nsteps ? "B" : "A");
    if (!(change > g->pct)) return TP_EXIT_OK; /* NaN: zero on both sides, no regression */
    fprintf(stderr, "tprof: compare: %s up %.2f%% (more than %g%%)\n",
            strcmp(target, "step") == 0 ? "mean step time" : target, change, g->pct);
    return TP_EXIT_FINDING;
}

/* The exit status of every gate: the worst of them. */
static int gate(const compare_args *x, const tp_compare *c) {
    int rc = TP_EXIT_OK;
    for (size_t i = 0; i < x->ngates; i++) {
        int one = check_gate(c, &x->gates[i]);
        if (one == TP_EXIT_ERROR || (one == TP_EXIT_FINDING && rc == TP_EXIT_OK)) rc = one;
    }
    return rc;
}

static void render(tp_buf *out, const tp_compare *c, const tp_cli_shared *s) {
    if (s->format == TP_FORMAT_JSON)
        tp_report_compare_json(out, c, &s->report);
    else if (s->format == TP_FORMAT_MARKDOWN)
        tp_report_compare_markdown(out, c, &s->report);
    else
        tp_report_compare_text(out, c, &s->report);
}

static int compare(const compare_args *x) {
    for (int i = 0; i < 2; i++)
        if (tp_cli_check_output(x->shared.output, x->sides[i].inputs, x->sides[i].n))
            return TP_EXIT_ERROR;
    /* Both sides analysed with the same stages: those every input was recorded with. */
    size_t n0 = x->sides[0].n, n1 = x->sides[1].n;
    char **both = malloc((n0 + n1) * sizeof(*both));
    if (!both) {
        tp_cli_error("out of memory");
        return TP_EXIT_ERROR;
    }
    memcpy(both, x->sides[0].inputs, n0 * sizeof(*both));
    memcpy(both + n0, x->sides[1].inputs, n1 * sizeof(*both));
    tp_inputs_opts read = x->shared.read;
    read.stages_of = both;
    read.nstages_of = n0 + n1;
    tp_analysis *a = tp_cli_analyse(x->sides[0].inputs, n0, &read);
    tp_analysis *b = a ? tp_cli_analyse(x->sides[1].inputs, n1, &read) : NULL;
    free(both);
    tp_compare *c = b ? tp_compare_new(a, b) : NULL;
    int rc = TP_EXIT_ERROR;
    if (b && !c) tp_cli_error("out of memory");
    if (c) {
        tp_buf out;
        tp_buf_init(&out);
        render(&out, c, &x->shared);
        rc = tp_cli_write(x->shared.output, &out);
        tp_buf_free(&out);
        if (rc == TP_EXIT_OK) rc = gate(x, c);
    }
    tp_compare_free(c);
    tp_analysis_free(b);
    tp_analysis_free(a);
    return rc;
}

static int run(int argc, char **argv) {
    compare_args x = {0};
    tp_cli_shared_init(&x.shared);
    int rc = parse(&x, argc, argv);
    rc = rc < 0 ? TP_EXIT_ERROR : rc > 0 ? TP_EXIT_OK : compare(&x);
    for (int i = 0; i < 2; i++)
        free(x.sides[i].inputs);
    free(x.operands.inputs);
    free(x.gates);
    tp_cli_shared_free(&x.shared);
    return rc;
}

const tp_cli_verb tp_cli_compare = {
    .name = "compare",
    .summary = "compare two runs: step time change, ops and kernels that changed (CI gate)",
    .help = help,
    .run = run,
};
