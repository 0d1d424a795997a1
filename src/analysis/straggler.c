/* straggler.c - the rank the others wait for, from the collectives every rank took part in, and
 * the clock offsets between ranks from the ends of blocking collectives (docs/DISTRIBUTED.md).
 *
 * A collective cannot finish before its last rank arrives, so the rank arriving last (the latest
 * start) holds the others up: they wait from their own arrival to its. The straggler is the rank
 * the others wait for most, named only when more than half of all their waiting at the matched
 * collectives is for it and that waiting is at least TP_STRAGGLER_WAIT_SHARE of their step
 * time, so ranks that take turns by chance, or arrive within a hair of each other, name none. Its
 * likely cause is the stage in which it spends most more time per step than the other ranks'
 * median, or its GPU compute when that exceeds more. Arrivals are compared once the ranks'
 * collectives are on one clock (tp_ranks_align, with the offsets `tprof merge` uses). */
#include "analysis/internal.h"
#include "analysis/ranks.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TP_STRAGGLER_WAIT_SHARE 0.02

/* The collective of rank list l with this key (l sorted by key), or NULL. */
static const tp_coll *find_key(const tp_coll_list *l, uint64_t key) {
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l->v[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < l->n && l->v[lo].key == key ? &l->v[lo] : NULL;
}

/* Whether two ranks' collectives are the same one: same key, and the same name when both
 * know theirs. */
static int same(const tp_coll *a, const tp_coll *b) {
    return b && (!a->name_hash || !b->name_hash || a->name_hash == b->name_hash);
}

/* Fills starts[k] with each rank's start of rank 0's i-th collective; 0 when some rank lacks it
 * (or holds it twice: a key repeated in rank 0's list is matched once). */
static int starts_of(const tp_ranks *r, size_t i, int64_t *starts) {
    const tp_coll *c0 = &r->rows[0].colls.v[i];
    if (i > 0 && r->rows[0].colls.v[i - 1].key == c0->key) return 0;
    starts[0] = c0->start_ns;
    for (size_t k = 1; k < r->n; k++) {
        const tp_coll *ck = find_key(&r->rows[k].colls, c0->key);
        if (!same(c0, ck)) return 0;
        starts[k] = ck->start_ns;
    }
    return 1;
}

static size_t latest(const int64_t *v, size_t n) {
    size_t best = 0;
    for (size_t k = 1; k < n; k++)
        if (v[k] > v[best]) best = k;
    return best;
}

/* The median of v[0..n) without v[skip], using scratch (n - 1 values). */
static int64_t median_without(const int64_t *v, size_t n, size_t skip, int64_t *scratch) {
    size_t m = 0;
    for (size_t k = 0; k < n; k++)
        if (k != skip) scratch[m++] = v[k];
    tp_sort_i64(scratch, m);
    return tp_percentile(scratch, m, 50);
}

/* The stage (index into stage_names) in which rank s exceeds the others' median per step most;
 * *excess_ns gets that excess (per step). */
static size_t worst_stage(const tp_ranks *r, size_t s, int64_t *scratch, int64_t *excess_ns) {
    size_t best = 0;
    *excess_ns = INT64_MIN;
    int64_t *mine = scratch + r->n;
    for (size_t st = 0; st < r->nstage_names; st++) {
        for (size_t k = 0; k < r->n; k++) {
            const tp_rank_row *row = &r->rows[k];
            mine[k] = row->steps ? row->stage_ns[st] / (int64_t)row->steps : 0;
        }
        int64_t ex = mine[s] - median_without(mine, r->n, s, scratch);
        if (ex > *excess_ns) *excess_ns = ex, best = st;
    }
    return best;
}

/* The GPU compute per step of rank s above the others' median (INT64_MIN without a GPU). */
static int64_t compute_excess(const tp_ranks *r, size_t s, int64_t *scratch) {
    if (!r->rows[s].gpu || !r->rows[s].steps) return INT64_MIN;
    int64_t *mine = scratch + r->n;
    for (size_t k = 0; k < r->n; k++)
        mine[k] = r->rows[k].steps ? r->rows[k].compute_ns / (int64_t)r->rows[k].steps : 0;
    return mine[s] - median_without(mine, r->n, s, scratch);
}

static void describe(tp_ranks *r, size_t s, int64_t *scratch) {
    tp_straggler *st = &r->straggler;
    int64_t stage_ex, dev_ex = compute_excess(r, s, scratch);
    size_t stage = worst_stage(r, s, scratch, &stage_ex);
    const char *name = r->stage_names[stage];
    int n = snprintf(st->message, sizeof(st->message),
                     "rank %lld arrives last at %.0f%% of %zu collectives, %.1f ms late on "
                     "average; the others wait %.0f%% of their step time for it",
                     (long long)st->rank, 100.0 * st->last_share, st->collectives,
                     (double)st->mean_late_ns / 1e6, 100.0 * st->wait_share);
    size_t used = n > 0 && (size_t)n < sizeof(st->message) ? (size_t)n : sizeof(st->message) - 1;
    char *rest = st->message + used;
    size_t left = sizeof(st->message) - used;
    if (dev_ex > 0 && dev_ex >= stage_ex) {
        st->cause = "device";
        snprintf(rest, left,
                 ". Its GPU computes %.1f ms more per step than the others: check "
                 "that device (clocks, throttling, other processes, a slower model)",
                 (double)dev_ex / 1e6);
    } else if (stage_ex > 0 && strcmp(name, "dataloader") == 0) {
        st->cause = "data_loading";
        snprintf(rest, left,
                 ". Its dataloader stage takes %.1f ms more per step than the "
                 "others': give its data loading more workers, or check its storage",
                 (double)stage_ex / 1e6);
    } else if (stage_ex > 0) {
        st->cause = "stage";
        snprintf(rest, left,
                 ". Its %s stage takes %.1f ms more per step than the others': look "
                 "at that stage on its timeline (tprof merge)",
                 name, (double)stage_ex / 1e6);
    } else {
        st->cause = "unknown";
        snprintf(rest, left,
                 ". No stage of its own explains it: look at its timeline around "
                 "the collectives (tprof merge)");
    }
}

/* Second pass for the straggler s: how late it is and how long the others wait for it. */
static void measure(tp_ranks *r, size_t s, int64_t *starts, int64_t *scratch) {
    int64_t late = 0, wait = 0, others_steps = 0;
    size_t m = 0;
    for (size_t i = 0; i < r->rows[0].colls.n; i++) {
        if (!starts_of(r, i, starts)) continue;
        m++;
        late = tp_add_sat(late, starts[s] - median_without(starts, r->n, s, scratch));
        for (size_t k = 0; k < r->n; k++)
            if (k != s && starts[s] > starts[k]) wait = tp_add_sat(wait, starts[s] - starts[k]);
    }
    for (size_t k = 0; k < r->n; k++)
        if (k != s) others_steps = tp_add_sat(others_steps, r->rows[k].steps_total_ns);
    r->straggler.mean_late_ns = tp_mean_ns(late, m);
    r->straggler.wait_share = others_steps > 0 ? (double)wait / (double)others_steps : 0;
}

/* The waiting the last rank of one collective causes: the others' time from their arrival to
 * its arrival, each also added to that rank's own wait (its row's coll_wait_ns). */
static int64_t caused_wait(tp_ranks *r, const int64_t *starts, size_t last) {
    int64_t w = 0;
    for (size_t k = 0; k < r->n; k++) {
        w = tp_add_sat(w, starts[last] - starts[k]);
        r->rows[k].coll_wait_ns = tp_add_sat(r->rows[k].coll_wait_ns, starts[last] - starts[k]);
    }
    return w;
}

int tp_ranks_straggler(tp_ranks *r) {
    r->has_straggler = 0;
    r->matched = 0;
    assert(r->n >= 2);
    size_t *last = calloc(r->n, sizeof(*last));
    int64_t *caused = calloc(r->n, sizeof(*caused));
    int64_t *starts = malloc(r->n * sizeof(*starts));
    int64_t *scratch = malloc(2 * r->n * sizeof(*scratch));
    int rc = last && caused && starts && scratch ? 0 : -1;
    int64_t all_caused = 0;
    for (size_t k = 0; k < r->n; k++)
        r->rows[k].coll_wait_ns = 0;
    for (size_t i = 0; rc == 0 && i < r->rows[0].colls.n; i++) {
        if (!starts_of(r, i, starts)) continue;
        r->matched++;
        size_t k = latest(starts, r->n);
        int64_t w = caused_wait(r, starts, k);
        last[k]++;
        caused[k] = tp_add_sat(caused[k], w);
        all_caused = tp_add_sat(all_caused, w);
    }
    size_t s = 0;
    for (size_t k = 1; rc == 0 && k < r->n; k++)
        if (caused[k] > caused[s]) s = k;
    if (rc == 0 && r->matched) {
        r->straggler = (tp_straggler){.rank = r->rows[s].rank,
                                      .collectives = r->matched,
                                      .last_share = (double)last[s] / (double)r->matched};
        measure(r, s, starts, scratch);
        /* more than half of all the waiting is for it, and that waiting matters */
        r->has_straggler = caused[s] > all_caused - caused[s] &&
                           r->straggler.wait_share >= TP_STRAGGLER_WAIT_SHARE;
        if (r->has_straggler) describe(r, s, scratch);
    }
    free(last), free(caused), free(starts), free(scratch);
    return rc;
}

/* The offset estimate for one rank against rank 0 from the matched blocking collectives
 * (docs/DISTRIBUTED.md): the median of the differences of their ends, as they end at one
 * instant on every rank. A rank descheduled as a collective ends (a loaded CPU, a Python thread
 * waiting for the GIL) ends it late, so that estimate is checked against what the arrivals allow:
 * every rank arrives before any rank leaves, so the offset lies within [max(s0 - ek),
 * min(e0 - sk)]; a median outside that interval gives way to the interval's middle. */
typedef struct offset_est {
    int64_t *diffs;
    size_t n;
    int64_t lo, hi;
} offset_est;

static void note_pair(offset_est *o, const tp_coll *c0, const tp_coll *ck) {
    o->diffs[o->n++] = c0->end_ns - ck->end_ns;
    int64_t lo = c0->start_ns - ck->end_ns, hi = c0->end_ns - ck->start_ns;
    if (lo > o->lo) o->lo = lo;
    if (hi < o->hi) o->hi = hi;
}

static int64_t estimate(offset_est *o) {
    tp_sort_i64(o->diffs, o->n);
    int64_t median = tp_percentile(o->diffs, o->n, 50);
    if (o->lo > o->hi || (median >= o->lo && median <= o->hi)) return median;
    return o->lo + (o->hi - o->lo) / 2;
}

int tp_ranks_offsets(const tp_coll_list *lists, size_t n, int64_t *offsets, size_t *matched) {
    const tp_coll_list *l0 = &lists[0];
    offset_est o = {.diffs = malloc((l0->n ? l0->n : 1) * sizeof(int64_t))};
    if (!o.diffs) return -1;
    offsets[0] = 0;
    matched[0] = l0->n;
    for (size_t k = 1; k < n; k++) {
        o.n = 0;
        o.lo = INT64_MIN;
        o.hi = INT64_MAX;
        for (size_t i = 0; i < l0->n; i++) {
            const tp_coll *c0 = &l0->v[i];
            const tp_coll *ck = find_key(&lists[k], c0->key);
            if (c0->sync && same(c0, ck) && ck->sync) note_pair(&o, c0, ck);
        }
        offsets[k] = o.n ? estimate(&o) : 0;
        matched[k] = o.n;
    }
    free(o.diffs);
    return 0;
}

int tp_ranks_align(tp_ranks *r) {
    tp_coll_list *lists = malloc(r->n * sizeof(*lists));
    int64_t *offsets = malloc(r->n * sizeof(*offsets));
    size_t *matched = malloc(r->n * sizeof(*matched));
    int rc = lists && offsets && matched ? 0 : -1;
    for (size_t k = 0; rc == 0 && k < r->n; k++)
        lists[k] = r->rows[k].colls; /* shallow: the estimate only reads them */
    if (rc == 0) rc = tp_ranks_offsets(lists, r->n, offsets, matched);
    for (size_t k = 0; rc == 0 && k < r->n; k++) {
        tp_rank_row *row = &r->rows[k];
        row->clock_offset_ns = k ? offsets[k] : 0;
        row->offset_collectives = k ? matched[k] : 0;
        /* a uniform shift keeps the list's order (by key, then start) */
        for (size_t i = 0; i < row->colls.n; i++) {
            row->colls.v[i].start_ns += row->clock_offset_ns;
            row->colls.v[i].end_ns += row->clock_offset_ns;
        }
    }
    free(lists), free(offsets), free(matched);
    return rc;
}
