/* ranks_report.c - several ranks rendered: the per-rank table, the spread of step times across
 * ranks and the straggler with its evidence (docs/DISTRIBUTED.md). JSON times are integer
 * nanoseconds here, as the seam with the HTML report fixed them (docs/ANALYZE_JSON.md). */
#include "report/ranks.h"

#include "analysis/ranks.h"
#include "report/format.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void i64_opt(tp_jw *w, const char *key, int64_t v) {
    if (v < 0)
        tp_jw_null(w, key);
    else
        tp_jw_i64(w, key, v);
}

/* The figures a per-rank row and a rank_summary share, in the open object. */
static void rank_figures(tp_jw *w, const tp_ranks *r, const tp_rank_row *row) {
    tp_jw_i64(w, "rank", row->rank);
    tp_jw_u64(w, "steps", row->steps);
    i64_opt(w, "step_mean_ns", row->step_mean_ns);
    i64_opt(w, "step_p95_ns", row->step_p95_ns);
    tp_jw_object(w, "stages_ns");
    for (size_t st = 0; st < r->nstage_names; st++)
        tp_jw_i64(w, r->stage_names[st], row->stage_ns[st]);
    tp_jw_end_object(w);
    tp_jw_i64(w, "compute_ns", row->compute_ns);
    tp_jw_i64(w, "communication_ns", row->communication_ns);
    tp_jw_i64(w, "idle_ns", row->idle_ns);
    tp_jw_double_opt(w, "overlap_pct", row->overlap_pct);
}

static void rank_row_json(tp_jw *w, const tp_ranks *r, const tp_rank_row *row) {
    tp_jw_object(w, NULL);
    rank_figures(w, r, row);
    /* per step, as the text's stage table and the report's chart show it; null without steps */
    tp_jw_object(w, "stages_per_step_ns");
    for (size_t st = 0; st < r->nstage_names; st++)
        i64_opt(w, r->stage_names[st], row->steps ? row->stage_ns[st] / (int64_t)row->steps : -1);
    tp_jw_end_object(w);
    tp_jw_u64(w, "collectives", row->colls.n);
    tp_jw_i64(w, "clock_offset_ns", row->clock_offset_ns);
    tp_jw_i64(w, "collective_wait_ns", row->coll_wait_ns);
    tp_jw_end_object(w);
}

static void straggler_json(tp_jw *w, const tp_ranks *r) {
    if (!r->has_straggler) {
        tp_jw_null(w, "straggler");
        return;
    }
    const tp_straggler *s = &r->straggler;
    tp_jw_object(w, "straggler");
    tp_jw_i64(w, "rank", s->rank);
    tp_jw_double(w, "last_share", s->last_share);
    tp_jw_i64(w, "mean_late_ns", s->mean_late_ns);
    tp_jw_double(w, "wait_share", s->wait_share);
    tp_jw_u64(w, "collectives", s->collectives);
    tp_jw_str(w, "cause", s->cause);
    tp_jw_str(w, "message", s->message);
    tp_jw_end_object(w);
}

/* An index of a row or spread row with the figure it is chosen by. */
typedef struct ranked {
    int64_t v;
    size_t i;
} ranked;

static int by_value(const void *x, const void *y) {
    const ranked *a = x, *b = y;
    if (a->v != b->v) return (a->v > b->v) - (a->v < b->v);
    return (a->i > b->i) - (a->i < b->i);
}

static int by_index(const void *x, const void *y) {
    const ranked *a = x, *b = y;
    return (a->i > b->i) - (a->i < b->i);
}

/* Of v[0..n), sorted by value, the `low` first and `high` last kept in index order at v[0..);
 * their number. */
static size_t keep_ends(ranked *v, size_t n, size_t low, size_t high) {
    qsort(v, n, sizeof(*v), by_value);
    if (low + high < n) {
        memmove(v + low, v + n - high, high * sizeof(*v));
        n = low + high;
    }
    qsort(v, n, sizeof(*v), by_index);
    return n;
}

/* The per-rank rows, all or (max_list) the fastest and slowest by mean step; then, when cut,
 * "per_rank_cut": what was kept and the mean steps of all ranks (those with steps). */
static void per_rank(tp_jw *w, const tp_ranks *r, size_t max) {
    ranked *v = max && r->n > max ? malloc(r->n * sizeof(*v)) : NULL;
    if (!v) { /* every row: no bound, or out of memory (the page is then capped at last) */
        tp_jw_array(w, "per_rank");
        for (size_t k = 0; k < r->n; k++)
            rank_row_json(w, r, &r->rows[k]);
        tp_jw_end_array(w);
        return;
    }
    size_t stepped = 0; /* ranks with steps: their means sorted, after those without */
    for (size_t k = 0; k < r->n; k++) {
        v[k] = (ranked){r->rows[k].step_mean_ns, k};
        stepped += r->rows[k].step_mean_ns >= 0;
    }
    qsort(v, r->n, sizeof(*v), by_value);
    int64_t lo = stepped ? v[r->n - stepped].v : -1, hi = stepped ? v[r->n - 1].v : -1;
    int64_t mid = stepped ? v[r->n - stepped + stepped / 2].v : -1;
    size_t fastest = max / 2, n = keep_ends(v, r->n, fastest, max - fastest);
    tp_jw_array(w, "per_rank");
    for (size_t k = 0; k < n; k++)
        rank_row_json(w, r, &r->rows[v[k].i]);
    tp_jw_end_array(w);
    tp_jw_object(w, "per_rank_cut");
    tp_jw_u64(w, "shown", n);
    tp_jw_u64(w, "fastest", fastest);
    tp_jw_u64(w, "slowest", n - fastest);
    tp_jw_u64(w, "with_steps", stepped);
    i64_opt(w, "step_mean_min_ns", lo);
    i64_opt(w, "step_mean_median_ns", mid);
    i64_opt(w, "step_mean_max_ns", hi);
    tp_jw_end_object(w);
    free(v);
}

static void spread_row(tp_jw *w, const tp_spread_row *s) {
    tp_jw_object(w, NULL);
    tp_jw_i64(w, "step", s->step);
    tp_jw_i64(w, "min_ns", s->min_ns);
    tp_jw_i64(w, "max_ns", s->max_ns);
    tp_jw_i64(w, "slowest_rank", s->slowest_rank);
    tp_jw_end_object(w);
}

/* Every step's spread, or (max_list) those of the widest spread, in step order. */
static void step_spread(tp_jw *w, const tp_ranks *r, size_t max) {
    ranked *v = max && r->nspread > max ? malloc(r->nspread * sizeof(*v)) : NULL;
    size_t n = r->nspread;
    if (v) {
        for (size_t i = 0; i < r->nspread; i++)
            v[i] = (ranked){r->spread[i].max_ns - r->spread[i].min_ns, i};
        n = keep_ends(v, r->nspread, 0, max);
    }
    tp_jw_array(w, "step_spread");
    for (size_t i = 0; i < n; i++)
        spread_row(w, &r->spread[v ? v[i].i : i]);
    tp_jw_end_array(w);
    free(v);
}

void tp_report_ranks_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    const tp_ranks *r = a->ranks;
    if (!r) return;
    size_t max = o ? o->max_list : 0;
    tp_jw_object(w, "ranks");
    tp_jw_u64(w, "count", r->n);
    per_rank(w, r, max);
    step_spread(w, r, max);
    straggler_json(w, r);
    tp_jw_end_object(w);
}

/* One collective as [seq, start_ns, end_ns, sync, keyed, "name hash"] (compact: thousands). */
static void coll_json(tp_jw *w, const tp_coll *c) {
    char hash[17];
    snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)c->name_hash);
    tp_jw_array(w, NULL);
    tp_jw_u64(w, NULL, c->key);
    tp_jw_i64(w, NULL, c->start_ns);
    tp_jw_i64(w, NULL, c->end_ns);
    tp_jw_i64(w, NULL, c->sync);
    tp_jw_i64(w, NULL, c->keyed);
    tp_jw_str(w, NULL, hash);
    tp_jw_end_array(w);
}

void tp_report_rank_summary_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    const tp_ranks *r = a->rank_summary;
    if (!r) return;
    assert(r->n == 1);
    const tp_rank_row *row = &r->rows[0];
    tp_jw_object(w, "rank_summary");
    rank_figures(w, r, row);
    tp_jw_i64(w, "steps_total_ns", row->steps_total_ns);
    tp_jw_bool(w, "gpu", row->gpu);
    tp_jw_array(w, "step_durations_ns");
    for (size_t i = 0; i < tp_report_list(o, row->nstep_numbers); i++) {
        tp_jw_array(w, NULL);
        tp_jw_i64(w, NULL, row->step_number[i]);
        tp_jw_i64(w, NULL, row->step_dur_ns[i]);
        tp_jw_end_array(w);
    }
    tp_jw_end_array(w);
    size_t first =
        row->colls.n > TP_SUMMARY_COLLECTIVES ? row->colls.n - TP_SUMMARY_COLLECTIVES : 0;
    tp_jw_u64(w, "collectives_total", row->colls.n);
    tp_jw_array(w, "collectives");
    for (size_t i = first; i < row->colls.n; i++)
        coll_json(w, &row->colls.v[i]);
    tp_jw_end_array(w);
    tp_jw_end_object(w);
}

static void rank_table(tp_doc *d, const tp_ranks *r) {
    static const char *const head[] = {"rank", "steps",   "mean",
                                       "p95",  "compute", "communication",
                                       "idle", "overlap", "collective wait"};
    static const unsigned flags[] = {TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT,
                                     TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT,
                                     TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
    tp_doc_table(d, 9, head, flags);
    for (size_t k = 0; k < r->n; k++) {
        const tp_rank_row *row = &r->rows[k];
        tp_doc_cell(d, "%lld", (long long)row->rank);
        tp_doc_cell(d, "%zu", row->steps);
        tp_doc_cell(d, "%s", row->steps ? tp_fmt_dur(row->step_mean_ns).s : "n/a");
        tp_doc_cell(d, "%s", row->steps ? tp_fmt_dur(row->step_p95_ns).s : "n/a");
        tp_doc_cell(d, "%s", tp_fmt_dur(row->compute_ns).s);
        tp_doc_cell(d, "%s", tp_fmt_dur(row->communication_ns).s);
        tp_doc_cell(d, "%s", row->gpu ? tp_fmt_dur(row->idle_ns).s : "n/a");
        tp_doc_cell(d, "%s", tp_fmt_pct(row->overlap_pct).s);
        tp_doc_cell(d, "%s", r->matched ? tp_fmt_dur(row->coll_wait_ns).s : "n/a");
    }
}

/* Each stage's time per step on each rank: where a slow rank spends its extra time. */
static void stage_table(tp_doc *d, const tp_ranks *r) {
    const char *head[1 + 16] = {"rank"};
    unsigned flags[1 + 16] = {TP_COL_RIGHT};
    size_t ncols = 1 + (r->nstage_names < 16 ? r->nstage_names : 16);
    for (size_t c = 1; c < ncols; c++) {
        head[c] = r->stage_names[c - 1];
        flags[c] = TP_COL_RIGHT;
    }
    tp_doc_line(d, "stage time per step:");
    tp_doc_table(d, ncols, head, flags);
    for (size_t k = 0; k < r->n; k++) {
        const tp_rank_row *row = &r->rows[k];
        tp_doc_cell(d, "%lld", (long long)row->rank);
        for (size_t c = 1; c < ncols; c++)
            tp_doc_cell(d, "%s",
                        row->steps ? tp_fmt_dur(row->stage_ns[c - 1] / (int64_t)row->steps).s
                                   : "n/a");
    }
}

/* The step whose time differs most across ranks. */
static void widest_spread(tp_doc *d, const tp_ranks *r) {
    if (!r->nspread) {
        tp_doc_line(d, "step spread: n/a (no step number is on every rank)");
        return;
    }
    const tp_spread_row *w = &r->spread[0];
    int64_t sum = 0;
    for (size_t i = 0; i < r->nspread; i++) {
        const tp_spread_row *s = &r->spread[i];
        sum += s->max_ns - s->min_ns;
        if (s->max_ns - s->min_ns > w->max_ns - w->min_ns) w = s;
    }
    tp_doc_line(d,
                "step spread across ranks (longest - shortest): mean %s over %zu steps; widest "
                "step %lld: %s to %s, slowest rank %lld",
                tp_fmt_dur(sum / (int64_t)r->nspread).s, r->nspread, (long long)w->step,
                tp_fmt_dur(w->min_ns).s, tp_fmt_dur(w->max_ns).s, (long long)w->slowest_rank);
}

void tp_report_ranks_text(tp_doc *d, const tp_analysis *a) {
    const tp_ranks *r = a->ranks;
    if (!r) return;
    tp_doc_heading(d, "Ranks (%zu)", r->n);
    rank_table(d, r);
    stage_table(d, r);
    widest_spread(d, r);
    if (r->has_straggler)
        tp_doc_line(d, "straggler: %s", r->straggler.message);
    else if (r->matched)
        tp_doc_line(d,
                    "straggler: none (%zu collectives matched on every rank; no rank arrives "
                    "last at most of them while the others wait)",
                    r->matched);
    else
        tp_doc_line(d, "straggler: n/a (no collective found on every rank)");
}
