/* internal.h - what the passes over one model share inside src/analysis (nothing outside uses it).
 *
 * tp_analysis_add_model (add_model.c) classifies a model's events once into index lists, then
 * runs its table of passes over this scan: nesting.c (self time, ops, stages, launch
 * attribution), gpu.c (busy time), memory.c (peaks) and the others. Everything here is scratch
 * freed when the model is done (most of it in one go: the arena keep); what the analysis keeps
 * is copied into its rows by name. */
#ifndef TP_ANALYSIS_INTERNAL_H
#define TP_ANALYSIS_INTERNAL_H

#include "analysis/analysis.h"
#include "analysis/names.h"
#include "analysis/order.h"
#include "analysis/stacks.h"

#include "util/arena.h"

#include <float.h>
#include <stddef.h>
#include <stdint.h>

/* Durations and ends saturate instead of overflowing, so absurd input cannot trigger undefined
 * behaviour; a negative duration counts as zero. */
static inline int64_t tp_add_sat(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}
/* FLOP counts saturate at DBL_MAX (an infinite count, 1e999 in a trace, is DBL_MAX too), so
 * that no sum turns into inf, written as null; tp_analysis_finish warns when one did. */
static inline double tp_add_flops(double a, double b) {
    double r = a + b;
    return r > DBL_MAX ? DBL_MAX : r < -DBL_MAX ? -DBL_MAX : r;
}
static inline int64_t tp_ev_dur(const tp_event *e) {
    return e->dur > 0 ? e->dur : 0;
}
static inline int64_t tp_ev_end(const tp_event *e) {
    return tp_add_sat(e->ts, tp_ev_dur(e));
}
/* Whether pid is among the n of pids (a device's, in the short lists of devices seen). */
static inline int tp_pid_in(const int64_t *pids, size_t n, int64_t pid) {
    for (size_t i = 0; i < n; i++)
        if (pids[i] == pid) return 1;
    return 0;
}

/* The analysis' own state behind tp_analysis.priv. */
struct tp_analysis_priv {
    tp_name_index ops_ix, kernels_ix; /* row name -> index into ops / kernels */
    tp_name_index shapes_ix;          /* shape_keys[i] -> i, the index into ops_by_shape */
    char **shape_keys;                /* per row of ops_by_shape: its shapes, '\x1f', its name */
    size_t cap_shape_keys;
    char ***patterns; /* per stage, its patterns (copied) */
    size_t *npatterns;
    int per_rank;                /* tp_analysis_opts.per_rank */
    int one_thread;              /* tp_analysis_opts.threads == 1 */
    struct tp_rank_accs *ranks;  /* ranks.c: per rank, a sub-analysis and its collectives */
    int told_failed;             /* the incomplete-results warning was added */
    int told_run_facts;          /* the dropped-events and partial-window warnings were added */
    uint64_t inputs_done;        /* models added that were no window's piece (tp_model.piece) */
    struct tp_idle_carry *carry; /* idle.c: a window's pieces, its streams' last work so far */
    struct tp_gpu_pieces {       /* add_model.c: a window's pieces so far, for the GPU's figures */
        struct tp_overhang *overhang; /* work past the last piece's end */
        size_t noverhang, cap_overhang;
        int64_t *devices; /* the pids of the devices with work in them */
        size_t ndevices, cap_devices;
        int64_t window_ns; /* their windows */
    } gpu_pieces;
};

/* Part of a device's work (pid) that runs past the end of a window's piece (tp_gpu_past). */
typedef struct tp_overhang {
    int64_t pid;
    tp_keyed part;
} tp_overhang;

enum { TP_STAGE_UNKNOWN = -2 }; /* tp_name_stats.stage before the name was matched */

/* What a range's name tells the recommendations (docs/METRICS.md, Recommendations). */
enum {
    TP_NAME_SYNC = 1,       /* the host waits for the GPU: cudaStreamSynchronize, cudaMemcpy, ... */
    TP_NAME_OPTIM_STEP = 2, /* Optimizer.step#... */
    TP_NAME_MULTI_TENSOR = 4, /* an op over many tensors at once: _foreach_ and _fused_ ops */
    TP_NAME_PAGEABLE_H2D = 8, /* a copy named "Memcpy HtoD (Pageable -> Device)" */
    TP_NAME_GC = 16,          /* "gc": a Python garbage collection (tprof.torch) */
    TP_NAME_MATRIX = 32,      /* a matrix op whose dtype matters: aten::mm, addmm, bmm, conv */
    TP_NAME_SETUP = 64,       /* "tprof.setup": the run's setup, metadata and no op */
    TP_NAME_MODULE = 256,     /* "nn.Module: ...": a module's forward (Kineto's with_modules) */
    TP_NAME_FCM = 512,        /* an op FlopCounterMode counts (model/flops.h) */
    TP_NAME_KNOWN = 128       /* the flags were computed */
};
/* evidence.c: the TP_NAME_* flags of a name. */
unsigned tp_name_flags(const char *name);

/* Everything one model says about one distinct name, as an op and as a kernel. */
typedef struct tp_name_stats {
    tp_str name;
    int stage; /* index into the analysis' stages, -1 none, TP_STAGE_UNKNOWN not yet matched */
    int explicit_stage; /* the name is its stage's own name (a tprof stage), not a pattern */
    unsigned what;      /* TP_NAME_* flags (names.c's tp_name_flags), set with stage */
    int64_t sync_ns;    /* host synchronizations inside steps charged to this op */
    uint64_t sync_calls;
    uint64_t calls;
    int64_t total_ns, self_ns, min_ns, max_ns;
    double flops;
    int64_t flops_time_ns;
    double fcm_flops; /* FlopCounterMode's FLOPs of its outermost calls (nesting.c) */
    int64_t gpu_ns;
    uint64_t kernels;
    uint64_t kcalls;
    int64_t ktotal_ns, kmin_ns, kmax_ns;
    int64_t alloc_bytes; /* allocations whose innermost enclosing op this is (nesting.c) */
    uint64_t allocs;
    uint64_t fp32_calls; /* TP_NAME_MATRIX calls whose "Input type" starts with "float" */
    tp_str module;     /* the module range around its longest call (nesting.c: Kineto's; modules.c:
                          paths), TP_STR_EMPTY none */
    int64_t module_ns; /* that call's duration */
    int module_path;   /* module is a path (modules.c), not Kineto's range */
} tp_name_stats;

/* The correlation ids of one model's GPU work, sorted and unique (corr.c). A host range finds
 * its id by a galloping search from where its thread's previous search ended: a thread
 * launches in id order (CUPTI numbers calls as they are made), so the search moves a step or
 * two, and any order stays correct. */
typedef struct tp_corr_use {
    uint32_t count;  /* pieces of GPU work with this id */
    uint32_t launch; /* event index of the first host range with this id, or UINT32_MAX */
    uint32_t op;     /* that range's innermost op (a stats index), or UINT32_MAX for none */
    uint32_t shaped; /* ... and its (name, shapes) pair (tp_shape_scan), or UINT32_MAX */
    uint32_t py;     /* that range's innermost python_function node (stacks.h), or TP_STACK_NONE */
} tp_corr_use;

typedef struct tp_corr_table {
    tp_keyed *ids; /* key: the id, ascending; val: the summed duration of its GPU work */
    tp_corr_use *use;
    size_t n;
} tp_corr_table;

/* Builds the table in recs[0..n) (key: an id, val: the duration of one piece of GPU work), in
 * place: they must outlive the table. Its use comes from ar, with which the table is freed.
 * 0, or -1 when out of memory. */
int tp_corr_build(tp_corr_table *t, tp_order *o, tp_keyed *recs, size_t n, tp_arena *ar);
/* The position of corr, or SIZE_MAX when no GPU work has it. The search starts at *hint and
 * leaves *hint where it ended. */
size_t tp_corr_find(const tp_corr_table *t, uint64_t corr, size_t *hint);

/* A stage range the walk found: counted by coverage.c once every thread is walked. */
typedef struct tp_stage_cand {
    int stage;
    uint32_t ev;
    int64_t own_ns; /* its duration less what other stages' ranges inside it took */
} tp_stage_cand;

/* The op table by input shape of one model (shapes.c): the ops' stats per (name, shapes) pair,
 * where shapes is the op's "Input Dims" arg (TP_STR_EMPTY when it has none). Used only when the
 * model has that key at all (dims_key): a model without shapes costs one comparison per op. */
typedef struct tp_shape_scan {
    tp_str dims_key;      /* the model's id of "Input Dims", or UINT32_MAX */
    tp_name_stats *stats; /* per pair; .name is the op's name */
    tp_str *shapes;       /* parallel to stats: the pair's shapes */
    tp_str *itypes;       /* parallel to stats: its first call's "Input type", or TP_STR_EMPTY */
    tp_str itype_key;     /* the model's id of "Input type", or UINT32_MAX */
    size_t n, cap_stats, cap_shapes, cap_itypes;
    tp_hashtab index; /* (name, shapes) -> pair + 1 */
} tp_shape_scan;

typedef struct tp_walk {
    tp_analysis *a;
    const tp_model *m;
    tp_order order; /* sorting scratch, reused by every pass */
    /* What the passes leave for later passes of this model: every array below that is not a
     * struct of its own (slot_of, stats, the per-step arrays, cands, spans, sync_ends, allocs,
     * flight_self) comes from keep, freed once when the model is done. One thread uses it at a
     * time: the helper while it classifies the GPU's events (stats), this thread otherwise. */
    tp_arena keep;
    /* The running pass's own scratch, freed as soon as it returns (add_model.c's driver). */
    tp_arena *tmp;

    /* distinct names: stats[slot_of[name] - 1]; slot_of[name] == 0 means not seen yet */
    uint32_t *slot_of;
    tp_name_stats *stats;
    size_t nstats, cap_stats;

    tp_str flops_key; /* the model's id of "flops", or UINT32_MAX when no event has one */
    tp_str fcm_key;   /* ... of "flops_fcm" */
    tp_str conc_key;  /* ... of "Concrete Inputs" */
    tp_str itype_key, setup_key; /* of "Input type" and "tprof.setup", likewise */
    tp_str part_key;             /* ... of TP_PART_WHOLE_DUR (tp_call_dur) */
    tp_shape_scan shapes;
    tp_corr_table corr;

    /* steps of this model sorted by start; step_stage[k * nstages + s] is stage s inside k */
    uint32_t *steps;
    size_t nsteps;
    int64_t *step_stage;
    int64_t *step_lead, *step_other; /* per step: tp_step_row.lead_ns and other_ns */
    double *step_flops;              /* per step: tp_step_row.flops */
    double *step_fcm_flops;          /* per step: tp_step_row.fcm_flops */
    tp_stage_cand *cands;            /* stage ranges found by the walks */
    size_t ncands, cap_cands;
    /* every counted stage range clipped to its step: {start as a time key, duration} */
    tp_keyed *spans;
    uint32_t *span_step; /* parallel to spans: the step's index */
    size_t nspans, cap_spans, cap_span_step;
    /* ends of every synchronization call (idle.c) */
    int64_t *sync_ends;
    size_t nsync_ends, cap_sync_ends;
    /* allocations ([memory] events with Bytes > 0, memory.c): event indices grouped by track,
     * each track's in time order, from alloc_start[t] to alloc_start[t + 1]; alloc_bytes is
     * parallel to allocs. NULL when the model has none. */
    uint32_t *allocs;
    int64_t *alloc_bytes;
    size_t *alloc_start;

    /* the flight recorder's triggering step (flight.c): its event, or UINT32_MAX; its span;
     * the self time of each name (parallel to stats) in ranges starting inside it */
    uint32_t flight_ev;
    int64_t flight_ts, flight_end;
    int64_t *flight_self;
    size_t cap_flight_self;

    /* stacks.c: per string id of the model, its id in the analysis' stack tree + 1 (0: not
     * mapped yet); NULL until the first python_function range */
    uint32_t *stack_name;
    /* the module tree's scan of this model (modules.c), NULL when it has no module ranges */
    struct tp_module_scan *mods;

    /* categories classified so far (a small direct-mapped cache: traces hold few) */
    tp_str cat_id[64];
    uint8_t cat_class[64];
} tp_walk;

/* The stats of name, created on first use; NULL when out of memory. */
tp_name_stats *tp_walk_name(tp_walk *s, tp_str name);

/* The TP_NAME_* flags of ns, the row of e's name, worked out at the row's first use. */
static inline unsigned tp_walk_name_flags(const tp_walk *s, tp_name_stats *ns, const tp_event *e) {
    if (!(ns->what & TP_NAME_KNOWN)) ns->what = tp_name_flags(tp_model_str(s->m, e->name));
    return ns->what;
}
/* nesting.c: whether e is an op, a range a launch can be charged to: a host range that is no
 * step, runtime or driver call, python_function, or setup record. */
int tp_walk_is_op(tp_walk *s, const tp_event *e);

/* The length of e's call: its duration, but for a range a streamed window's summary cut into
 * parts (model.h's TP_EVF_PART), which is one call, on its last part, lasting the whole range:
 * -1 on a part before the last (no call). Each part's own time still counts where times add up
 * (totals, self time). */
static inline int64_t tp_call_dur(const tp_walk *s, const tp_event *e) {
    if (e->flags & TP_EVF_PART) return -1;
    if (!(e->flags & TP_EVF_LAST_PART)) return tp_ev_dur(e);
    int64_t whole = tp_part_whole_dur(s->m, e, s->part_key);
    return whole > 0 ? whole : 0;
}
/* The start of e's call: e's, but a last part's range began before it (tp_call_dur). */
static inline int64_t tp_call_ts(const tp_walk *s, const tp_event *e) {
    return e->flags & TP_EVF_LAST_PART ? tp_ev_end(e) - tp_call_dur(s, e) : e->ts;
}

/* Counts an op's range lasting `time` in ns, and its call lasting `call` (tp_call_dur: -1 for
 * none) with flops FLOPs (NaN: it carries none). */
static inline void tp_stats_call(tp_name_stats *ns, int64_t time, int64_t call, double flops) {
    ns->total_ns = tp_add_sat(ns->total_ns, time);
    if (call < 0) return;
    ns->calls++;
    if (ns->calls == 1 || call < ns->min_ns) ns->min_ns = call;
    if (call > ns->max_ns) ns->max_ns = call;
    if (flops != flops) return; /* NaN: no count */
    ns->flops = tp_add_flops(ns->flops, flops);
    ns->flops_time_ns = tp_add_sat(ns->flops_time_ns, call);
}
/* add_model.c: adds one model's stats of an op to its row of the analysis. */
void tp_op_row_add(tp_op_row *r, const tp_name_stats *ns);
/* add_model.c: the row of a table whose rows begin with their char *name, found by key in ix
 * (the row's name is a copy of key), created zeroed if new; NULL when out of memory. */
void *tp_row_for(tp_name_index *ix, void **rows, size_t *n, size_t *cap, size_t elem,
                 const char *key);

/* shapes.c: from the model's "Input Dims" key on, the op table by input shape. */
void tp_shapes_begin(tp_walk *s);
/* shapes.c: counts e (an op's range and call, as tp_stats_call) in its (name, shapes) pair,
 * whose index goes into *pair. 0, or -1 when out of memory. */
int tp_shapes_count(tp_walk *s, const tp_event *e, int64_t time, int64_t call, double flops,
                    uint32_t *pair);
/* shapes.c: the pair op e was counted in, UINT32_MAX when none. */
uint32_t tp_shapes_find(const tp_walk *s, const tp_event *e);
/* shapes.c: the model's pairs added to the analysis' ops_by_shape rows, then freed. 0 or -1. */
int tp_shapes_merge(tp_walk *s);
void tp_shapes_free(tp_shape_scan *sh);
/* shapes.c: ops_by_shape's percentages (of self_sum, Σ self of all ops) and its order. */
void tp_shapes_finish(tp_analysis *a, int64_t self_sum);
/* shapes.c: the analysis' by-shape rows and their index freed. */
void tp_shapes_rows_free(tp_analysis *a);

/* nesting.c: walks one thread's host ranges (idx sorted by tp_order_ranges), charging the
 * thread's allocations (allocs[0..nallocs) in time order, bytes parallel) to the innermost op
 * enclosing each. 0 or -1. */
int tp_nesting_walk(tp_walk *s, const uint32_t *idx, size_t n, const uint32_t *allocs,
                    const int64_t *bytes, size_t nallocs);
/* memory.c: the model's allocations by thread into s->allocs (for the walks). 0 or -1. */
int tp_memory_allocs(tp_walk *s, const uint32_t *mem, size_t n);
/* gpu.c: the length of the union of one device's work intervals work[0..n) (key: the start
 * as a tp_time_key, val: the duration), each clipped to the window [lo, hi); sorts work.
 * 0 or -1. */
int tp_gpu_union(tp_order *o, tp_keyed *work, size_t n, int64_t lo, int64_t hi, int64_t *busy_ns);
/* gpu.c: the part of one piece of work w (as tp_gpu_union's) that runs past `end`, from end on,
 * into *past; 0 when it ends by then. What a window's piece carries to the next (add_model.c's
 * busy time, collectives.c's GPU split). */
int tp_gpu_past(const tp_keyed *w, int64_t end, tp_keyed *past);
/* corr.c: charges each id's GPU work to the op noted with its launch during the walks; a launch
 * with no op around it on its thread, to the op its "External id" names (docs/METRICS.md). 0, or
 * -1 when out of memory. */
int tp_corr_charge(tp_walk *s);
/* memory.c: the peak per (Device Type, Device Id) of the [memory] events mem[0..n), merged
 * into the analysis' memory rows. 0 or -1. */
int tp_memory_peaks(tp_walk *s, const uint32_t *mem, size_t n);
/* nesting.c: the step (index into s->steps) whose [start, end) holds t, or -1. */
ptrdiff_t tp_step_at(const tp_walk *s, int64_t t);
/* evidence.c: notes what range e (not a step) says for the recommendations. is_op: e is an op
 * (not a runtime call, not a python_function); in_optim: an ancestor is an Optimizer.step;
 * op_stat: the stats index of the innermost op enclosing e, or UINT32_MAX. Returns whether e's
 * descendants are inside an Optimizer.step. */
int tp_evidence_open(tp_walk *s, const tp_event *e, tp_name_stats *ns, int is_op, int in_optim,
                     uint32_t op_stat);
/* evidence.c: one call of an op (counted in its row): its dtype, for a matrix op. */
void tp_evidence_call(tp_walk *s, const tp_event *e, tp_name_stats *ns);
/* evidence.c: the "key=value;..." pairs of a "tprof.setup" arg into su (known keys only). */
void tp_setup_parse(tp_setup *su, const char *text);
/* opkind.c: what usually helps an op of this name's kind (a sentence without a final stop). */
const char *tp_op_kind_hint(const char *name);
/* evidence.c: the self time of a python_function range, when it lies inside a step. */
void tp_evidence_python(tp_walk *s, const tp_event *e, int64_t self_ns);
/* stacks.c: the node of a range named name (a model id; python: a python_function range) under
 * parent (TP_STACK_NONE: an outermost frame); TP_STACK_NONE when out of memory. */
uint32_t tp_stacks_walk_node(tp_walk *s, uint32_t parent, tp_str name, int python);
/* stacks.c: one call of name (a model id: an op, or a kernel's GPU work) lasting ns under the
 * caller node (not TP_STACK_NONE). 0 or -1. */
int tp_stacks_walk_call(tp_walk *s, tp_str name, int kernel, uint32_t caller, int64_t ns);
/* stacks.c: each kernel among work[0..n) (event indices) charged to the Python stack of its
 * launch (tp_corr_use.py), after the walks. 0 or -1. */
int tp_stacks_kernels(tp_walk *s, const uint32_t *work, size_t n);
/* idle.c: every stream's work in start order, worked out apart from the walks (it does not need
 * their launches, and add_model.c runs it on a second thread meanwhile): work[start[t] ..
 * start[t + 1]) is track t's, key its start (tp_time_key), val its event index. */
typedef struct tp_idle_streams {
    tp_keyed *work;
    size_t *start; /* ntracks + 1 offsets */
    size_t ntracks;
} tp_idle_streams;
/* idle.c: st from the model's GPU work (event indices work[0..n)), with scratch from tmp. 0, or
 * -1 when out of memory (st then empty). */
int tp_idle_sort_streams(tp_idle_streams *st, const tp_model *m, const uint32_t *work, size_t n,
                         tp_arena *tmp);
void tp_idle_streams_free(tp_idle_streams *st);
/* idle.c: the idle gaps of each stream, explained, into the analysis' idle rows. Needs the
 * launches noted by the walks. 0 or -1. */
int tp_gpu_idle(tp_walk *s, const tp_idle_streams *st);
void tp_idle_carry_free(struct tp_idle_carry *c);
/* The row of device pid (its idle breakdown, busy and window), created on first use; NULL when
 * out of memory. */
tp_idle_row *tp_device_row(tp_analysis *a, int64_t pid);
/* coverage.c: counts the stage ranges the walks found (s->cands), leaving out those inside a
 * range of the same stage on another thread. 0 or -1. */
int tp_stage_count(tp_walk *s);
/* coverage.c: per step, the time no stage range covers (s->step_other), from s->spans. 0 or -1. */
int tp_stage_other(tp_walk *s);
/* stages.c: the index of the first stage with a pattern matching name, or -1. */
int tp_stage_of(const tp_analysis *a, const char *name);
/* mfu.c: achieved FLOP/s and MFU, overall and per step, from the finished figures. */
void tp_mfu(tp_analysis *a);
/* ranks.c: adds m to its rank's sub-analysis (per_rank analyses). 0, or -1 out of memory. */
int tp_ranks_add_model(tp_analysis *a, const tp_model *m, const char *path);
/* ranks.c: with two ranks or more, summarises them into a->ranks (before the recommendations);
 * with TP_PER_RANK_SELF, the analysis itself into a->rank_summary. */
void tp_ranks_finish(tp_analysis *a);
void tp_ranks_acc_free(struct tp_rank_accs *r);
/* modules.c: whether the model has module ranges (s->mods then set, else NULL); each thread's
 * ranges (sorted as for tp_nesting_walk) into the module tree; once every thread is walked and
 * the launches charged, backward nodes joined to their modules and GPU work to both (when ok;
 * the scan is freed either way). 0 or -1. */
int tp_modules_begin(tp_walk *s);
int tp_modules_walk(tp_walk *s, const uint32_t *idx, size_t n);
int tp_modules_link(tp_walk *s, int ok);
/* recommend.c: replaces a->recos from the finished figures. */
void tp_recommend(tp_analysis *a);

/* flight.c: finds the model's flight-recorder step (marked TP_FLIGHT_MARK) once its steps are
 * known; notes a range's self time when it starts inside that step (the walk calls it); adds
 * the flight row once the model's steps are appended from row first_row on. 0 or -1. */
void tp_flight_find(tp_walk *s);
static inline int tp_flight_in(const tp_walk *s, int64_t ts) {
    return s->flight_ev != UINT32_MAX && ts >= s->flight_ts && ts < s->flight_end;
}
int tp_flight_self(tp_walk *s, uint32_t stat, int64_t self);
int tp_flight_add(tp_walk *s, size_t first_row);
void tp_flight_rows_free(tp_analysis *a);

#endif
