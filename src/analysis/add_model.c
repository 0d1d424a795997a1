/* add_model.c - adding one model (a recorded window or an input file) to an analysis.
 *
 * One classifying pass over the events fills compact index lists, sorted as they fill; the
 * passes of internal.h run over those lists; the per-name results are finally merged into the
 * analysis' rows by name, so models with different string tables accumulate. The passes and
 * their order are one table (`passes`, at the end): each names the facts (TP_HAS_*) it needs
 * and those it makes, and one driver runs them, waits for the helper where a pass needs what
 * the helper makes, and gives each pass a scratch arena freed as it returns.
 *
 * A big model shares the work with a second thread (the helper below): it classifies the GPU's
 * events while this thread classifies the host's, sorts the threads' ranges while this one
 * works out what does not need them (the GPU's busy time, the correlation table, the
 * allocations), then sorts the GPU streams' work while this one walks the threads. Each half of
 * the classifying pass is the one-thread pass restricted to its kinds of event, in the same
 * order, and the sorts are the ones one thread does, of the same input: the results cannot
 * depend on where they ran. */
#include "analysis/internal.h"

#include "model/kineto.h"
#include "util/vec.h"

#include <assert.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

tp_name_stats *tp_walk_name(tp_walk *s, tp_str name) {
    if (name >= s->m->strings.n) name = TP_STR_EMPTY; /* a corrupt id names "" */
    uint32_t slot = s->slot_of[name];
    if (slot) return &s->stats[slot - 1];
    if (TP_AGROW(&s->keep, s->stats, s->cap_stats, s->nstats + 1)) return NULL;
    s->stats[s->nstats] = (tp_name_stats){.name = name, .stage = TP_STAGE_UNKNOWN};
    s->slot_of[name] = (uint32_t)++s->nstats;
    return &s->stats[s->nstats - 1];
}

/* A growing array of keyed records. */
typedef struct keyed_vec {
    tp_keyed *v;
    size_t n, cap;
} keyed_vec;

static int keyed_push(tp_arena *ar, keyed_vec *k, uint64_t key, uint64_t val) {
    if (k->n == k->cap && TP_AGROW(ar, k->v, k->cap, k->n + 1)) return -1;
    k->v[k->n++] = (tp_keyed){key, val};
    return 0;
}

/* The events of one model by kind, filled by classify. Each thread's host ranges go into a run
 * (order.h) that is sorted as it fills, so a thread written in order is never sorted again; GPU
 * work is kept as records that carry what busy time and launch attribution need. The two halves
 * of classify, which may run at once on two threads, each allocate from an arena of their own:
 * host (threads, mem, steps) and gpu (the rest but the runs' contents and device_ids). */
typedef struct lists {
    tp_arena host, gpu;
    tp_run *threads;     /* per track: its host ranges */
    keyed_vec *devices;  /* per device: its kernels, copies and sets {tp_time_key(ts), dur} */
    uint32_t *device_of; /* per track: its device's number, UINT32_MAX before its first work */
    tp_pairs device_ids; /* device number -> (pid, pid string) */
    size_t cap_devices;
    keyed_vec corr; /* GPU work with a correlation id: {id, dur} */
    uint32_t *work; /* every kernel, copy and set (for the idle breakdown) */
    size_t nwork, cap_work;
    uint32_t *mem, *steps; /* [memory] instants, steps */
    size_t nmem, cap_mem, nsteps, cap_steps;
    int64_t first, last; /* span of all events */
} lists;

static void free_lists(lists *l, size_t ntracks) {
    for (size_t t = 0; l->threads && t < ntracks; t++)
        tp_run_free(&l->threads[t]); /* (the walks free most of them as they go) */
    tp_pairs_free(&l->device_ids);
    tp_arena_free(&l->host);
    tp_arena_free(&l->gpu);
}

/* Before the helper starts: it may take from gpu (device_of) on this thread. */
static int alloc_lists(lists *l, size_t ntracks) {
    l->threads = tp_arena_calloc(&l->host, ntracks, sizeof(*l->threads));
    l->device_of = tp_arena_alloc(&l->gpu, ntracks, sizeof(*l->device_of));
    if (!l->threads || !l->device_of) return -1;
    for (size_t t = 0; t < ntracks; t++)
        l->device_of[t] = UINT32_MAX;
    l->first = INT64_MAX;
    l->last = INT64_MIN;
    return 0;
}

static void count_kernel(tp_analysis *a, tp_name_stats *ns, int64_t dur) {
    if (ns->kcalls++ == 0 || dur < ns->kmin_ns) ns->kmin_ns = dur;
    if (dur > ns->kmax_ns) ns->kmax_ns = dur;
    ns->ktotal_ns = tp_add_sat(ns->ktotal_ns, dur);
    a->kernel_count++;
    a->kernel_total_ns = tp_add_sat(a->kernel_total_ns, dur);
}

/* The number of the device (pid, pid_str), given on its first sight; UINT32_MAX when out of
 * memory. */
static uint32_t device_number(lists *l, int64_t pid, int64_t pid_str) {
    size_t before = l->device_ids.n;
    uint32_t d = tp_pairs_number(&l->device_ids, pid, pid_str);
    if (d == UINT32_MAX || l->device_ids.n == before) return d;
    if (TP_AGROW(&l->gpu, l->devices, l->cap_devices, l->device_ids.n)) {
        l->device_ids.n = before; /* keep devices[] covering every number */
        return UINT32_MAX;
    }
    l->devices[d] = (keyed_vec){0};
    return d;
}

/* The work of the device of track t, numbered on its first work; NULL when out of memory. */
static keyed_vec *device_work(const tp_model *m, lists *l, uint32_t t) {
    uint32_t d = l->device_of[t];
    if (d == UINT32_MAX) {
        const tp_track *tr = &m->tracks[t];
        d = device_number(l, tr->pid, tr->pid_str);
        if (d == UINT32_MAX) return NULL;
        l->device_of[t] = d;
    }
    return &l->devices[d];
}

static int push(tp_arena *ar, uint32_t **v, size_t *n, size_t *cap, uint32_t x);

static int count_work(tp_walk *s, lists *l, const tp_event *e) {
    keyed_vec *w = device_work(s->m, l, e->track);
    int64_t dur = tp_ev_dur(e);
    if (!w || keyed_push(&l->gpu, w, tp_time_key(e->ts), (uint64_t)dur) ||
        push(&l->gpu, &l->work, &l->nwork, &l->cap_work, (uint32_t)(e - s->m->events)))
        return -1;
    s->a->gpu_work_ns = tp_add_sat(s->a->gpu_work_ns, dur);
    return e->corr ? keyed_push(&l->gpu, &l->corr, e->corr, (uint64_t)dur) : 0;
}

/* A host-to-device copy from pageable memory, as Kineto names it: "Memcpy HtoD (Pageable ->
 * Device)". The name is matched once per model (copies share a handful of names). */
static void count_copy(tp_walk *s, const tp_event *e) {
    tp_name_stats *ns = tp_walk_name(s, e->name);
    if (!ns) return; /* out of memory: the next pass reports it */
    if (!(ns->what & TP_NAME_KNOWN)) {
        ns->what = TP_NAME_KNOWN;
        if (tp_glob_match("*HtoD*Pageable*", tp_model_str(s->m, e->name)))
            ns->what |= TP_NAME_PAGEABLE_H2D;
    }
    if (!(ns->what & TP_NAME_PAGEABLE_H2D)) return;
    s->a->h2d_pageable_ns = tp_add_sat(s->a->h2d_pageable_ns, tp_ev_dur(e));
    s->a->h2d_pageable_count++;
}

/* The devices' names and compute capability, for the FP32-matrix rule and MFU. */
static int note_devices(tp_analysis *a, const tp_model *m) {
    for (size_t i = 0; i < m->ndevices; i++) {
        const tp_device *d = &m->devices[i];
        if (d->compute_major > a->gpu_compute_major) a->gpu_compute_major = d->compute_major;
        const char *name = d->name ? tp_model_str(m, d->name) : "";
        if (!a->gpu_name && *name && !(a->gpu_name = strdup(name))) return -1;
    }
    return 0;
}

static int push(tp_arena *ar, uint32_t **v, size_t *n, size_t *cap, uint32_t x) {
    if (*n == *cap && tp_arena_grow(ar, (void **)v, cap, *n + 1, sizeof(**v))) return -1;
    (*v)[(*n)++] = x;
    return 0;
}

/* What a pass of classify takes: the host's events (ranges, steps, memory, the span) or the
 * GPU's (kernels, copies, sets). The two write disjoint fields of lists and of the analysis, and
 * only the GPU's create name stats, so they may run at once on two threads. */
enum { CLASSIFY_HOST = 1, CLASSIFY_GPU = 2, CLASSIFY_ALL = 3 };

static int classify_host(lists *l, const tp_model *m, const tp_event *e, uint32_t idx) {
    int64_t end = tp_ev_end(e);
    if (e->ts < l->first) l->first = e->ts;
    if (end > l->last) l->last = end;
    if (e->kind == TP_HOST_RANGE) {
        int rc = tp_run_add(&l->threads[e->track], m->events, idx);
        if (rc == 0 && (e->flags & TP_EVF_STEP))
            rc = push(&l->host, &l->steps, &l->nsteps, &l->cap_steps, idx);
        return rc;
    }
    return e->kind == TP_MEMORY ? push(&l->host, &l->mem, &l->nmem, &l->cap_mem, idx) : 0;
}

static int classify_gpu(tp_walk *s, lists *l, const tp_event *e) {
    switch (e->kind) {
    case TP_KERNEL: {
        tp_name_stats *ns = tp_walk_name(s, e->name);
        if (!ns) return -1;
        count_kernel(s->a, ns, tp_ev_dur(e));
        return count_work(s, l, e);
    }
    case TP_MEMCPY:
        count_copy(s, e);
        return count_work(s, l, e);
    case TP_MEMSET:
        return count_work(s, l, e);
    default:
        return 0;
    }
}

/* One pass over the events (those `which` says): runs per thread and per device, the kernel
 * table, the span. The lists are allocated (alloc_lists). */
static int classify(tp_walk *s, lists *l, size_t n, unsigned which) {
    const tp_model *m = s->m;
    for (size_t i = 0; i < n; i++) {
        const tp_event *e = &m->events[i];
        if (e->track >= m->ntracks) continue; /* not from tp_model_track: a producer's bug */
        if ((which & CLASSIFY_HOST) && classify_host(l, m, e, (uint32_t)i)) return -1;
        if ((which & CLASSIFY_GPU) && classify_gpu(s, l, e)) return -1;
    }
    return 0;
}

/* The correlation table of the GPU work, in place in its records. */
static int link_work(tp_walk *s, lists *l) {
    int rc = tp_corr_build(&s->corr, &s->order, l->corr.v, l->corr.n, &s->keep);
    tp_order_free(&s->order); /* the radix sort's buffers: the walks rarely need them */
    return rc;
}

static int find_steps(tp_walk *s, const lists *l) {
    s->steps = l->steps;
    s->nsteps = l->nsteps;
    s->step_stage = tp_arena_calloc(&s->keep, l->nsteps * s->a->nstages, sizeof(*s->step_stage));
    s->step_lead = tp_arena_calloc(&s->keep, l->nsteps, sizeof(*s->step_lead));
    s->step_other = tp_arena_calloc(&s->keep, l->nsteps, sizeof(*s->step_other));
    s->step_flops = tp_arena_calloc(&s->keep, l->nsteps, sizeof(*s->step_flops));
    s->step_fcm_flops = tp_arena_calloc(&s->keep, l->nsteps, sizeof(*s->step_fcm_flops));
    if (!s->step_stage || !s->step_lead || !s->step_other || !s->step_flops || !s->step_fcm_flops)
        return -1;
    return tp_order_ranges(&s->order, s->m->events, s->steps, s->nsteps);
}

/* The facts that the passes of one model make true, each named by the passes that need it (the
 * table at the end of this file). Three are made on the helper thread (TP_JOINS): a pass that
 * needs one waits for it there, and only then touches what it covers. */
enum {
    TP_HAS_INPUT = 1u << 0,    /* the model counted among the inputs; the events to analyse */
    TP_HAS_SCAN = 1u << 1,     /* slot_of, the devices' names, the lists allocated */
    TP_HAS_HOST = 1u << 2,     /* the host's events classified: runs, steps, [memory], the span */
    TP_HAS_GPU = 1u << 3,      /* the GPU's events classified: its lists, the kernel stats (join) */
    TP_HAS_STEPS = 1u << 4,    /* the steps in order, their per-step arrays */
    TP_HAS_FLIGHT = 1u << 5,   /* the flight recorder's step found */
    TP_HAS_BUSY = 1u << 6,     /* GPU busy time and window; the devices' rows */
    TP_HAS_CORR = 1u << 7,     /* the correlation table */
    TP_HAS_ALLOCS = 1u << 8,   /* the allocations by thread */
    TP_HAS_RUNS = 1u << 9,     /* every thread's runs sorted and handed back (join) */
    TP_HAS_WALKED = 1u << 10,  /* ops, self time, stages, other, launches, evidence, shapes */
    TP_HAS_STREAMS = 1u << 11, /* each stream's work in order; no helper left (join) */
    TP_HAS_IDLE = 1u << 12,    /* GPU idle explained */
    TP_HAS_PEAKS = 1u << 13,   /* memory peaks */
    TP_HAS_ROWS = 1u << 14,    /* the name stats merged into the op and kernel rows */
    TP_HAS_SHAPE_ROWS = 1u << 15, /* ... and into the by-shape rows */
    TP_HAS_STEP_ROWS = 1u << 16,  /* the model's step rows appended */
    TP_HAS_FLIGHT_ROW = 1u << 17, /* its flight row added */
};
/* In the order the helper makes them: joined lowest first. */
#define TP_JOINS (TP_HAS_GPU | TP_HAS_RUNS | TP_HAS_STREAMS)

enum { TP_HELPER_MIN = 1 << 18 }; /* smaller models are done before a thread starts */

/* The second thread of a big model's analysis. Its tasks, in this order:
 *  1. it classifies the GPU's events while this thread classifies the host's (classify says
 *     why they may), then makes TP_HAS_GPU: the GPU's lists, the name stats and the arena keep
 *     change hands;
 *  2. once this thread has made TP_HAS_HOST, it sorts every thread's runs (tp_run_finish),
 *     then makes TP_HAS_RUNS: the runs change hands;
 *  3. it sorts the GPU streams' work (tp_idle_sort_streams) and ends: TP_HAS_STREAMS is made
 *     when this thread joins it.
 * Where no helper starts, this thread does each task in its place (join). */
typedef struct helper {
    tp_walk *s;
    lists *l;
    size_t n;
    tp_order order; /* its own scratch */
    tp_arena tmp;
    tp_idle_streams streams;
    int gpu_rc, sort_rc, streams_rc;
    unsigned done; /* the facts made so far, under mu: TP_HAS_HOST by this thread, the others by
                      the helper */
    int told_host; /* this thread has made TP_HAS_HOST (read by this thread only) */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int started;
} helper;

static void make(helper *h, unsigned fact) {
    pthread_mutex_lock(&h->mu);
    h->done |= fact;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void wait_for(helper *h, unsigned fact) {
    pthread_mutex_lock(&h->mu);
    while (!(h->done & fact))
        pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}

static void *help(void *arg) {
    helper *h = arg;
    const tp_model *m = h->s->m;
    h->gpu_rc = classify(h->s, h->l, h->n, CLASSIFY_GPU);
    make(h, TP_HAS_GPU);
    wait_for(h, TP_HAS_HOST);
    int rc = 0;
    for (size_t t = 0; rc == 0 && t < m->ntracks; t++)
        rc = tp_run_finish(&h->order, m->events, &h->l->threads[t]);
    tp_order_free(&h->order);
    h->sort_rc = rc;
    make(h, TP_HAS_RUNS);
    h->streams_rc = tp_idle_sort_streams(&h->streams, m, h->l->work, h->l->nwork, &h->tmp);
    tp_arena_free(&h->tmp);
    return NULL;
}

/* Starts the helper on a model of n events (l allocated) when it is big enough to pay and the
 * analysis may use a second thread. */
static void start_helper(helper *h, tp_walk *s, lists *l, size_t n) {
    *h = (helper){.s = s, .l = l, .n = n};
    if (n < TP_HELPER_MIN || s->a->priv->one_thread || pthread_mutex_init(&h->mu, NULL)) return;
    if (pthread_cond_init(&h->cv, NULL)) {
        pthread_mutex_destroy(&h->mu);
        return;
    }
    h->started = pthread_create(&h->thread, NULL, help, h) == 0;
    if (!h->started) {
        pthread_cond_destroy(&h->cv);
        pthread_mutex_destroy(&h->mu);
    }
}

/* Waits for the helper to end; what its last task returned. Leaves no thread behind. */
static int end_helper(helper *h) {
    pthread_join(h->thread, NULL);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    h->started = 0;
    return h->streams_rc;
}

/* Each thread's host ranges in start order, walked by nesting.c, then freed. */
static int walk_threads(tp_walk *s, lists *l) {
    int rc = tp_modules_begin(s);
    for (size_t t = 0; rc == 0 && t < s->m->ntracks; t++) {
        tp_run *r = &l->threads[t];
        const uint32_t *allocs = NULL;
        const int64_t *bytes = NULL;
        size_t nallocs = 0;
        if (s->allocs) {
            allocs = s->allocs + s->alloc_start[t];
            bytes = s->alloc_bytes + s->alloc_start[t];
            nallocs = s->alloc_start[t + 1] - s->alloc_start[t];
        }
        if (tp_run_finish(&s->order, s->m->events, r) ||
            tp_nesting_walk(s, r->v, r->n, allocs, bytes, nallocs) ||
            tp_modules_walk(s, r->v, r->n))
            rc = -1;
        tp_run_free(r);
    }
    if (rc == 0 && (tp_corr_charge(s) || tp_stacks_kernels(s, l->work, l->nwork))) rc = -1;
    if (tp_modules_link(s, rc == 0)) rc = -1; /* frees its scan either way */
    return rc || tp_stage_count(s) || tp_stage_other(s) ? -1 : 0;
}

void *tp_row_for(tp_name_index *ix, void **rows, size_t *n, size_t *cap, size_t elem,
                 const char *key) {
    uint32_t r = tp_name_index_get(ix, key);
    if (r != UINT32_MAX) return (char *)*rows + r * elem;
    char *copy = strdup(key);
    if (!copy || *n >= UINT32_MAX || tp_grow(rows, cap, *n + 1, elem)) {
        free(copy);
        return NULL;
    }
    char *row = (char *)*rows + *n * elem;
    memset(row, 0, elem);
    memcpy(row, &copy, sizeof(copy));
    if (tp_name_index_put(ix, copy, (uint32_t)*n)) {
        free(copy);
        return NULL;
    }
    ++*n;
    return row;
}

void tp_op_row_add(tp_op_row *r, const tp_name_stats *ns) {
    if (ns->calls && (r->calls == 0 || ns->min_ns < r->min_ns)) r->min_ns = ns->min_ns;
    if (ns->max_ns > r->max_ns) r->max_ns = ns->max_ns;
    r->calls += ns->calls;
    r->total_ns = tp_add_sat(r->total_ns, ns->total_ns);
    r->self_ns = tp_add_sat(r->self_ns, ns->self_ns);
    r->flops = tp_add_flops(r->flops, ns->flops);
    r->flops_time_ns = tp_add_sat(r->flops_time_ns, ns->flops_time_ns);
    r->fcm_flops = tp_add_flops(r->fcm_flops, ns->fcm_flops);
    r->gpu_ns = tp_add_sat(r->gpu_ns, ns->gpu_ns);
    r->kernels += ns->kernels;
    r->sync_ns = tp_add_sat(r->sync_ns, ns->sync_ns);
    r->sync_calls += ns->sync_calls;
    r->alloc_bytes = tp_add_sat(r->alloc_bytes, ns->alloc_bytes);
    r->allocs += ns->allocs;
    r->fp32_calls += ns->fp32_calls;
}

/* Whether ns's module replaces r's: the first input's stays, and within one window added in
 * pieces, the one the whole window gives (nesting.c and modules.c): Kineto's module around the
 * call that is longer than every call before it, else the path around the longest call. */
static int takes_module(const tp_walk *s, const tp_op_row *r, const tp_name_stats *ns) {
    uint64_t input = s->a->priv->inputs_done;
    int64_t before = r->last_input == input ? r->last_input_max_ns : 0; /* earlier pieces' */
    if (ns->module == TP_STR_EMPTY) return 0;
    if (!r->module) return ns->module_path || ns->module_ns > before;
    if (r->module_input != input) return 0; /* an earlier input's */
    if (!ns->module_path) return ns->module_ns > before;
    return r->module_path && ns->module_ns > r->module_ns;
}

/* Notes ns's calls in r's longest call of this input (takes_module). */
static void note_input_max(const tp_walk *s, tp_op_row *r, const tp_name_stats *ns) {
    uint64_t input = s->a->priv->inputs_done;
    if (r->last_input != input || ns->max_ns > r->last_input_max_ns)
        r->last_input_max_ns = ns->max_ns;
    r->last_input = input;
}

static int merge_names(tp_walk *s) {
    tp_analysis *a = s->a;
    struct tp_analysis_priv *pv = a->priv;
    for (size_t i = 0; i < s->nstats; i++) {
        const tp_name_stats *ns = &s->stats[i];
        const char *name = tp_model_str(s->m, ns->name);
        if (ns->calls || ns->total_ns) { /* (parts of a range have time, no call) */
            tp_op_row *r =
                tp_row_for(&pv->ops_ix, (void **)&a->ops, &a->nops, &a->cap_ops, sizeof(*r), name);
            if (!r) return -1;
            if (takes_module(s, r, ns)) {
                free(r->module);
                if (!(r->module = strdup(tp_model_str(s->m, ns->module)))) return -1;
                r->module_ns = ns->module_ns;
                r->module_path = ns->module_path;
                r->module_input = a->priv->inputs_done;
            }
            note_input_max(s, r, ns);
            tp_op_row_add(r, ns);
            a->flops = tp_add_flops(a->flops, ns->flops);
            a->flops_time_ns = tp_add_sat(a->flops_time_ns, ns->flops_time_ns);
            a->fcm_flops = tp_add_flops(a->fcm_flops, ns->fcm_flops);
        }
        if (ns->kcalls) {
            tp_kernel_row *r = tp_row_for(&pv->kernels_ix, (void **)&a->kernels, &a->nkernels,
                                          &a->cap_kernels, sizeof(*r), name);
            if (!r) return -1;
            if (r->calls == 0 || ns->kmin_ns < r->min_ns) r->min_ns = ns->kmin_ns;
            if (ns->kmax_ns > r->max_ns) r->max_ns = ns->kmax_ns;
            r->calls += ns->kcalls;
            r->total_ns = tp_add_sat(r->total_ns, ns->ktotal_ns);
        }
    }
    return 0;
}

static int append_steps(tp_walk *s) {
    tp_analysis *a = s->a;
    for (size_t k = 0; k < s->nsteps; k++) {
        const tp_event *e = &s->m->events[s->steps[k]];
        tp_stage_row *other = &a->other;
        if (TP_GROW(a->steps, a->cap_steps, a->nsteps + 1) ||
            TP_GROW(other->durs, other->cap_durs, other->count + 1))
            return -1;
        tp_step_row *row = &a->steps[a->nsteps];
        const char *name = tp_model_str(s->m, e->name);
        *row = (tp_step_row){.name = strdup(name),
                             .number = tp_step_number(name),
                             .start_ns = tp_add_sat(s->m->base_ns, e->ts),
                             .dur_ns = tp_ev_dur(e),
                             .stage_ns = calloc(a->nstages ? a->nstages : 1, sizeof(int64_t))};
        if (!row->name || !row->stage_ns) {
            free(row->name);
            free(row->stage_ns);
            return -1;
        }
        if (a->nstages)
            memcpy(row->stage_ns, &s->step_stage[k * a->nstages], a->nstages * sizeof(int64_t));
        row->other_ns = s->step_other[k];
        row->lead_ns = s->step_lead[k];
        row->flops = s->step_flops[k];
        row->mfu_pct = -1;
        row->fcm_flops = s->step_fcm_flops[k];
        row->fcm_mfu_pct = -1;
        a->step_flops = tp_add_flops(a->step_flops, row->flops);
        a->step_fcm_flops = tp_add_flops(a->step_fcm_flops, row->fcm_flops);
        other->durs[other->count++] = row->other_ns;
        other->total_ns = tp_add_sat(other->total_ns, row->other_ns);
        if (row->other_ns > other->max_ns) other->max_ns = row->other_ns;
        a->lead_ns = tp_add_sat(a->lead_ns, row->lead_ns);
        a->steps_total_ns = tp_add_sat(a->steps_total_ns, row->dur_ns);
        a->nsteps++;
    }
    return 0;
}

/* A window's pieces (tp_model.piece): GPU work goes into its launch's piece (sink/artifacts.c),
 * so it may run past the piece's end. What runs past it, from the end on, joins the next piece's
 * busy time (overhang_in), as it does the window's; the pieces' busy times then add up to the
 * window's. A device is told by its pid alone across pieces (each piece has its own strings), as
 * its idle row is (tp_device_row). */
static int overhang_in(tp_walk *s, lists *l) {
    struct tp_gpu_pieces *gp = s->a->priv ? &s->a->priv->gpu_pieces : NULL;
    for (size_t i = 0; gp && i < gp->noverhang; i++) {
        const tp_overhang *o = &gp->overhang[i];
        uint32_t d = 0;
        while (d < l->device_ids.n && l->device_ids.v[d].a != o->pid)
            d++;
        if (d == l->device_ids.n && (d = device_number(l, o->pid, 0)) == UINT32_MAX) return -1;
        if (keyed_push(&l->gpu, &l->devices[d], o->part.key, o->part.val)) return -1;
    }
    if (gp) gp->noverhang = 0;
    return 0;
}

/* After a piece's busy time: its devices' work past `end` (the piece's end), for the next. */
static int overhang_out(tp_walk *s, const lists *l, int64_t end) {
    struct tp_gpu_pieces *gp = s->a->priv ? &s->a->priv->gpu_pieces : NULL;
    if (!gp || !s->m->piece) return 0; /* the window's last piece, or a whole model */
    for (size_t d = 0; d < l->device_ids.n; d++) {
        const keyed_vec *w = &l->devices[d];
        tp_keyed past;
        for (size_t i = 0; i < w->n; i++) {
            if (!tp_gpu_past(&w->v[i], end, &past)) continue;
            if (TP_GROW(gp->overhang, gp->cap_overhang, gp->noverhang + 1)) return -1;
            gp->overhang[gp->noverhang++] = (tp_overhang){l->device_ids.v[d].a, past};
        }
    }
    return 0;
}

/* The GPU capacity of a model's window (ns): each device with work in it has that window. In a
 * window's pieces a device has the whole window's, as it does when the window is analysed whole,
 * even where it has no work in some pieces: one first seen in a piece gets the earlier pieces'
 * windows too, and each seen before gets every later piece's. */
static int add_capacity(tp_walk *s, const lists *l, int64_t window) {
    tp_analysis *a = s->a;
    struct tp_gpu_pieces whole = {0}, *gp = a->priv ? &a->priv->gpu_pieces : &whole;
    int rc = 0;
    for (size_t d = 0; d < l->device_ids.n && rc == 0; d++) {
        int64_t pid = l->device_ids.v[d].a;
        if (tp_pid_in(gp->devices, gp->ndevices, pid)) continue;
        tp_idle_row *row = tp_device_row(a, pid);
        if (!row || TP_GROW(gp->devices, gp->cap_devices, gp->ndevices + 1)) {
            rc = -1;
            break;
        }
        gp->devices[gp->ndevices++] = pid;
        row->window_ns = tp_add_sat(row->window_ns, gp->window_ns);
        a->gpu_capacity_ns = tp_add_sat(a->gpu_capacity_ns, gp->window_ns);
    }
    for (size_t d = 0; d < gp->ndevices && rc == 0; d++) {
        tp_idle_row *row = tp_device_row(a, gp->devices[d]);
        if (!row) {
            rc = -1;
            break;
        }
        row->window_ns = tp_add_sat(row->window_ns, window);
        a->gpu_capacity_ns = tp_add_sat(a->gpu_capacity_ns, window);
        assert(row->busy_ns <= row->window_ns);
    }
    gp->window_ns = tp_add_sat(gp->window_ns, window);
    if (gp->ndevices > a->gpu_devices) a->gpu_devices = gp->ndevices;
    if (!s->m->piece) gp->ndevices = 0, gp->window_ns = 0; /* the window is done */
    free(whole.devices);
    return rc;
}

/* GPU busy and capacity over the model's window: first step start to last step end, or the span
 * of all events when there are no steps. A piece of a window (tp_model.piece) runs to where the
 * next piece begins, so that the pieces' windows add up to the window's. */
static int add_gpu(tp_walk *s, lists *l) {
    tp_analysis *a = s->a;
    int64_t first = l->first, last = l->last;
    if (s->nsteps) {
        first = INT64_MAX;
        last = INT64_MIN;
        for (size_t k = 0; k < s->nsteps; k++) {
            const tp_event *e = &s->m->events[s->steps[k]];
            if (e->ts < first) first = e->ts;
            if (tp_ev_end(e) > last) last = tp_ev_end(e);
        }
        if (s->m->piece && s->m->piece_end > last) last = s->m->piece_end;
    }
    if (overhang_in(s, l)) return -1;
    int64_t window = last > first ? tp_add_sat(last, -first) : 0, busy = 0;
    for (size_t d = 0; d < l->device_ids.n; d++) {
        int64_t one;
        if (tp_gpu_union(&s->order, l->devices[d].v, l->devices[d].n, first, last, &one)) return -1;
        busy = tp_add_sat(busy, one);
        tp_idle_row *row = tp_device_row(a, l->device_ids.v[d].a);
        if (!row) return -1;
        row->busy_ns = tp_add_sat(row->busy_ns, one);
    }
    if (overhang_out(s, l, last) || add_capacity(s, l, window)) return -1;
    a->window_ns = tp_add_sat(a->window_ns, window);
    a->gpu_busy_ns = tp_add_sat(a->gpu_busy_ns, busy);
    return 0;
}

static int note_input(tp_analysis *a, const tp_model *m, const char *path) {
    if (m->failed)
        tp_analysis_add_warning(a, "%s: incomplete (memory ran out while it was built)",
                                path && *path ? path : "a recorded window");
    if (m->piece) return 0; /* a window's piece: the window counts with its last (sink/) */
    a->ninputs++;
    a->input_bytes += m->input_bytes;
    a->input_events += m->input_events;
    a->dropped_events += m->dropped_events;
    /* a trace read from a file that a signal or a shutdown cut short counts as a partial window */
    a->partial_windows += m->partial != 0;
    if (!path || !*path) {
        a->windows++;
    } else {
        char *copy = strdup(path);
        if (!copy || TP_GROW(a->paths, a->cap_paths, a->npaths + 1)) {
            free(copy);
            return -1;
        }
        a->paths[a->npaths++] = copy;
    }
    if (!a->input_path) a->input_path = strdup(a->npaths ? a->paths[0] : "");
    return a->input_path ? 0 : -1;
}

/* One model's way through the passes. */
typedef struct pipeline {
    tp_walk s;
    lists l;
    helper h;
    const char *path;
    size_t n;         /* the events analysed */
    size_t first_row; /* the model's first step row in the analysis */
    unsigned have;    /* the facts made so far */
    int classify_all; /* the classifying pass took the GPU's events too (no helper) */
} pipeline;

/* Waits until fact (one of TP_JOINS) is made. Where no helper started, this thread has made it
 * or makes it here: the classifying pass took the GPU's events, the walk sorts each thread's
 * run before walking it (tp_run_finish does nothing to a sorted run), and the streams are
 * sorted here. 0, or -1 when the task that makes it ran out of memory. */
static int join(pipeline *p, unsigned fact) {
    helper *h = &p->h;
    if (!h->started) {
        assert(fact != TP_HAS_GPU || p->classify_all);
        if (fact != TP_HAS_STREAMS) return 0;
        return tp_idle_sort_streams(&h->streams, p->s.m, p->l.work, p->l.nwork, p->s.tmp);
    }
    /* the helper sorts the runs once this thread is done with them: before, this never ends */
    assert(fact != TP_HAS_RUNS || h->told_host);
    switch (fact) {
    case TP_HAS_GPU:
        wait_for(h, TP_HAS_GPU);
        return h->gpu_rc;
    case TP_HAS_RUNS:
        wait_for(h, TP_HAS_RUNS);
        return h->sort_rc;
    default:
        assert(fact == TP_HAS_STREAMS);
        return end_helper(h);
    }
}

/* The passes. Each reads what the facts it needs cover and writes what those it makes cover. */

static int pass_input(pipeline *p) {
    const tp_model *m = p->s.m;
    int rc = note_input(p->s.a, m, p->path);
    /* Lists hold uint32_t indices; a model beyond that (hundreds of GB) is analysed in part. */
    p->n = m->nevents < UINT32_MAX ? m->nevents : UINT32_MAX - 1;
    if (p->n < m->nevents)
        tp_analysis_add_warning(p->s.a, "a model holds %zu events; only the first %zu are analysed",
                                m->nevents, p->n);
    return rc;
}

static int pass_scan(pipeline *p) {
    tp_walk *s = &p->s;
    s->slot_of = tp_arena_calloc(&s->keep, s->m->strings.n, sizeof(*s->slot_of));
    s->flops_key = tp_strtab_find(&s->m->strings, "flops", 5);
    s->fcm_key = tp_strtab_find(&s->m->strings, tp_karg_flops_fcm, TP_KLEN(tp_karg_flops_fcm));
    s->conc_key =
        tp_strtab_find(&s->m->strings, tp_karg_concrete_inputs, TP_KLEN(tp_karg_concrete_inputs));
    s->itype_key = tp_strtab_find(&s->m->strings, tp_karg_input_type, strlen(tp_karg_input_type));
    s->setup_key = tp_strtab_find(&s->m->strings, tp_karg_setup, strlen(tp_karg_setup));
    s->part_key = tp_strtab_find(&s->m->strings, TP_PART_WHOLE_DUR, strlen(TP_PART_WHOLE_DUR));
    tp_shapes_begin(s);
    if (!s->slot_of || note_devices(s->a, s->m)) return -1;
    return alloc_lists(&p->l, s->m->ntracks);
}

/* The host's events here; the GPU's on the helper, started here for a big model, else here
 * too. The helper hears of TP_HAS_HOST failing or not: it waits for it. */
static int pass_classify(pipeline *p) {
    start_helper(&p->h, &p->s, &p->l, p->n);
    p->classify_all = !p->h.started;
    int rc = classify(&p->s, &p->l, p->n, p->h.started ? CLASSIFY_HOST : CLASSIFY_ALL);
    if (p->h.started) {
        make(&p->h, TP_HAS_HOST);
        p->h.told_host = 1;
    }
    return rc;
}

static int pass_steps(pipeline *p) {
    return find_steps(&p->s, &p->l);
}

static int pass_flight(pipeline *p) {
    tp_flight_find(&p->s);
    return 0;
}

static int pass_busy(pipeline *p) {
    return add_gpu(&p->s, &p->l);
}

static int pass_corr(pipeline *p) {
    return link_work(&p->s, &p->l);
}

static int pass_allocs(pipeline *p) {
    return tp_memory_allocs(&p->s, p->l.mem, p->l.nmem);
}

static int pass_walk(pipeline *p) {
    return walk_threads(&p->s, &p->l);
}

static int pass_idle(pipeline *p) {
    int rc = tp_gpu_idle(&p->s, &p->h.streams);
    tp_idle_streams_free(&p->h.streams); /* the last pass that reads them */
    return rc;
}

static int pass_peaks(pipeline *p) {
    return tp_memory_peaks(&p->s, p->l.mem, p->l.nmem);
}

static int pass_names(pipeline *p) {
    return merge_names(&p->s);
}

static int pass_shapes(pipeline *p) {
    return tp_shapes_merge(&p->s);
}

static int pass_step_rows(pipeline *p) {
    p->first_row = p->s.a->nsteps;
    return append_steps(&p->s);
}

static int pass_flight_row(pipeline *p) {
    return tp_flight_add(&p->s, p->first_row);
}

/* A pass: what it needs made before it runs, and what it makes. Its scratch comes from s.tmp,
 * freed when it returns; what later passes read, from s.keep. */
typedef struct pass {
    const char *name; /* for the reader and the debugger */
    int (*run)(pipeline *p);
    unsigned needs, makes;
} pass;

/* The passes in the order they run; an order that puts a pass before one making a fact it
 * needs is refused by in_order (asserted). Beyond the data they read, two kinds of need keep
 * an order: a pass that takes from keep after the scan needs TP_HAS_GPU, as keep is the
 * helper's until then (steps, allocs; the walk's stats); idle needs BUSY, which creates the
 * devices' rows in the order the output shows them. A new figure is a field of tp_analysis,
 * a fact and a row here (docs/ARCHITECTURE.md). */
static const pass passes[] = {
    {"input", pass_input, 0, TP_HAS_INPUT},
    {"scan", pass_scan, TP_HAS_INPUT, TP_HAS_SCAN},
    {"classify", pass_classify, TP_HAS_SCAN, TP_HAS_HOST},
    {"steps", pass_steps, TP_HAS_HOST | TP_HAS_GPU, TP_HAS_STEPS},
    {"flight", pass_flight, TP_HAS_STEPS, TP_HAS_FLIGHT},
    {"busy", pass_busy, TP_HAS_HOST | TP_HAS_GPU | TP_HAS_STEPS, TP_HAS_BUSY},
    {"corr", pass_corr, TP_HAS_GPU, TP_HAS_CORR},
    {"allocs", pass_allocs, TP_HAS_HOST | TP_HAS_GPU, TP_HAS_ALLOCS},
    {"walk", pass_walk,
     TP_HAS_GPU | TP_HAS_RUNS | TP_HAS_STEPS | TP_HAS_FLIGHT | TP_HAS_CORR | TP_HAS_ALLOCS,
     TP_HAS_WALKED},
    {"idle", pass_idle, TP_HAS_STREAMS | TP_HAS_BUSY | TP_HAS_WALKED, TP_HAS_IDLE},
    {"peaks", pass_peaks, TP_HAS_HOST, TP_HAS_PEAKS},
    {"names", pass_names, TP_HAS_WALKED, TP_HAS_ROWS},
    {"shapes", pass_shapes, TP_HAS_WALKED, TP_HAS_SHAPE_ROWS},
    {"step rows", pass_step_rows, TP_HAS_WALKED, TP_HAS_STEP_ROWS},
    {"flight row", pass_flight_row, TP_HAS_FLIGHT | TP_HAS_WALKED | TP_HAS_STEP_ROWS,
     TP_HAS_FLIGHT_ROW},
};
enum { NPASSES = sizeof(passes) / sizeof(passes[0]) };

#ifndef NDEBUG
/* Whether every pass comes after those making what it needs (joins come from the helper). */
static int in_order(void) {
    unsigned made = TP_JOINS;
    for (size_t i = 0; i < NPASSES; i++) {
        if (passes[i].needs & ~made) return 0;
        made |= passes[i].makes;
    }
    return 1;
}
#endif

static int run_pass(pipeline *p, const pass *ps) {
    assert((ps->needs & ~(p->have | TP_JOINS)) == 0); /* in_order */
    tp_arena tmp = {0};
    p->s.tmp = &tmp;
    int rc = 0;
    for (unsigned wait = ps->needs & TP_JOINS & ~p->have; wait; wait &= wait - 1) {
        unsigned fact = wait & -wait; /* lowest first: the helper's order */
        if (join(p, fact)) rc = -1;
        p->have |= fact;
    }
    if (rc == 0) rc = ps->run(p);
    p->s.tmp = NULL;
    tp_arena_free(&tmp);
    if (rc == 0) p->have |= ps->makes;
    return rc;
}

/* After the last pass run (all, or up to one that failed): the helper's tasks waited for, so
 * that nothing it uses is freed under it. 0, or -1 when one failed. */
static int join_rest(pipeline *p) {
    int rc = 0;
    if (!p->h.started) return 0;
    assert(p->h.told_host); /* the helper starts in the classifying pass, which tells it */
    for (unsigned wait = TP_JOINS & ~p->have; wait; wait &= wait - 1)
        if (join(p, wait & -wait)) rc = -1;
    return rc;
}

/* What the passes left: keep and the structures with a life of their own. */
static void pipeline_free(pipeline *p) {
    free_lists(&p->l, p->s.m->ntracks); /* s.steps is l.steps */
    tp_idle_streams_free(&p->h.streams);
    tp_shapes_free(&p->s.shapes);
    tp_order_free(&p->s.order);
    tp_arena_free(&p->s.keep);
}

int tp_analysis_add_model(tp_analysis *a, const tp_model *m, const char *path) {
    assert(in_order());
    pipeline p = {.s = {.a = a, .m = m, .flight_ev = UINT32_MAX}, .path = path};
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < NPASSES; i++)
        rc = run_pass(&p, &passes[i]);
    if (join_rest(&p)) rc = -1;
    pipeline_free(&p);
    a->priv->inputs_done += !m->piece; /* the pieces of a window and its last: one input */
    if (rc == 0 && a->priv->per_rank) rc = tp_ranks_add_model(a, m, path);
    if (rc) a->failed = 1;
    return rc;
}
