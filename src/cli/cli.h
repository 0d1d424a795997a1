/* cli.h - what the files of the tprof command share: the verbs, the option parser, the inputs
 * (trace files, run directories, standard input) and where the output goes.
 *
 * Exit status of every verb (docs/CLI.md): 0 success, 1 a finding (check found problems, compare
 * found a regression past --fail-above), 2 an error (usage, unreadable input, unwritable output).
 * Errors are one line on stderr, "tprof: ...", naming the file and, for bad trace input, the
 * byte offset. */
#ifndef TP_CLI_CLI_H
#define TP_CLI_CLI_H

#include "analysis/analysis.h"
#include "report/report.h"
#include "run/html_data.h"
#include "run/inputs.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

enum { TP_EXIT_OK = 0, TP_EXIT_FINDING = 1, TP_EXIT_ERROR = 2 };

/* ---- verbs (one file each) ---- */

typedef struct tp_cli_verb {
    const char *name;
    const char *summary;               /* one line for `tprof help` */
    const char *help;                  /* `tprof <verb> --help` */
    int (*run)(int argc, char **argv); /* argv[0] is the verb */
} tp_cli_verb;

extern const tp_cli_verb tp_cli_analyze, tp_cli_compare, tp_cli_check, tp_cli_merge, tp_cli_report,
    tp_cli_serve, tp_cli_run;

/* ---- messages ---- */

/* "tprof: <message>" on stderr; returns TP_EXIT_ERROR. */
int tp_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The message of the last tp_cli_error ("" before any). */
const char *tp_cli_last_error(void);
/* "tprof: <verb>: <message> (see tprof <verb> --help)"; returns TP_EXIT_ERROR. */
int tp_cli_usage(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- options ----
 * Long options are --name, --name VALUE or --name=VALUE; a short one -x, -x VALUE or -xVALUE.
 * "-" alone is an operand (standard input); "--" makes every later argument an operand. */

typedef struct tp_cli_opt {
    const char *name; /* without the dashes */
    char short_name;  /* 0 when none */
    int has_value;
} tp_cli_opt;

enum { TP_CLI_END = -1, TP_CLI_OPERAND = -2, TP_CLI_BAD = -3 };

typedef struct tp_cli_parser {
    const char *verb;
    int argc, i;
    char **argv;
    const tp_cli_opt *opts;
    size_t nopts;
    int operands_only;
    int opt;           /* the option just returned */
    const char *value; /* the value of the option just returned, or the operand */
} tp_cli_parser;

void tp_cli_parser_init(tp_cli_parser *p, const char *verb, int argc, char **argv,
                        const tp_cli_opt *opts, size_t nopts);
/* The index in opts of the next option (its value in p->value), TP_CLI_OPERAND (the operand in
 * p->value), TP_CLI_END, or TP_CLI_BAD after printing the usage error. */
int tp_cli_next(tp_cli_parser *p);
/* The value of the option just returned as an integer in [min, max]; 0, or -1 after printing
 * the usage error. */
int tp_cli_int_value(const tp_cli_parser *p, int64_t min, int64_t max, int64_t *out);
/* As a finite number; 0, or -1 after printing the usage error. */
int tp_cli_number_value(const tp_cli_parser *p, double *out);
/* As a size in bytes: a number with an optional unit K, M, G or T (powers of 1024; "B", "iB"
 * may follow: "512M", "1.5GiB"); 0, or -1 after printing the usage error. */
int tp_cli_size_value(const tp_cli_parser *p, uint64_t *out);
/* The machine's physical memory in bytes (0 when unknown: no limit). */
uint64_t tp_cli_default_memory(void);

/* ---- inputs ----
 * read by src/run/inputs.c (tp_inputs_opts, tp_inputs_analyse); read.c holds the command's side. */

/* The library's defaults, with the machine's physical memory as --max-memory's default
 * (tp_cli_default_memory). */
void tp_cli_read_opts_init(tp_inputs_opts *r);
void tp_cli_read_opts_free(tp_inputs_opts *r);
/* Adds one --stage NAME=PAT|PAT (or NAME); 0, or -1 after printing the usage error. */
int tp_cli_add_stage(tp_inputs_opts *r, const char *verb, const char *spec);

/* ---- the options analyze and compare share ---- */

typedef enum tp_cli_format {
    TP_FORMAT_TEXT,
    TP_FORMAT_JSON,
    TP_FORMAT_CSV,
    TP_FORMAT_MARKDOWN
} tp_cli_format;

typedef struct tp_cli_shared {
    tp_cli_format format; /* --json, --csv, --markdown; text when none */
    int format_given;
    tp_report_opts report; /* --top K */
    const char *output;    /* -o, --output FILE; NULL: standard output */
    tp_inputs_opts read;   /* --stage, --rank, --progress, --no-progress */
} tp_cli_shared;

enum { TP_CLI_NOT_SHARED = 0, TP_CLI_APPLIED = 1, TP_CLI_HELP = 2 };

void tp_cli_shared_init(tp_cli_shared *s);
void tp_cli_shared_free(tp_cli_shared *s);
/* Applies the option just returned by p when it is a shared one (found by name: a verb's table
 * lists those it takes). TP_CLI_APPLIED, TP_CLI_HELP for --help (the verb prints its help),
 * TP_CLI_NOT_SHARED, or -1 after printing a usage error. */
int tp_cli_shared_option(const tp_cli_parser *p, tp_cli_shared *s);

/* The inputs (trace files, run directories meaning their traces, "-" for standard input) read
 * and added into one finished analysis (tp_inputs_analyse). NULL after printing the error. */
tp_analysis *tp_cli_analyse(char *const *inputs, size_t n, const tp_inputs_opts *r);
/* summaries.c: `analyze --summaries`: the ranks of the inputs (summary.json files, run
 * directories meaning theirs) from their rank_summary alone, reading no trace. NULL after
 * printing the error. */
tp_analysis *tp_cli_analyse_summaries(char *const *inputs, size_t n);

/* ---- output ---- */

/* Writes out to path: "-" or NULL is standard output; a regular file is replaced whole or not
 * at all (tp_ofile); anything else (/dev/null, a pipe) is written as it is. TP_EXIT_OK, or
 * TP_EXIT_ERROR after printing the error. */
int tp_cli_write(const char *path, const tp_buf *out);
/* Where -o FILE writes: FILE, or the file a symbolic link FILE names (written through, the link
 * kept; tp_ofile alone would replace the link). Malloc'ed; NULL after printing why (a dangling
 * link, out of memory). */
char *tp_cli_output_target(const char *path);

/* Refuses an output that is one of the inputs (the same file, by device and inode, so links and
 * other spellings count) or that lies in an input run directory. TP_EXIT_OK, or TP_EXIT_ERROR
 * after printing one line. */
int tp_cli_check_output(const char *output, char *const *inputs, size_t n);

/* report.c, shared with check_report.c: the report data of inputs (tp_run_html_analyse) read
 * with the error printed: 0, or -1 after printing it (free r with tp_run_html_free either way);
 * the report page of r written to output (tp_cli_write: whole or not at all), TP_EXIT_OK or
 * TP_EXIT_ERROR after printing the error. */
int tp_cli_html_analyse(tp_run_html *r, char *const *inputs, size_t n, const tp_run_html_opts *o);
int tp_cli_html_write(const char *output, tp_run_html *r, const tp_run_html_opts *o);

/* Reads a whole file into out (NUL-terminated, the NUL not counted). 0, or -1 with err set to
 * "PATH: cannot read: reason". */
int tp_cli_read_file(const char *path, tp_buf *out, char *err, size_t errlen);

#endif
