/* modules.h - the model's module tree (modules.c): each nn.Module's forward and backward time,
 * calls, FLOPs and GPU time, self and total, and the ops directly inside it (docs/METRICS.md,
 * "Module tree").
 *
 * Module ranges are Kineto's with_modules ranges ("nn.Module: Linear_0", python_function) and
 * tprof.torch's (user_annotation ranges named by the module's path, "Net.encoder.0"). A module's
 * node in the tree is (its parent's node, its name): the same module called from two parents is
 * two nodes. Backward ops join the module whose forward made them through autograd's link, the
 * "Sequence number" of the forward op and of the backward node ("Fwd thread id" nonzero). */
#ifndef TP_ANALYSIS_MODULES_H
#define TP_ANALYSIS_MODULES_H

#include "analysis/names.h"

#include <stddef.h>
#include <stdint.h>

/* An op directly inside a module's forward (the outermost op below it, no module between), or a
 * backward node (its outermost linked range) attributed to the module. */
typedef struct tp_module_op {
    char *key;        /* "<module>\x1f<backward><name>", its key (modules.c) */
    const char *name; /* in key */
    size_t module;    /* its row in tp_modules.rows */
    int backward;     /* 1: a backward node; 0: a forward op */
    uint64_t calls;
    int64_t total_ns;
    double flops;   /* FLOPs of the ranges inside it (itself included) */
    int64_t gpu_ns; /* GPU work launched from inside it */
    uint64_t kernels;
} tp_module_op;

/* One node of the tree. *_self: this module alone, its child modules left out; the others: its
 * subtree. Forward times are its ranges' durations; backward times are those of the backward
 * nodes attributed to it (self) and to its subtree. */
typedef struct tp_module_row {
    char *key;        /* "<parent>\x1f0<name>", its key (modules.c) */
    const char *name; /* in key: as recorded, less Kineto's "nn.Module: " */
    size_t parent;    /* its parent's row, SIZE_MAX for a root */
    size_t depth;     /* 0 for a root */
    size_t pos;       /* its place in tp_modules.order (set by finish) */
    uint64_t calls;
    int64_t fwd_ns, fwd_self_ns;
    uint64_t bwd_calls; /* backward nodes attributed to it alone */
    int64_t bwd_ns, bwd_self_ns;
    double flops, flops_self;
    int64_t gpu_ns, gpu_self_ns;
    uint64_t kernels, kernels_self;
} tp_module_row;

typedef struct tp_modules {
    tp_module_row *rows; /* in order of first appearance */
    size_t n, cap;
    size_t *order; /* the rows depth first, children in order of appearance (set by finish) */
    tp_module_op *ops;
    size_t nops, cap_ops;
    size_t *ops_order; /* the ops by (module's place, forward first, total descending) (finish) */
    uint64_t bwd_unlinked; /* linked backward nodes whose forward op is in no module range */
    int64_t bwd_unlinked_ns;
    tp_name_index ix, ops_ix; /* private: rows and ops by key */
} tp_modules;

/* Sums the subtrees, puts rows and ops in order. 0, or -1 when out of memory (the renderers
 * then leave the tree out). */
int tp_modules_finish(tp_modules *t);
void tp_modules_free(tp_modules *t);

#endif
