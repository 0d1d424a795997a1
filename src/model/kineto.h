/* kineto.h - Kineto's vocabulary: the arg keys, categories and event names that PyTorch's
 * profiler writes and tprof reads and writes alike, spelled once.
 *
 * The reader classifies by them, the recorder and the GPU source write them, the analysis looks
 * them up: a key spelled two ways would make tprof's own traces unreadable to itself. Each list
 * is an X-macro, X(id, text), and each entry becomes a static const char array tp_karg_<id>,
 * tp_kcat_<id> or tp_kname_<id>: arrays rather than pointers, so that TP_KLEN is a constant,
 * memcmp against one compiles to the same word compares as against a literal (the reader's
 * key dispatch, trace/fields.h), and static tables of pointers may name them. */
#ifndef TP_MODEL_KINETO_H
#define TP_MODEL_KINETO_H

#include <string.h>

/* The length of one of the strings below, without its NUL (a constant expression). */
#define TP_KLEN(s) (sizeof(s) - 1)
/* Whether k[0..n) is the string s of the lists below. */
#define TP_KIS(k, n, s) ((n) == TP_KLEN(s) && memcmp((k), (s), TP_KLEN(s)) == 0)

/* Arg keys (docs/ARCHITECTURE.md, "Args"). */
#define TP_KINETO_ARGS(X)                                                                          \
    X(correlation, "correlation")         /* a launch and its GPU work: event.corr, not an arg */  \
    X(input_dims, "Input Dims")           /* an op's input shapes: a JSON array */                 \
    X(concrete_inputs, "Concrete Inputs") /* scalar inputs, for FLOPs by formula */                \
    X(input_type, "Input type")           /* an op's input dtypes: a JSON array ("float", ...) */  \
    X(setup, "tprof.setup") /* the run's setup, "key=value;..." (python/tprof/torch/setup.py) */   \
    X(flops, "flops")                                                                              \
    X(flops_fcm, "flops_fcm") /* tprof's: FlopCounterMode's FLOPs of an op (trace/flops.h) */      \
    X(sequence_number, "Sequence number") /* autograd's link from an op to its backward */         \
    X(fwd_thread_id, "Fwd thread id")                                                              \
    X(external_id, "External id") /* an op's id, pushed to CUPTI: its launches and GPU work */     \
    X(collective_name, "Collective name")                                                          \
    X(seq, "seq") /* a collective's sequence number and whether it ran async */                    \
    X(async, "async")                                                                              \
    X(group_size, "Group size")                                                                    \
    X(device_type, "Device Type") /* memory instants: 0 CPU, 1 CUDA */                             \
    X(device_id, "Device Id")                                                                      \
    X(addr, "Addr")                                                                                \
    X(bytes, "Bytes") /* negative for a free */                                                    \
    X(total_allocated, "Total Allocated")                                                          \
    X(total_reserved, "Total Reserved")

/* Categories ("cat"). */
#define TP_KINETO_CATS(X)                                                                          \
    X(cpu_op, "cpu_op")                   /* an op (aten::...) */                                  \
    X(user_annotation, "user_annotation") /* record_function, and steps */                         \
    X(python_function, "python_function") /* with_stack's Python calls */                          \
    X(kernel, "kernel")                                                                            \
    X(gpu_memcpy, "gpu_memcpy")                                                                    \
    X(gpu_memset, "gpu_memset")                                                                    \
    X(memcpy, "memcpy") /* older Kineto's copies and sets */                                       \
    X(memset, "memset")                                                                            \
    X(gpu_user_annotation, "gpu_user_annotation")                                                  \
    X(cuda_runtime, "cuda_runtime")                                                                \
    X(cuda_driver, "cuda_driver")                                                                  \
    X(cpu_instant_event, "cpu_instant_event") /* memory instants */                                \
    X(trace, "Trace") /* the profiler's own range around the trace: not kept */

/* Event names. */
#define TP_KINETO_NAMES(X)                                                                         \
    X(memory, "[memory]")       /* an allocation or free (TP_MEMORY) */                            \
    X(step, "ProfilerStep#")    /* the prefix of a step's range, then its number */                \
    X(dataloader, "dataloader") /* tprof's data-loading range: the dataloader stage's own name */  \
    /* its copy as TensorBoard's plugin counts data loading (a cpu_op named so): written after     \
     * each dataloader range (export/chrome.c), left out when a trace is read (trace/event.c) */   \
    X(dataloader_twin, "enumerate(DataLoader)#dataloader.__next__")

#define TP_KINETO_ARG(id, text)  static const char tp_karg_##id[] = text;
#define TP_KINETO_CAT(id, text)  static const char tp_kcat_##id[] = text;
#define TP_KINETO_NAME(id, text) static const char tp_kname_##id[] = text;
TP_KINETO_ARGS(TP_KINETO_ARG)
TP_KINETO_CATS(TP_KINETO_CAT)
TP_KINETO_NAMES(TP_KINETO_NAME)
#undef TP_KINETO_ARG
#undef TP_KINETO_CAT
#undef TP_KINETO_NAME

#endif
