/* stacks.h - call stacks (with_stack): which Python stacks called each op and kernel, and where
 * the Python time went, as a tree of frames (docs/METRICS.md, "Call stacks").
 *
 * A stack is a node of one tree shared by every input: a node is (parent, name, python), its
 * path the frames from an outermost python_function range down. The nesting walk (nesting.c)
 * gives a host range a node when it is a python_function range or has one among its ancestors;
 * the frames of the path are the range and its ancestors up to the outermost python_function
 * one, whatever their category (Python frames, and the ops, annotations and runtime calls among
 * them), except steps, which are transparent (a step's self time is its parent's), and ranges
 * that merge into their parent (nesting.c's head), which are their parent's frame. Ranges with
 * no python_function ancestor have no node: a trace without with_stack costs nothing.
 *
 * Each node holds the self time of the ranges with exactly its path: the folded stacks of
 * `tprof analyze --folded` and the report's flame graph. Each (op or kernel name, caller) pair
 * holds the calls and summed durations of that op, or that kernel's GPU work, whose innermost
 * enclosing python_function range (for a kernel: its launch's) is the caller node. */
#ifndef TP_ANALYSIS_STACKS_H
#define TP_ANALYSIS_STACKS_H

#include "model/strtab.h"
#include "util/hashtab.h"

#include <stddef.h>
#include <stdint.h>

#define TP_STACK_NONE UINT32_MAX /* no node: not under a python_function range */

typedef struct tp_stack_node {
    uint32_t parent;  /* TP_STACK_NONE for an outermost frame */
    tp_str name;      /* in tp_stacks.names */
    uint32_t python;  /* 1: a python_function range; 0: a range among Python frames */
    int64_t self_ns;  /* Σ self time of the ranges with exactly this path */
    int64_t total_ns; /* self_ns and its descendants' (set by tp_stacks_finish) */
} tp_stack_node;

typedef struct tp_stack_caller {
    tp_str name;     /* the op's or the kernel's name, in tp_stacks.names */
    uint32_t node;   /* the caller: the innermost python_function node around the call */
    uint32_t kernel; /* 1: GPU work of a kernel launched there; 0: a host range (an op row) */
    uint64_t calls;
    int64_t ns; /* Σ durations of those calls (kernels: of their GPU work) */
} tp_stack_caller;

typedef struct tp_stacks {
    tp_strtab names;
    tp_stack_node *nodes; /* parents before children: a node's parent has a lower index */
    size_t nnodes, cap_nodes;
    tp_hashtab nodes_ix; /* (parent, name, python) -> node + 1 */
    tp_stack_caller *callers;
    size_t ncallers, cap_callers;
    tp_hashtab callers_ix; /* (name, node, kernel) -> caller + 1 */
    uint32_t *order;       /* set by tp_stacks_finish: callers by (kernel, name), most time first */
    size_t norder;
    int64_t total_ns; /* Σ total_ns of the outermost frames (set by tp_stacks_finish) */
} tp_stacks;

/* A new empty tree; NULL when out of memory. */
tp_stacks *tp_stacks_new(void);
void tp_stacks_free(tp_stacks *st);
/* The node (parent, name, python), created with no time if new (name: an id of st->names);
 * TP_STACK_NONE when out of memory. */
uint32_t tp_stacks_node(tp_stacks *st, uint32_t parent, tp_str name, int python);
/* Adds one call of name (an op, or a kernel's GPU work) lasting ns to its row under caller.
 * 0, or -1 when out of memory. */
int tp_stacks_call(tp_stacks *st, tp_str name, int kernel, uint32_t caller, int64_t ns);
/* Sorts the callers for tp_stacks_callers and sums the nodes' totals (idempotent: models may be
 * added after). 0 or -1. */
int tp_stacks_finish(tp_stacks *st);
/* The callers of the op (kernel 0) or kernel (1) named name, most time first, after
 * tp_stacks_finish: *n of them (0 and NULL when none). Entries of st->order. */
const uint32_t *tp_stacks_callers(const tp_stacks *st, const char *name, int kernel, size_t *n);
/* The depth of node (1 for an outermost frame); 0 for TP_STACK_NONE. */
size_t tp_stacks_depth(const tp_stacks *st, uint32_t node);

#endif
