/* compare.c - the deltas of compare.h, matched by exact name. */
#include "analysis/compare.h"

#include "analysis/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* What compare needs of an op or kernel row: the table is walked through this view so that
 * one matching routine serves both. */
typedef struct row_view {
    const char *name;
    uint64_t calls;
    int64_t ns;
} row_view;

typedef row_view (*row_at_fn)(const tp_analysis *x, size_t i);

static row_view op_at(const tp_analysis *x, size_t i) {
    return (row_view){x->ops[i].name, x->ops[i].calls, x->ops[i].self_ns};
}

static row_view kernel_at(const tp_analysis *x, size_t i) {
    return (row_view){x->kernels[i].name, x->kernels[i].calls, x->kernels[i].total_ns};
}

static int cmp_delta(const void *pa, const void *pb) {
    const tp_delta_row *a = pa, *b = pb;
    uint64_t da = a->delta_ns < 0 ? 0 - (uint64_t)a->delta_ns : (uint64_t)a->delta_ns;
    uint64_t db = b->delta_ns < 0 ? 0 - (uint64_t)b->delta_ns : (uint64_t)b->delta_ns;
    if (da != db) return da > db ? -1 : 1;
    return strcmp(a->name, b->name);
}

static tp_delta_row delta(const char *name, tp_delta_status st, row_view a, row_view b) {
    tp_delta_row d = {.name = name,
                      .status = st,
                      .a_calls = a.calls,
                      .b_calls = b.calls,
                      .a_ns = a.ns,
                      .b_ns = b.ns,
                      .delta_ns = tp_add_sat(b.ns, -a.ns)};
    d.delta_pct = a.ns > 0 ? 100.0 * (double)d.delta_ns / (double)a.ns : NAN;
    return d;
}

/* Rows of A matched in B by name, then B's rows missing from A. */
static int diff_table(const tp_analysis *a, size_t na, const tp_analysis *b, size_t nb,
                      const tp_name_index *b_ix, row_at_fn row_at, tp_delta_row **out, size_t *nout,
                      size_t *added, size_t *removed) {
    tp_delta_row *rows = malloc(((na + nb) ? na + nb : 1) * sizeof(*rows));
    unsigned char *seen = calloc(nb ? nb : 1, 1);
    if (!rows || !seen) {
        free(rows);
        free(seen);
        return -1;
    }
    size_t n = 0;
    row_view none = {NULL, 0, 0};
    for (size_t i = 0; i < na; i++) {
        row_view ra = row_at(a, i);
        uint32_t j = tp_name_index_get(b_ix, ra.name);
        if (j == UINT32_MAX) {
            rows[n++] = delta(ra.name, TP_DELTA_REMOVED, ra, none);
            ++*removed;
        } else {
            seen[j] = 1;
            rows[n++] = delta(ra.name, TP_DELTA_CHANGED, ra, row_at(b, j));
        }
    }
    for (size_t j = 0; j < nb; j++) {
        if (seen[j]) continue;
        row_view rb = row_at(b, j);
        rows[n++] = delta(rb.name, TP_DELTA_ADDED, none, rb);
        ++*added;
    }
    free(seen);
    qsort(rows, n, sizeof(*rows), cmp_delta);
    *out = rows;
    *nout = n;
    return 0;
}

/* A figure per step: total / steps, or the total itself when there are no steps. */
static int64_t per_step(int64_t ns, size_t steps) {
    return steps ? tp_mean_ns(ns, steps) : ns;
}

static const tp_stage_row *stage_row(const tp_analysis *x, const char *name) {
    for (size_t st = 0; st < x->nstages; st++)
        if (strcmp(x->stages[st].name, name) == 0) return &x->stages[st];
    return strcmp(name, x->other.name) == 0 ? &x->other : NULL;
}

static row_view stage_view(const tp_analysis *x, const tp_stage_row *r) {
    return r ? (row_view){r->name, r->count, per_step(r->total_ns, x->nsteps)}
             : (row_view){NULL, 0, 0};
}

/* Stage times per step, A's stages in order, then B's missing from A, then other. */
static int diff_stages(tp_compare *c) {
    const tp_analysis *a = c->a, *b = c->b;
    c->stages = malloc((a->nstages + b->nstages + 1) * sizeof(*c->stages));
    if (!c->stages) return -1;
    for (size_t st = 0; st < a->nstages; st++) {
        const tp_stage_row *ra = &a->stages[st], *rb = stage_row(b, ra->name);
        c->stages[c->nstages++] = delta(ra->name, rb ? TP_DELTA_CHANGED : TP_DELTA_REMOVED,
                                        stage_view(a, ra), stage_view(b, rb));
    }
    for (size_t st = 0; st < b->nstages; st++)
        if (!stage_row(a, b->stages[st].name))
            c->stages[c->nstages++] = delta(b->stages[st].name, TP_DELTA_ADDED, stage_view(a, NULL),
                                            stage_view(b, &b->stages[st]));
    c->stages[c->nstages++] =
        delta(a->other.name, TP_DELTA_CHANGED, stage_view(a, &a->other), stage_view(b, &b->other));
    return 0;
}

static const tp_delta_row *row_named(const tp_delta_row *rows, size_t n, const char *name) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(rows[i].name, name) == 0) return &rows[i];
    return NULL;
}

/* (b - a) / a in percent; +inf when only b is above zero, NaN when both are zero. */
static double change_pct(int64_t a, int64_t b) {
    if (a > 0) return 100.0 * ((double)b - (double)a) / (double)a;
    return b > 0 ? INFINITY : NAN;
}

double tp_compare_change(const tp_compare *c, const char *target, int *found) {
    *found = 1;
    if (strcmp(target, "step") == 0) return c->step_change_pct;
    if (strncmp(target, "stage:", 6) == 0) {
        const tp_delta_row *r = row_named(c->stages, c->nstages, target + 6);
        if (r) return change_pct(r->a_ns, r->b_ns);
    } else if (strncmp(target, "op:", 3) == 0) {
        const tp_delta_row *r = row_named(c->ops, c->nops, target + 3);
        if (r) return change_pct(per_step(r->a_ns, c->a->nsteps), per_step(r->b_ns, c->b->nsteps));
    }
    *found = 0;
    return NAN;
}

tp_compare *tp_compare_new(const tp_analysis *a, const tp_analysis *b) {
    tp_compare *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    c->a = a;
    c->b = b;
    c->a_mean_ns = a->nsteps ? a->steps_mean_ns : 0;
    c->b_mean_ns = b->nsteps ? b->steps_mean_ns : 0;
    c->step_change_pct =
        a->nsteps && b->nsteps && c->a_mean_ns > 0
            ? 100.0 * ((double)c->b_mean_ns - (double)c->a_mean_ns) / (double)c->a_mean_ns
            : NAN;
    if (diff_table(a, a->nops, b, b->nops, &b->priv->ops_ix, op_at, &c->ops, &c->nops,
                   &c->ops_added, &c->ops_removed) ||
        diff_table(a, a->nkernels, b, b->nkernels, &b->priv->kernels_ix, kernel_at, &c->kernels,
                   &c->nkernels, &c->kernels_added, &c->kernels_removed) ||
        diff_stages(c)) {
        tp_compare_free(c);
        return NULL;
    }
    return c;
}

int tp_compare_regressed(const tp_compare *c, double pct) {
    if (isnan(c->step_change_pct)) return -1;
    return c->step_change_pct > pct;
}

void tp_compare_free(tp_compare *c) {
    if (!c) return;
    free(c->ops);
    free(c->kernels);
    free(c->stages);
    free(c);
}
