/* flight_step.c - a flight recorder's trace: its triggering step beside the other steps of the same
 * input (docs/FLIGHT.md, docs/METRICS.md "Flight recorder").
 *
 * The model names the step (flight_step: the recorder's, or the trace's tprof object). For it the
 * analysis reports how much longer it took than the median of the other steps, the stage whose
 * time grew most (its time in the step against the stage's median in the others, "other"
 * included) and the ops whose self time grew most (in the step against their mean in the
 * others). The walk (nesting.c) gives each range's self time; ranges starting inside the step
 * are summed here by name. */
#include "analysis/internal.h"

#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

void tp_flight_find(tp_walk *s) {
    const tp_model *m = s->m;
    if (m->flight_step < 0) return;
    for (size_t k = 0; k < s->nsteps; k++) {
        const tp_event *e = &m->events[s->steps[k]];
        if (tp_step_number(tp_model_str(m, e->name)) != m->flight_step) continue;
        s->flight_ev = s->steps[k];
        s->flight_ts = e->ts;
        s->flight_end = tp_ev_end(e);
        return; /* a trace marks one step; a second mark is not the recorder's */
    }
}

int tp_flight_self(tp_walk *s, uint32_t stat, int64_t self) {
    size_t old = s->cap_flight_self;
    if (TP_AGROW(&s->keep, s->flight_self, s->cap_flight_self, (size_t)stat + 1)) return -1;
    if (s->cap_flight_self > old)
        memset(s->flight_self + old, 0, (s->cap_flight_self - old) * sizeof(*s->flight_self));
    s->flight_self[stat] = tp_add_sat(s->flight_self[stat], self);
    return 0;
}

/* The median of v[0..n) over the rows other than `skip` (v is scratch of n entries). */
static int64_t median_without(int64_t *v, size_t n, size_t skip, const int64_t *all) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (i != skip) v[k++] = all[i];
    if (!k) return -1;
    tp_sort_i64(v, k);
    return tp_percentile(v, k, 50);
}

/* The stage (or "other") whose time in the step exceeds its median in the others most. */
static int grown_stage(tp_flight_row *f, const tp_analysis *a, size_t first, size_t n, int64_t *col,
                       int64_t *scratch) {
    size_t mine = f->step - first;
    int64_t best = 0;
    f->stage = -2;
    for (int st = -1; st < (int)a->nstages; st++) {
        for (size_t i = 0; i < n; i++) {
            const tp_step_row *r = &a->steps[first + i];
            col[i] = st < 0 ? r->other_ns : r->stage_ns[st];
        }
        int64_t med = median_without(scratch, n, mine, col);
        if (med < 0 || col[mine] - med <= best) continue;
        best = col[mine] - med;
        f->stage = st;
        f->stage_step_ns = col[mine];
        f->stage_median_ns = med;
    }
    return 0;
}

/* The ops whose self time in the step exceeds their mean in the other steps most; an op that
 * grew by less than 1% of the step's own excess over the median is noise, not an answer. */
static int grown_ops(tp_flight_row *f, const tp_walk *s) {
    int64_t dur = s->a->steps[f->step].dur_ns;
    int64_t floor_ns = f->median_ns > 0 && dur > f->median_ns ? (dur - f->median_ns) / 100 : 0;
    for (size_t i = 0; i < s->cap_flight_self && i < s->nstats; i++) {
        int64_t in_step = s->flight_self[i];
        if (in_step <= 0) continue;
        int64_t typical = f->others ? (s->stats[i].self_ns - in_step) / (int64_t)f->others : 0;
        int64_t extra = in_step - typical;
        if (extra <= 0 || extra < floor_ns) continue;
        size_t at = f->nops;
        while (at > 0 && f->ops[at - 1].step_ns - f->ops[at - 1].typical_ns < extra)
            at--;
        if (at >= TP_FLIGHT_OPS) continue;
        if (f->nops == TP_FLIGHT_OPS)
            free(f->ops[TP_FLIGHT_OPS - 1].name);
        else
            f->nops++;
        memmove(&f->ops[at + 1], &f->ops[at], (f->nops - 1 - at) * sizeof(f->ops[0]));
        f->ops[at] = (tp_flight_op){strdup(tp_model_str(s->m, s->stats[i].name)), in_step, typical};
        if (!f->ops[at].name) return -1;
    }
    return 0;
}

int tp_flight_add(tp_walk *s, size_t first_row) {
    tp_analysis *a = s->a;
    if (s->flight_ev == UINT32_MAX) return 0;
    size_t n = a->nsteps - first_row, mine = SIZE_MAX;
    for (size_t k = 0; k < n; k++)
        if (s->steps[k] == s->flight_ev) mine = k;
    if (mine == SIZE_MAX || TP_GROW(a->flights, a->cap_flights, a->nflights + 1)) return -1;
    tp_flight_row *f = &a->flights[a->nflights];
    *f = (tp_flight_row){.step = first_row + mine, .others = n - 1, .ratio = -1};
    f->reason = strdup(tp_model_str(s->m, s->m->flight_reason));
    int64_t *col = tp_arena_alloc(s->tmp, n, sizeof(*col));
    int64_t *scratch = tp_arena_alloc(s->tmp, n, sizeof(*scratch));
    int rc = f->reason && col && scratch ? 0 : -1;
    if (rc == 0) {
        for (size_t i = 0; i < n; i++)
            col[i] = a->steps[first_row + i].dur_ns;
        f->median_ns = median_without(scratch, n, mine, col);
        if (f->median_ns > 0) f->ratio = (double)col[mine] / (double)f->median_ns;
        rc = grown_stage(f, a, first_row, n, col, scratch);
    }
    if (rc == 0) rc = grown_ops(f, s);
    a->nflights++; /* even incomplete: its strings are freed with the analysis */
    return rc;
}

void tp_flight_rows_free(tp_analysis *a) {
    for (size_t i = 0; i < a->nflights; i++) {
        free(a->flights[i].reason);
        for (size_t k = 0; k < a->flights[i].nops; k++)
            free(a->flights[i].ops[k].name);
    }
    free(a->flights);
    a->flights = NULL;
    a->nflights = a->cap_flights = 0;
}
