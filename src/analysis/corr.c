/* corr.c - correlation ids: the GPU work each names, and the host range that launched it.
 *
 * A sorted table rather than a hash: it is built once per model by a radix sort of the work's
 * ids, and host ranges, visited thread by thread in time order, meet their ids in nearly
 * increasing order, so each search starts where the last one ended (internal.h). */
#include "analysis/internal.h"

#include "util/vec.h"

#include <stdlib.h>

int tp_corr_build(tp_corr_table *t, tp_order *o, tp_keyed *recs, size_t n, tp_arena *ar) {
    *t = (tp_corr_table){.ids = recs};
    if (n == 0) return 0;
    if (tp_sort_keyed(&o->spare, recs, n)) return -1;
    size_t distinct = 1;
    for (size_t i = 1; i < n; i++)
        distinct += recs[i].key != recs[i - 1].key;
    if (!(t->use = tp_arena_calloc(ar, distinct, sizeof(*t->use)))) return -1;
    /* Equal ids collapse in place (the write position never passes the read position); the
     * durations, each >= 0, sum with saturation. */
    for (size_t i = 0; i < n; i++) {
        tp_keyed r = recs[i];
        if (t->n == 0 || r.key != recs[t->n - 1].key) {
            recs[t->n] = (tp_keyed){r.key, 0};
            t->use[t->n++] = (tp_corr_use){
                .launch = UINT32_MAX, .op = UINT32_MAX, .shaped = UINT32_MAX, .py = TP_STACK_NONE};
        }
        tp_keyed *id = &recs[t->n - 1];
        id->val = (uint64_t)tp_add_sat((int64_t)id->val, (int64_t)r.val);
        t->use[t->n - 1].count++;
    }
    return 0;
}

/* The first position in [lo, hi) whose id is at least corr (hi when none). */
static size_t lower_bound(const tp_keyed *ids, size_t lo, size_t hi, uint64_t corr) {
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ids[mid].key < corr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t tp_corr_find(const tp_corr_table *t, uint64_t corr, size_t *hint) {
    const tp_keyed *ids = t->ids;
    if (t->n == 0) return SIZE_MAX;
    size_t h = *hint < t->n ? *hint : t->n - 1, lo = 0, hi = t->n, step = 1;
    /* Gallop away from h in steps of 1, 2, 4 ... to bracket corr, then bisect: the cost grows
     * with the log of the distance moved, not of the table. */
    if (ids[h].key < corr) {
        for (lo = h + 1; lo - 1 + step < t->n; step *= 2) {
            size_t p = lo - 1 + step;
            if (ids[p].key >= corr) {
                hi = p;
                break;
            }
            lo = p + 1;
        }
    } else {
        for (hi = h; hi >= step; step *= 2) {
            size_t p = hi - step;
            if (ids[p].key < corr) {
                lo = p + 1;
                break;
            }
            hi = p;
        }
    }
    size_t pos = lower_bound(ids, lo, hi, corr);
    *hint = pos;
    return pos < t->n && ids[pos].key == corr ? pos : SIZE_MAX;
}

/* The ids the launches with no op around them on their thread name (key: the External id; val:
 * the launch's position in the table), into *want, sorted; their number, or -1 when out of
 * memory. Kineto writes a launch made outside any op with its own correlation id as its
 * External id: it names no op. */
static ptrdiff_t orphan_launches(tp_walk *s, tp_keyed **want) {
    size_t n = 0, cap = 0;
    for (size_t k = 0; k < s->corr.n; k++) {
        const tp_corr_use *u = &s->corr.use[k];
        if (u->op != UINT32_MAX || u->launch == UINT32_MAX) continue;
        uint32_t id = s->m->events[u->launch].ext;
        if (!id || id == s->corr.ids[k].key) continue;
        if (TP_GROW(*want, cap, n + 1)) return -1;
        (*want)[n++] = (tp_keyed){id, k};
    }
    return n && tp_sort_keyed(&s->order.spare, *want, n) ? -1 : (ptrdiff_t)n;
}

/* A launch outside every op on its thread takes the op its "External id" names: CUPTI tied the
 * launch to the op that pushed that id (Kineto's link), wherever the op ran. Such launches are
 * rare (CUPTI's stack of ids is per thread), so the ops are looked up for them alone, in one
 * pass over the model, rather than noted during the walks: every op of a Kineto trace has an
 * id, and noting them all cost the whole analysis 4% of its time. */
static int link_by_external_id(tp_walk *s) {
    tp_keyed *want = NULL;
    ptrdiff_t n = orphan_launches(s, &want);
    for (size_t i = 0; n > 0 && i < s->m->nevents; i++) {
        const tp_event *e = &s->m->events[i];
        if (!e->ext || !tp_walk_is_op(s, e)) continue;
        uint32_t stat = (uint32_t)(tp_walk_name(s, e->name) - s->stats);
        for (size_t k = lower_bound(want, 0, (size_t)n, e->ext); k < (size_t)n; k++) {
            if (want[k].key != e->ext) break;
            tp_corr_use *u = &s->corr.use[want[k].val];
            u->op = stat;
            u->shaped = tp_shapes_find(s, e);
        }
    }
    free(want);
    return n < 0 ? -1 : 0;
}

int tp_corr_charge(tp_walk *s) {
    if (link_by_external_id(s)) return -1;
    for (size_t k = 0; k < s->corr.n; k++) {
        const tp_corr_use *u = &s->corr.use[k];
        if (u->op == UINT32_MAX) continue;
        tp_name_stats *ns = &s->stats[u->op];
        int64_t gpu_ns = (int64_t)s->corr.ids[k].val;
        ns->gpu_ns = tp_add_sat(ns->gpu_ns, gpu_ns);
        ns->kernels += u->count;
        if (u->shaped != UINT32_MAX) {
            tp_name_stats *pair = &s->shapes.stats[u->shaped];
            pair->gpu_ns = tp_add_sat(pair->gpu_ns, gpu_ns);
            pair->kernels += u->count;
        }
        s->a->gpu_attributed_ns = tp_add_sat(s->a->gpu_attributed_ns, gpu_ns);
    }
    return 0;
}
