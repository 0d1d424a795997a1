/* coverage.c - which stage ranges count, and "other": the part of each step none covers.
 *
 * The walk (nesting.c) finds each thread's stage ranges. A range lying wholly inside a range of
 * the same stage on another thread is the same work seen twice (autograd's evaluate_function
 * ranges on the backward thread, inside `## backward ##` on the main thread; a DataLoader
 * worker's fetch inside the main thread's): it does not count. A step's counted ranges may still
 * run on several threads at once, so their sum can exceed the step; what they cover is the
 * length of the union of their intervals, each clipped to its step. other = step duration -
 * covered, never below zero. docs/METRICS.md defines both. */
#include "analysis/internal.h"

#include "util/vec.h"

#include <stdlib.h>

/* Keeps e's interval clipped to step k, for the step's uncovered time. */
static int note_span(tp_walk *s, size_t k, const tp_event *e) {
    const tp_event *step = &s->m->events[s->steps[k]];
    int64_t end = tp_ev_end(e), step_end = tp_ev_end(step);
    if (end > step_end) end = step_end;
    if (TP_AGROW(&s->keep, s->spans, s->cap_spans, s->nspans + 1) ||
        TP_AGROW(&s->keep, s->span_step, s->cap_span_step, s->nspans + 1))
        return -1;
    s->spans[s->nspans] = (tp_keyed){tp_time_key(e->ts), (uint64_t)(end - e->ts)};
    s->span_step[s->nspans++] = (uint32_t)k;
    return 0;
}

/* Counts dur, the part of e that is stage st's own, in the stage and in e's step; keeps e's
 * interval for the step's uncovered time. With steps, a range starting in none (a validation
 * loop between training steps, the work before the first) is no part of the step time the
 * stage table divides by: it does not count, so no share exceeds 100%. */
static int count_one(tp_walk *s, int st, const tp_event *e, int64_t dur) {
    ptrdiff_t k = tp_step_at(s, e->ts);
    if (k < 0 && s->nsteps) return 0;
    tp_stage_row *row = &s->a->stages[st];
    if (TP_GROW(row->durs, row->cap_durs, row->count + 1)) return -1;
    row->durs[row->count++] = dur;
    row->total_ns = tp_add_sat(row->total_ns, dur);
    if (dur > row->max_ns) row->max_ns = dur;
    if (k >= 0) {
        int64_t *cell = &s->step_stage[(size_t)k * s->a->nstages + (size_t)st];
        *cell = tp_add_sat(*cell, dur);
        return note_span(s, (size_t)k, e);
    }
    return 0;
}

static int cmp_cand(const void *pa, const void *pb, void *ctx) {
    const tp_stage_cand *x = pa, *y = pb;
    const tp_event *events = ctx, *ex = &events[x->ev], *ey = &events[y->ev];
    if (x->stage != y->stage) return x->stage - y->stage;
    if (ex->ts != ey->ts) return ex->ts < ey->ts ? -1 : 1;
    int64_t xe = tp_ev_end(ex), ye = tp_ev_end(ey);
    if (xe != ye) return xe > ye ? -1 : 1; /* the enclosing one first */
    return (x->ev > y->ev) - (x->ev < y->ev);
}

int tp_stage_count(tp_walk *s) {
    if (!s->ncands) return 0;
    qsort_r(s->cands, s->ncands, sizeof(*s->cands), cmp_cand, (void *)s->m->events);
    /* Per stage in start order: a range ending by the furthest end so far lies inside an
     * earlier one; same-stage ranges never nest on one thread (the walk merged them), so that
     * one is on another thread. */
    int stage = -1;
    int64_t furthest = INT64_MIN;
    for (size_t i = 0; i < s->ncands; i++) {
        const tp_stage_cand *c = &s->cands[i];
        const tp_event *e = &s->m->events[c->ev];
        if (c->stage != stage) stage = c->stage, furthest = INT64_MIN;
        if (tp_ev_end(e) <= furthest) continue;
        furthest = tp_ev_end(e);
        if (count_one(s, c->stage, e, c->own_ns)) return -1;
    }
    return 0;
}

int tp_stage_other(tp_walk *s) {
    for (size_t k = 0; k < s->nsteps; k++)
        s->step_other[k] = tp_ev_dur(&s->m->events[s->steps[k]]);
    if (!s->nspans) return 0;
    uint32_t *idx = tp_arena_alloc(s->tmp, s->nspans, sizeof(*idx));
    uint32_t *grouped = tp_arena_alloc(s->tmp, s->nspans, sizeof(*grouped));
    size_t *start = tp_arena_alloc(s->tmp, s->nsteps + 1, sizeof(*start));
    tp_keyed *one = tp_arena_alloc(s->tmp, s->nspans, sizeof(*one));
    int rc = idx && grouped && start && one ? 0 : -1;
    if (rc == 0) {
        for (size_t i = 0; i < s->nspans; i++)
            idx[i] = (uint32_t)i;
        tp_group_by_key(idx, s->span_step, s->nspans, s->nsteps, grouped, start);
    }
    for (size_t k = 0; rc == 0 && k < s->nsteps; k++) {
        size_t n = start[k + 1] - start[k];
        for (size_t i = 0; i < n; i++)
            one[i] = s->spans[grouped[start[k] + i]];
        /* the union of intervals inside the step, as for GPU busy time */
        const tp_event *step = &s->m->events[s->steps[k]];
        int64_t covered = 0;
        rc = tp_gpu_union(&s->order, one, n, step->ts, tp_ev_end(step), &covered);
        s->step_other[k] = s->step_other[k] > covered ? s->step_other[k] - covered : 0;
    }
    return rc;
}
