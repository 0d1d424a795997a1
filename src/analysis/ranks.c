/* ranks.c - the per-rank side of an analysis made with tp_analysis_opts.per_rank: each model is
 * also added to a sub-analysis of its rank, whose collectives and GPU split are kept; at finish,
 * with two ranks or more, each rank is summarised into a tp_rank_row, steps are matched by number
 * into the spread, and straggler.c names the rank the others wait for.
 *
 * A model of unknown rank (-1) counts as rank 0's, as tprof writes one rank's traces without a
 * rank. A trace `tprof merge` wrote (every process named "rank N") is taken apart into its ranks.
 * The sub-analyses live until the analysis is freed, so finishing again after more models stays
 * correct. */
#include "analysis/internal.h"
#include "analysis/ranks.h"

#include "model/copy.h"
#include "util/vec.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

typedef struct rank_acc {
    int64_t rank;
    tp_analysis *a;
    tp_coll_list colls;
    tp_gpu_split gpu;
} rank_acc;

struct tp_rank_accs {
    rank_acc *v;
    size_t n, cap;
};

/* A new sub-analysis with the parent's stages (their copies, which the parent owns). */
static tp_analysis *sub_analysis(const tp_analysis *a) {
    tp_stage_def *defs = calloc(a->nstages ? a->nstages : 1, sizeof(*defs));
    if (!defs) return NULL;
    for (size_t st = 0; st < a->nstages; st++)
        defs[st] = (tp_stage_def){.name = a->stages[st].name,
                                  .patterns = (const char *const *)a->priv->patterns[st],
                                  .npatterns = a->priv->npatterns[st]};
    tp_analysis_opts o = {.stages = defs,
                          .nstages = a->nstages,
                          .peak_tflops = a->opt_peak_tflops,
                          .threads = a->priv->one_thread ? 1 : 0};
    tp_analysis *sub = tp_analysis_new(&o);
    free(defs);
    return sub;
}

/* The accumulator of rank; with_sub: it gets a sub-analysis (TP_PER_RANK_SELF's one rank is the
 * analysis itself and needs none). */
static rank_acc *acc_of(tp_analysis *a, int64_t rank, int with_sub) {
    struct tp_analysis_priv *pv = a->priv;
    if (!pv->ranks && !(pv->ranks = calloc(1, sizeof(*pv->ranks)))) return NULL;
    struct tp_rank_accs *r = pv->ranks;
    size_t k = 0;
    while (k < r->n && r->v[k].rank != rank)
        k++;
    if (k < r->n) return &r->v[k];
    if (TP_GROW(r->v, r->cap, r->n + 1)) return NULL;
    rank_acc *acc = &r->v[r->n];
    *acc = (rank_acc){.rank = rank, .a = with_sub ? sub_analysis(a) : NULL};
    if (with_sub && !acc->a) return NULL;
    r->n++;
    return acc;
}

static int add_rank_model(tp_analysis *a, const tp_model *m, int64_t rank, const char *path) {
    rank_acc *acc = acc_of(a, rank >= 0 ? rank : 0, 1);
    if (!acc || tp_analysis_add_model(acc->a, m, path)) return -1;
    if (tp_collectives_of(m, &acc->colls)) return -1;
    return tp_gpu_split_add(m, &acc->gpu);
}

/* ---- a merged trace (tprof merge) taken apart: its processes are named "rank N" ---- */

/* N when track t's process is named "rank N", else -1. */
static int64_t merged_rank(const tp_model *m, uint32_t t) {
    const char *name = tp_model_str(m, m->tracks[t].process_name);
    char *end;
    if (strncmp(name, "rank ", 5) != 0 || name[5] < '0' || name[5] > '9') return -1;
    long long n = strtoll(name + 5, &end, 10);
    return *end || n < 0 ? -1 : (int64_t)n;
}

static uint32_t keep_rank(void *ctx, tp_model *dst, const tp_model *src, uint32_t t) {
    if (merged_rank(src, t) != *(const int64_t *)ctx) return UINT32_MAX;
    return tp_copy_track(NULL, dst, src, t);
}

/* Each rank of a merged model as a model of its own. */
static int add_merged(tp_analysis *a, const tp_model *m, const char *path) {
    int rc = 0;
    for (uint32_t t = 0; t < m->ntracks && rc == 0; t++) {
        int64_t rank = merged_rank(m, t);
        uint32_t first = 0;
        while (merged_rank(m, first) != rank)
            first++;
        if (first != t) continue; /* this rank was added with its first track */
        tp_model one;
        tp_model_init(&one);
        one.base_ns = m->base_ns;
        one.rank = rank;
        tp_copy_opts o = {.map_track = keep_rank, .ctx = &rank};
        rc = tp_model_append(&one, m, &o);
        if (rc == 0) rc = add_rank_model(a, &one, rank, path);
        tp_model_free(&one);
    }
    return rc;
}

static int is_merged(const tp_model *m) {
    for (uint32_t t = 0; t < m->ntracks; t++)
        if (merged_rank(m, t) < 0) return 0;
    return m->ntracks > 0;
}

int tp_ranks_add_model(tp_analysis *a, const tp_model *m, const char *path) {
    if (a->priv->per_rank == TP_PER_RANK_SELF) {
        /* one rank: its collectives and GPU split; the rank is the first model's */
        struct tp_rank_accs *accs = a->priv->ranks;
        rank_acc *acc = accs && accs->n ? &accs->v[0] : acc_of(a, m->rank >= 0 ? m->rank : 0, 0);
        if (!acc || tp_collectives_of(m, &acc->colls)) return -1;
        return tp_gpu_split_add(m, &acc->gpu);
    }
    if (is_merged(m)) return add_merged(a, m, path);
    if (a->priv->per_rank != TP_PER_RANK_ON) return 0;
    return add_rank_model(a, m, m->rank, path);
}

void tp_ranks_acc_free(struct tp_rank_accs *r) {
    if (!r) return;
    for (size_t k = 0; k < r->n; k++) {
        if (r->v[k].a) tp_analysis_free(r->v[k].a);
        free(r->v[k].colls.v);
        tp_split_carry_free(r->v[k].gpu.carry);
    }
    free(r->v);
    free(r);
}

void tp_ranks_free(tp_ranks *r) {
    if (!r) return;
    for (size_t k = 0; k < r->n; k++) {
        free(r->rows[k].stage_ns);
        free(r->rows[k].step_number);
        free(r->rows[k].step_dur_ns);
        free(r->rows[k].colls.v);
    }
    free(r->rows);
    tp_free_strings(r->stage_names, r->nstage_names);
    free(r->spread);
    free(r);
}

/* ---- summaries ---- */

static int cmp_coll(const void *pa, const void *pb) {
    const tp_coll *a = pa, *b = pb;
    if (a->key != b->key) return (a->key > b->key) - (a->key < b->key);
    return (a->start_ns > b->start_ns) - (a->start_ns < b->start_ns);
}

static int cmp_i64_pair(const void *pa, const void *pb) {
    const int64_t *a = pa, *b = pb;
    return (a[0] > b[0]) - (a[0] < b[0]);
}

void tp_coll_sort(tp_coll_list *l) {
    if (l->n > 1) qsort(l->v, l->n, sizeof(*l->v), cmp_coll);
}

/* The rank's steps as (number, duration) pairs sorted by number. */
static int step_pairs(const tp_analysis *s, tp_rank_row *row) {
    size_t n = s->nsteps;
    int64_t *pairs = malloc((n ? n : 1) * 2 * sizeof(*pairs));
    row->step_number = malloc((n ? n : 1) * sizeof(int64_t));
    row->step_dur_ns = malloc((n ? n : 1) * sizeof(int64_t));
    if (!pairs || !row->step_number || !row->step_dur_ns) {
        free(pairs);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        pairs[2 * i] = s->steps[i].number;
        pairs[2 * i + 1] = s->steps[i].dur_ns;
    }
    if (n) qsort(pairs, n, 2 * sizeof(*pairs), cmp_i64_pair);
    for (size_t i = 0; i < n; i++) {
        row->step_number[i] = pairs[2 * i];
        row->step_dur_ns[i] = pairs[2 * i + 1];
    }
    row->nstep_numbers = n;
    free(pairs);
    return 0;
}

/* Compute, communication and idle (docs/DISTRIBUTED.md): from the GPU split on GPU traces;
 * on the CPU, communication is the time inside blocking collective ranges. */
static void time_split(const rank_acc *acc, tp_rank_row *row) {
    const tp_gpu_split *g = &acc->gpu;
    row->gpu = g->work_ns > 0;
    row->overlap_pct = g->comm_ns > 0 ? 100.0 * (double)g->overlap_ns / (double)g->comm_ns : -1;
    if (row->gpu) {
        row->compute_ns = g->compute_ns;
        row->communication_ns = g->comm_ns;
        row->idle_ns = g->idle_ns;
        return;
    }
    int64_t comm = 0, covered_to = INT64_MIN;
    /* colls are sorted by key, which for seq-keyed ranges is the order they ran in: nested
     * collectives (a collective built from others) start inside their parent and count once */
    for (size_t i = 0; i < acc->colls.n; i++) {
        const tp_coll *c = &acc->colls.v[i];
        if (!c->sync || c->end_ns <= covered_to) continue;
        comm += c->end_ns - (c->start_ns > covered_to ? c->start_ns : covered_to);
        covered_to = c->end_ns;
    }
    row->communication_ns = comm;
    row->compute_ns = row->steps_total_ns > comm ? row->steps_total_ns - comm : 0;
    row->idle_ns = 0;
}

/* The row of rank acc from s, the finished analysis of its models. */
static int summarise_from(const tp_analysis *s, const rank_acc *acc, tp_rank_row *row,
                          size_t nstages) {
    row->rank = acc->rank;
    row->steps = s->nsteps;
    row->steps_total_ns = s->steps_total_ns;
    row->step_mean_ns = s->nsteps ? s->steps_mean_ns : -1;
    row->step_p95_ns = s->nsteps ? s->steps_p95_ns : -1;
    row->stage_ns = calloc(nstages + 1, sizeof(*row->stage_ns));
    if (!row->stage_ns || step_pairs(s, row)) return -1;
    for (size_t st = 0; st < nstages; st++)
        row->stage_ns[st] = s->stages[st].total_ns;
    row->stage_ns[nstages] = s->other.total_ns;
    /* the rows own a sorted copy: the accumulators may still grow */
    size_t n = acc->colls.n;
    row->colls.v = malloc((n ? n : 1) * sizeof(tp_coll));
    if (!row->colls.v) return -1;
    if (n) memcpy(row->colls.v, acc->colls.v, n * sizeof(tp_coll)); /* none: v may be NULL */
    row->colls.n = row->colls.cap = n;
    tp_coll_sort(&row->colls);
    time_split(acc, row);
    return 0;
}

static int summarise(rank_acc *acc, tp_rank_row *row, size_t nstages) {
    tp_analysis_finish(acc->a);
    return summarise_from(acc->a, acc, row, nstages);
}

/* Steps every rank has, by number: the shortest and longest duration and who took longest. */
static int spread(tp_ranks *r) {
    const tp_rank_row *r0 = &r->rows[0];
    r->spread = malloc((r0->nstep_numbers ? r0->nstep_numbers : 1) * sizeof(*r->spread));
    if (!r->spread) return -1;
    size_t *pos = calloc(r->n, sizeof(*pos));
    if (!pos) return -1;
    for (size_t i = 0; i < r0->nstep_numbers; i++) {
        int64_t step = r0->step_number[i];
        tp_spread_row row = {step, r0->step_dur_ns[i], r0->step_dur_ns[i], r0->rank};
        size_t k = 1;
        for (; k < r->n; k++) {
            const tp_rank_row *rk = &r->rows[k];
            while (pos[k] < rk->nstep_numbers && rk->step_number[pos[k]] < step)
                pos[k]++;
            if (pos[k] == rk->nstep_numbers || rk->step_number[pos[k]] != step) break;
            int64_t d = rk->step_dur_ns[pos[k]];
            if (d < row.min_ns) row.min_ns = d;
            if (d > row.max_ns) row.max_ns = d, row.slowest_rank = rk->rank;
        }
        if (k == r->n) r->spread[r->nspread++] = row;
    }
    free(pos);
    return 0;
}

static int cmp_acc(const void *pa, const void *pb) {
    const rank_acc *a = pa, *b = pb;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* r's stage names (a's, then other) and room for nrows rows. */
static int alloc_ranks(const tp_analysis *a, tp_ranks *r, size_t nrows) {
    r->stage_names = calloc(a->nstages + 1, sizeof(char *));
    r->rows = calloc(nrows ? nrows : 1, sizeof(*r->rows));
    if (!r->stage_names || !r->rows) return -1;
    for (size_t st = 0; st <= a->nstages; st++) {
        const char *name = st < a->nstages ? a->stages[st].name : a->other.name;
        if (!(r->stage_names[st] = strdup(name))) return -1;
        r->nstage_names++;
    }
    return 0;
}

int tp_ranks_complete(tp_ranks *r) {
    assert(r->n >= 2);
    if (spread(r) || tp_ranks_align(r)) return -1;
    return tp_ranks_straggler(r);
}

int tp_ranks_attach(tp_analysis *a, tp_ranks *r) {
    if (tp_ranks_complete(r)) {
        tp_ranks_free(r);
        return -1;
    }
    tp_ranks_free(a->ranks);
    a->ranks = r;
    tp_recommend(a);
    return 0;
}

static int build(tp_analysis *a, tp_ranks *r) {
    struct tp_rank_accs *accs = a->priv->ranks;
    if (accs->n) qsort(accs->v, accs->n, sizeof(*accs->v), cmp_acc);
    if (alloc_ranks(a, r, accs->n)) return -1;
    for (size_t k = 0; k < accs->n; k++) {
        r->n++;
        if (summarise(&accs->v[k], &r->rows[k], a->nstages)) return -1;
    }
    return tp_ranks_complete(r);
}

/* TP_PER_RANK_SELF: the analysis itself as its rank's one row. */
static void finish_self(tp_analysis *a) {
    tp_ranks_free(a->rank_summary);
    a->rank_summary = NULL;
    struct tp_rank_accs *accs = a->priv->ranks;
    rank_acc none = {.rank = 0};
    tp_ranks *r = calloc(1, sizeof(*r));
    if (!r || alloc_ranks(a, r, 1) ||
        (r->n = 1,
         summarise_from(a, accs && accs->n ? &accs->v[0] : &none, &r->rows[0], a->nstages))) {
        tp_ranks_free(r);
        a->failed = 1;
        return;
    }
    a->rank_summary = r;
}

void tp_ranks_finish(tp_analysis *a) {
    tp_ranks_free(a->ranks);
    a->ranks = NULL;
    if (a->priv->per_rank == TP_PER_RANK_SELF) {
        finish_self(a);
        return;
    }
    struct tp_rank_accs *accs = a->priv->ranks;
    if (!accs || accs->n < 2) return;
    tp_ranks *r = calloc(1, sizeof(*r));
    if (!r || build(a, r)) {
        tp_ranks_free(r);
        a->failed = 1;
        return;
    }
    a->ranks = r;
}
