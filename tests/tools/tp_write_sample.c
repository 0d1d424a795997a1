/* tp_write_sample.c - builds a tp_model from a plain description and writes it with the Chrome
 * writer, plain and gzip, for tests/integration/test_chrome_output.py.
 *
 * The Python test composes the model (by hand, at random, or from a real Kineto trace), so it
 * knows every expected value without asking this program. Usage:
 *     tp_write_sample MODEL.tsv OUT.json OUT.json.gz
 * MODEL.tsv has one record per line, fields separated by tabs, every string as hex bytes:
 *     M base_ns rank world_size partial dropped_events
 *     O config window trace_name            (each hex, or "-" for NULL)
 *     D id name total_mem major minor num_sms
 *     T pid pid_str tid tid_str process_name thread_name      (track ids count from 0)
 *     E kind track ts dur corr flags cat name [key type value]...
 * where type is i (int), d (double, C syntax), s (string, hex) or j (raw JSON, hex).
 * Exit status 0 when both files were written, 1 on a write error, 2 on a bad description. */
#include "export/chrome.h"
#include "model/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sample {
    tp_model m;
    char *opt[3]; /* config, window, trace_name */
    int line;
} sample;

static int bad(const sample *s, const char *what) {
    fprintf(stderr, "tp_write_sample: line %d: %s\n", s->line, what);
    return -1;
}

static int nibble(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Decodes lower-case hex text in place; returns the byte count, or -1. */
static long unhex(char *text) {
    size_t n = strlen(text);
    if (n % 2) return -1;
    for (size_t i = 0; i < n / 2; i++) {
        int hi = nibble(text[2 * i]), lo = nibble(text[2 * i + 1]);
        if (hi < 0 || lo < 0) return -1;
        text[i] = (char)(hi << 4 | lo);
    }
    text[n / 2] = '\0';
    return (long)(n / 2);
}

static int field_str(sample *s, char **cur, tp_str *out) {
    char *f = strsep(cur, "\t");
    long n = f ? unhex(f) : -1;
    if (n < 0) return bad(s, "bad hex string");
    *out = tp_model_intern(&s->m, f, (size_t)n);
    return 0;
}

static int field_i64(sample *s, char **cur, int64_t *out) {
    char *f = strsep(cur, "\t"), *end;
    if (!f) return bad(s, "missing number");
    *out = strtoll(f, &end, 10);
    return *end ? bad(s, "bad number") : 0;
}

static int parse_meta(sample *s, char *cur) {
    int64_t v[5];
    for (int i = 0; i < 5; i++)
        if (field_i64(s, &cur, &v[i])) return -1;
    s->m.base_ns = v[0];
    s->m.rank = v[1];
    s->m.world_size = v[2];
    s->m.partial = (int)v[3];
    s->m.dropped_events = (uint64_t)v[4];
    return 0;
}

static int parse_opts(sample *s, char *cur) {
    for (int i = 0; i < 3; i++) {
        char *f = strsep(&cur, "\t");
        if (!f) return bad(s, "missing option");
        if (strcmp(f, "-") == 0) continue;
        if (unhex(f) < 0) return bad(s, "bad hex option");
        free(s->opt[i]); /* a repeated O line replaces the options */
        s->opt[i] = strdup(f);
    }
    return 0;
}

static int parse_device(sample *s, char *cur) {
    int64_t id, mem, major, minor, sms;
    tp_str name;
    if (field_i64(s, &cur, &id) || field_str(s, &cur, &name) || field_i64(s, &cur, &mem) ||
        field_i64(s, &cur, &major) || field_i64(s, &cur, &minor) || field_i64(s, &cur, &sms))
        return -1;
    tp_device *d = tp_model_device(&s->m, id);
    if (!d) return bad(s, "out of memory");
    d->name = name;
    d->total_mem = (uint64_t)mem;
    d->compute_major = (int)major;
    d->compute_minor = (int)minor;
    d->num_sms = (int)sms;
    return 0;
}

static int parse_track(sample *s, char *cur) {
    int64_t pid, tid;
    tp_str pid_str, tid_str, pname, tname;
    if (field_i64(s, &cur, &pid) || field_str(s, &cur, &pid_str) || field_i64(s, &cur, &tid) ||
        field_str(s, &cur, &tid_str) || field_str(s, &cur, &pname) || field_str(s, &cur, &tname))
        return -1;
    uint32_t t = tp_model_track(&s->m, pid, pid_str, tid, tid_str);
    if (t == UINT32_MAX || t != s->m.ntracks - 1) return bad(s, "duplicate track");
    s->m.tracks[t].process_name = pname;
    s->m.tracks[t].thread_name = tname;
    return 0;
}

static int parse_arg(sample *s, tp_event *ev, char **cur) {
    tp_str key, str;
    if (field_str(s, cur, &key)) return -1;
    char *type = strsep(cur, "\t");
    if (!type || !*cur) return bad(s, "arg without type or value");
    if (strcmp(type, "i") == 0) {
        int64_t v;
        return field_i64(s, cur, &v) ? -1 : tp_model_add_arg(&s->m, ev, key, TP_ARG_INT, &v);
    }
    if (strcmp(type, "d") == 0) {
        char *f = strsep(cur, "\t"), *end;
        double v = strtod(f, &end);
        return *end ? bad(s, "bad double") : tp_model_add_arg(&s->m, ev, key, TP_ARG_DOUBLE, &v);
    }
    if (strcmp(type, "s") != 0 && strcmp(type, "j") != 0) return bad(s, "bad arg type");
    if (field_str(s, cur, &str)) return -1;
    return tp_model_add_arg(&s->m, ev, key, type[0] == 's' ? TP_ARG_STR : TP_ARG_JSON, &str);
}

static int parse_event(sample *s, char *cur) {
    int64_t v[6];
    tp_str cat, name;
    for (int i = 0; i < 6; i++)
        if (field_i64(s, &cur, &v[i])) return -1;
    if (field_str(s, &cur, &cat) || field_str(s, &cur, &name)) return -1;
    tp_event *ev = tp_model_add_event(&s->m);
    if (!ev) return bad(s, "out of memory");
    ev->kind = (uint8_t)v[0];
    ev->track = (uint32_t)v[1];
    ev->ts = v[2];
    ev->dur = v[3];
    ev->corr = (uint64_t)v[4];
    ev->flags = (uint8_t)v[5];
    ev->cat = cat;
    ev->name = name;
    while (cur && *cur)
        if (parse_arg(s, ev, &cur)) return -1;
    return 0;
}

static int parse_line(sample *s, char *line) {
    char *cur = line;
    char *tag = strsep(&cur, "\t");
    if (!cur) return bad(s, "no fields");
    switch (tag[0]) {
    case 'M':
        return parse_meta(s, cur);
    case 'O':
        return parse_opts(s, cur);
    case 'D':
        return parse_device(s, cur);
    case 'T':
        return parse_track(s, cur);
    case 'E':
        return parse_event(s, cur);
    default:
        return bad(s, "unknown record");
    }
}

static int load(sample *s, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        return -1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, f)) > 0) {
        s->line++;
        if (line[n - 1] == '\n') line[n - 1] = '\0';
        rc = parse_line(s, line);
    }
    free(line);
    fclose(f);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: tp_write_sample MODEL.tsv OUT.json OUT.json.gz\n");
        return 2;
    }
    sample s;
    memset(&s, 0, sizeof(s));
    tp_model_init(&s.m);
    int rc = 2;
    if (load(&s, argv[1]) == 0) {
        tp_chrome_opts o = {.config_json = s.opt[0], .window = s.opt[1], .trace_name = s.opt[2]};
        char err[512];
        rc = 0;
        for (int gz = 0; gz <= 1 && rc == 0; gz++) {
            o.gzip = gz;
            if (tp_chrome_write_file(&s.m, argv[2 + gz], &o, err, sizeof(err)) != 0) {
                fprintf(stderr, "tp_write_sample: %s\n", err);
                rc = 1;
            }
        }
    }
    for (int i = 0; i < 3; i++)
        free(s.opt[i]);
    tp_model_free(&s.m);
    return rc;
}
