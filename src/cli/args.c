/* args.c - the command line of every verb: options, their values, and the one-line messages for
 * what is wrong with them.
 *
 * Verbs describe their options in a table; the parser walks argv in order, so an option may
 * follow the operands (`tprof analyze trace.json --json`) as users expect. */
#include "cli/cli.h"

#include "util/log.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The last error line, for callers that hand it on (tp_html_data's err). */
static char last_error[1024];

/* Every line the command prints goes through tp_log_escape: a file name with a line break
 * (which a planted file may have) cannot split it or forge another "tprof: ..." line. */
int tp_cli_error(const char *fmt, ...) {
    char raw[sizeof(last_error)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    tp_log_escape(last_error, sizeof(last_error), raw);
    fprintf(stderr, "tprof: %s\n", last_error);
    return TP_EXIT_ERROR;
}

const char *tp_cli_last_error(void) {
    return last_error;
}

int tp_cli_usage(const char *verb, const char *fmt, ...) {
    char raw[sizeof(last_error)], line[sizeof(last_error)];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(raw, sizeof(raw), fmt, ap);
    va_end(ap);
    tp_log_escape(line, sizeof(line), raw);
    fprintf(stderr, "tprof: %s: %s (see tprof %s --help)\n", verb, line, verb);
    return TP_EXIT_ERROR;
}

void tp_cli_parser_init(tp_cli_parser *p, const char *verb, int argc, char **argv,
                        const tp_cli_opt *opts, size_t nopts) {
    *p = (tp_cli_parser){
        .verb = verb, .argc = argc, .i = 1, .argv = argv, .opts = opts, .nopts = nopts};
}

static int find_long(const tp_cli_parser *p, const char *name, size_t len) {
    for (size_t k = 0; k < p->nopts; k++)
        if (strlen(p->opts[k].name) == len && memcmp(p->opts[k].name, name, len) == 0)
            return (int)k;
    return -1;
}

static int find_short(const tp_cli_parser *p, char c) {
    for (size_t k = 0; k < p->nopts; k++)
        if (p->opts[k].short_name && p->opts[k].short_name == c) return (int)k;
    return -1;
}

int tp_cli_next(tp_cli_parser *p) {
    while (p->i < p->argc) {
        char *arg = p->argv[p->i++];
        if (p->operands_only || arg[0] != '-' || arg[1] == '\0') {
            p->value = arg;
            return TP_CLI_OPERAND;
        }
        if (strcmp(arg, "--") == 0) {
            p->operands_only = 1;
            continue;
        }
        const char *attached = NULL; /* --name=VALUE or -xVALUE */
        int k;
        if (arg[1] == '-') {
            const char *eq = strchr(arg + 2, '=');
            k = find_long(p, arg + 2, eq ? (size_t)(eq - arg - 2) : strlen(arg + 2));
            if (eq) attached = eq + 1;
        } else {
            k = find_short(p, arg[1]);
            if (arg[2]) attached = arg + 2;
        }
        if (k < 0) {
            tp_cli_usage(p->verb, "unknown option %s", arg);
            return TP_CLI_BAD;
        }
        const tp_cli_opt *o = &p->opts[k];
        if (!o->has_value && attached) {
            tp_cli_usage(p->verb, "option --%s takes no value (got %s)", o->name, arg);
            return TP_CLI_BAD;
        }
        p->opt = k;
        p->value = attached;
        if (o->has_value && !attached) {
            if (p->i >= p->argc) {
                tp_cli_usage(p->verb, "option --%s needs a value", o->name);
                return TP_CLI_BAD;
            }
            p->value = p->argv[p->i++];
        }
        return k;
    }
    return TP_CLI_END;
}

int tp_cli_int_value(const tp_cli_parser *p, int64_t min, int64_t max, int64_t *out) {
    const char *s = p->value;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        tp_cli_usage(p->verb, "invalid value \"%s\" for --%s: must be an integer from %lld to %lld",
                     s, p->opts[p->opt].name, (long long)min, (long long)max);
        return -1;
    }
    *out = v;
    return 0;
}

int tp_cli_number_value(const tp_cli_parser *p, double *out) {
    const char *s = p->value;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) {
        tp_cli_usage(p->verb, "invalid value \"%s\" for --%s: must be a number", s,
                     p->opts[p->opt].name);
        return -1;
    }
    *out = v;
    return 0;
}

int tp_cli_size_value(const tp_cli_parser *p, uint64_t *out) {
    static const char units[] = "KMGT";
    const char *s = p->value;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
    if (u) {
        v *= (double)(UINT64_C(1) << (10 * (u - units + 1)));
        end += 1 + (end[1] == 'i' || end[1] == 'I');
    }
    if (*end == 'B' || *end == 'b') end++;
    if (errno || end == s || *end || !(v >= 0) || v >= 0x1p63) {
        tp_cli_usage(p->verb,
                     "invalid value \"%s\" for --%s: must be a size such as 512M, 4G or 0 "
                     "(no limit)",
                     s, p->opts[p->opt].name);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

uint64_t tp_cli_default_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
    return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

void tp_cli_shared_init(tp_cli_shared *s) {
    *s = (tp_cli_shared){.format = TP_FORMAT_TEXT};
    tp_cli_read_opts_init(&s->read);
}

void tp_cli_shared_free(tp_cli_shared *s) {
    tp_cli_read_opts_free(&s->read);
}

static int set_format(const tp_cli_parser *p, tp_cli_shared *s, tp_cli_format f) {
    if (s->format_given && s->format != f) {
        tp_cli_usage(p->verb, "give one output format (--%s or --%s)", p->opts[p->opt].name,
                     s->format == TP_FORMAT_JSON  ? "json"
                     : s->format == TP_FORMAT_CSV ? "csv"
                                                  : "markdown");
        return -1;
    }
    s->format = f;
    s->format_given = 1;
    return TP_CLI_APPLIED;
}

int tp_cli_shared_option(const tp_cli_parser *p, tp_cli_shared *s) {
    const char *name = p->opts[p->opt].name;
    tp_inputs_opts *r = &s->read;
    int64_t v;
    if (strcmp(name, "json") == 0) return set_format(p, s, TP_FORMAT_JSON);
    if (strcmp(name, "csv") == 0) return set_format(p, s, TP_FORMAT_CSV);
    if (strcmp(name, "markdown") == 0) return set_format(p, s, TP_FORMAT_MARKDOWN);
    if (strcmp(name, "help") == 0) return TP_CLI_HELP;
    if (strcmp(name, "output") == 0) {
        s->output = p->value;
    } else if (strcmp(name, "top") == 0) {
        if (tp_cli_int_value(p, 1, 100000000, &v)) return -1;
        s->report.top_k = (size_t)v;
    } else if (strcmp(name, "stage") == 0) {
        if (tp_cli_add_stage(r, p->verb, p->value)) return -1;
    } else if (strcmp(name, "peak-tflops") == 0) {
        if (tp_cli_number_value(p, &r->peak_tflops)) return -1;
        if (!(r->peak_tflops > 0))
            return tp_cli_usage(p->verb, "--peak-tflops wants a positive number"), -1;
    } else if (strcmp(name, "rank") == 0) {
        if (tp_cli_int_value(p, 0, INT32_MAX, &r->rank)) return -1;
    } else if (strcmp(name, "threads") == 0) {
        if (tp_cli_int_value(p, 1, 64, &v)) return -1;
        r->threads = (int)v;
    } else if (strcmp(name, "max-memory") == 0) {
        if (tp_cli_size_value(p, &r->max_memory)) return -1;
    } else if (strcmp(name, "progress") == 0) {
        r->progress = TP_INPUTS_PROGRESS_FORCE;
    } else if (strcmp(name, "no-progress") == 0) {
        r->progress = TP_INPUTS_PROGRESS_OFF;
    } else {
        return TP_CLI_NOT_SHARED;
    }
    return TP_CLI_APPLIED;
}
