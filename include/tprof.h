/* tprof.h - the public API of libtprof, a profiler for machine-learning training loops.
 *
 * This is the only header tprof installs. Everything it declares starts with tprof_ or TPROF_;
 * everything else in the library is private. Typical use:
 *
 *     int main(int argc, char **argv) {
 *         tprof_init(&argc, argv);            // reads YAML, TPROF_* and --profiling.* arguments
 *         for (int step = 0; step < steps; step++) {
 *             { TPROF_ZONE("dataloader"); load_batch(); }
 *             { TPROF_ZONE("forward");    forward(); }
 *             { TPROF_ZONE("backward");   backward(); }
 *             { TPROF_ZONE("optimizer");  sgd(); }
 *             tprof_step();                   // ends step k, begins step k+1
 *         }
 *         tprof_shutdown();                   // writes the last window, prints the summary
 *     }
 *
 * Contract: every function is safe to call in every state (before tprof_init, after
 * tprof_shutdown, when profiling is disabled) and from any thread, unless its comment names a
 * thread. A call out of place (a tprof_end with no range open, tprof_step before tprof_init) does
 * nothing and warns once. No call ever aborts or exits the host program; problems are reported
 * once as a "tprof: ..." line on stderr. There is one session per process at a time; a child
 * made by fork() records nothing (its parent's session goes on).
 *
 * Ownership: a string passed in is copied before the call returns, except the name given to
 * tprof_begin / TPROF_BEGIN / TPROF_ZONE, which is kept by pointer (see Ranges). Strings returned
 * belong to tprof unless the comment says the caller frees them.
 *
 * Cost: while no session is active, each range call is one relaxed load and a predictable branch,
 * inlined here. While recording, a range costs about two clock reads.
 *
 * Names: tprof_x and TPROF_X are the API. A name ending in an underscore (tprof_begin_,
 * tprof_active_, tprof_zone_, TPROF_CAT_, ...) is internal: it is here only because the inline
 * functions and macros need it, and may change in any release; do not call or use it directly.
 *
 * Compilers: GCC and Clang (C11 or later, or GNU C; compilers defining __GNUC__ such as Intel's
 * icx also work). The inline checks use GCC's __atomic builtins and TPROF_ZONE the GNU `cleanup`
 * attribute, which ISO C lacks; with any other compiler the header stops at an #error. C++
 * (g++, clang++, nvcc) may include it too: the declarations are extern "C".
 *
 * Compile-time switch: define TPROF_DISABLE before including this header and every TPROF_ macro
 * expands to nothing (its arguments are not evaluated; TPROF_INIT yields 0). The functions stay
 * callable.
 */
#ifndef TPROF_H
#define TPROF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TPROF_VERSION_MAJOR 0
#define TPROF_VERSION_MINOR 1
#define TPROF_VERSION_PATCH 0
#define TPROF_VERSION       "0.1.0" /* of this header; tprof_version() gives the library's */

#if !defined(__GNUC__) && !defined(__clang__)
#error "tprof.h needs GCC or Clang (GNU C: __atomic builtins, the cleanup attribute)"
#endif
#define TPROF_API         __attribute__((visibility("default")))
#define TPROF_LIKELY_0(x) __builtin_expect(!!(x), 0)

/* The version of the library linked at run time, e.g. "0.1.0": TPROF_VERSION as it was when the
 * library was built, which differs from this header's when the program was compiled against
 * another release. A static string; any state, any thread. */
TPROF_API const char *tprof_version(void);

/* ---- Configuration -------------------------------------------------------------------------
 * One set of keys (docs/CONFIG.md lists them), four sources, later sources win:
 * built-in defaults < YAML file (top-level "profiling:" mapping) < environment (TPROF_<KEY>)
 * < command line (--profile, --profiler on, --profiling.<key> <value>, --profiling.<key>=<value>,
 * profiling.<key>=<value>, callbacks.profiler.<key>=<value>: docs/CONFIG.md). Functions
 * returning int give 0 on success and -1 on error; the error (one line naming the key, the value
 * and the source) is then in tprof_config_error(). A NULL cfg gives -1 (or NULL, or "").
 *
 * A tprof_config is a plain object owned by its creator: use it from one thread at a time. It
 * copies every key and value it is given; tprof_start copies it in turn, so it may be changed or
 * freed once the session has started. */

typedef struct tprof_config tprof_config;

TPROF_API tprof_config *tprof_config_new(void);      /* built-in defaults; NULL if out of memory */
TPROF_API void tprof_config_free(tprof_config *cfg); /* NULL is allowed */
/* One key ("wait" or "profiling.wait") set from its text form, as on the command line. */
TPROF_API int tprof_config_set(tprof_config *cfg, const char *key, const char *value);
/* The "profiling:" mapping of the YAML file at path (other top-level keys are ignored). */
TPROF_API int tprof_config_load_yaml(tprof_config *cfg, const char *path);
/* Every TPROF_<KEY> variable of the environment. */
TPROF_API int tprof_config_load_env(tprof_config *cfg);
/* Consumes the tprof arguments from argv (and lowers *argc), leaving the program's own in order.
 * argv's strings are not copied or changed, only the array's order. */
TPROF_API int tprof_config_load_args(tprof_config *cfg, int *argc, char **argv);
/* The last error of a call on cfg, or "" if none; owned by cfg, valid until its next call. */
TPROF_API const char *tprof_config_error(const tprof_config *cfg);
/* The effective configuration as a JSON object; the caller frees it with free(). NULL when out
 * of memory. */
TPROF_API char *tprof_config_to_json(const tprof_config *cfg);

/* ---- Session -------------------------------------------------------------------------------- */

/* Starts a session with a copy of cfg (the caller keeps cfg). Returns 0 when started or when
 * the configuration leaves profiling disabled, -1 when a session is already active, cfg is NULL
 * or invalid, or the output cannot be prepared (after a warning). The calling thread's track
 * carries the ProfilerStep ranges until some thread calls tprof_step. With GPU profiling on, the
 * CUPTI source is started before it returns. */
TPROF_API int tprof_start(const tprof_config *cfg);
/* tprof_start with the configuration of all sources in order: defaults, the YAML file named by
 * TPROF_CONFIG or --profiling.config, the environment, then argv (argc/argv may be NULL; the
 * tprof arguments are taken out as by tprof_config_load_args). On a configuration error it prints
 * "tprof: <error>", starts nothing and returns -1. Call it from main before starting threads
 * that record, as argv is changed in place. */
TPROF_API int tprof_init(int *argc, char **argv);
/* Saves a window that is still recording (marked partial), waits for pending writes, writes the
 * run's files, prints the summary on rank 0 and ends the session. Call it once, from one thread,
 * after the recording threads have stopped calling tprof (their later calls do nothing and warn
 * once). Without a session it does nothing. A later tprof_start begins a new session. */
TPROF_API void tprof_shutdown(void);
/* The last error or warning line, without the "tprof: " prefix; "" if none. A static buffer that
 * the next warning overwrites: copy it before another thread may warn. */
TPROF_API const char *tprof_last_error(void);
/* 1 while events of the current step are being kept (RECORD or RECORD_AND_SAVE), else 0. */
TPROF_API int tprof_is_recording(void);

/* ---- Steps and epochs ----------------------------------------------------------------------- */

/* Steps are driven by one thread: the first to call tprof_step or tprof_epoch in a session.
 * Calls from other threads are ignored with one warning. Each call may open or close a window:
 * the closed window is handed to tprof's writer thread, so the call does not wait for files. */
TPROF_API void tprof_step(void);       /* ends step k, begins step k+1 */
TPROF_API void tprof_epoch(int epoch); /* marks the start of epoch `epoch` (epoch windows only) */

/* ---- The flight recorder (docs/FLIGHT.md) ---------------------------------------------------
 * With flight_recorder: true every step is recorded into a ring of the last flight_steps steps.
 * tprof_flight_save saves the ring, up to now (the current step included, cut at this call), as
 * trace_<n>_flight_<reason>_steps_<a>-<b>.json in the run directory, with the current step marked
 * as the triggering one. reason names the file: 1 to 32 ASCII letters, digits, '_' and '-' (no
 * '.' or '/', so that it cannot change the file's extension, rank part or folder). The call copies
 * the ring's step spans and hands them to tprof's writer thread, which writes the trace: it never
 * waits for the file. Returns 0 when the save is handed over, -1 (after one line on stderr) when
 * no session records, the recorder is off, reason is invalid, or the flight_cooldown_steps /
 * flight_max_saves limits refuse it. Any thread; not from a signal handler (flight_signal: true
 * makes SIGUSR1 save). */
TPROF_API int tprof_flight_save(const char *reason);

/* ---- Ranges --------------------------------------------------------------------------------
 * tprof_begin keeps the pointer: name must stay valid and unchanged until tprof_shutdown (a
 * string literal). tprof_begin_copy copies the name, for names built at run time. Ranges nest
 * per thread: tprof_end closes the innermost range the calling thread opened, so a range begins
 * and ends on the same thread. A range still open when its window closes is cut at the window's
 * end and marked truncated. Any thread may record; each records into its own buffers without
 * locks. */

/* Internal (trailing underscore): the inline functions below call these. */
TPROF_API extern int tprof_active_; /* nonzero while a session is active */
TPROF_API void tprof_begin_(const char *name);
TPROF_API void tprof_begin_copy_(const char *name);
TPROF_API void tprof_end_(void);

static inline int tprof_active(void) {
    return __atomic_load_n(&tprof_active_, __ATOMIC_RELAXED);
}
static inline void tprof_begin(const char *name) {
    if (TPROF_LIKELY_0(tprof_active())) tprof_begin_(name);
}
static inline void tprof_begin_copy(const char *name) {
    if (TPROF_LIKELY_0(tprof_active())) tprof_begin_copy_(name);
}
static inline void tprof_end(void) {
    if (TPROF_LIKELY_0(tprof_active())) tprof_end_();
}

/* ---- Annotations ---------------------------------------------------------------------------
 * FLOPs, arguments and shapes attach to the innermost range open on the calling thread (outside
 * any range they are ignored with one warning). Names, keys and string values are copied. Like
 * ranges, they are kept only while a window records. */

/* The range's floating-point operations ("flops" arg; summed into the FLOP figures). Kept only
 * when with_flops is on. */
TPROF_API void tprof_flops(uint64_t flops);
TPROF_API void tprof_arg_int(const char *key, int64_t value);     /* an integer arg of the range */
TPROF_API void tprof_arg_str(const char *key, const char *value); /* a string arg of the range */
/* Input shapes as a JSON array of arrays, e.g. "[[64, 784], [784, 256]]"; kept as the
 * "Input Dims" argument, as PyTorch writes it, only when record_shapes is on. */
TPROF_API void tprof_shapes(const char *dims_json);
/* A sample of the counter series `name` at this moment (a Chrome counter event). */
TPROF_API void tprof_counter(const char *name, double value);
/* Memory events for a device: -1 is the host, 0.. are CUDA devices. ptr identifies the block
 * (it is never read); freeing a block tprof was not told of (allocated before the session)
 * records nothing. NULL pointers and devices outside -1 .. 63 are ignored. Kept only when
 * profile_memory is on; written as PyTorch's "[memory]" instants. Any thread may free a block
 * another allocated. */
TPROF_API void tprof_alloc(int device, const void *ptr, size_t bytes);
TPROF_API void tprof_free(int device, const void *ptr);
/* Names the calling thread's track in traces. Works in every state, before tprof_init too. */
TPROF_API void tprof_thread_name(const char *name);

/* ---- Collectives ----------------------------------------------------------------------------
 * A collective of a distributed loop (all-reduce, broadcast, barrier ...; MPI, NCCL, your own)
 * marked as a range, so that `tprof analyze` finds the rank the others wait for and `tprof
 * merge` aligns the ranks' clocks (docs/DISTRIBUTED.md). name: "<backend>:<collective>", e.g.
 * "mpi:allreduce" (copied). seq: the collective's number, the same on every rank for the same
 * collective (count the calls of the group: 1, 2, 3 ...). bytes: its payload. group_size: the
 * ranks taking part. async: nonzero when the call only starts it (MPI_Iallreduce, an NCCL call
 * enqueued on a stream): its range then ends when the call returns, and clocks are not aligned
 * from that end. tprof_collective_end closes the range, as tprof_end. */
TPROF_API void tprof_collective_begin(const char *name, int64_t seq, int64_t bytes, int group_size,
                                      int async);
static inline void tprof_collective_end(void) {
    tprof_end();
}

/* ---- Macros --------------------------------------------------------------------------------
 * Each TPROF_X(...) calls tprof_x(...), or expands to nothing under TPROF_DISABLE.
 * TPROF_ZONE(name) opens a range (name kept by pointer, as tprof_begin) that closes when the
 * enclosing block is left by any way but longjmp: the GNU cleanup attribute runs tprof_end then.
 * At most one TPROF_ZONE per line. */

typedef struct tprof_zone_ {
    char unused_;
} tprof_zone_;
static inline tprof_zone_ tprof_zone_begin_(const char *name) {
    tprof_begin(name);
    return (tprof_zone_){0};
}
static inline void tprof_zone_end_(tprof_zone_ *zone) {
    (void)zone;
    tprof_end();
}

#define TPROF_CAT2_(a, b) a##b
#define TPROF_CAT_(a, b)  TPROF_CAT2_(a, b)

#ifndef TPROF_DISABLE
#define TPROF_INIT(argcp, argv) tprof_init((argcp), (argv))
#define TPROF_SHUTDOWN()        tprof_shutdown()
#define TPROF_BEGIN(name)       tprof_begin(name)
#define TPROF_BEGIN_COPY(name)  tprof_begin_copy(name)
#define TPROF_END()             tprof_end()
#define TPROF_ZONE(name)                                                                           \
    tprof_zone_ TPROF_CAT_(tprof_zone_, __LINE__)                                                  \
        __attribute__((cleanup(tprof_zone_end_), unused)) = tprof_zone_begin_(name)
#define TPROF_STEP()                    tprof_step()
#define TPROF_EPOCH(epoch)              tprof_epoch(epoch)
#define TPROF_FLOPS(flops)              tprof_flops(flops)
#define TPROF_ARG_INT(key, value)       tprof_arg_int((key), (value))
#define TPROF_ARG_STR(key, value)       tprof_arg_str((key), (value))
#define TPROF_SHAPES(dims_json)         tprof_shapes(dims_json)
#define TPROF_COUNTER(name, value)      tprof_counter((name), (value))
#define TPROF_ALLOC(device, ptr, bytes) tprof_alloc((device), (ptr), (bytes))
#define TPROF_FREE(device, ptr)         tprof_free((device), (ptr))
#define TPROF_THREAD_NAME(name)         tprof_thread_name(name)
#define TPROF_COLLECTIVE_BEGIN(name, seq, bytes, group_size, async)                                \
    tprof_collective_begin((name), (seq), (bytes), (group_size), (async))
#define TPROF_COLLECTIVE_END() tprof_collective_end()
#else
/* Disabled: nothing is evaluated or called; sizeof keeps the arguments "used" for the compiler. */
#define TPROF_UNUSED_(x)           ((void)sizeof(x))
#define TPROF_INIT(argcp, argv)    (TPROF_UNUSED_(argcp), TPROF_UNUSED_(argv), 0)
#define TPROF_SHUTDOWN()           ((void)0)
#define TPROF_BEGIN(name)          TPROF_UNUSED_(name)
#define TPROF_BEGIN_COPY(name)     TPROF_UNUSED_(name)
#define TPROF_END()                ((void)0)
#define TPROF_ZONE(name)           TPROF_UNUSED_(name)
#define TPROF_STEP()               ((void)0)
#define TPROF_EPOCH(epoch)         TPROF_UNUSED_(epoch)
#define TPROF_FLOPS(flops)         TPROF_UNUSED_(flops)
#define TPROF_ARG_INT(key, value)  (TPROF_UNUSED_(key), TPROF_UNUSED_(value))
#define TPROF_ARG_STR(key, value)  (TPROF_UNUSED_(key), TPROF_UNUSED_(value))
#define TPROF_SHAPES(dims_json)    TPROF_UNUSED_(dims_json)
#define TPROF_COUNTER(name, value) (TPROF_UNUSED_(name), TPROF_UNUSED_(value))
#define TPROF_ALLOC(device, ptr, bytes)                                                            \
    (TPROF_UNUSED_(device), TPROF_UNUSED_(ptr), TPROF_UNUSED_(bytes))
#define TPROF_FREE(device, ptr) (TPROF_UNUSED_(device), TPROF_UNUSED_(ptr))
#define TPROF_THREAD_NAME(name) TPROF_UNUSED_(name)
#define TPROF_COLLECTIVE_BEGIN(name, seq, bytes, group_size, async)                                \
    (TPROF_UNUSED_(name), TPROF_UNUSED_(seq), TPROF_UNUSED_(bytes), TPROF_UNUSED_(group_size),     \
     TPROF_UNUSED_(async))
#define TPROF_COLLECTIVE_END() ((void)0)
#endif

#ifdef __cplusplus
}
#endif

#endif /* TPROF_H */
