/* internal.h - what the passes over one model share inside src/analysis (nothing outside uses it).
 *
 * tp_analysis_add_model (analysis.c) classifies a model's events once into index lists, then
 * hands this scan to the passes: nesting.c (self time, ops, stages, launch attribution), gpu.c
 * (busy time), memory.c (peaks). Everything here is scratch freed when the model is done; what
 * the analysis keeps is copied into its rows by name. */
#ifndef TP_ANALYSIS_INTERNAL_H
#define TP_ANALYSIS_INTERNAL_H

#include "analysis/analysis.h"
#include "analysis/names.h"
#include "analysis/order.h"

#include <stdint.h>

/* Durations and ends saturate instead of overflowing, so absurd input cannot trigger undefined
 * behaviour; a negative duration counts as zero. */
static inline int64_t tp_add_sat(int64_t a, int64_t b) {
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}
static inline int64_t tp_ev_dur(const tp_event *e) {
    return e->dur > 0 ? e->dur : 0;
}
static inline int64_t tp_ev_end(const tp_event *e) {
    return tp_add_sat(e->ts, tp_ev_dur(e));
}

/* The analysis' own state behind tp_analysis.priv. */
struct tp_analysis_priv {
    tp_name_index ops_ix, kernels_ix; /* row name -> index into ops / kernels */
    char ***patterns;                 /* per stage, its patterns (copied) */
    size_t *npatterns;
    int told_failed; /* the incomplete-results warning was added */
};

enum { TP_STAGE_UNKNOWN = -2 }; /* tp_name_stats.stage before the name was matched */

/* Everything one model says about one distinct name, as an op and as a kernel. */
typedef struct tp_name_stats {
    tp_str name;
    int stage; /* index into the analysis' stages, -1 none, TP_STAGE_UNKNOWN not yet matched */
    uint64_t calls;
    int64_t total_ns, self_ns, min_ns, max_ns;
    double flops;
    int64_t flops_time_ns;
    int64_t gpu_ns;
    uint64_t kernels;
    uint64_t kcalls;
    int64_t ktotal_ns, kmin_ns, kmax_ns;
} tp_name_stats;

/* GPU work sharing one correlation id, and the host range that launched it. */
typedef struct tp_corr_entry {
    uint64_t corr;   /* 0 marks an empty slot */
    int64_t gpu_ns;  /* summed duration of the device work with this id */
    uint32_t count;  /* device ranges with this id */
    uint32_t launch; /* event index of the first host range with this id, or UINT32_MAX */
} tp_corr_entry;

/* Dense when the ids are compact (CUPTI counts them up from 1): slots[corr - base], visited in
 * nearly increasing order as the events are. Otherwise hashed: nslots is a power of two, at
 * least twice the entries. */
typedef struct tp_corr_map {
    tp_corr_entry *slots;
    size_t nslots;
    uint64_t base;
    int dense;
} tp_corr_map;

/* For `entries` ids between lo and hi. */
int tp_corr_map_init(tp_corr_map *map, size_t entries, uint64_t lo, uint64_t hi);
void tp_corr_map_free(tp_corr_map *map);
tp_corr_entry *tp_corr_map_get_hashed(tp_corr_map *map, uint64_t corr, int insert);

/* The entry of corr (nonzero), added when insert is set; NULL when absent. The dense case is
 * inline: it runs once per launch and per device range. */
static inline tp_corr_entry *tp_corr_map_get(tp_corr_map *map, uint64_t corr, int insert) {
    if (!map->dense) return tp_corr_map_get_hashed(map, corr, insert);
    if (corr - map->base >= map->nslots) return NULL; /* also below base: the difference wraps */
    tp_corr_entry *e = &map->slots[corr - map->base];
    if (e->corr != corr) {
        if (!insert) return NULL;
        *e = (tp_corr_entry){.corr = corr, .launch = UINT32_MAX};
    }
    return e;
}

typedef struct tp_scan {
    tp_analysis *a;
    const tp_model *m;
    tp_order order; /* sorting scratch, reused by every pass */

    /* distinct names: stats[slot_of[name] - 1]; slot_of[name] == 0 means not seen yet */
    uint32_t *slot_of;
    tp_name_stats *stats;
    size_t nstats, cap_stats;

    tp_str flops_key; /* the model's id of "flops", or UINT32_MAX when no event has one */
    tp_corr_map corr;

    /* steps of this model sorted by start; step_stage[k * nstages + s] is stage s inside k */
    uint32_t *steps;
    size_t nsteps;
    int64_t *step_stage;

    /* categories classified so far (a small direct-mapped cache: traces hold few) */
    tp_str cat_id[64];
    uint8_t cat_class[64];
} tp_scan;

/* The stats of name, created on first use; NULL when out of memory. */
tp_name_stats *tp_scan_name(tp_scan *s, tp_str name);

/* nesting.c: walks one thread's host ranges (idx sorted by tp_order_ranges). 0 or -1. */
int tp_nesting_walk(tp_scan *s, const uint32_t *idx, size_t n);
/* gpu.c: the union of each device's work intervals, summed; work holds the indices of every
 * kernel, copy and set, tracks their tracks. Sets *devices to the number of devices. 0 or -1. */
int tp_gpu_busy(tp_scan *s, const uint32_t *work, const uint32_t *tracks, size_t n,
                int64_t *busy_ns, size_t *devices);
/* memory.c: the peak per (Device Type, Device Id) of the [memory] events mem[0..n), merged
 * into the analysis' memory rows. 0 or -1. */
int tp_memory_peaks(tp_scan *s, const uint32_t *mem, size_t n);
/* stages.c: the index of the first stage with a pattern matching name, or -1. */
int tp_stage_of(const tp_analysis *a, const char *name);
/* recommend.c: replaces a->recos from the finished figures. */
void tp_recommend(tp_analysis *a);

#endif
