/* nesting.c - torch's nesting rule on one thread, and every figure that depends on a range's
 * ancestors: self time, the op table, outermost stage ranges, and the op a launch is charged to.
 *
 * Ranges arrive sorted by start ascending, then duration descending. Before pushing range c the
 * walk pops the top while c.start >= top.end or c.end > top.end; what remains on top is c's
 * parent (docs/SEMANTICS.md §3). A step (ProfilerStep#n) is a parent like any other range, as in
 * torch, but it has no row in the op table and is never a stage or an op.
 *
 * The op table merges as torch's tables do (EventList._remove_dup_nodes): a range whose parent
 * has its name and no other child is not a call of its own (an aten::mul of a Python scalar
 * calls aten::mul); it adds no call, time or FLOPs, and its self time and allocations go to the
 * parent's row as before (the same name), its children becoming the parent's.
 *
 * FlopCounterMode's FLOPs (the "flops_fcm" arg, model/flops.h) count only at an op with no
 * counted op around it: FlopCounterMode sees an op at torch's dispatcher and not the ops its
 * kernel calls (aten::_convolution inside aten::convolution), which a trace shows nested. */
#include "analysis/internal.h"

#include "model/kineto.h"
#include "model/flops.h"
#include "util/vec.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

/* One open range. Invariant: frames below it on the stack are its ancestors, innermost last. */
typedef struct frame {
    uint32_t ev;
    uint32_t stat;   /* index of the range's name in the scan's stats */
    uint32_t shaped; /* its (name, shapes) pair in s->shapes, or UINT32_MAX (no shapes kept) */
    int32_t op;      /* stack position of the innermost op among this frame and its ancestors,
                        -1 when there is none: where a launch inside this frame is charged */
    int64_t end;
    int64_t children; /* summed durations of the direct children seen so far */
    int has_child;    /* a direct child was seen */
    int cls;          /* CAT_* of its category (CAT_OP for a step) */
    int in_optim;     /* this range or an ancestor is an Optimizer.step */
    int in_fcm;       /* this range or an ancestor is an op FlopCounterMode counts */
    /* Stages (docs/METRICS.md): the stack position of the innermost counted stage range among
     * this frame and its ancestors (-1 none); this frame's stage when it is counted (-1 when
     * not); the durations of counted ranges of other stages nested in it (carved out of it);
     * and whether this frame or an ancestor is an explicit stage range (nothing inside counts). */
    int32_t stage_frame;
    int stage;
    int64_t carved;
    int in_explicit;
    tp_str module; /* the innermost enclosing module range ("nn.Module: ..."), TP_STR_EMPTY none */
    uint32_t node; /* its call stack (stacks.h), TP_STACK_NONE when under no Python frame */
    uint32_t py;   /* the innermost python_function node among it and its ancestors, or NONE */
} frame;

enum { CAT_OP = 0, CAT_RUNTIME = 1, CAT_PYTHON = 2 };

/* What a category says about its ranges: runtime and driver calls (cuda_runtime, cuda_driver,
 * Runtime, hip ...) and python_function ranges are not ops a launch can be charged to. */
static int cat_class(tp_walk *s, tp_str cat) {
    size_t slot = cat & 63;
    if (s->cat_id[slot] == cat && s->cat_class[slot]) return s->cat_class[slot] - 1;
    const char *c = tp_model_str(s->m, cat);
    int cls = tp_glob_match("*runtime*", c) || tp_glob_match("*driver*", c) ? CAT_RUNTIME
              : tp_glob_match(tp_kcat_python_function, c)                   ? CAT_PYTHON
                                                                            : CAT_OP;
    s->cat_id[slot] = cat;
    s->cat_class[slot] = (uint8_t)(cls + 1);
    return cls;
}

int tp_walk_is_op(tp_walk *s, const tp_event *e) {
    if (e->kind != TP_HOST_RANGE || (e->flags & TP_EVF_STEP) || cat_class(s, e->cat) != CAT_OP)
        return 0;
    tp_name_stats *ns = tp_walk_name(s, e->name);
    return ns && !(tp_walk_name_flags(s, ns, e) & TP_NAME_SETUP);
}

/* The last step starting at or before t, when t is before its end. */
ptrdiff_t tp_step_at(const tp_walk *s, int64_t t) {
    size_t lo = 0, hi = s->nsteps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->m->events[s->steps[mid]].ts <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || t >= tp_ev_end(&s->m->events[s->steps[lo - 1]])) return -1;
    return (ptrdiff_t)lo - 1;
}

/* A step's lead: the time before its first range on its own thread (all of it when it has
 * none). What a loop does there has no range of its own: `for batch in loader` fetching. */
static void note_lead(tp_walk *s, const frame *step, int64_t first_child_ts) {
    const tp_event *e = &s->m->events[step->ev];
    ptrdiff_t k = tp_step_at(s, e->ts);
    if (k < 0 || s->steps[k] != step->ev) return; /* a step overlapping another: not counted */
    int64_t lead = step->has_child ? first_child_ts - e->ts : tp_ev_dur(e);
    s->step_lead[k] = lead > 0 ? lead : 0;
}

static int count_stage(tp_walk *s, int st, const tp_event *e, int64_t dur);

/* Whether a range from start to end is outside an open range ending at open_end: the rule of
 * this file's head, by which the walks pop. */
static inline int outside(int64_t start, int64_t end, int64_t open_end) {
    return start >= open_end || end > open_end;
}

/* The merge pass: one open range, with its effective children (those left once the merges below
 * it are done): how many, and the only one when there is one. */
typedef struct open_range {
    uint32_t pos; /* its position in the thread's order */
    uint32_t only;
    uint32_t kids;
    int64_t end;
} open_range;

/* Closes r: while its only effective child has its name, that child merges into it and the
 * child's own effective children become r's (torch repeats its pass until nothing merges). */
static void close_range(const tp_walk *s, const uint32_t *idx, const open_range *r, uint8_t *merged,
                        uint32_t *kids, uint32_t *only) {
    const tp_event *e = &s->m->events[idx[r->pos]];
    uint32_t n = r->kids, child = r->only;
    while (n == 1 && !(e->flags & TP_EVF_STEP) && s->m->events[idx[child]].name == e->name &&
           !(s->m->events[idx[child]].flags & TP_EVF_STEP)) {
        merged[child] = 1;
        n = kids[child];
        child = only[child];
    }
    kids[r->pos] = n;
    only[r->pos] = child;
}

/* merged[i] = 1 for each range of one thread's order that merges into its parent (the file's
 * head). 0, or -1 when out of memory. */
static int mark_merged(const tp_walk *s, const uint32_t *idx, size_t n, uint8_t *merged) {
    uint32_t *kids = malloc(n * sizeof(*kids) + 1), *only = malloc(n * sizeof(*only) + 1);
    open_range *stack = NULL;
    size_t depth = 0, cap = 0;
    int rc = kids && only ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const tp_event *e = &s->m->events[idx[i]];
        int64_t end = tp_ev_end(e);
        while (depth && outside(e->ts, end, stack[depth - 1].end))
            close_range(s, idx, &stack[--depth], merged, kids, only);
        if (depth) {
            stack[depth - 1].kids++;
            stack[depth - 1].only = (uint32_t)i;
        }
        if (depth == cap && tp_grow((void **)&stack, &cap, depth + 1, sizeof(*stack)))
            rc = -1;
        else
            stack[depth++] = (open_range){.pos = (uint32_t)i, .end = end};
    }
    while (rc == 0 && depth)
        close_range(s, idx, &stack[--depth], merged, kids, only);
    free(kids), free(only), free(stack);
    return rc;
}

static int pop(tp_walk *s, const frame *f) {
    const tp_event *e = &s->m->events[f->ev];
    int64_t self = tp_ev_dur(e) - f->children;
    if (f->node != TP_STACK_NONE && self > 0) { /* a step's too: it is its parent's frame */
        tp_stack_node *n = &s->a->stacks->nodes[f->node];
        n->self_ns = tp_add_sat(n->self_ns, self);
    }
    if (e->flags & TP_EVF_STEP) {
        if (!f->has_child) note_lead(s, f, 0);
        return 0;
    }
    if (f->stage >= 0) {
        int64_t own = tp_ev_dur(e) - f->carved;
        if (count_stage(s, f->stage, e, own > 0 ? own : 0)) return -1;
    }
    if (self > 0) s->stats[f->stat].self_ns = tp_add_sat(s->stats[f->stat].self_ns, self);
    if (self > 0 && f->shaped != UINT32_MAX) {
        tp_name_stats *pair = &s->shapes.stats[f->shaped];
        pair->self_ns = tp_add_sat(pair->self_ns, self);
    }
    if (self > 0 && tp_flight_in(s, e->ts) && tp_flight_self(s, f->stat, self)) return -1;
    if (f->cls == CAT_PYTHON && self > 0) tp_evidence_python(s, e, self);
    return 0;
}

/* The FLOPs e carries, NaN when none (no "flops" arg, not a number, NaN); also counted in the
 * step it starts in. */
static double count_flops(tp_walk *s, const tp_event *e) {
    if (s->flops_key == UINT32_MAX || !e->nargs) return NAN;
    const tp_arg *arg = tp_event_arg(s->m, e, s->flops_key);
    if (!arg || (arg->type != TP_ARG_INT && arg->type != TP_ARG_DOUBLE)) return NAN;
    double flops = arg->type == TP_ARG_INT ? (double)arg->v.i : arg->v.d;
    if (flops != flops) return NAN;
    ptrdiff_t k = tp_step_at(s, tp_call_ts(s, e));
    if (k >= 0) s->step_flops[k] = tp_add_flops(s->step_flops[k], flops);
    return flops;
}

/* FlopCounterMode's FLOPs of e, an op it counts with none around it: its "flops_fcm" arg, else
 * (a window's own model, whose ops keep the texts) the formula of its "Input Dims" and
 * "Concrete Inputs"; 0 when neither gives a count. Also counted in the step it starts in. */
static double count_fcm(tp_walk *s, const tp_event *e) {
    const tp_arg *arg = s->fcm_key != UINT32_MAX ? tp_event_arg(s->m, e, s->fcm_key) : NULL;
    const tp_arg *dims = s->shapes.dims_key != UINT32_MAX && s->conc_key != UINT32_MAX
                             ? tp_event_arg(s->m, e, s->shapes.dims_key)
                             : NULL;
    const tp_arg *conc = dims ? tp_event_arg(s->m, e, s->conc_key) : NULL;
    int64_t n = 0;
    if (arg && arg->type == TP_ARG_INT) {
        n = arg->v.i;
    } else if (dims && conc && dims->type == TP_ARG_JSON && conc->type == TP_ARG_JSON) {
        const tp_strtab *st = &s->m->strings;
        n = tp_flops_fcm_of(tp_model_str(s->m, e->name), tp_strtab_len(st, e->name),
                            tp_model_str(s->m, dims->v.s), tp_strtab_len(st, dims->v.s),
                            tp_model_str(s->m, conc->v.s), tp_strtab_len(st, conc->v.s));
    }
    if (n <= 0) return 0;
    ptrdiff_t k = tp_step_at(s, tp_call_ts(s, e));
    if (k >= 0) s->step_fcm_flops[k] = tp_add_flops(s->step_fcm_flops[k], (double)n);
    return (double)n;
}

/* A stage range found by the walk: counted once every thread is walked (coverage.c). */
static int count_stage(tp_walk *s, int st, const tp_event *e, int64_t dur) {
    if (TP_AGROW(&s->keep, s->cands, s->cap_cands, s->ncands + 1)) return -1;
    s->cands[s->ncands++] =
        (tp_stage_cand){.stage = st, .ev = (uint32_t)(e - s->m->events), .own_ns = dur};
    return 0;
}

/* Notes e (event idx) as the launch of its id's GPU work when no earlier event has that id,
 * with the innermost op around it (tp_corr_charge charges the work once every thread is
 * walked). *hint is the thread's search position. */
static void note_launch(tp_walk *s, uint32_t idx, const tp_event *e, const frame *parent,
                        const frame *stack, size_t *hint) {
    size_t k = tp_corr_find(&s->corr, e->corr, hint);
    if (k == SIZE_MAX || idx > s->corr.use[k].launch) return;
    s->corr.use[k].launch = idx;
    s->corr.use[k].op = parent && parent->op >= 0 ? stack[parent->op].stat : UINT32_MAX;
    s->corr.use[k].shaped = parent && parent->op >= 0 ? stack[parent->op].shaped : UINT32_MAX;
    s->corr.use[k].py = parent ? parent->py : TP_STACK_NONE;
}

/* The call stack of e (cls: its category class; merged: it merges into parent) into f->node and
 * f->py, and its call under its Python caller (stacks.h). A range outside every Python frame
 * costs one comparison. 0, or -1 when out of memory. */
static int place_stack(tp_walk *s, const tp_event *e, const tp_name_stats *ns, int cls, int merged,
                       const frame *parent, frame *f) {
    f->node = parent ? parent->node : TP_STACK_NONE;
    f->py = parent ? parent->py : TP_STACK_NONE;
    if ((e->flags & TP_EVF_STEP) || merged || (cls != CAT_PYTHON && f->node == TP_STACK_NONE))
        return 0; /* steps and merged ranges are their parent's frame */
    int64_t call = tp_call_dur(s, e);
    if (f->py != TP_STACK_NONE && !(ns->what & TP_NAME_SETUP) && call >= 0 &&
        tp_stacks_walk_call(s, e->name, 0, f->py, call))
        return -1;
    f->node = tp_stacks_walk_node(s, f->node, e->name, cls == CAT_PYTHON);
    if (cls == CAT_PYTHON) f->py = f->node;
    return f->node == TP_STACK_NONE ? -1 : 0;
}

/* Counts e, a range that is not a step, in its name's row, and in its (name, shapes) pair when
 * the model keeps shapes (*pair, else UINT32_MAX); module: the module range around it, if any;
 * in_fcm: an op FlopCounterMode counts is around it. 0, or -1 when out of memory. */
static int count_op(tp_walk *s, const tp_event *e, tp_name_stats *ns, uint32_t *pair, tp_str module,
                    int in_fcm) {
    *pair = UINT32_MAX;
    if (tp_walk_name_flags(s, ns, e) & TP_NAME_SETUP)
        return 0; /* metadata (tprof.torch's setup), no row */
    int64_t time = tp_ev_dur(e), call = tp_call_dur(s, e);
    if (module != TP_STR_EMPTY && call > ns->max_ns) { /* its longest call's */
        ns->module = module;
        ns->module_ns = call;
        ns->module_path = 0;
    }
    double flops = count_flops(s, e);
    double fcm = (ns->what & TP_NAME_FCM) && !in_fcm && e->nargs ? count_fcm(s, e) : 0;
    tp_stats_call(ns, time, call, flops);
    ns->fcm_flops = tp_add_flops(ns->fcm_flops, fcm);
    tp_evidence_call(s, e, ns);
    if (s->shapes.dims_key == UINT32_MAX) return 0;
    if (tp_shapes_count(s, e, time, call, flops, pair)) return -1;
    tp_name_stats *shaped = &s->shapes.stats[*pair];
    shaped->fcm_flops = tp_add_flops(shaped->fcm_flops, fcm);
    return 0;
}

/* The stage fields of f, the frame of e under parent: an explicit
 * stage range (named as its stage) counts whole and hides everything inside it; any other
 * matching range counts unless its innermost counted ancestor is of the same stage, and is
 * carved out of that ancestor when it is of another (Lightning runs training_step inside
 * Optimizer.step). */
static void place_stage(tp_walk *s, const tp_event *e, tp_name_stats *ns, frame *parent,
                        frame *stack, size_t depth, frame *f) {
    f->stage_frame = parent ? parent->stage_frame : -1;
    f->stage = -1;
    f->in_explicit = parent && parent->in_explicit;
    if (e->flags & TP_EVF_STEP) return; /* steps are never stages */
    if (ns->stage == TP_STAGE_UNKNOWN) {
        const char *name = tp_model_str(s->m, e->name);
        ns->stage = tp_stage_of(s->a, name);
        ns->explicit_stage = ns->stage >= 0 && tp_glob_match(s->a->stages[ns->stage].name, name);
    }
    if (ns->stage < 0 || f->in_explicit) return;
    frame *outer = f->stage_frame >= 0 ? &stack[f->stage_frame] : NULL;
    if (outer && outer->stage == ns->stage) return;
    if (outer) outer->carved = tp_add_sat(outer->carved, tp_ev_dur(e));
    f->stage = ns->stage;
    f->stage_frame = (int32_t)depth;
    f->in_explicit = ns->explicit_stage;
}

/* One thread's allocations, consumed in time order as the walk moves on. */
typedef struct alloc_feed {
    const uint32_t *ev;
    const int64_t *bytes;
    size_t n, next;
} alloc_feed;

/* Charges the allocations made before time `before` to the innermost op enclosing each, as
 * torch charges self memory: the deepest frame still open at the allocation's time (start <= t
 * <= end; the frames above it have ended but are not popped yet), then its innermost op. Every
 * frame on the stack started at or before t: allocations before a range's start are charged
 * before it is pushed. */
static void charge_allocs(tp_walk *s, const frame *stack, size_t depth, alloc_feed *f,
                          int64_t before) {
    for (; f->next < f->n; f->next++) {
        int64_t t = s->m->events[f->ev[f->next]].ts;
        if (t >= before) break;
        size_t k = depth;
        while (k && stack[k - 1].end < t)
            k--;
        int32_t op = k ? stack[k - 1].op : -1;
        if (op < 0) continue;
        assert(s->m->events[stack[op].ev].ts <= t);
        tp_name_stats *ns = &s->stats[stack[op].stat];
        ns->alloc_bytes = tp_add_sat(ns->alloc_bytes, f->bytes[f->next]);
        ns->allocs++;
    }
}

/* The slot for a frame at depth, growing the stack; NULL when out of memory. */
static frame *push(frame **stack, size_t *cap, size_t depth) {
    if (depth == *cap && tp_grow((void **)stack, cap, depth + 1, sizeof(**stack))) return NULL;
    return *stack ? &(*stack)[depth] : NULL;
}

int tp_nesting_walk(tp_walk *s, const uint32_t *idx, size_t n, const uint32_t *allocs,
                    const int64_t *bytes, size_t nallocs) {
    frame *stack = NULL, *f;
    size_t depth = 0, cap = 0, hint = 0;
    alloc_feed feed = {allocs, bytes, nallocs, 0};
    uint8_t *merged = calloc(n + 1, 1);
    if (!merged || mark_merged(s, idx, n, merged)) goto oom;
    for (size_t i = 0; i < n; i++) {
        const tp_event *e = &s->m->events[idx[i]];
        if (i + 8 < n) __builtin_prefetch(&s->m->events[idx[i + 8]]);
        int64_t end = tp_ev_end(e);
        charge_allocs(s, stack, depth, &feed, e->ts);
        while (depth && outside(e->ts, end, stack[depth - 1].end))
            if (pop(s, &stack[--depth])) goto oom;
        frame *parent = depth ? &stack[depth - 1] : NULL;
        if (parent) {
            if (!parent->has_child && (s->m->events[parent->ev].flags & TP_EVF_STEP)) {
                parent->has_child = 1;
                note_lead(s, parent, e->ts);
            }
            parent->has_child = 1;
            parent->children = tp_add_sat(parent->children, tp_ev_dur(e));
        }
        tp_name_stats *ns = tp_walk_name(s, e->name);
        int cls = CAT_OP, in_optim = parent && parent->in_optim;
        if (!ns) goto oom;
        int32_t op = parent ? parent->op : -1;
        uint32_t pair = UINT32_MAX;
        assert(!merged[i] || (parent && parent->stat == (uint32_t)(ns - s->stats)));
        if (merged[i] && parent) /* its self time is its parent's, in the parent's pair too */
            pair = parent->shaped;
        if (!(e->flags & TP_EVF_STEP)) {
            if (!merged[i] && count_op(s, e, ns, &pair, parent ? parent->module : TP_STR_EMPTY,
                                       parent && parent->in_fcm))
                goto oom;
            cls = cat_class(s, e->cat);
            in_optim = tp_evidence_open(s, e, ns, cls == CAT_OP, in_optim,
                                        op >= 0 ? stack[op].stat : UINT32_MAX);
        }
        if (e->corr) note_launch(s, idx[i], e, parent, stack, &hint);
        if (!(f = push(&stack, &cap, depth))) goto oom;
        parent = depth ? &stack[depth - 1] : NULL; /* the stack may have moved */
        *f = (frame){.ev = idx[i],
                     .stat = (uint32_t)(ns - s->stats),
                     .shaped = pair,
                     .op = cls == CAT_OP && !(e->flags & TP_EVF_STEP) ? (int32_t)depth : op,
                     .end = end,
                     .cls = cls,
                     .in_optim = in_optim,
                     .in_fcm = (parent && parent->in_fcm) || (ns->what & TP_NAME_FCM),
                     .module = (ns->what & TP_NAME_MODULE) ? e->name
                               : parent                    ? parent->module
                                                           : TP_STR_EMPTY};
        place_stage(s, e, ns, parent, stack, depth, f);
        if (place_stack(s, e, ns, cls, merged[i], parent, f)) goto oom;
        depth++;
    }
    charge_allocs(s, stack, depth, &feed, INT64_MAX);
    while (depth)
        if (pop(s, &stack[--depth])) goto oom;
    free(stack);
    free(merged);
    return 0;
oom:
    free(stack);
    free(merged);
    return -1;
}
