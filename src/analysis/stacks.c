/* stacks.c - the tree of call stacks (stacks.h) and what the nesting walk adds to it.
 *
 * Nodes and callers are keyed by hash (util/hashtab.h): the walk looks up one node per range
 * under a Python frame and one caller per call, O(1) each, so a model costs O(n) beyond its
 * sort. A model's string ids are mapped to the tree's own once per distinct string
 * (tp_walk.stack_name), so inputs with different string tables share the tree. Sorting the
 * callers (finish) is O(c log c) in the distinct (name, caller) pairs. */
#include "analysis/stacks.h"

#include "analysis/internal.h"

#include "util/hash.h"
#include "util/vec.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

tp_stacks *tp_stacks_new(void) {
    tp_stacks *st = calloc(1, sizeof(*st));
    if (st) tp_strtab_init(&st->names);
    return st;
}

void tp_stacks_free(tp_stacks *st) {
    if (!st) return;
    tp_strtab_free(&st->names);
    free(st->nodes);
    free(st->callers);
    free(st->order);
    tp_hashtab_free(&st->nodes_ix);
    tp_hashtab_free(&st->callers_ix);
    free(st);
}

static uint32_t hash3(uint32_t a, uint32_t b, uint32_t c) {
    return (uint32_t)tp_hash_mix(((uint64_t)a << 32 | b) * 0x9e3779b97f4a7c15ULL + c);
}

static int node_eq(const void *ctx, const tp_hslot *s, const void *key) {
    const tp_stack_node *n = &((const tp_stack_node *)ctx)[s->ref - 1], *k = key;
    return n->parent == k->parent && n->name == k->name && n->python == k->python;
}

uint32_t tp_stacks_node(tp_stacks *st, uint32_t parent, tp_str id, int python) {
    if (st->nnodes >= UINT32_MAX - 1) return TP_STACK_NONE;
    tp_stack_node key = {.parent = parent, .name = id, .python = python != 0};
    uint32_t h = hash3(parent, id, key.python);
    if (tp_hashtab_reserve(&st->nodes_ix, 64)) return TP_STACK_NONE;
    size_t slot = tp_hashtab_find(&st->nodes_ix, h, node_eq, st->nodes, &key);
    uint32_t ref = tp_hashtab_ref(&st->nodes_ix, slot);
    if (ref) return ref - 1;
    if (TP_GROW(st->nodes, st->cap_nodes, st->nnodes + 1)) return TP_STACK_NONE;
    assert(parent == TP_STACK_NONE || parent < st->nnodes); /* parents first */
    st->nodes[st->nnodes] = key;
    tp_hashtab_put(&st->nodes_ix, slot, h, (uint32_t)++st->nnodes);
    return (uint32_t)st->nnodes - 1;
}

static int caller_eq(const void *ctx, const tp_hslot *s, const void *key) {
    const tp_stack_caller *c = &((const tp_stack_caller *)ctx)[s->ref - 1], *k = key;
    return c->name == k->name && c->node == k->node && c->kernel == k->kernel;
}

int tp_stacks_call(tp_stacks *st, tp_str name, int kernel, uint32_t caller, int64_t ns) {
    tp_stack_caller key = {.name = name, .node = caller, .kernel = kernel != 0};
    uint32_t h = hash3(name, caller, key.kernel);
    if (tp_hashtab_reserve(&st->callers_ix, 64)) return -1;
    size_t slot = tp_hashtab_find(&st->callers_ix, h, caller_eq, st->callers, &key);
    uint32_t ref = tp_hashtab_ref(&st->callers_ix, slot);
    if (!ref) {
        if (st->ncallers >= UINT32_MAX - 1 ||
            TP_GROW(st->callers, st->cap_callers, st->ncallers + 1))
            return -1;
        st->callers[st->ncallers] = key;
        tp_hashtab_put(&st->callers_ix, slot, h, (uint32_t)++st->ncallers);
        ref = (uint32_t)st->ncallers;
    }
    tp_stack_caller *c = &st->callers[ref - 1];
    c->calls++;
    c->ns = tp_add_sat(c->ns, ns > 0 ? ns : 0);
    return 0;
}

/* finish's order: by kernel, then name id (what tp_stacks_callers searches by), then most time
 * first, then node (a total order: the output does not depend on qsort). */
typedef struct sort_key {
    uint32_t kernel, name, node, idx;
    int64_t ns;
} sort_key;

static int cmp_keys(const void *pa, const void *pb) {
    const sort_key *a = pa, *b = pb;
    if (a->kernel != b->kernel) return a->kernel < b->kernel ? -1 : 1;
    if (a->name != b->name) return a->name < b->name ? -1 : 1;
    if (a->ns != b->ns) return a->ns > b->ns ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

int tp_stacks_finish(tp_stacks *st) {
    uint32_t *order = realloc(st->order, (st->ncallers + 1) * sizeof(*order));
    sort_key *keys = malloc((st->ncallers + 1) * sizeof(*keys));
    if (order) st->order = order;
    if (!order || !keys) {
        free(keys);
        return -1;
    }
    for (size_t i = 0; i < st->ncallers; i++) {
        const tp_stack_caller *c = &st->callers[i];
        keys[i] = (sort_key){c->kernel, c->name, c->node, (uint32_t)i, c->ns};
    }
    qsort(keys, st->ncallers, sizeof(*keys), cmp_keys);
    for (size_t i = 0; i < st->ncallers; i++)
        order[i] = keys[i].idx;
    free(keys);
    st->norder = st->ncallers;
    st->total_ns = 0;
    for (size_t i = 0; i < st->nnodes; i++)
        st->nodes[i].total_ns = st->nodes[i].self_ns;
    for (size_t i = st->nnodes; i-- > 0;) { /* parents come first: totals from the leaves up */
        tp_stack_node *n = &st->nodes[i];
        int64_t *up = n->parent != TP_STACK_NONE ? &st->nodes[n->parent].total_ns : &st->total_ns;
        *up = tp_add_sat(*up, n->total_ns);
    }
    return 0;
}

const uint32_t *tp_stacks_callers(const tp_stacks *st, const char *name, int kernel, size_t *n) {
    *n = 0;
    tp_str id = st ? tp_strtab_find(&st->names, name, strlen(name)) : UINT32_MAX;
    if (id == UINT32_MAX) return NULL;
    uint32_t k = kernel != 0;
    size_t lo = 0, hi = st->norder;
    while (lo < hi) { /* the first entry at or after (k, id) */
        size_t mid = lo + (hi - lo) / 2;
        const tp_stack_caller *c = &st->callers[st->order[mid]];
        if (c->kernel < k || (c->kernel == k && c->name < id))
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < st->norder && st->callers[st->order[end]].kernel == k &&
           st->callers[st->order[end]].name == id)
        end++;
    *n = end - lo;
    return *n ? st->order + lo : NULL;
}

size_t tp_stacks_depth(const tp_stacks *st, uint32_t node) {
    size_t d = 0;
    for (; node != TP_STACK_NONE; node = st->nodes[node].parent)
        d++;
    return d;
}

/* The walk's side. */

/* The tree's id of the model's string id + 1 (0: none; out of memory). */
static uint32_t tree_name(tp_walk *s, tp_str name) {
    if (name >= s->m->strings.n) name = TP_STR_EMPTY;
    if (s->stack_name[name]) return s->stack_name[name];
    tp_stacks *st = s->a->stacks;
    tp_str id =
        tp_strtab_intern(&st->names, tp_model_str(s->m, name), tp_strtab_len(&s->m->strings, name));
    if (st->names.failed) return 0;
    return s->stack_name[name] = id + 1;
}

/* The tree and the model's name map, made on the first Python frame. 0 or -1. */
static int ready(tp_walk *s) {
    if (!s->a->stacks && !(s->a->stacks = tp_stacks_new())) return -1;
    if (!s->stack_name &&
        !(s->stack_name = tp_arena_calloc(&s->keep, s->m->strings.n + 1, sizeof(*s->stack_name))))
        return -1;
    return 0;
}

uint32_t tp_stacks_walk_node(tp_walk *s, uint32_t parent, tp_str name, int python) {
    uint32_t id = ready(s) ? 0 : tree_name(s, name);
    return id ? tp_stacks_node(s->a->stacks, parent, id - 1, python) : TP_STACK_NONE;
}

int tp_stacks_walk_call(tp_walk *s, tp_str name, int kernel, uint32_t caller, int64_t ns) {
    assert(caller != TP_STACK_NONE && s->stack_name); /* a caller node made the map */
    uint32_t id = tree_name(s, name);
    return id ? tp_stacks_call(s->a->stacks, id - 1, kernel, caller, ns) : -1;
}

int tp_stacks_kernels(tp_walk *s, const uint32_t *work, size_t n) {
    if (!s->stack_name || !s->corr.n) return 0; /* no Python frame in this model */
    size_t hint = 0;
    for (size_t i = 0; i < n; i++) {
        const tp_event *e = &s->m->events[work[i]];
        if (e->kind != TP_KERNEL || !e->corr) continue;
        size_t k = tp_corr_find(&s->corr, e->corr, &hint);
        if (k == SIZE_MAX || s->corr.use[k].py == TP_STACK_NONE) continue;
        if (tp_stacks_walk_call(s, e->name, 1, s->corr.use[k].py, tp_ev_dur(e))) return -1;
    }
    return 0;
}
