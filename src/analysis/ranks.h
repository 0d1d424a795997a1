/* ranks.h - the analysis of several ranks: a per-rank table, the spread of each step across
 * ranks, the straggler the others wait for at collectives, and communication/compute overlap
 * (docs/DISTRIBUTED.md defines each figure; docs/ANALYZE_JSON.md their keys).
 *
 * An analysis made with tp_analysis_opts.per_rank routes each model it is given to a sub-analysis
 * of the model's rank as well (ranks.c) and keeps that rank's collectives (collectives.c). Only
 * summaries survive a rank: when tp_analysis_finish sees two ranks or more it summarises each
 * rank into a tp_rank_row and matches the collectives (straggler.c) into tp_analysis.ranks.
 *
 * Times are integer nanoseconds; a collective's times are absolute (base_ns + ts). */
#ifndef TP_ANALYSIS_RANKS_H
#define TP_ANALYSIS_RANKS_H

#include "model/model.h"

#include <stddef.h>
#include <stdint.h>

/* One collective as a rank saw it. key: its `seq` arg when the trace has one (then keyed is 1),
 * else its position among the rank's collectives of the same kind. name_hash tells order-matched
 * collectives apart. sync: its end is the moment every rank leaves it (a blocking collective
 * range, a communication kernel), so ends can align clocks; an async launch's end cannot. */
typedef struct tp_coll {
    uint64_t key;
    uint64_t name_hash;
    int64_t start_ns, end_ns;
    uint8_t keyed, sync;
} tp_coll;

typedef struct tp_coll_list {
    tp_coll *v;
    size_t n, cap;
} tp_coll_list;

/* collectives.c: appends m's collectives to out. Host ranges with an integer "seq" arg (tprof's
 * "<backend>:<collective>" ranges, tprof_collective_begin) come keyed by seq; without any, the
 * communication kernels (nccl*, rccl*) in order of start; without those, Kineto's
 * record_param_comms ranges in order. 0, or -1 when out of memory. */
int tp_collectives_of(const tp_model *m, tp_coll_list *out);
/* ranks.c: sorts l by key (then start), as matching needs. */
void tp_coll_sort(tp_coll_list *l);
/* Whether a kernel name is a communication kernel (HTA's rule: it contains "nccl"; rccl too). */
int tp_is_comm_kernel(const char *name);

/* GPU time of one model split as Holistic Trace Analysis does, summed over devices. */
typedef struct tp_gpu_split {
    int64_t compute_ns; /* union of kernels that are not communication */
    int64_t comm_ns;    /* union of communication kernels */
    int64_t overlap_ns; /* the part of comm_ns that compute kernels overlap */
    int64_t idle_ns;    /* first work's start to last work's end, less the union of all work */
    int64_t work_ns;    /* union of all work (kernels, copies, sets) */
    struct tp_split_carry *carry; /* a window's pieces so far (tp_model.piece), else NULL */
} tp_gpu_split;

/* collectives.c: adds m's split into *g; a window's pieces, added in order, add up to the
 * window's split. 0, or -1 when out of memory. */
int tp_gpu_split_add(const tp_model *m, tp_gpu_split *g);
void tp_split_carry_free(struct tp_split_carry *c);

typedef struct tp_rank_row {
    int64_t rank;
    size_t steps;
    int64_t steps_total_ns;
    int64_t step_mean_ns, step_p95_ns; /* -1 without steps */
    int64_t *stage_ns;                 /* per stage of tp_ranks.stage_names (the last is other) */
    int64_t compute_ns, communication_ns, idle_ns;
    double overlap_pct; /* -1 without communication kernels */
    int gpu;            /* the rank's traces have GPU work */
    /* steps by number (ascending) and their durations, for the spread */
    int64_t *step_number, *step_dur_ns;
    size_t nstep_numbers;
    tp_coll_list colls; /* sorted by key */
    /* added to colls' times by tp_ranks_align (rank 0's clock); the blocking collectives it
     * rests on, 0 when none matched (the offset is then 0) */
    int64_t clock_offset_ns;
    size_t offset_collectives;
    /* straggler.c: at the collectives matched on every rank, the sum of this rank's waits from
     * its arrival (start) to the last rank's arrival */
    int64_t coll_wait_ns;
} tp_rank_row;

typedef struct tp_spread_row {
    int64_t step;
    int64_t min_ns, max_ns;
    int64_t slowest_rank;
} tp_spread_row;

typedef struct tp_straggler {
    int64_t rank;
    double last_share;    /* 0..1 of matched collectives where it arrives last */
    int64_t mean_late_ns; /* its start less the median of the others' starts, mean */
    double wait_share;    /* the others' waiting for it / their step time */
    size_t collectives;   /* matched on every rank */
    const char *cause;    /* "data_loading", "device", "unknown" */
    char message[384];
} tp_straggler;

typedef struct tp_ranks {
    tp_rank_row *rows; /* by rank ascending */
    size_t n;
    char **stage_names; /* the analysis' stages, then "other" */
    size_t nstage_names;
    tp_spread_row *spread;
    size_t nspread;
    size_t matched; /* collectives matched on every rank */
    int has_straggler;
    tp_straggler straggler;
} tp_ranks;

/* straggler.c: matches the rows' collectives (sorted by key) and fills r->matched and
 * r->straggler. 0, or -1 when out of memory. */
int tp_ranks_straggler(tp_ranks *r);
/* straggler.c: the offsets (ns to add to rank k's times to align it with rows[0]) estimated
 * from the ends of sync collectives matched on both; offsets[k] = 0 when none match. Sets
 * *matched[k] to the count used. 0, or -1 when out of memory. */
int tp_ranks_offsets(const tp_coll_list *lists, size_t n, int64_t *offsets, size_t *matched);
/* straggler.c: moves each row's collectives onto the first row's clock by tp_ranks_offsets'
 * offsets, as `tprof merge` moves the ranks' events, so that arrivals compare on one clock
 * whichever clocks the traces had; sets clock_offset_ns and offset_collectives. Idempotent up
 * to the estimate (a merged trace's ranks move by 0). 0, or -1 when out of memory. */
int tp_ranks_align(tp_ranks *r);

/* ranks.c: completes r, whose rows (two or more, by rank ascending) and stage names are filled
 * (`tprof analyze --summaries` reads them from summary.json): the spread, the clocks aligned,
 * the straggler.
 * 0, or -1 when out of memory. */
int tp_ranks_complete(tp_ranks *r);
/* ranks.c: completes r and makes it a's (finished) ranks, with their recommendations; a owns r
 * afterwards, or r is freed on failure. 0, or -1 when out of memory. */
struct tp_analysis;
int tp_ranks_attach(struct tp_analysis *a, tp_ranks *r);

void tp_ranks_free(tp_ranks *r);

#endif
