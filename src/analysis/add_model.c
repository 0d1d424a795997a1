/* add_model.c - adding one model (a recorded window or an input file) to an analysis.
 *
 * One classifying pass over the events fills compact index lists; the passes of internal.h run
 * over those lists; the per-name results are finally merged into the analysis' rows by name, so
 * models with different string tables accumulate. */
#include "analysis/internal.h"

#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

tp_name_stats *tp_scan_name(tp_scan *s, tp_str name) {
    if (name >= s->m->strings.n) name = TP_STR_EMPTY; /* a corrupt id names "" */
    uint32_t slot = s->slot_of[name];
    if (slot) return &s->stats[slot - 1];
    if (TP_GROW(s->stats, s->cap_stats, s->nstats + 1)) return NULL;
    s->stats[s->nstats] = (tp_name_stats){.name = name, .stage = TP_STAGE_UNKNOWN};
    s->slot_of[name] = (uint32_t)++s->nstats;
    return &s->stats[s->nstats - 1];
}

/* A correlation id and what goes with it: a duration (GPU work) or an event index (launch). */
typedef struct corr_item {
    uint64_t corr;
    int64_t value;
} corr_item;

/* The last host range seen on a thread, to notice a thread whose ranges arrive out of order. */
typedef struct track_tail {
    int64_t ts, dur;
    uint32_t idx;
    uint8_t seen, unsorted;
} track_tail;

/* The event lists of one model, filled by classify; each has room for every event. The passes
 * read these compact lists rather than going back to the 48-byte events. */
typedef struct lists {
    track_tail *tails;           /* per track */
    uint32_t *host, *host_track; /* host ranges and their tracks */
    uint32_t *work, *work_track; /* GPU work (kernels, copies, sets) and their tracks */
    uint32_t *mem, *steps;       /* [memory] instants, steps */
    corr_item *work_corr;        /* GPU work with an id: {corr, duration} */
    corr_item *launch_corr;      /* host ranges with an id: {corr, index} */
    size_t nhost, nwork, nmem, nsteps, nwork_corr, nlaunch_corr;
    uint64_t corr_lo, corr_hi; /* range of the ids of GPU work */
    int64_t first, last;       /* span of all events */
} lists;

static void free_lists(lists *l) {
    free(l->tails);
    free(l->host);
    free(l->host_track);
    free(l->work);
    free(l->work_track);
    free(l->mem);
    free(l->steps);
    free(l->work_corr);
    free(l->launch_corr);
}

static int alloc_lists(lists *l, size_t n, size_t ntracks) {
    size_t room = n ? n : 1; /* untouched room costs address space only */
    l->tails = calloc(ntracks ? ntracks : 1, sizeof(*l->tails));
    l->host = malloc(room * sizeof(uint32_t));
    l->host_track = malloc(room * sizeof(uint32_t));
    l->work = malloc(room * sizeof(uint32_t));
    l->work_track = malloc(room * sizeof(uint32_t));
    l->mem = malloc(room * sizeof(uint32_t));
    l->steps = malloc(room * sizeof(uint32_t));
    l->work_corr = malloc(room * sizeof(corr_item));
    l->launch_corr = malloc(room * sizeof(corr_item));
    l->first = INT64_MAX;
    l->last = INT64_MIN;
    return l->tails && l->host && l->host_track && l->work && l->work_track && l->mem && l->steps &&
                   l->work_corr && l->launch_corr
               ? 0
               : -1;
}

static void count_kernel(tp_analysis *a, tp_name_stats *ns, int64_t dur) {
    if (ns->kcalls++ == 0 || dur < ns->kmin_ns) ns->kmin_ns = dur;
    if (dur > ns->kmax_ns) ns->kmax_ns = dur;
    ns->ktotal_ns = tp_add_sat(ns->ktotal_ns, dur);
    a->kernel_count++;
    a->kernel_total_ns = tp_add_sat(a->kernel_total_ns, dur);
}

static void count_work(tp_analysis *a, lists *l, const tp_event *e, uint32_t idx) {
    int64_t dur = tp_ev_dur(e);
    l->work_track[l->nwork] = e->track;
    l->work[l->nwork++] = idx;
    a->gpu_work_ns = tp_add_sat(a->gpu_work_ns, dur);
    if (!e->corr) return;
    if (l->nwork_corr == 0 || e->corr < l->corr_lo) l->corr_lo = e->corr;
    if (e->corr > l->corr_hi) l->corr_hi = e->corr;
    l->work_corr[l->nwork_corr++] = (corr_item){e->corr, dur};
}

/* One pass over the events: index lists per kind, the kernel table, the span of all events. */
static int classify(tp_scan *s, lists *l, size_t n) {
    const tp_model *m = s->m;
    if (alloc_lists(l, n, m->ntracks)) return -1;
    for (size_t i = 0; i < n; i++) {
        const tp_event *e = &m->events[i];
        uint32_t idx = (uint32_t)i;
        if (e->track >= m->ntracks) continue; /* not from tp_model_track: a producer's bug */
        int64_t end = tp_ev_end(e);
        if (e->ts < l->first) l->first = e->ts;
        if (end > l->last) l->last = end;
        switch (e->kind) {
        case TP_HOST_RANGE: {
            track_tail *t = &l->tails[e->track];
            if (t->seen && tp_order_key_before(e->ts, e->dur, idx, t->ts, t->dur, t->idx))
                t->unsorted = 1;
            *t = (track_tail){e->ts, e->dur, idx, 1, t->unsorted};
            l->host_track[l->nhost] = e->track;
            l->host[l->nhost++] = idx;
            if (e->flags & TP_EVF_STEP) l->steps[l->nsteps++] = idx;
            if (e->corr) l->launch_corr[l->nlaunch_corr++] = (corr_item){e->corr, idx};
            break;
        }
        case TP_KERNEL: {
            tp_name_stats *ns = tp_scan_name(s, e->name);
            if (!ns) return -1;
            count_kernel(s->a, ns, tp_ev_dur(e));
            count_work(s->a, l, e, idx);
            break;
        }
        case TP_MEMCPY:
        case TP_MEMSET:
            count_work(s->a, l, e, idx);
            break;
        case TP_MEMORY:
            l->mem[l->nmem++] = idx;
            break;
        default:
            break;
        }
    }
    return 0;
}

/* Correlation ids of GPU work, and for each the first host range (in event order) carrying it. */
static int link_launches(tp_scan *s, const lists *l) {
    if (tp_corr_map_init(&s->corr, l->nwork_corr, l->corr_lo, l->corr_hi)) return -1;
    for (size_t i = 0; i < l->nwork_corr; i++) {
        tp_corr_entry *ce = tp_corr_map_get(&s->corr, l->work_corr[i].corr, 1);
        ce->gpu_ns = tp_add_sat(ce->gpu_ns, l->work_corr[i].value);
        ce->count++;
    }
    for (size_t i = 0; i < l->nlaunch_corr; i++) {
        tp_corr_entry *ce = tp_corr_map_get(&s->corr, l->launch_corr[i].corr, 0);
        if (ce && ce->launch == UINT32_MAX) ce->launch = (uint32_t)l->launch_corr[i].value;
    }
    return 0;
}

static int find_steps(tp_scan *s, const lists *l) {
    s->steps = l->steps;
    s->nsteps = l->nsteps;
    s->step_stage = calloc(l->nsteps * s->a->nstages + 1, sizeof(*s->step_stage));
    if (!s->step_stage) return -1;
    return tp_order_ranges(&s->order, s->m->events, s->steps, s->nsteps);
}

/* Each thread's host ranges in start order, walked by nesting.c. */
static int walk_threads(tp_scan *s, const lists *l) {
    const tp_model *m = s->m;
    uint32_t *grouped = malloc((l->nhost ? l->nhost : 1) * sizeof(*grouped));
    size_t *start = malloc((m->ntracks + 1) * sizeof(*start));
    int rc = grouped && start ? 0 : -1;
    if (rc == 0) tp_group_by_key(l->host, l->host_track, l->nhost, m->ntracks, grouped, start);
    for (size_t t = 0; rc == 0 && t < m->ntracks; t++) {
        size_t len = start[t + 1] - start[t];
        /* A thread written in order (the recorder, most Kineto threads) needs no sort. */
        if (l->tails[t].unsorted)
            rc = tp_order_ranges(&s->order, m->events, grouped + start[t], len);
        if (rc == 0) rc = tp_nesting_walk(s, grouped + start[t], len);
    }
    free(start);
    free(grouped);
    return rc;
}

/* The row named name in a table whose rows begin with their char *name; created if new. */
static void *row_for(tp_name_index *ix, void **rows, size_t *n, size_t *cap, size_t elem,
                     const char *name) {
    uint32_t r = tp_name_index_get(ix, name);
    if (r != UINT32_MAX) return (char *)*rows + r * elem;
    char *copy = strdup(name);
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

static int merge_names(tp_scan *s) {
    tp_analysis *a = s->a;
    struct tp_analysis_priv *pv = a->priv;
    for (size_t i = 0; i < s->nstats; i++) {
        const tp_name_stats *ns = &s->stats[i];
        const char *name = tp_model_str(s->m, ns->name);
        if (ns->calls) {
            tp_op_row *r =
                row_for(&pv->ops_ix, (void **)&a->ops, &a->nops, &a->cap_ops, sizeof(*r), name);
            if (!r) return -1;
            if (r->calls == 0 || ns->min_ns < r->min_ns) r->min_ns = ns->min_ns;
            if (ns->max_ns > r->max_ns) r->max_ns = ns->max_ns;
            r->calls += ns->calls;
            r->total_ns = tp_add_sat(r->total_ns, ns->total_ns);
            r->self_ns = tp_add_sat(r->self_ns, ns->self_ns);
            r->flops += ns->flops;
            r->flops_time_ns = tp_add_sat(r->flops_time_ns, ns->flops_time_ns);
            r->gpu_ns = tp_add_sat(r->gpu_ns, ns->gpu_ns);
            r->kernels += ns->kernels;
            a->flops += ns->flops;
            a->flops_time_ns = tp_add_sat(a->flops_time_ns, ns->flops_time_ns);
        }
        if (ns->kcalls) {
            tp_kernel_row *r = row_for(&pv->kernels_ix, (void **)&a->kernels, &a->nkernels,
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

static int append_steps(tp_scan *s) {
    tp_analysis *a = s->a;
    for (size_t k = 0; k < s->nsteps; k++) {
        const tp_event *e = &s->m->events[s->steps[k]];
        if (TP_GROW(a->steps, a->cap_steps, a->nsteps + 1)) return -1;
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
        a->steps_total_ns = tp_add_sat(a->steps_total_ns, row->dur_ns);
        a->nsteps++;
    }
    return 0;
}

/* GPU busy and capacity over the model's window: first step start to last step end, or the span
 * of all events when there are no steps. */
static int add_gpu(tp_scan *s, lists *l) {
    tp_analysis *a = s->a;
    int64_t first = l->first, last = l->last, busy;
    if (s->nsteps) {
        first = INT64_MAX;
        last = INT64_MIN;
        for (size_t k = 0; k < s->nsteps; k++) {
            const tp_event *e = &s->m->events[s->steps[k]];
            if (e->ts < first) first = e->ts;
            if (tp_ev_end(e) > last) last = tp_ev_end(e);
        }
    }
    int64_t window = last > first ? tp_add_sat(last, -first) : 0;
    size_t devices;
    if (tp_gpu_busy(s, l->work, l->work_track, l->nwork, &busy, &devices)) return -1;
    a->window_ns = tp_add_sat(a->window_ns, window);
    a->gpu_busy_ns = tp_add_sat(a->gpu_busy_ns, busy);
    int64_t capacity;
    if (__builtin_mul_overflow(window, (int64_t)devices, &capacity)) capacity = INT64_MAX;
    a->gpu_capacity_ns = tp_add_sat(a->gpu_capacity_ns, capacity);
    if (devices > a->gpu_devices) a->gpu_devices = devices;
    return 0;
}

static int note_input(tp_analysis *a, const tp_model *m, const char *path) {
    a->ninputs++;
    a->input_bytes += m->input_bytes;
    a->input_events += m->input_events;
    a->dropped_events += m->dropped_events;
    if (!path || !*path) {
        a->windows++;
        a->partial_windows += m->partial != 0;
    } else {
        char *copy = strdup(path);
        if (!copy || TP_GROW(a->paths, a->cap_paths, a->npaths + 1)) {
            free(copy);
            return -1;
        }
        a->paths[a->npaths++] = copy;
    }
    if (!a->input_path) a->input_path = strdup(a->npaths ? a->paths[0] : "");
    if (m->failed)
        tp_analysis_add_warning(a, "%s: incomplete (memory ran out while it was built)",
                                path && *path ? path : "a recorded window");
    return a->input_path ? 0 : -1;
}

int tp_analysis_add_model(tp_analysis *a, const tp_model *m, const char *path) {
    tp_scan s = {.a = a, .m = m};
    lists l = {0};
    int rc = note_input(a, m, path);
    /* Lists hold uint32_t indices; a model beyond that (hundreds of GB) is analysed in part. */
    size_t n = m->nevents < UINT32_MAX ? m->nevents : UINT32_MAX - 1;
    if (n < m->nevents)
        tp_analysis_add_warning(a, "a model holds %zu events; only the first %zu are analysed",
                                m->nevents, n);
    s.slot_of = calloc(m->strings.n ? m->strings.n : 1, sizeof(*s.slot_of));
    s.flops_key = tp_strtab_find(&m->strings, "flops", 5);
    if (rc == 0 && !s.slot_of) rc = -1;
    if (rc == 0) rc = classify(&s, &l, n);
    if (rc == 0) rc = link_launches(&s, &l);
    if (rc == 0) rc = find_steps(&s, &l);
    if (rc == 0) rc = walk_threads(&s, &l);
    if (rc == 0) rc = add_gpu(&s, &l);
    if (rc == 0) rc = tp_memory_peaks(&s, l.mem, l.nmem);
    if (rc == 0) rc = merge_names(&s);
    if (rc == 0) rc = append_steps(&s);
    free_lists(&l); /* s.steps is l.steps */
    free(s.step_stage);
    free(s.stats);
    free(s.slot_of);
    tp_corr_map_free(&s.corr);
    tp_order_free(&s.order);
    if (rc) a->failed = 1;
    return rc;
}
