/* modules.c - the module tree (modules.h, docs/METRICS.md "Module tree"): each thread's ranges
 * walked once more, with torch's nesting rule (nesting.c), for the models that have module
 * ranges at all; the rest cost one look at their string table.
 *
 * Which ranges are modules: Kineto's "nn.Module: X" names, decided per name once from the
 * string table; and tprof.torch's paths, user_annotation ranges (as tprof.torch records them;
 * python_function ranges of with_stack are named "file.py(12): f", with dots of their own). A
 * path is a name "P.c" whose prefix P is a string of the model too (the string table says which
 * names may be paths), confirmed on each thread before its walk: a range "P.c" inside a range
 * named P makes both names modules on that thread (a module shared by two parents runs under
 * its one path, inside the other parent: still inside the root). The root "Net"
 * is thus known by its children "Net.x" (a model without submodules has no tree), and ranges
 * that merely share a prefix ("linear3" and "linear3.backward", one after the other) are not
 * modules.
 *
 * The walk keeps, per open range, the innermost module around it (its node), the outermost op
 * directly under that module, and the backward node it is inside. A range that is a module
 * becomes a node (parent node, name); an op (neither a Python frame nor a runtime call) right
 * under a module is one of its ops; a range carrying autograd's link ("Sequence number" >= 0,
 * "Fwd thread id" nonzero) outside any other is a backward node; a forward op (a sequence
 * number, "Fwd thread id" 0 or absent) inside a module notes (seq -> node). Once every thread is
 * walked, each backward node finds the module of the first forward op with its sequence number
 * (a sorted table, binary search: O(n log n)), and each launch inside a module or a backward
 * node charges its GPU work, as corr.c does, where it is the id's first launch. */
#include "analysis/internal.h"
#include "analysis/modules.h"

#include "model/kineto.h"
#include "util/hash.h"
#include "util/vec.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

static const char module_prefix[] = "nn.Module: ";
enum { PREFIX_LEN = sizeof(module_prefix) - 1 };

/* Per string of the model: what it says as a name or a category. */
enum {
    S_KINETO_MODULE = 1, /* "nn.Module: X" */
    S_PATH_MODULE = 2,   /* may be a tprof.torch module path (confirmed per thread) */
    S_CAT_KNOWN = 4,     /* the category bits below were computed */
    S_CAT_NOT_OP = 8,    /* a category of Python frames or runtime calls: not an op */
    S_CAT_USER = 16,     /* user_annotation */
    S_PATH_PARENT = 32   /* the prefix P of some name "P.c" */
};

typedef struct bwd_node {
    int64_t seq, dur;
    double flops;
    tp_str name;
    uint32_t row, op; /* once linked: its module and its op row; NONE unlinked */
} bwd_node;

typedef struct launch {
    uint32_t ev;
    uint32_t row, op, bwd; /* a forward module and op, or a backward node */
} launch;

struct tp_module_scan {
    uint8_t *what;                   /* per string: S_* */
    uint32_t *cache_row, *cache_par; /* per name: the node last found for it (+1), its parent */
    uint32_t *confirmed;     /* per name: the thread (walk) on which it is a path, +1; NULL none */
    int64_t *path_longest;   /* per name: its longest call inside a path module (with confirmed) */
    uint32_t thread;         /* the walks begun, the current one's number + 1 */
    tp_str seq_key, fwd_key; /* "Sequence number", "Fwd thread id"; UINT32_MAX none */
    tp_keyed *fwd;           /* key: a forward op's sequence number, val: its node */
    size_t nfwd, cap_fwd;
    bwd_node *bwd;
    size_t nbwd, cap_bwd;
    launch *launches;
    size_t nlaunches, cap_launches;
    tp_hashtab op_cache; /* (row, backward, name) -> op row, slots of struct op_slot */
};

/* One entry of op_cache, kept in its slot. */
typedef struct op_slot {
    tp_hslot h;
    uint32_t row, name, op, backward;
} op_slot;

/* One open range of the walk. */
typedef struct mframe {
    int64_t end;
    uint32_t node, op, bwd;
    tp_str mod; /* the innermost module range's name (with node), for the op rows' module */
} mframe;

/* ---- the tree's rows, in the analysis ---- */

/* The row keyed "<a>\x1f<b><name>" of a table whose rows begin with their key, created zeroed
 * if new (tp_row_for); its index, or NONE when out of memory. */
static uint32_t keyed_row(tp_name_index *ix, void **rows, size_t *n, size_t *cap, size_t elem,
                          size_t a, int b, const char *name) {
    size_t len = strlen(name) + 48;
    char *key = malloc(len);
    if (!key || *n >= NONE - 1) {
        free(key);
        return NONE;
    }
    snprintf(key, len, "%zu\x1f%d%s", a, b, name);
    char *row = tp_row_for(ix, rows, n, cap, elem, key);
    free(key);
    return row ? (uint32_t)((size_t)(row - (char *)*rows) / elem) : NONE;
}

/* The name in a key "<a>\x1f<b><name>". */
static const char *key_name(const char *key) {
    return strchr(key, '\x1f') + 2;
}

/* The row of (parent, name), created when new; NONE when out of memory. */
static uint32_t row_for(tp_modules *t, uint32_t parent, const char *name) {
    size_t par = parent == NONE ? SIZE_MAX : parent, had = t->n;
    uint32_t r =
        keyed_row(&t->ix, (void **)&t->rows, &t->n, &t->cap, sizeof(*t->rows), par, 0, name);
    if (r != NONE && t->n > had) {
        t->rows[r].name = key_name(t->rows[r].key);
        t->rows[r].parent = par;
        t->rows[r].depth = par == SIZE_MAX ? 0 : t->rows[par].depth + 1;
    }
    return r;
}

/* The op row (row, backward, name), created when new; NONE when out of memory. */
static uint32_t op_row_for(tp_modules *t, uint32_t row, int backward, const char *name) {
    size_t had = t->nops;
    uint32_t r = keyed_row(&t->ops_ix, (void **)&t->ops, &t->nops, &t->cap_ops, sizeof(*t->ops),
                           row, backward, name);
    if (r != NONE && t->nops > had) {
        t->ops[r].name = key_name(t->ops[r].key);
        t->ops[r].module = row;
        t->ops[r].backward = backward;
    }
    return r;
}

static int op_slot_eq(const void *ctx, const tp_hslot *s, const void *key) {
    (void)ctx;
    const op_slot *a = (const op_slot *)(const void *)s, *b = key;
    return a->row == b->row && a->name == b->name && a->backward == b->backward;
}

/* The op row of (row, backward, name id) through the model's cache: the analysis' keyed index
 * is asked once per distinct triple. NONE when out of memory. */
static uint32_t op_of(tp_walk *s, uint32_t row, int backward, tp_str name) {
    struct tp_module_scan *ms = s->mods;
    op_slot want = {.row = row, .name = name, .backward = (uint32_t)backward};
    uint32_t h = (uint32_t)tp_hash_mix((uint64_t)row << 33 ^ (uint64_t)name << 1 ^
                                       (uint64_t)(unsigned)backward);
    if (tp_hashtab_reserve(&ms->op_cache, 64)) return NONE;
    size_t i = tp_hashtab_find(&ms->op_cache, h, op_slot_eq, NULL, &want);
    op_slot *slot = (op_slot *)(void *)tp_hashtab_at(&ms->op_cache, i);
    if (slot->h.ref) return slot->op;
    uint32_t op = op_row_for(s->a->modules, row, backward, tp_model_str(s->m, name));
    if (op == NONE) return NONE;
    tp_hashtab_put(&ms->op_cache, i, h, 1);
    slot->row = row, slot->name = name, slot->op = op, slot->backward = (uint32_t)backward;
    return op;
}

/* The node of a module range named name under parent (NONE: none). NONE when out of memory. */
static uint32_t node_of(tp_walk *s, uint32_t parent, tp_str name) {
    struct tp_module_scan *ms = s->mods;
    if (ms->cache_row[name] && ms->cache_par[name] == parent) return ms->cache_row[name] - 1;
    const char *text = tp_model_str(s->m, name);
    if (ms->what[name] & S_KINETO_MODULE) text += PREFIX_LEN;
    uint32_t row = row_for(s->a->modules, parent, text);
    if (row == NONE) return NONE;
    ms->cache_row[name] = row + 1;
    ms->cache_par[name] = parent;
    return row;
}

/* ---- one model ---- */

/* Marks the module names of the model's strings, and the names that may be paths (*paths of
 * them); the number of both. */
static size_t mark_names(const tp_model *m, uint8_t *what, size_t *paths) {
    const tp_strtab *st = &m->strings;
    size_t found = 0;
    *paths = 0;
    for (tp_str id = 1; id < st->n; id++) {
        const char *t = tp_strtab_get(st, id);
        size_t len = tp_strtab_len(st, id);
        if (len > PREFIX_LEN && memcmp(t, module_prefix, PREFIX_LEN) == 0) {
            what[id] |= S_KINETO_MODULE;
            found++;
            continue;
        }
        /* The space first: long strings that are no names (args texts the reader keeps for the
         * Trace view) mostly have one near their start, and memrchr finds the dot in words */
        if (memchr(t, ' ', len)) continue;
        const char *last = memrchr(t, '.', len);
        size_t dot = last ? (size_t)(last - t) + 1 : 0;
        if (dot < 2 || dot == len) continue; /* "P.c", P and c not empty */
        tp_str parent = tp_strtab_find(st, t, dot - 1);
        if (parent == UINT32_MAX || parent == TP_STR_EMPTY) continue;
        what[id] |= S_PATH_MODULE;
        what[parent] |= S_PATH_MODULE | S_PATH_PARENT;
        found++;
        ++*paths;
    }
    return found;
}

int tp_modules_begin(tp_walk *s) {
    s->mods = NULL;
    size_t n = s->m->strings.n;
    uint8_t *what = tp_arena_calloc(&s->keep, n + 1, 1);
    size_t paths;
    if (!what) return -1;
    if (!mark_names(s->m, what, &paths)) return 0;
    if (!s->a->modules && !(s->a->modules = calloc(1, sizeof(*s->a->modules)))) return -1;
    struct tp_module_scan *ms = tp_arena_calloc(&s->keep, 1, sizeof(*ms));
    if (!ms) return -1;
    ms->what = what;
    ms->cache_row = tp_arena_calloc(&s->keep, n + 1, sizeof(uint32_t));
    ms->cache_par = tp_arena_alloc(&s->keep, n + 1, sizeof(uint32_t));
    if (!ms->cache_row || !ms->cache_par) return -1;
    if (paths && (!(ms->confirmed = tp_arena_calloc(&s->keep, n + 1, sizeof(uint32_t))) ||
                  !(ms->path_longest = tp_arena_calloc(&s->keep, n + 1, sizeof(int64_t)))))
        return -1;
    ms->seq_key =
        tp_strtab_find(&s->m->strings, tp_karg_sequence_number, TP_KLEN(tp_karg_sequence_number));
    ms->fwd_key =
        tp_strtab_find(&s->m->strings, tp_karg_fwd_thread_id, TP_KLEN(tp_karg_fwd_thread_id));
    ms->op_cache.esz = sizeof(op_slot);
    s->mods = ms;
    return 0;
}

/* The S_CAT_* bits of category cat, computed on first use. */
static uint8_t cat_bits(tp_walk *s, tp_str cat) {
    uint8_t *w = &s->mods->what[cat];
    if (!(*w & S_CAT_KNOWN)) {
        const char *c = tp_model_str(s->m, cat);
        *w |= S_CAT_KNOWN;
        if (tp_glob_match("*runtime*", c) || tp_glob_match("*driver*", c) ||
            strcmp(c, tp_kcat_python_function) == 0)
            *w |= S_CAT_NOT_OP;
        if (strcmp(c, tp_kcat_user_annotation) == 0) *w |= S_CAT_USER;
    }
    return *w;
}

/* Whether e is a module range. */
static int is_module(tp_walk *s, const tp_event *e) {
    uint8_t w = s->mods->what[e->name];
    if (w & S_KINETO_MODULE) return 1;
    const uint32_t *confirmed = s->mods->confirmed; /* set when some name has S_PATH_MODULE */
    return (w & S_PATH_MODULE) && confirmed && confirmed[e->name] == s->mods->thread &&
           (cat_bits(s, e->cat) & S_CAT_USER);
}

/* Whether name "P.c" has the prefix P named parent (its last dot after P). */
static int path_child(const tp_model *m, tp_str parent, tp_str name) {
    size_t lp = tp_strtab_len(&m->strings, parent), ln = tp_strtab_len(&m->strings, name);
    const char *p = tp_model_str(m, parent), *c = tp_model_str(m, name);
    return ln > lp + 1 && c[lp] == '.' && memcmp(c, p, lp) == 0 &&
           !memchr(c + lp + 1, '.', ln - lp - 1);
}

/* The paths of this thread (the file's head): its candidate ranges alone, nested by the same
 * rule as the walk. 0, or -1 when out of memory. */
static int confirm_paths(tp_walk *s, const uint32_t *idx, size_t n) {
    struct tp_module_scan *ms = s->mods;
    struct cand {
        int64_t end;
        tp_str name;
    } *stack = NULL;
    size_t depth = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const tp_event *e = &s->m->events[idx[i]];
        if (!(ms->what[e->name] & S_PATH_MODULE) || !(cat_bits(s, e->cat) & S_CAT_USER)) continue;
        int64_t end = tp_ev_end(e);
        while (depth && (e->ts >= stack[depth - 1].end || end > stack[depth - 1].end))
            depth--;
        for (size_t k = depth; k-- > 0;) /* an enclosing range named P */
            if ((ms->what[stack[k].name] & S_PATH_PARENT) &&
                path_child(s->m, stack[k].name, e->name)) {
                ms->confirmed[e->name] = ms->confirmed[stack[k].name] = ms->thread;
                break;
            }
        if (TP_GROW(stack, cap, depth + 1))
            rc = -1;
        else
            stack[depth++] = (struct cand){end, e->name};
    }
    free(stack);
    return rc;
}

/* The integer arg key of e, or -1 when absent or not an integer. */
static int64_t int_arg(const tp_walk *s, const tp_event *e, tp_str key) {
    if (key == UINT32_MAX || !e->nargs) return -1;
    const tp_arg *a = tp_event_arg(s->m, e, key);
    return a && a->type == TP_ARG_INT ? a->v.i : -1;
}

/* The FLOPs e carries, 0 when none. */
static double flops_of(const tp_walk *s, const tp_event *e) {
    if (s->flops_key == UINT32_MAX || !e->nargs) return 0;
    const tp_arg *a = tp_event_arg(s->m, e, s->flops_key);
    if (!a) return 0;
    double f = a->type == TP_ARG_INT ? (double)a->v.i : a->type == TP_ARG_DOUBLE ? a->v.d : 0;
    return f == f ? f : 0;
}

/* An op e (not a module) inside frame f (filled from its parent): a backward node, a forward op
 * noted by its sequence number, an op of its module. 0, or -1 when out of memory. */
static int open_op(tp_walk *s, const tp_event *e, mframe *f) {
    struct tp_module_scan *ms = s->mods;
    tp_modules *t = s->a->modules;
    if (f->bwd != NONE) return 0; /* inside a backward node: its own */
    int64_t seq = int_arg(s, e, ms->seq_key), fwd_tid = seq >= 0 ? int_arg(s, e, ms->fwd_key) : 0;
    if (seq >= 0 && fwd_tid > 0) {
        if (TP_AGROW(&s->keep, ms->bwd, ms->cap_bwd, ms->nbwd + 1)) return -1;
        ms->bwd[ms->nbwd] =
            (bwd_node){.seq = seq, .dur = tp_ev_dur(e), .name = e->name, .row = NONE, .op = NONE};
        f->bwd = (uint32_t)ms->nbwd++;
        return 0;
    }
    if (f->node == NONE) return 0;
    if (seq >= 0) {
        if (TP_AGROW(&s->keep, ms->fwd, ms->cap_fwd, ms->nfwd + 1)) return -1;
        ms->fwd[ms->nfwd++] = (tp_keyed){(uint64_t)seq, f->node};
    }
    if (f->op != NONE) return 0;
    if ((f->op = op_of(s, f->node, 0, e->name)) == NONE) return -1;
    t->ops[f->op].calls += tp_call_dur(s, e) >= 0; /* a range cut into parts: one call */
    t->ops[f->op].total_ns = tp_add_sat(t->ops[f->op].total_ns, tp_ev_dur(e));
    return 0;
}

/* The op rows' module (tp_op_row.module, which the advice names) where the module around e is
 * a path: nesting.c knows Kineto's module ranges by their names alone, the paths only this walk
 * confirms. As there, the module around its longest call; Kineto's, where a trace has both. */
static void note_path_module(tp_walk *s, const tp_event *e, tp_str mod) {
    struct tp_module_scan *ms = s->mods;
    if (mod == TP_STR_EMPTY || (ms->what[mod] & S_KINETO_MODULE)) return;
    tp_name_stats *ns = tp_walk_name(s, e->name); /* counted by nesting.c: no new row */
    int64_t dur = tp_call_dur(s, e);
    assert(ns && ms->path_longest);
    if (dur < 0) return; /* a part of a range before its last: no call */
    if (ns->module != TP_STR_EMPTY && (ms->what[ns->module] & S_KINETO_MODULE)) return;
    if (ns->module == TP_STR_EMPTY || dur > ms->path_longest[e->name]) {
        ns->module = mod, ms->path_longest[e->name] = dur;
        ns->module_ns = dur;
        ns->module_path = 1;
    }
}

/* Range e, its frame f filled from its parent's: module, op, FLOPs, launch. 0 or -1. */
static int open_range(tp_walk *s, uint32_t ev, const tp_event *e, mframe *f) {
    struct tp_module_scan *ms = s->mods;
    tp_modules *t = s->a->modules;
    int64_t dur = tp_ev_dur(e);
    if (e->flags & TP_EVF_STEP) return 0;
    if (f->bwd == NONE && !(cat_bits(s, e->cat) & S_CAT_NOT_OP)) note_path_module(s, e, f->mod);
    if (f->bwd == NONE && is_module(s, e)) {
        uint32_t row = node_of(s, f->node, e->name);
        if (row == NONE) return -1;
        tp_module_row *r = &t->rows[row];
        r->calls += tp_call_dur(s, e) >= 0; /* a range cut into parts: one call */
        r->fwd_ns = tp_add_sat(r->fwd_ns, dur);
        r->fwd_self_ns = tp_add_sat(r->fwd_self_ns, dur);
        if (f->node != NONE) t->rows[f->node].fwd_self_ns -= dur; /* <= its own duration */
        f->node = row;
        f->op = NONE;
        f->mod = e->name;
    } else if (!(cat_bits(s, e->cat) & S_CAT_NOT_OP) && open_op(s, e, f)) {
        return -1;
    }
    double flops = flops_of(s, e);
    if (flops != 0 && f->bwd != NONE) {
        ms->bwd[f->bwd].flops = tp_add_flops(ms->bwd[f->bwd].flops, flops);
    } else if (flops != 0 && f->node != NONE) {
        t->rows[f->node].flops_self = tp_add_flops(t->rows[f->node].flops_self, flops);
        if (f->op != NONE) t->ops[f->op].flops = tp_add_flops(t->ops[f->op].flops, flops);
    }
    if (e->corr && s->corr.n && (f->bwd != NONE || f->node != NONE)) {
        if (TP_AGROW(&s->keep, ms->launches, ms->cap_launches, ms->nlaunches + 1)) return -1;
        ms->launches[ms->nlaunches++] = (launch){ev, f->node, f->op, f->bwd};
    }
    return 0;
}

int tp_modules_walk(tp_walk *s, const uint32_t *idx, size_t n) {
    if (!s->mods) return 0;
    s->mods->thread++;
    if (s->mods->confirmed && confirm_paths(s, idx, n)) return -1;
    mframe *stack = NULL;
    size_t depth = 0, cap = 0;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const tp_event *e = &s->m->events[idx[i]];
        int64_t end = tp_ev_end(e);
        while (depth && (e->ts >= stack[depth - 1].end || end > stack[depth - 1].end))
            depth--;
        mframe f = depth ? stack[depth - 1]
                         : (mframe){.node = NONE, .op = NONE, .bwd = NONE, .mod = TP_STR_EMPTY};
        f.end = end;
        if (open_range(s, idx[i], e, &f) || TP_GROW(stack, cap, depth + 1))
            rc = -1;
        else
            stack[depth++] = f;
    }
    free(stack);
    return rc;
}

/* Each backward node's module: the first forward op noted with its sequence number. */
static int link_backward(tp_walk *s) {
    struct tp_module_scan *ms = s->mods;
    tp_modules *t = s->a->modules;
    if (ms->nfwd && tp_sort_keyed(&s->order.spare, ms->fwd, ms->nfwd)) return -1;
    for (size_t i = 0; i < ms->nbwd; i++) {
        bwd_node *b = &ms->bwd[i];
        size_t lo = 0, hi = ms->nfwd;
        while (lo < hi) { /* the first entry with key >= seq: the stable sort kept first first */
            size_t mid = lo + (hi - lo) / 2;
            if (ms->fwd[mid].key < (uint64_t)b->seq)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo == ms->nfwd || ms->fwd[lo].key != (uint64_t)b->seq) {
            t->bwd_unlinked++;
            t->bwd_unlinked_ns = tp_add_sat(t->bwd_unlinked_ns, b->dur);
            continue;
        }
        b->row = (uint32_t)ms->fwd[lo].val;
        if ((b->op = op_of(s, b->row, 1, b->name)) == NONE) return -1;
        tp_module_row *r = &t->rows[b->row];
        tp_module_op *o = &t->ops[b->op];
        r->bwd_calls++;
        r->bwd_self_ns = tp_add_sat(r->bwd_self_ns, b->dur);
        r->flops_self = tp_add_flops(r->flops_self, b->flops);
        o->calls++;
        o->total_ns = tp_add_sat(o->total_ns, b->dur);
        o->flops = tp_add_flops(o->flops, b->flops);
    }
    return 0;
}

/* The GPU work of each launch inside a module or a backward node, where it is its id's first
 * launch (corr.c charges the same work to the op around it). */
static void charge_launches(tp_walk *s) {
    struct tp_module_scan *ms = s->mods;
    tp_modules *t = s->a->modules;
    size_t hint = 0;
    for (size_t i = 0; i < ms->nlaunches; i++) {
        const launch *l = &ms->launches[i];
        size_t k = tp_corr_find(&s->corr, s->m->events[l->ev].corr, &hint);
        if (k == SIZE_MAX || s->corr.use[k].launch != l->ev) continue;
        uint32_t row = l->row, op = l->op;
        if (l->bwd != NONE) row = ms->bwd[l->bwd].row, op = ms->bwd[l->bwd].op;
        if (row == NONE) continue;
        int64_t ns = (int64_t)s->corr.ids[k].val;
        tp_module_row *r = &t->rows[row];
        r->gpu_self_ns = tp_add_sat(r->gpu_self_ns, ns);
        r->kernels_self += s->corr.use[k].count;
        if (op == NONE) continue;
        t->ops[op].gpu_ns = tp_add_sat(t->ops[op].gpu_ns, ns);
        t->ops[op].kernels += s->corr.use[k].count;
    }
}

int tp_modules_link(tp_walk *s, int ok) {
    if (!s->mods) return 0;
    int rc = ok ? link_backward(s) : 0;
    if (ok && rc == 0) charge_launches(s);
    tp_hashtab_free(&s->mods->op_cache);
    s->mods = NULL;
    return rc;
}

/* ---- the whole analysis ---- */

/* The rows depth first, children in order of appearance, into t->order and each row's pos. A
 * row comes after its parent (row_for creates a parent first), so one backward pass sums the
 * subtrees' sizes and one forward pass places each row: a root after the roots before it and
 * their subtrees, a child after its parent and its earlier siblings' subtrees. O(n). */
static int depth_first(tp_modules *t) {
    size_t *size = malloc((t->n + 1) * sizeof(size_t)), *next = malloc((t->n + 1) * sizeof(size_t));
    free(t->order);
    t->order = calloc(t->n + 1, sizeof(size_t));
    int rc = size && next && t->order ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < t->n; i++)
        size[i] = 1;
    for (size_t i = t->n; rc == 0 && i-- > 0;) {
        assert(t->rows[i].parent == SIZE_MAX || t->rows[i].parent < i);
        if (t->rows[i].parent != SIZE_MAX) size[t->rows[i].parent] += size[i];
    }
    for (size_t i = 0, roots = 0; rc == 0 && i < t->n; i++) {
        size_t p = t->rows[i].parent, *at = p == SIZE_MAX ? &roots : &next[p];
        t->rows[i].pos = *at;
        *at += size[i];
        next[i] = t->rows[i].pos + 1;
        t->order[t->rows[i].pos] = i;
    }
    free(size), free(next);
    return rc;
}

/* An op with the keys of its order, so that the comparison needs no context. */
typedef struct op_key {
    size_t pos; /* its module's place */
    int backward;
    int64_t total_ns;
    const char *name;
    size_t op;
} op_key;

static int op_cmp(const void *pa, const void *pb) {
    const op_key *a = pa, *b = pb;
    if (a->pos != b->pos) return a->pos < b->pos ? -1 : 1;
    if (a->backward != b->backward) return a->backward - b->backward;
    if (a->total_ns != b->total_ns) return a->total_ns > b->total_ns ? -1 : 1;
    return strcmp(a->name, b->name);
}

int tp_modules_finish(tp_modules *t) {
    if (!t) return 0;
    if (depth_first(t)) return -1;
    for (size_t i = 0; i < t->n; i++) { /* a module's own figures start its subtree's */
        tp_module_row *r = &t->rows[i];
        r->bwd_ns = r->bwd_self_ns;
        r->flops = r->flops_self;
        r->gpu_ns = r->gpu_self_ns;
        r->kernels = r->kernels_self;
    }
    for (size_t k = t->n; k-- > 0;) { /* children before parents: the order reversed */
        const tp_module_row *r = &t->rows[t->order[k]];
        if (r->parent == SIZE_MAX) continue;
        tp_module_row *p = &t->rows[r->parent];
        p->bwd_ns = tp_add_sat(p->bwd_ns, r->bwd_ns);
        p->flops = tp_add_flops(p->flops, r->flops);
        p->gpu_ns = tp_add_sat(p->gpu_ns, r->gpu_ns);
        p->kernels += r->kernels;
    }
    free(t->ops_order);
    t->ops_order = malloc((t->nops + 1) * sizeof(size_t));
    op_key *keys = malloc((t->nops + 1) * sizeof(*keys));
    if (t->ops_order && keys) {
        for (size_t i = 0; i < t->nops; i++) {
            const tp_module_op *o = &t->ops[i];
            keys[i] = (op_key){t->rows[o->module].pos, o->backward, o->total_ns, o->name, i};
        }
        qsort(keys, t->nops, sizeof(*keys), op_cmp);
        for (size_t i = 0; i < t->nops; i++)
            t->ops_order[i] = keys[i].op;
    } else {
        free(t->ops_order);
        t->ops_order = NULL;
    }
    free(keys);
    return t->ops_order ? 0 : -1;
}

void tp_modules_free(tp_modules *t) {
    if (!t) return;
    for (size_t i = 0; i < t->n; i++)
        free(t->rows[i].key);
    for (size_t i = 0; i < t->nops; i++)
        free(t->ops[i].key);
    free(t->rows), free(t->ops);
    free(t->order), free(t->ops_order);
    tp_name_index_free(&t->ix);
    tp_name_index_free(&t->ops_ix);
    free(t);
}
