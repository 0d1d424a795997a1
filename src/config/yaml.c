/* yaml.c - the YAML source: the keys of a top-level "profiling:" mapping (libyaml).
 *
 * Other top-level keys belong to the host's own configuration and are ignored. Every message
 * names the file, line and column, as "<file>:<line>:<column>". */
#include "config/config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static int yaml_fail(tprof_config *cfg, const char *path, const yaml_mark_t *m, const char *what) {
    snprintf(cfg->err, sizeof(cfg->err), "%s:%zu:%zu: %s", path, m->line + 1, m->column + 1, what);
    return -1;
}

static const char *scalar(const yaml_node_t *n) {
    return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* "", "~" and "null" written plainly: a key given no value. */
static int is_null(const yaml_node_t *n) {
    const char *s = scalar(n);
    return s && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
           (!*s || strcmp(s, "~") == 0 || strcmp(s, "null") == 0);
}

static int apply_pair(tprof_config *cfg, const char *path, yaml_document_t *doc,
                      yaml_node_pair_t *p) {
    yaml_node_t *k = yaml_document_get_node(doc, p->key);
    yaml_node_t *v = yaml_document_get_node(doc, p->value);
    const char *key = scalar(k);
    if (!key) return yaml_fail(cfg, path, &k->start_mark, "a key under profiling: must be a name");
    char source[600];
    snprintf(source, sizeof(source), "%s:%zu:%zu", path, v->start_mark.line + 1,
             v->start_mark.column + 1);
    if (v->type == YAML_SCALAR_NODE)
        return tp_config_apply(cfg, key, strlen(key), scalar(v), source);
    if (v->type == YAML_SEQUENCE_NODE) {
        yaml_node_item_t *first = v->data.sequence.items.start, *top = v->data.sequence.items.top;
        size_t n = 0, cap = (size_t)(top - first);
        const char **items = cap ? malloc(cap * sizeof(*items)) : NULL;
        if (cap && !items) return yaml_fail(cfg, path, &v->start_mark, "out of memory");
        for (yaml_node_item_t *it = first; it < top; it++) {
            const char *s = scalar(yaml_document_get_node(doc, *it));
            if (s) items[n++] = s;
        }
        int rc = n == cap ? tp_config_apply_list(cfg, key, strlen(key), items, n, source) : 1;
        free(items);
        if (rc <= 0) return rc;
    }
    /* A mapping, or a list of something other than plain values. */
    return tp_config_reject(cfg, key, strlen(key), v->type == YAML_MAPPING_NODE ? "{...}" : "[...]",
                            source);
}

static int apply_document(tprof_config *cfg, const char *path, yaml_document_t *doc) {
    yaml_node_t *root = yaml_document_get_root_node(doc);
    if (!root || is_null(root)) return 0; /* an empty file */
    if (root->type != YAML_MAPPING_NODE)
        return yaml_fail(cfg, path, &root->start_mark, "the top level must be a mapping");
    for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top;
         p++) {
        const char *key = scalar(yaml_document_get_node(doc, p->key));
        if (!key || strcmp(key, "profiling") != 0) continue;
        yaml_node_t *prof = yaml_document_get_node(doc, p->value);
        if (is_null(prof)) continue;
        if (prof->type != YAML_MAPPING_NODE)
            return yaml_fail(cfg, path, &prof->start_mark, "profiling: must be a mapping of keys");
        for (yaml_node_pair_t *q = prof->data.mapping.pairs.start; q < prof->data.mapping.pairs.top;
             q++)
            if (apply_pair(cfg, path, doc, q)) return -1;
    }
    return 0;
}

int tprof_config_load_yaml(tprof_config *cfg, const char *path) {
    if (!cfg) return -1;
    if (!path) {
        snprintf(cfg->err, sizeof(cfg->err), "tprof_config_load_yaml: no file name");
        return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(cfg->err, sizeof(cfg->err), "cannot read config file %s: %s", path,
                 strerror(errno));
        return -1;
    }
    yaml_parser_t parser;
    yaml_document_t doc;
    int rc = -1;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        snprintf(cfg->err, sizeof(cfg->err), "cannot read config file %s: out of memory", path);
        return -1;
    }
    yaml_parser_set_input_file(&parser, f);
    if (!yaml_parser_load(&parser, &doc)) {
        char what[300];
        snprintf(what, sizeof(what), "invalid YAML: %s%s%s",
                 parser.problem ? parser.problem : "error", parser.context ? " " : "",
                 parser.context ? parser.context : "");
        yaml_fail(cfg, path, &parser.problem_mark, what);
    } else {
        rc = apply_document(cfg, path, &doc);
        yaml_document_delete(&doc);
    }
    yaml_parser_delete(&parser);
    fclose(f);
    return rc;
}
