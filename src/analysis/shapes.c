/* shapes.c - the op table by input shape: torch.profiler's key_averages(group_by_input_shape=True).
 *
 * With record_shapes a trace keeps each op's "Input Dims" (the reader stores it as that arg,
 * src/trace/event.c; the recorder from tprof.shapes). When a model has the key at all, the walk
 * (nesting.c) counts every op both in its name's stats and in its (name, shapes) pair here; self
 * time and launched GPU work reach the pair through the frame and the launch (corr.c). A model
 * without the key never gets here: no pair, no lookup.
 *
 * The pairs of a model are keyed by ids of its string table; the analysis' rows are keyed by
 * text (the shapes as torch keys them, '\x1f', the name), so shapes written differently by two
 * producers ("[[6,3]]", "[[6, 3]]") meet in one row. Rows keep the order they were met in; finish
 * sorts an index of them, so the key index never goes stale. */
#include "analysis/internal.h"

#include "model/kineto.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/vec.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

void tp_shapes_begin(tp_walk *s) {
    s->shapes = (tp_shape_scan){
        .dims_key = tp_strtab_find(&s->m->strings, tp_karg_input_dims, TP_KLEN(tp_karg_input_dims)),
        .itype_key =
            tp_strtab_find(&s->m->strings, tp_karg_input_type, TP_KLEN(tp_karg_input_type))};
}

static uint64_t pair_key(tp_str name, tp_str shapes) {
    return (uint64_t)name << 32 | shapes;
}

static int pair_eq(const void *ctx, const tp_hslot *slot, const void *key) {
    const tp_shape_scan *sh = ctx;
    return pair_key(sh->stats[slot->ref - 1].name, sh->shapes[slot->ref - 1]) ==
           *(const uint64_t *)key;
}

/* The (name, shapes) key of op e. */
static uint64_t key_of(const tp_walk *s, const tp_event *e) {
    const tp_arg *dims = e->nargs ? tp_event_arg(s->m, e, s->shapes.dims_key) : NULL;
    tp_str shapes = dims && dims->type == TP_ARG_JSON ? dims->v.s : TP_STR_EMPTY;
    return pair_key(e->name < s->m->strings.n ? e->name : TP_STR_EMPTY, shapes);
}

uint32_t tp_shapes_find(const tp_walk *s, const tp_event *e) {
    const tp_shape_scan *sh = &s->shapes;
    if (sh->dims_key == UINT32_MAX || !sh->index.nslots) return UINT32_MAX;
    uint64_t key = key_of(s, e);
    size_t i = tp_hashtab_find(&sh->index, (uint32_t)tp_hash_mix(key), pair_eq, sh, &key);
    uint32_t ref = tp_hashtab_ref(&sh->index, i);
    return ref ? ref - 1 : UINT32_MAX;
}

/* The index of the pair (name, shapes), added if new; UINT32_MAX when out of memory. */
static uint32_t pair_of(tp_shape_scan *sh, tp_str name, tp_str shapes) {
    uint64_t key = pair_key(name, shapes);
    uint32_t h = (uint32_t)tp_hash_mix(key);
    if (tp_hashtab_reserve(&sh->index, 64)) return UINT32_MAX;
    size_t i = tp_hashtab_find(&sh->index, h, pair_eq, sh, &key);
    uint32_t ref = tp_hashtab_ref(&sh->index, i);
    if (ref) return ref - 1;
    if (sh->n >= UINT32_MAX - 1 || TP_GROW(sh->stats, sh->cap_stats, sh->n + 1) ||
        TP_GROW(sh->shapes, sh->cap_shapes, sh->n + 1) ||
        TP_GROW(sh->itypes, sh->cap_itypes, sh->n + 1))
        return UINT32_MAX;
    sh->stats[sh->n] = (tp_name_stats){.name = name};
    sh->shapes[sh->n] = shapes;
    sh->itypes[sh->n] = TP_STR_EMPTY;
    tp_hashtab_put(&sh->index, i, h, (uint32_t)(sh->n + 1));
    return (uint32_t)sh->n++;
}

int tp_shapes_count(tp_walk *s, const tp_event *e, int64_t time, int64_t call, double flops,
                    uint32_t *pair) {
    tp_shape_scan *sh = &s->shapes;
    assert(sh->dims_key != UINT32_MAX);
    uint64_t key = key_of(s, e);
    if ((*pair = pair_of(sh, (tp_str)(key >> 32), (tp_str)key)) == UINT32_MAX) return -1;
    tp_stats_call(&sh->stats[*pair], time, call, flops);
    if (sh->itypes[*pair] == TP_STR_EMPTY && sh->itype_key != UINT32_MAX && e->nargs) {
        const tp_arg *t = tp_event_arg(s->m, e, sh->itype_key);
        if (t && t->type == TP_ARG_JSON) sh->itypes[*pair] = t->v.s;
    }
    return 0;
}

/* The shapes text json as torch.profiler's key prints it: str() of a Python list of lists of
 * ints, "[[6, 3, 16, 16], [4], []]": no whitespace but one space after each comma. Text with
 * anything else (strings, floats: no producer writes them) is kept as written, control bytes
 * as spaces, so the row key's separator cannot occur in it. */
static void put_shapes(tp_buf *b, const char *json) {
    int plain = strspn(json, "0123456789-[], \t\r\n") == strlen(json);
    for (const char *p = json; *p; p++) {
        if (!plain) {
            tp_buf_putc(b, (unsigned char)*p < 0x20 ? ' ' : *p);
        } else if (*p == ',') {
            TP_BUF_LIT(b, ", ");
        } else if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
            tp_buf_putc(b, *p);
        }
    }
}

/* The row of the pair whose key (shapes, '\x1f', name) is in key; created if new. */
static tp_op_row *row_of(tp_analysis *a, const tp_buf *key, size_t shapes_len) {
    struct tp_analysis_priv *pv = a->priv;
    uint32_t at = tp_name_index_get(&pv->shapes_ix, key->data);
    if (at != UINT32_MAX) return &a->ops_by_shape[at];
    /* New: the index keeps the key (in shape_keys), the row its own name and shapes. */
    char *name = strdup(key->data + shapes_len + 1), *shapes = strndup(key->data, shapes_len);
    tp_op_row *r = NULL;
    if (name && shapes && !TP_GROW(pv->shape_keys, pv->cap_shape_keys, a->nops_by_shape + 1))
        r = tp_row_for(&pv->shapes_ix, (void **)&a->ops_by_shape, &a->nops_by_shape,
                       &a->cap_ops_by_shape, sizeof(*r), key->data);
    if (!r) {
        free(name);
        free(shapes);
        return NULL;
    }
    pv->shape_keys[a->nops_by_shape - 1] = r->name;
    r->name = name;
    r->shapes = shapes;
    return r;
}

int tp_shapes_merge(tp_walk *s) {
    tp_shape_scan *sh = &s->shapes;
    /* A model whose ops recorded no shapes (the key named something else) adds no rows. */
    size_t shaped = 0;
    while (shaped < sh->n && sh->shapes[shaped] == TP_STR_EMPTY)
        shaped++;
    if (shaped == sh->n) return 0;
    tp_buf key;
    tp_buf_init(&key);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sh->n; i++) {
        const tp_name_stats *ns = &sh->stats[i];
        key.len = 0;
        put_shapes(&key, tp_model_str(s->m, sh->shapes[i]));
        size_t shapes_len = key.len;
        tp_buf_putc(&key, '\x1f');
        tp_buf_puts(&key, tp_model_str(s->m, ns->name));
        tp_buf_putc(&key, '\0');
        tp_op_row *r = key.failed ? NULL : row_of(s->a, &key, shapes_len);
        if (r && !r->dtypes && sh->itypes[i] != TP_STR_EMPTY &&
            !(r->dtypes = strdup(tp_model_str(s->m, sh->itypes[i]))))
            r = NULL;
        if (r)
            tp_op_row_add(r, ns);
        else
            rc = -1;
    }
    tp_buf_free(&key);
    return rc;
}

void tp_shapes_free(tp_shape_scan *sh) {
    free(sh->stats);
    free(sh->shapes);
    free(sh->itypes);
    tp_hashtab_free(&sh->index);
    *sh = (tp_shape_scan){0};
}

static int cmp_shape_row(const void *pa, const void *pb, void *ctx) {
    const tp_op_row *rows = ctx, *a = &rows[*(const size_t *)pa], *b = &rows[*(const size_t *)pb];
    int c = (a->self_ns < b->self_ns) - (a->self_ns > b->self_ns);
    if (!c) c = strcmp(a->name, b->name);
    return c ? c : strcmp(a->shapes, b->shapes);
}

void tp_shapes_finish(tp_analysis *a, int64_t self_sum) {
    free(a->shapes_order);
    a->shapes_order = NULL;
    if (!a->nops_by_shape) return;
    if (!(a->shapes_order = malloc(a->nops_by_shape * sizeof(*a->shapes_order)))) {
        a->failed = 1;
        return;
    }
    for (size_t i = 0; i < a->nops_by_shape; i++) {
        tp_op_row *r = &a->ops_by_shape[i];
        r->self_pct = self_sum > 0 ? 100.0 * (double)r->self_ns / (double)self_sum : 0;
        r->gpu_pct = a->gpu_work_ns > 0 ? 100.0 * (double)r->gpu_ns / (double)a->gpu_work_ns : 0;
        a->shapes_order[i] = i;
    }
    qsort_r(a->shapes_order, a->nops_by_shape, sizeof(size_t), cmp_shape_row, a->ops_by_shape);
}

void tp_shapes_rows_free(tp_analysis *a) {
    for (size_t i = 0; i < a->nops_by_shape; i++) {
        free(a->ops_by_shape[i].name);
        free(a->ops_by_shape[i].shapes);
        free(a->ops_by_shape[i].dtypes);
        if (a->priv) free(a->priv->shape_keys[i]);
    }
    free(a->ops_by_shape);
    free(a->shapes_order);
    if (a->priv) {
        free(a->priv->shape_keys);
        tp_name_index_free(&a->priv->shapes_ix);
    }
}
