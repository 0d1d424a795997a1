/* gpu_window.c - which pending CUPTI records belong to a closing window (rules in convert.h).
 *
 * CUPTI delivers records late and out of order: API records when a buffer fills or is flushed,
 * kernels only once the GPU ran them, possibly after the window that launched them closed. So
 * records wait here, and each window takes its own by time and by correlation id. */
#include "gpu/convert.h"

#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

void tp_cupti_pending_init(tp_cupti_pending *p, size_t max) {
    memset(p, 0, sizeof(*p));
    p->max = max;
}

void tp_cupti_pending_free(tp_cupti_pending *p) {
    free(p->recs);
    memset(p, 0, sizeof(*p));
}

void tp_cupti_pending_add(tp_cupti_pending *p, const tp_cupti_rec *r) {
    if (p->n >= p->max || TP_GROW(p->recs, p->cap, p->n + 1)) {
        p->dropped++;
        return;
    }
    p->recs[p->n++] = *r;
}

/* The smallest correlation id among records other than external ids (UINT32_MAX when none). */
static uint32_t min_call_corr(const tp_cupti_pending *p) {
    uint32_t min = UINT32_MAX;
    for (size_t i = 0; i < p->n; i++)
        if (p->recs[i].kind != TP_CUPTI_EXTERNAL && p->recs[i].corr && p->recs[i].corr < min)
            min = p->recs[i].corr;
    return min;
}

/* Drops the external ids of calls older than every call still pending (CUPTI numbers calls in
 * order): their calls are gone. */
static void drop_old_external(tp_cupti_pending *p) {
    uint32_t min = min_call_corr(p);
    size_t kept = 0;
    for (size_t i = 0; i < p->n; i++)
        if (p->recs[i].kind != TP_CUPTI_EXTERNAL || p->recs[i].corr >= min)
            p->recs[kept++] = p->recs[i];
    p->n = kept;
}

void tp_cupti_pending_prune(tp_cupti_pending *p, tp_cupti_conv *c, int64_t before) {
    size_t kept = 0;
    for (size_t i = 0; i < p->n; i++) {
        const tp_cupti_rec *r = &p->recs[i];
        if (r->start >= before)
            p->recs[kept++] = *r;
        else if (r->kind == TP_CUPTI_MEMORY)
            tp_cupti_memory_apply(c, r);
    }
    p->n = kept;
    drop_old_external(p);
}

static int is_api(const tp_cupti_rec *r) {
    return r->kind == TP_CUPTI_RUNTIME || r->kind == TP_CUPTI_DRIVER;
}

static int is_gpu_work(const tp_cupti_rec *r) {
    return r->kind == TP_CUPTI_KERNEL || r->kind == TP_CUPTI_MEMCPY ||
           r->kind == TP_CUPTI_MEMCPY_P2P || r->kind == TP_CUPTI_MEMSET ||
           r->kind == TP_CUPTI_GRAPH;
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int has_corr(const uint32_t *set, size_t n, uint32_t corr) {
    return n && bsearch(&corr, set, n, sizeof(*set), cmp_u32) != NULL;
}

/* The sorted correlation ids of the records that pass keep(r, start, end); NULL when none. */
static uint32_t *corr_set(const tp_cupti_pending *p,
                          int (*keep)(const tp_cupti_rec *, int64_t, int64_t), int64_t start,
                          int64_t end, size_t *n) {
    uint32_t *set = NULL;
    size_t cap = 0;
    *n = 0;
    for (size_t i = 0; i < p->n; i++) {
        if (!keep(&p->recs[i], start, end)) continue;
        if (TP_GROW(set, cap, *n + 1)) break; /* a shorter set only makes windows less complete */
        set[(*n)++] = p->recs[i].corr;
    }
    if (*n) qsort(set, *n, sizeof(*set), cmp_u32);
    return set;
}

static int is_work(const tp_cupti_rec *r, int64_t start, int64_t end) {
    (void)start, (void)end;
    return is_gpu_work(r);
}

static int is_launch_in(const tp_cupti_rec *r, int64_t start, int64_t end) {
    return is_api(r) && r->start >= start && r->start < end;
}

size_t tp_cupti_pending_unfinished(tp_cupti_pending *p, int64_t start, int64_t end) {
    size_t nk, missing = 0;
    uint32_t *work = corr_set(p, is_work, 0, 0, &nk);
    for (size_t i = 0; i < p->n; i++) {
        const tp_cupti_rec *r = &p->recs[i];
        if (is_launch_in(r, start, end) &&
            tp_cupti_launches_work(r->kind == TP_CUPTI_DRIVER, r->u.api.cbid) &&
            !has_corr(work, nk, r->corr))
            missing++;
    }
    free(work);
    return missing;
}

/* Time order, so that memory totals move as they did; ties broken for a deterministic output. */
static int cmp_rec(const void *a, const void *b) {
    const tp_cupti_rec *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return (x->corr > y->corr) - (x->corr < y->corr);
}

static int is_runtime_call(const tp_cupti_rec *r, int64_t start, int64_t end) {
    (void)start, (void)end;
    return r->kind == TP_CUPTI_RUNTIME;
}

enum placement { DROP, KEEP, EMIT, APPLY };

/* The correlation ids of the window's launches and of every pending runtime call. */
typedef struct corr_sets {
    uint32_t *launches, *runtime;
    size_t nlaunches, nruntime;
} corr_sets;

static enum placement place(const tp_cupti_rec *r, const tp_window_info *w, const corr_sets *s) {
    if (is_gpu_work(r) && has_corr(s->launches, s->nlaunches, r->corr)) return EMIT;
    /* the driver call inside a runtime call: the runtime's record stands for both */
    if (r->kind == TP_CUPTI_DRIVER && has_corr(s->runtime, s->nruntime, r->corr)) return DROP;
    if (r->start >= w->end_ns) return KEEP;
    if (r->start >= w->start_ns) return EMIT;
    return r->kind == TP_CUPTI_MEMORY ? APPLY : DROP;
}

typedef struct ext_pair {
    uint32_t corr;
    uint64_t ext;
} ext_pair;

static int cmp_ext(const void *a, const void *b) {
    uint32_t x = ((const ext_pair *)a)->corr, y = ((const ext_pair *)b)->corr;
    return (x > y) - (x < y);
}

/* The external ids pending, by correlation id (NULL when none, or out of memory: the events
 * then lack the arg, nothing else). They sort after every call (start INT64_MAX). */
static ext_pair *external_ids(const tp_cupti_pending *p, size_t *n) {
    size_t first = p->n;
    while (first > 0 && p->recs[first - 1].kind == TP_CUPTI_EXTERNAL)
        first--;
    *n = p->n - first;
    ext_pair *pairs = *n ? malloc(*n * sizeof(*pairs)) : NULL;
    if (!pairs) return *n = 0, NULL;
    for (size_t i = 0; i < *n; i++)
        pairs[i] = (ext_pair){p->recs[first + i].corr, p->recs[first + i].ext};
    qsort(pairs, *n, sizeof(*pairs), cmp_ext);
    return pairs;
}

/* r with the external id of its correlation id, for API records and GPU work. */
static tp_cupti_rec with_external(const tp_cupti_rec *r, const ext_pair *pairs, size_t n) {
    tp_cupti_rec out = *r;
    ext_pair key = {.corr = r->corr};
    const ext_pair *hit = n && r->corr && (is_api(r) || is_gpu_work(r))
                              ? bsearch(&key, pairs, n, sizeof(*pairs), cmp_ext)
                              : NULL;
    if (hit) out.ext = hit->ext;
    return out;
}

long tp_cupti_pending_take(tp_cupti_pending *p, tp_cupti_conv *c, tp_model *m,
                           const tp_window_info *w) {
    if (p->n) qsort(p->recs, p->n, sizeof(*p->recs), cmp_rec);
    size_t npairs;
    ext_pair *pairs = external_ids(p, &npairs);
    corr_sets sets;
    sets.launches = corr_set(p, is_launch_in, w->start_ns, w->end_ns, &sets.nlaunches);
    sets.runtime = corr_set(p, is_runtime_call, 0, 0, &sets.nruntime);
    size_t kept = 0;
    long appended = 0;
    int failed = 0;
    tp_cupti_out out;
    tp_cupti_out_init(&out, m);
    for (size_t i = 0; i < p->n; i++) {
        const tp_cupti_rec *r = &p->recs[i];
        if (r->kind == TP_CUPTI_EXTERNAL) { /* kept below while a call of theirs may come */
            p->recs[kept++] = *r;
            continue;
        }
        switch (place(r, w, &sets)) {
        case KEEP:
            p->recs[kept++] = *r;
            break;
        case EMIT: {
            tp_cupti_rec e = with_external(r, pairs, npairs);
            if (!failed && tp_cupti_emit(c, &out, &e, w->model_offset_ns) == 0)
                appended++;
            else
                failed = 1;
            break;
        }
        case APPLY:
            tp_cupti_memory_apply(c, r);
            break;
        case DROP:
            break;
        }
    }
    p->n = kept;
    drop_old_external(p);
    free(sets.launches);
    free(sets.runtime);
    free(pairs);
    return failed ? -1 : appended;
}
