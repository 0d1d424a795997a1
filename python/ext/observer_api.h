/* observer_api.h - what tprof._tprof hands torch's C++ observer (python/observer/observer.cpp):
 * the recorder's calls as a table of function pointers, in a capsule named TP_OBSERVER_CAPSULE.
 *
 * The observer is a module of its own, linked against libtorch, and the extension is the only
 * copy of the library in the process (Python loads modules with RTLD_LOCAL, so the observer
 * cannot link to the extension's symbols): the table is how one reaches the other. It is plain
 * C, included by the C++ observer too. A table whose `size` is smaller than the observer's
 * struct comes from an older extension: the observer then refuses to start. */
#ifndef TP_PY_OBSERVER_API_H
#define TP_PY_OBSERVER_API_H

#include <stddef.h>
#include <stdint.h>

#define TP_OBSERVER_CAPSULE "tprof._tprof.observer_api"
#define TP_OBSERVER_PUSHED  2 /* op_begin's result: the op pushed a CUPTI external id */

typedef struct tp_observer_api {
    size_t size; /* sizeof(tp_observer_api) of the extension that filled it */
    /* An op's range on the calling thread ("cpu_op"), named by a copy of name, with, when
     * seq >= 0, Kineto's "Sequence number" and "Fwd thread id" args. Nonzero when the range is
     * kept (a window records and the budget allows): only then do annotations follow. With
     * TP_OBSERVER_PUSHED set in the result, the op's "External id" went to CUPTI, and op_pop
     * must be called on this thread at its end. end closes the thread's innermost range. */
    int (*op_begin)(const char *name, int64_t seq, int64_t fwd_tid);
    void (*end)(void);
    void (*op_pop)(void);
    /* The clock's ticks now, and a range that began at begin_ticks written whole now
     * ("user_annotation"): it never sits on the thread's stack of ranges. */
    uint64_t (*now)(void);
    void (*complete)(const char *name, uint64_t begin_ticks);
    /* Annotations of the innermost kept range: an integer arg, a string arg (key and value
     * copied). */
    void (*arg_int)(const char *key, int64_t value);
    void (*arg_str)(const char *key, const char *value);
    /* Its inputs, as the bytes of src/record/inputs.h (copied; the window's writer makes Kineto's
     * "Input Dims", "Input type" and "Concrete Inputs" of them with TP_INPUTS_SHAPES, and the
     * op's FLOPs with TP_INPUTS_FLOPS); op is the op's name. */
    void (*inputs)(const char *op, const void *bytes, size_t len, int flags);
    /* Whether torch.profiler's FLOPs formulas (src/model/flops.h, shared with the trace reader)
     * count op `name`: without shapes, only such ops' inputs are recorded (for their FLOPs). */
    int (*flops_counted)(const char *name, size_t len);
    /* An allocation (bytes > 0) or free (bytes < 0) with the allocator's own totals;
     * device -1 is the host. */
    void (*memory)(int device, const void *ptr, int64_t bytes, int64_t total_allocated,
                   int64_t total_reserved);
    /* One warning line, once per distinct text (the library's log). */
    void (*warn)(const char *text);
    /* A range on the calling thread's stack ("user_annotation"), named by a copy of name, ended
     * by end on this thread: one still open when its window closes is cut there and flagged
     * truncated, as every range is (src/record/window.c). */
    void (*begin)(const char *name);
} tp_observer_api;

#endif
