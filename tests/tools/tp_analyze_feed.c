/* tp_analyze_feed.c - builds tp_models from the neutral feed that tests/lib/tprof_ref.py writes,
 * runs the analysis on them and prints a report, so the analysis can be cross-checked on real
 * traces independently of the trace reader. With --trace the inputs are traces read by the real
 * reader instead (the end-to-end check).
 *
 * usage: tp_analyze_feed [--format json|text|markdown|csv|op_stats|stage_times] [--top K]
 *                        [--compare] [--trace] INPUT...
 * Each INPUT (a file, or - for standard input) becomes one model added to the analysis. With
 * --compare there must be two: A and B are analysed apart and compared. The feed format is
 * described at the top of tprof_ref.py. Exit status: 0, or 2 with "FILE:LINE: problem". */
#include "analysis/analysis.h"
#include "analysis/compare.h"
#include "model/model.h"
#include "report/report.h"
#include "trace/reader.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_FIELDS = 12 };

/* Undoes the feed's escapes (\\, \t, \n, \r) in place. */
static char *unescape(char *s) {
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == '\\' && r[1]) {
            r++;
            *w++ = *r == 't' ? '\t' : *r == 'n' ? '\n' : *r == 'r' ? '\r' : *r;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return s;
}

static int parse_i64(const char *s, int64_t *out) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end) return -1;
    *out = v;
    return 0;
}

static int parse_id(tp_model *m, const char *s, int64_t *num, tp_str *str) {
    *num = 0;
    *str = 0;
    if (strncmp(s, "s:", 2) == 0) {
        *str = tp_model_intern_cstr(m, s + 2);
        return 0;
    }
    return parse_i64(s, num);
}

static int parse_kind(const char *s) {
    static const char *const kinds[] = {"host",           "kernel",  "memcpy", "memset",
                                        "gpu_annotation", "instant", "memory", "counter"};
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
        if (strcmp(s, kinds[i]) == 0) return (int)i + TP_HOST_RANGE;
    return -1;
}

static const char *parse_event(tp_model *m, char **f, size_t n) {
    int64_t flags, pid, tid, ts, dur, corr;
    tp_str pid_str, tid_str;
    if (n != 10) return "an ev line has 10 fields";
    int kind = parse_kind(f[1]);
    if (kind < 0) return "unknown event kind";
    if (parse_i64(f[2], &flags) || parse_id(m, f[3], &pid, &pid_str) ||
        parse_id(m, f[4], &tid, &tid_str) || parse_i64(f[5], &ts) || parse_i64(f[6], &dur) ||
        parse_i64(f[7], &corr))
        return "bad number";
    uint32_t track = tp_model_track(m, pid, pid_str, tid, tid_str);
    tp_event *e = tp_model_add_event(m);
    if (!e || track == UINT32_MAX) return "out of memory";
    e->kind = (uint8_t)kind;
    e->flags = flags ? TP_EVF_STEP : 0;
    e->track = track;
    e->ts = ts;
    e->dur = dur;
    e->corr = (uint64_t)corr;
    e->cat = tp_model_intern_cstr(m, unescape(f[8]));
    e->name = tp_model_intern_cstr(m, unescape(f[9]));
    return NULL;
}

static const char *parse_arg(tp_model *m, char **f, size_t n) {
    if (n != 4 || !m->nevents) return "an arg line has 4 fields and follows an ev line";
    tp_event *e = &m->events[m->nevents - 1];
    const char *key = unescape(f[1]);
    if (strcmp(f[2], "i") == 0) {
        int64_t v;
        if (parse_i64(f[3], &v)) return "bad integer";
        return tp_model_arg_int(m, e, key, v) ? "out of memory" : NULL;
    }
    if (strcmp(f[2], "j") == 0) /* raw JSON text, such as "Input Dims" */
        return tp_model_arg_json(m, e, key, unescape(f[3])) ? "out of memory" : NULL;
    char *end;
    double v = strtod(f[3], &end);
    if (end == f[3] || *end) return "bad number";
    return tp_model_arg_double(m, e, key, v) ? "out of memory" : NULL;
}

static const char *parse_line(tp_model *m, char *line, char **path) {
    char *f[MAX_FIELDS] = {0};
    size_t n = 0;
    for (char *p = line; n < MAX_FIELDS;) {
        f[n++] = p;
        p = strchr(p, '\t');
        if (!p) break;
        *p++ = '\0';
    }
    int64_t a = 0, b = 0;
    if (strcmp(f[0], "ev") == 0) return parse_event(m, f, n);
    if (strcmp(f[0], "arg") == 0) return parse_arg(m, f, n);
    if (strcmp(f[0], "path") == 0 && n == 2) {
        free(*path);
        *path = strdup(unescape(f[1]));
        return NULL;
    }
    if (strcmp(f[0], "base") == 0 && n == 2 && !parse_i64(f[1], &a)) {
        m->base_ns = a;
        return NULL;
    }
    if (strcmp(f[0], "input") == 0 && n == 3 && !parse_i64(f[1], &a) && !parse_i64(f[2], &b)) {
        m->input_events = (uint64_t)a;
        m->input_bytes = (uint64_t)b;
        return NULL;
    }
    int64_t major = 0;
    if (strcmp(f[0], "device") == 0 && n == 5 && !parse_i64(f[1], &a) && !parse_i64(f[2], &b) &&
        !parse_i64(f[3], &major)) {
        tp_device *d = tp_model_device(m, a);
        if (!d) return "out of memory";
        d->total_mem = (uint64_t)b;
        d->compute_major = (int)major;
        d->name = tp_model_intern_cstr(m, unescape(f[4]));
        return NULL;
    }
    return "unknown or malformed record";
}

/* Reads one feed into m; *path gets the feed's path record (or NULL). 0, or -1 after printing. */
static int read_feed(const char *file, tp_model *m, char **path) {
    FILE *in = strcmp(file, "-") == 0 ? stdin : fopen(file, "r");
    if (!in) {
        fprintf(stderr, "%s: %s\n", file, strerror(errno));
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, in)) >= 0) {
        lineno++;
        if (len > 0 && line[len - 1] == '\n') line[len - 1] = '\0';
        if (!line[0]) continue;
        const char *err = parse_line(m, line, path);
        if (err) {
            fprintf(stderr, "%s:%ld: %s\n", file, lineno, err);
            rc = -1;
        }
    }
    free(line);
    if (in != stdin) fclose(in);
    return rc;
}

static int traces; /* --trace: inputs are traces for the reader, not feeds */

/* Reads a trace with the real reader. 0, or -1 after printing the reader's error. */
static int read_trace(const char *file, tp_model *m) {
    char err[512];
    if (tp_trace_read_file(file, m, NULL, err, sizeof(err)) == 0) return 0;
    fprintf(stderr, "%s\n", err);
    return -1;
}

/* A finished analysis of the inputs files[0..n); NULL after printing an error. */
static tp_analysis *analyse(char **files, int n) {
    tp_analysis *a = tp_analysis_new(NULL);
    for (int i = 0; a && i < n; i++) {
        tp_model m;
        char *path = NULL;
        tp_model_init(&m);
        int rc = traces ? read_trace(files[i], &m) : read_feed(files[i], &m, &path);
        if (rc == 0 && tp_analysis_add_model(a, &m, path ? path : files[i])) {
            fprintf(stderr, "%s: out of memory\n", files[i]);
            rc = -1;
        }
        free(path);
        tp_model_free(&m);
        if (rc) {
            tp_analysis_free(a);
            return NULL;
        }
    }
    if (a) tp_analysis_finish(a);
    return a;
}

static int render(const char *format, const tp_analysis *a, const tp_report_opts *o, tp_buf *out) {
    if (strcmp(format, "json") == 0)
        tp_report_json(out, a, o);
    else if (strcmp(format, "text") == 0)
        tp_report_text(out, a, o);
    else if (strcmp(format, "markdown") == 0)
        tp_report_markdown(out, a, o);
    else if (strcmp(format, "csv") == 0)
        tp_report_csv(out, a, o);
    else if (strcmp(format, "op_stats") == 0)
        tp_report_op_stats_csv(out, a);
    else if (strcmp(format, "stage_times") == 0)
        tp_report_stage_times_json(out, a);
    else
        return -1;
    return 0;
}

static int compare(const char *format, char **files, const tp_report_opts *o, tp_buf *out) {
    tp_analysis *a = analyse(files, 1), *b = a ? analyse(files + 1, 1) : NULL;
    tp_compare *c = b ? tp_compare_new(a, b) : NULL;
    int rc = c ? 0 : 2;
    if (c && strcmp(format, "json") == 0)
        tp_report_compare_json(out, c, o);
    else if (c && strcmp(format, "text") == 0)
        tp_report_compare_text(out, c, o);
    else if (c && strcmp(format, "markdown") == 0)
        tp_report_compare_markdown(out, c, o);
    else if (c)
        rc = 2;
    tp_compare_free(c);
    tp_analysis_free(b);
    tp_analysis_free(a);
    return rc;
}

int main(int argc, char **argv) {
    const char *format = "json";
    tp_report_opts o = {0};
    int cmp = 0, i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        if (strcmp(argv[i], "--format") == 0 && i + 1 < argc)
            format = argv[++i];
        else if (strcmp(argv[i], "--top") == 0 && i + 1 < argc)
            o.top_k = (size_t)strtoull(argv[++i], NULL, 10);
        else if (strcmp(argv[i], "--compare") == 0)
            cmp = 1;
        else if (strcmp(argv[i], "--trace") == 0)
            traces = 1;
        else
            break;
    }
    if (i >= argc || (cmp && argc - i != 2)) {
        fprintf(stderr,
                "usage: tp_analyze_feed [--format F] [--top K] [--compare] [--trace] INPUT...\n");
        return 2;
    }
    tp_buf out;
    tp_buf_init(&out);
    int rc;
    if (cmp) {
        rc = compare(format, argv + i, &o, &out);
    } else {
        tp_analysis *a = analyse(argv + i, argc - i);
        rc = !a || render(format, a, &o, &out) ? 2 : 0;
        tp_analysis_free(a);
    }
    if (rc == 0)
        fwrite(out.data, 1, out.len, stdout);
    else if (cmp)
        fprintf(stderr, "tp_analyze_feed: cannot compare (format %s)\n", format);
    tp_buf_free(&out);
    return rc;
}
