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

/* Whether r is a launch in [start, end) none of whose work is in `work` (nk ids, sorted). */
static int awaits_work(const tp_cupti_rec *r, int64_t start, int64_t end, const uint32_t *work,
                       size_t nk) {
    return is_launch_in(r, start, end) &&
           tp_cupti_launches_work(r->kind == TP_CUPTI_DRIVER, r->u.api.cbid) &&
           !has_corr(work, nk, r->corr);
}

size_t tp_cupti_pending_unfinished(tp_cupti_pending *p, int64_t start, int64_t end) {
    size_t nk, missing = 0;
    uint32_t *work = corr_set(p, is_work, 0, 0, &nk);
    for (size_t i = 0; i < p->n; i++)
        missing += awaits_work(&p->recs[i], start, end, work, nk);
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

static int cmp_launch(const void *a, const void *b) {
    uint32_t x = ((const struct tp_cupti_launch *)a)->corr;
    uint32_t y = ((const struct tp_cupti_launch *)b)->corr;
    return (x > y) - (x < y);
}

/* The launch of e (sorted) with id corr; NULL when none. */
static struct tp_cupti_launch *emitted_find(const tp_cupti_emitted *e, uint32_t corr) {
    struct tp_cupti_launch key = {.corr = corr};
    return e && e->n ? bsearch(&key, e->launches, e->n, sizeof(key), cmp_launch) : NULL;
}

static int emitted_has(const tp_cupti_emitted *e, uint32_t corr) {
    return emitted_find(e, corr) != NULL;
}

void tp_cupti_emitted_free(tp_cupti_emitted *e) {
    free(e->launches);
    memset(e, 0, sizeof(*e));
}

enum placement { DROP, KEEP, EMIT, APPLY };

/* What a take knows of correlation ids: the launches it moves, those it holds back (a streamed
 * window's, whose work has not all arrived), every pending runtime call, and the launches moved
 * into earlier segments of the window (NULL outside a streamed window). */
typedef struct corr_sets {
    uint32_t *launches, *held, *runtime;
    size_t nlaunches, nheld, nruntime;
    const tp_cupti_emitted *e;
} corr_sets;

/* Where r goes when the take moves the records of [start, end) (GPU work by its launch). */
static enum placement place(const tp_cupti_rec *r, int64_t start, int64_t end, const corr_sets *s) {
    if (is_gpu_work(r) &&
        (has_corr(s->launches, s->nlaunches, r->corr) || emitted_has(s->e, r->corr)))
        return EMIT;
    if (is_gpu_work(r) && has_corr(s->held, s->nheld, r->corr)) return KEEP;
    /* the driver call inside a runtime call: the runtime's record stands for both */
    if (r->kind == TP_CUPTI_DRIVER &&
        (has_corr(s->runtime, s->nruntime, r->corr) || emitted_has(s->e, r->corr)))
        return DROP;
    if (r->start >= end) return KEEP;
    if (r->start >= start) return EMIT;
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

/* Notes a launch moved into a segment (its work may come later). Out of memory, it is not noted:
 * such work then goes by its start, as work without a launch in the window. */
static void note_emitted(tp_cupti_emitted *e, const tp_cupti_rec *r) {
    if (!is_api(r) || !tp_cupti_launches_work(r->kind == TP_CUPTI_DRIVER, r->u.api.cbid)) return;
    if (TP_GROW(e->launches, e->cap, e->n + 1)) return;
    e->launches[e->n++] = (struct tp_cupti_launch){.corr = r->corr, .start = r->start};
}

/* Moves the records p holds (sorted) of [start, end) into m, as s places them; the launches moved
 * are noted in `add` when given. Returns the events appended, -1 when m ran out of memory. */
static long move_records(tp_cupti_pending *p, tp_cupti_conv *c, tp_model *m, int64_t start,
                         int64_t end, int64_t offset_ns, const corr_sets *s,
                         tp_cupti_emitted *add) {
    size_t npairs, kept = 0;
    ext_pair *pairs = external_ids(p, &npairs);
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
        switch (place(r, start, end, s)) {
        case KEEP:
            p->recs[kept++] = *r;
            break;
        case EMIT: {
            tp_cupti_rec e = with_external(r, pairs, npairs);
            if (!failed && tp_cupti_emit(c, &out, &e, offset_ns) == 0)
                appended++;
            else
                failed = 1;
            if (add) note_emitted(add, r);
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
    free(pairs);
    return failed ? -1 : appended;
}

long tp_cupti_pending_take(tp_cupti_pending *p, tp_cupti_conv *c, tp_model *m,
                           const tp_window_info *w, tp_cupti_emitted *e) {
    if (p->n) qsort(p->recs, p->n, sizeof(*p->recs), cmp_rec);
    corr_sets sets = {.e = e};
    sets.launches = corr_set(p, is_launch_in, w->start_ns, w->end_ns, &sets.nlaunches);
    sets.runtime = corr_set(p, is_runtime_call, 0, 0, &sets.nruntime);
    long appended = move_records(p, c, m, w->start_ns, w->end_ns, w->model_offset_ns, &sets, NULL);
    if (e) e->n = 0;
    free(sets.launches);
    free(sets.runtime);
    return appended;
}

/* The earliest start, from start up to upto, of a launch whose work (ids `work`, sorted) has not
 * arrived, of those that started from `wait_from` on; upto when there is none. p is sorted by
 * start. */
static int64_t first_unfinished(const tp_cupti_pending *p, int64_t start, int64_t upto,
                                int64_t wait_from, const uint32_t *work, size_t nk) {
    int64_t t = upto;
    for (size_t i = 0; i < p->n && p->recs[i].start < t; i++) {
        const tp_cupti_rec *r = &p->recs[i];
        if (r->start >= wait_from && awaits_work(r, start, upto, work, nk)) t = r->start;
    }
    return t;
}

static int is_graph_node(const tp_cupti_rec *r, int64_t start, int64_t end) {
    (void)start, (void)end;
    return is_gpu_work(r) && r->kind != TP_CUPTI_GRAPH && r->graph_id;
}

/* Notes the launches of e (sorted) whose work (ids `work`, sorted) came in this take, and
 * whether it held a graph's nodes (ids `nodes`). */
static void emitted_note_work(tp_cupti_emitted *e, const uint32_t *work, size_t nk,
                              const uint32_t *nodes, size_t nn) {
    for (size_t i = 0; i < nk; i++) {
        struct tp_cupti_launch *l = emitted_find(e, work[i]);
        if (!l) continue;
        l->work_take = e->takes;
        l->nodes = has_corr(nodes, nn, l->corr);
    }
}

/* The earliest start of a launch of e that waits for work: none has come yet, or a graph's nodes
 * came in this take (more may follow); INT64_MAX when none. */
static int64_t emitted_first_waiting(const tp_cupti_emitted *e) {
    int64_t t = INT64_MAX;
    for (size_t i = 0; i < e->n; i++) {
        const struct tp_cupti_launch *l = &e->launches[i];
        int waits = !l->work_take || (l->nodes && l->work_take == e->takes);
        if (waits && l->start < t) t = l->start;
    }
    return t;
}

/* Forgets the launches that started TP_CUPTI_EMITTED_MS before `settled`, and sorts the rest. */
static void emitted_trim(tp_cupti_emitted *e, int64_t settled) {
    int64_t horizon = settled - (int64_t)TP_CUPTI_EMITTED_MS * 1000000;
    size_t kept = 0;
    for (size_t i = 0; i < e->n; i++)
        if (e->launches[i].start >= horizon) e->launches[kept++] = e->launches[i];
    e->n = kept;
    if (e->n) qsort(e->launches, e->n, sizeof(*e->launches), cmp_launch);
}

int64_t tp_cupti_pending_take_settled(tp_cupti_pending *p, tp_cupti_conv *c, tp_model *m,
                                      const tp_window_info *w, int64_t upto, int64_t wait_from,
                                      tp_cupti_emitted *e, long *appended) {
    if (e->window_start_ns != w->start_ns) e->n = e->takes = 0; /* another window's */
    e->window_start_ns = w->start_ns;
    e->takes++;
    if (p->n) qsort(p->recs, p->n, sizeof(*p->recs), cmp_rec);
    size_t nk, nn;
    uint32_t *work = corr_set(p, is_work, 0, 0, &nk); /* all of it goes now, or with its launch */
    uint32_t *nodes = corr_set(p, is_graph_node, 0, 0, &nn);
    int64_t settled = first_unfinished(p, w->start_ns, upto, wait_from, work, nk);
    if (settled < w->start_ns) settled = w->start_ns;
    corr_sets sets = {.e = e};
    sets.launches = corr_set(p, is_launch_in, w->start_ns, settled, &sets.nlaunches);
    sets.held = corr_set(p, is_launch_in, settled, INT64_MAX, &sets.nheld);
    sets.runtime = corr_set(p, is_runtime_call, 0, 0, &sets.nruntime);
    tp_cupti_emitted add = {0};
    *appended = move_records(p, c, m, w->start_ns, settled, w->model_offset_ns, &sets, &add);
    for (size_t i = 0; i < add.n; i++)
        if (!TP_GROW(e->launches, e->cap, e->n + 1)) e->launches[e->n++] = add.launches[i];
    tp_cupti_emitted_free(&add);
    emitted_trim(e, settled);
    emitted_note_work(e, work, nk, nodes, nn);
    free(work);
    free(nodes);
    free(sets.launches);
    free(sets.held);
    free(sets.runtime);
    int64_t waiting = emitted_first_waiting(e);
    return waiting < settled ? waiting : settled;
}
