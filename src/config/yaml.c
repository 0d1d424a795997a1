/* yaml.c - the YAML source: the keys of a top-level "profiling:" mapping (libyaml events).
 *
 * Other top-level keys belong to the host's own configuration and are skipped. The file is read
 * as a stream of events, never as a document tree: nesting deeper than TP_YAML_MAX_DEPTH anywhere
 * in the file stops the reading with an error at once (a tree of 100,000 levels costs libyaml's
 * loader seconds), and only the profiling: values are kept. A profiling: mapping without an
 * enabled key turns profiling on (adding the section is how a use case asks for it); enabled:
 * false still wins. Only a regular file is read, and opening one never blocks (a FIFO, a device).
 * Every message names the file, line and column, as "<file>:<line>:<column>".
 *
 * A run's config.json (tprof_config_to_json's flat object) reads through the same events: JSON is
 * YAML's flow form, and its top-level mapping is then the keys themselves (tp_yaml.only). */
#include "config/table.h"

#include "util/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

/* The deepest nesting of mappings and sequences accepted (docs/CONFIG.md). */
#define TP_YAML_MAX_DEPTH 256

typedef struct tp_yaml {
    yaml_parser_t parser;
    yaml_event_t ev; /* the current event, when has_ev */
    int has_ev;
    int depth;      /* mappings and sequences open */
    int apply;      /* 0: the first pass, which only checks the syntax and the nesting */
    char **anchors; /* anchored plain values, as pairs: name, value (the second pass) */
    size_t nanchors, cap;
    tprof_config *cfg;
    /* NULL: a host's file, whose profiling: mapping holds the keys; else a run's config.json,
     * whose top-level mapping does, of which only the key named here is read. */
    const char *only;
    char path[TP_SHOWN_SIZE]; /* the file, as messages show it */
} tp_yaml;

static int yaml_fail(tp_yaml *y, const yaml_mark_t *m, const char *what) {
    snprintf(y->cfg->err, sizeof(y->cfg->err), "%s:%zu:%zu: %s", y->path, m->line + 1,
             m->column + 1, what);
    tp_config_one_line(y->cfg->err, sizeof(y->cfg->err));
    return -1;
}

/* Keeps an anchored scalar (&name value), so that an alias under profiling: can use it. */
static int remember_anchor(tp_yaml *y) {
    const yaml_event_t *e = &y->ev;
    if (TP_GROW(y->anchors, y->cap, y->nanchors + 2))
        return TP_CONFIG_FAIL(y->cfg, "out of memory");
    char *name = strdup((const char *)e->data.scalar.anchor);
    char *value = strdup((const char *)e->data.scalar.value);
    if (!name || !value) {
        free(name);
        free(value);
        return TP_CONFIG_FAIL(y->cfg, "out of memory");
    }
    y->anchors[y->nanchors++] = name;
    y->anchors[y->nanchors++] = value;
    return 0;
}

/* The next event into y->ev; its depth counted. 0, or -1 with the error set. */
static int next(tp_yaml *y) {
    if (y->has_ev) yaml_event_delete(&y->ev);
    y->has_ev = 0;
    if (!yaml_parser_parse(&y->parser, &y->ev)) {
        char what[300];
        snprintf(what, sizeof(what), "invalid YAML: %s%s%s",
                 y->parser.problem ? y->parser.problem : "error", y->parser.context ? " " : "",
                 y->parser.context ? y->parser.context : "");
        return yaml_fail(y, &y->parser.problem_mark, what);
    }
    y->has_ev = 1;
    yaml_event_type_t t = y->ev.type;
    if (y->apply && t == YAML_SCALAR_EVENT && y->ev.data.scalar.anchor) return remember_anchor(y);
    if (t == YAML_MAPPING_START_EVENT || t == YAML_SEQUENCE_START_EVENT) {
        if (++y->depth > TP_YAML_MAX_DEPTH) {
            char what[96];
            snprintf(what, sizeof(what), "nested deeper than %d levels (the most tprof reads)",
                     TP_YAML_MAX_DEPTH);
            return yaml_fail(y, &y->ev.start_mark, what);
        }
    } else if (t == YAML_MAPPING_END_EVENT || t == YAML_SEQUENCE_END_EVENT) {
        y->depth--;
    }
    return 0;
}

/* Skips the node whose first event is current: a collection up to its end event. */
static int skip_node(tp_yaml *y) {
    yaml_event_type_t t = y->ev.type;
    if (t != YAML_MAPPING_START_EVENT && t != YAML_SEQUENCE_START_EVENT) return 0;
    int depth = y->depth;
    while (y->depth >= depth)
        if (next(y)) return -1;
    return 0;
}

static const char *scalar(const tp_yaml *y) {
    return y->ev.type == YAML_SCALAR_EVENT ? (const char *)y->ev.data.scalar.value : NULL;
}

/* A plain value: a scalar, or an alias of an anchored scalar (the latest of that name); NULL
 * for anything else. */
static const char *value(const tp_yaml *y) {
    if (y->ev.type != YAML_ALIAS_EVENT) return scalar(y);
    const char *name = (const char *)y->ev.data.alias.anchor;
    for (size_t i = y->nanchors; i >= 2; i -= 2)
        if (strcmp(y->anchors[i - 2], name) == 0) return y->anchors[i - 1];
    return NULL;
}

/* "", "~" and "null" written plainly: a key given no value. */
static int is_null(const tp_yaml *y) {
    const char *s = scalar(y);
    return s && y->ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (!*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0);
}

static void source_at(const tp_yaml *y, char *source, size_t size) {
    snprintf(source, size, "%s:%zu:%zu", y->path, y->ev.start_mark.line + 1,
             y->ev.start_mark.column + 1);
}

/* A sequence value (current: its start): its items, when all are plain values. */
static int apply_sequence(tp_yaml *y, const char *key, const char *source) {
    char **items = NULL;
    size_t n = 0, cap = 0;
    int nested = 0, rc = 0;
    while (rc == 0 && !(rc = next(y)) && y->ev.type != YAML_SEQUENCE_END_EVENT) {
        const char *s = value(y);
        if (!s) {
            nested = 1;
            rc = skip_node(y);
        } else if (TP_GROW(items, cap, n + 1) || !(items[n] = strdup(s))) {
            rc = TP_CONFIG_FAIL(y->cfg, "out of memory");
        } else {
            n++;
        }
    }
    if (rc == 0)
        rc = nested ? tp_config_reject(y->cfg, key, strlen(key), "[...]", source)
                    : tp_config_apply_list(y->cfg, key, strlen(key), (const char *const *)items, n,
                                           source);
    tp_free_strings(items, n);
    return rc;
}

/* One key: value pair of profiling: (current: the key's event). *enabled_seen is set when the key
 * is enabled. */
static int apply_pair(tp_yaml *y, int *enabled_seen) {
    const char *k = scalar(y);
    if (!k) return yaml_fail(y, &y->ev.start_mark, "a key under profiling: must be a name");
    char *key = strdup(k);
    if (!key) return TP_CONFIG_FAIL(y->cfg, "out of memory");
    const tp_keydef *def = tp_config_find_key(key, strlen(key));
    *enabled_seen |= def == &tp_config_keys[TP_KEY_ENABLED];
    int rc = next(y);
    char source[TP_SHOWN_SIZE + 48];
    source_at(y, source, sizeof(source));
    if (rc)
        ; /* the error is set */
    else if (!y->apply)
        rc = skip_node(y);
    else if (value(y))
        rc = tp_config_apply(y->cfg, key, strlen(key), value(y), source);
    else if (y->ev.type == YAML_SEQUENCE_START_EVENT)
        rc = apply_sequence(y, key, source);
    else if (y->ev.type == YAML_MAPPING_START_EVENT)
        rc = skip_node(y) ? -1 : tp_config_reject(y->cfg, key, strlen(key), "{...}", source);
    else /* an alias of a mapping or a list */
        rc = yaml_fail(
            y, &y->ev.start_mark,
            "an alias under profiling: must name a plain value anchored before it (&name value)");
    free(key);
    return rc;
}

/* The value of profiling: (current: its first event). */
static int apply_profiling(tp_yaml *y) {
    if (is_null(y)) return 0;
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return yaml_fail(y, &y->ev.start_mark, "profiling: must be a mapping of keys");
    char source[TP_SHOWN_SIZE + 80];
    snprintf(source, sizeof(source), "%s:%zu:%zu (a profiling: section without enabled)", y->path,
             y->ev.start_mark.line + 1, y->ev.start_mark.column + 1);
    int enabled_seen = 0;
    for (;;) {
        if (next(y)) return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT) break;
        if (apply_pair(y, &enabled_seen)) return -1;
    }
    return enabled_seen || !y->apply ? 0 : tp_config_apply(y->cfg, "enabled", 7, "true", source);
}

/* The stream's first document: a mapping whose profiling: keys are read, or nothing. */
static int read_document(tp_yaml *y) {
    if (next(y)) return -1;                            /* the stream's start */
    if (next(y)) return -1;                            /* a document's start, or the stream's end */
    if (y->ev.type == YAML_STREAM_END_EVENT) return 0; /* an empty file */
    if (next(y)) return -1;
    if (is_null(y)) return 0;
    if (y->ev.type != YAML_MAPPING_START_EVENT)
        return yaml_fail(y, &y->ev.start_mark, "the top level must be a mapping");
    for (;;) {
        if (next(y)) return -1;
        if (y->ev.type == YAML_MAPPING_END_EVENT) break;
        const char *key = scalar(y);
        if (y->only && key && strcmp(key, y->only) == 0) {
            int enabled_seen = 0;
            if (apply_pair(y, &enabled_seen)) return -1;
            continue;
        }
        int profiling = !y->only && key && strcmp(key, "profiling") == 0;
        if (skip_node(y) || next(y)) return -1;
        if (profiling ? apply_profiling(y) : skip_node(y)) return -1;
    }
    return next(y); /* the document's end: a syntax error after the mapping is still one */
}

/* The file, opened without blocking and only when it is a regular file; NULL with the error. */
static FILE *open_regular(tprof_config *cfg, const char *path, const char *shown) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    const char *why = NULL;
    if (fd < 0 || fstat(fd, &st))
        why = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = "is a directory";
    else if (!S_ISREG(st.st_mode))
        why = "is not a regular file";
    FILE *f = why ? NULL : fdopen(fd, "rb");
    if (!why && !f) why = strerror(errno);
    if (why) {
        if (fd >= 0) close(fd);
        snprintf(cfg->err, sizeof(cfg->err), "cannot read config file %s: %s", shown, why);
        tp_config_one_line(cfg->err, sizeof(cfg->err));
    }
    return f;
}

/* One pass over the file: apply 0 checks it, 1 reads the keys. */
static int read_file(tp_yaml *y, FILE *f, int apply) {
    y->depth = 0;
    y->apply = apply;
    if (!yaml_parser_initialize(&y->parser))
        return TP_CONFIG_FAIL(y->cfg, "cannot read config file %s: out of memory", y->path);
    yaml_parser_set_input_file(&y->parser, f);
    int rc = read_document(y);
    if (y->has_ev) yaml_event_delete(&y->ev);
    y->has_ev = 0;
    yaml_parser_delete(&y->parser);
    tp_free_strings(y->anchors, y->nanchors);
    y->anchors = NULL;
    y->nanchors = y->cap = 0;
    return rc;
}

/* The file's keys into cfg, as tp_yaml.only says which. */
static int load(tprof_config *cfg, const char *path, const char *only) {
    cfg->err[0] = '\0'; /* the error of this call, "" when it succeeds (tprof.h) */
    tp_yaml y = {.cfg = cfg, .only = only};
    char shown[TP_SHOWN_SIZE];
    snprintf(y.path, sizeof(y.path), "%s", tp_shown_path(path, shown));
    FILE *f = open_regular(cfg, path, y.path);
    if (!f) return -1;
    /* Two passes, so that a syntax error anywhere in the file is reported before any key is set
     * (a configuration is taken whole or not at all, as from a document tree). */
    int rc = read_file(&y, f, 0);
    if (rc == 0 && fseek(f, 0, SEEK_SET))
        rc = TP_CONFIG_FAIL(cfg, "cannot read config file %s: %s", y.path, strerror(errno));
    if (rc == 0) rc = read_file(&y, f, 1);
    fclose(f);
    return rc;
}

int tprof_config_load_yaml(tprof_config *cfg, const char *path) {
    if (!cfg) return -1;
    if (!path) return TP_CONFIG_FAIL(cfg, "tprof_config_load_yaml: no file name");
    return load(cfg, path, NULL);
}

int tp_config_load_run_stages(tprof_config *cfg, const char *path) {
    return load(cfg, path, tp_config_keys[TP_KEY_STAGES].name);
}
