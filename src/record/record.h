/* record.h - per-thread record buffers: what the hot path writes and the rules that make it safe
 * without locks.
 *
 * Each host thread appends 16-byte records to a chunk it owns. A global window generation
 * (tp_gen, 0 = not recording) tells threads which window their records belong to; the writer
 * thread later reads the chunks of a closed generation and turns them into a tp_model.
 *
 * Invariants (the proofs of safety rest on these). Those a few compares can check are asserted
 * (tp_tls_check after each record, and where named below), in Debug and sanitizer builds only:
 * release builds define NDEBUG, and the hot path pays nothing for them.
 *  1. Only a chunk's owner thread writes its records, and only the owner reuses or frees a chunk
 *     while the owner lives. A chunk is reused only once the registry's done generation
 *     (done_gen in thread.c, raised by tp_window_done and tp_gens_release) is >= its gen, i.e.
 *     after the writer finished with that window, so a record written late (after its window
 *     closed) lands in memory nobody else reads any more. Asserted: tp_chunk_take runs on the
 *     owner (its tp_tls_cur), and tp_tls_check's t is the calling thread's.
 *  2. chunk->count is stored with release after the records it counts, and read with acquire:
 *     the writer sees records[0 .. count) complete. Records past the count it read are ignored.
 *     An ordering, not a value, so not asserted: tp_publish is the only store of count while the
 *     chunk records (tp_chunk_take resets it before publishing gen, 3), and every reader loads it
 *     with TP_LOAD_ACQ; the writer asserts count <= TP_CHUNK_RECS.
 *  3. chunk->gen is stored (release) last when a chunk is taken, after count, dropped and
 *     reserved were reset; a reader that sees the new gen sees the reset fields. Also an
 *     ordering: tp_chunk_take is the one place that stores gen, as its last store.
 *  4. In the thread's current chunk, cap - n >= owed at all times: every range kept in this
 *     window has room reserved for its end, so a range whose begin was kept never loses its end.
 *     Asserted by tp_tls_check, with n <= cap <= TP_CHUNK_RECS.
 *  5. Within a window a thread keeps every range it begins until it first runs out of budget;
 *     from then on (drop_depth) it keeps no new record except the ends it owes. Ranges open on the
 *     thread's stack are therefore, bottom to top: those begun before the window, the kept ones
 *     (owed of them), and the dropped ones (deeper than drop_depth).
 *     One exception ends: a thread whose owed ends would not fit in a fresh chunk (ranges nested
 *     about TP_CHUNK_RECS deep) drops only the range that does not fit and those inside it
 *     (`deep` set, counted as too_deep); once its depth is back to drop_depth it keeps again.
 *     So does a thread that ran out of budget in a streamed window (tp_stream_gen, invariant 8)
 *     once its depth is back to drop_depth and the writer has given budget back: it keeps again
 *     in a new chunk, its dropped ranges having all ended.
 *     Asserted by tp_tls_check (owed <= depth: the kept ranges are open ones; deep only while
 *     dropping) and by write_end (an end is written only for a kept range: owed > 0 and
 *     depth <= drop_depth). That the kept ranges lie below the dropped ones follows from
 *     drop_depth being set at the depth where dropping began, and cleared only once the depth is
 *     back to it.
 *  6. Generations are never reused, not even across sessions, so a thread's stale gen can only
 *     differ from the current one. Windows are numbered 1, 2, ... in the order they open; each gap
 *     between windows gets a generation of its own too, marked TP_GEN_IDLE, so that a thread in
 *     step with a gap counts its depth on the fast path. 2^31 - 1 of each can be made in a process
 *     (with the flight recorder, a step each: years at any step rate); next_gen (steps.c)
 *     asserts that none repeats.
 *  7. With the flight recorder on (record/flight.h), every step is a generation of its own, and a
 *     thread leaving one generation for the next while keeping every range (not dropping) carries
 *     its owed ends into a chunk of the new generation, taken at once with room for them, so that
 *     invariant 4 holds from its first record there; when no such chunk can be had, the ranges
 *     become ranges begun before the window, as at any other generation change. Chunks are then
 *     reused once their generation is released (tp_gens_release), not window by window.
 *     Asserted: carry_owed (record.c) checks invariant 4 in the new chunk.
 *  8. A streamed window (the `stream` key, tp_stream_chunks) is read while it records: the writer
 *     takes a thread's chunks of that window other than its newest, which the owner no longer
 *     writes (it writes only its current chunk, always its newest: seq grows), and, once read,
 *     sets the chunk's `streamed` (release) and returns its budget; the owner may then reuse it
 *     at once (acquire), for this window too. A chunk taken again stores seq (release) after
 *     resetting count and streamed, so a writer that reads the new seq (acquire) sees the reset
 *     fields, and one that reads the old seq skips the chunk as read. Asserted: the writer never
 *     reads a chunk twice (its seq is at least the thread's stream_next). It also looks at a
 *     thread's first unread chunk, its newest one included, without taking it: only the first of
 *     its published records (count read with acquire, invariant 2), for the time before which
 *     no later segment starts an event (window.c); the owner goes on writing past them. */
#ifndef TP_RECORD_RECORD_H
#define TP_RECORD_RECORD_H

#include "model/strtab.h"
#include "record/clock.h"

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define TP_LOAD_RLX(p)     __atomic_load_n((p), __ATOMIC_RELAXED)
#define TP_LOAD_ACQ(p)     __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define TP_STORE_RLX(p, v) __atomic_store_n((p), (v), __ATOMIC_RELAXED)
#define TP_STORE_REL(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)
#define TP_LIKELY(x)       __builtin_expect(!!(x), 1)
#define TP_UNLIKELY(x)     __builtin_expect(!!(x), 0)

/* A record: b's top byte is the kind, its low 56 bits a pointer (user-space addresses fit in 56
 * bits on every 64-bit Linux, 5-level paging included). Some kinds are followed by raw records. */
typedef struct tp_rec {
    uint64_t a;
    uint64_t b;
} tp_rec;

enum tp_rec_kind {
    TP_REC_BEGIN = 1, /* a = ticks; name */
    TP_REC_END,       /* a = ticks */
    TP_REC_FLOPS,     /* a = flops, for the innermost kept range */
    TP_REC_ARG_INT,   /* a = value; key */
    TP_REC_ARG_STR,   /* a = value (const char *); key */
    TP_REC_SHAPES,    /* JSON text */
    TP_REC_CATEGORY,  /* the innermost kept range's category text (else user_annotation) */
    TP_REC_COUNTER,   /* a = ticks; name; then {a = the value's bits} */
    TP_REC_MEMORY,    /* a = ticks; payload = device + 1 (| TP_REC_RESERVED); then
                         {a = addr, b = bytes}, {a = total allocated, b = total reserved} */
    TP_REC_ARG_JSON,  /* a = JSON text (const char *); key */
    TP_REC_INPUTS,    /* a = bytes; payload = TP_INPUTS_* flags; then the bytes of an op's
                         inputs (record/inputs.h) in ceil(bytes / 16) records */
};
/* In a TP_REC_MEMORY payload: the allocator reported its reserved bytes (torch's, through
 * tp_memory_reported), written as Kineto's "Total Reserved". */
#define TP_REC_RESERVED   (UINT64_C(1) << 32)
#define TP_REC_KIND_SHIFT 56
#define TP_REC_PAYLOAD    ((UINT64_C(1) << TP_REC_KIND_SHIFT) - 1)

static inline uint64_t tp_rec_word(int kind, uint64_t payload) {
    return (uint64_t)kind << TP_REC_KIND_SHIFT | (payload & TP_REC_PAYLOAD);
}
static inline int tp_rec_kind(const tp_rec *r) {
    return (int)(r->b >> TP_REC_KIND_SHIFT);
}
static inline const char *tp_rec_str(uint64_t word) {
    /* NOLINTNEXTLINE(performance-no-int-to-ptr): records carry pointers packed with a kind */
    return (const char *)(uintptr_t)(word & TP_REC_PAYLOAD);
}

enum { TP_CHUNK_RECS = 4096 }; /* 64 KiB of records */
/* Ranges one thread can keep open at once in a window: their ends, and a begin, fit in a chunk
 * (invariant 4). A range deeper than that is dropped and counted (invariant 5). */
enum { TP_MAX_NESTING = TP_CHUNK_RECS - 1 };

typedef struct tp_chunk {
    struct tp_chunk *next; /* the owner's list; fixed once pushed */
    uint32_t gen;          /* window generation (invariant 3) */
    uint32_t count;        /* records published (invariant 2) */
    uint64_t dropped;      /* events the owner could not keep in this window */
    uint64_t too_deep;     /* of them, those dropped for nesting too deep (invariant 5) */
    uint64_t seq;          /* order of the owner's chunks; stored with release after count,
                              dropped and streamed were reset (a streaming writer reads it
                              while the owner may take the chunk again: invariant 8) */
    uint32_t reserved;     /* max_events budget held; returned once, by whoever exchanges it */
    uint32_t streamed;     /* a streamed window's writer read it: the owner may reuse it now */
    tp_rec recs[TP_CHUNK_RECS];
} tp_chunk;

/* tp_intern's recent copies by the caller's pointer: torch's observer copies every op's name,
 * mostly the same few, and a strcmp with the last copy costs a fraction of a hash lookup. */
enum { TP_RECENT_COPIES = 64 };

typedef struct tp_thread {
    struct tp_thread *next; /* the registry (under thread.c's lock, tp_threads_mutex) */
    tp_chunk *chunks;       /* pushed by the owner with release */
    int64_t tid;
    const char *name;  /* interned in `strings`; stored with release */
    tp_strtab strings; /* owner only: copied names, keys and values; never move */
    struct {
        const char *key, *copy; /* a string the owner passed and its copy in `strings` */
    } recent[TP_RECENT_COPIES]; /* owner only; cleared with `strings` */
    uint64_t next_seq;          /* owner only */
    tp_chunk *cursor;           /* owner only: where the next search for a reusable chunk starts */
    int exited;                 /* set by the thread's exit; the thread is then freed once its
                                   chunks' windows are written */
    uint32_t stream_gen;        /* writer only: the streamed window whose chunks ... */
    uint64_t stream_next;       /* ... of seq below this were read (tp_stream_chunks) */
} tp_thread;

/* The calling thread's recording state (initial-exec TLS: one segment-relative access). */
typedef struct tp_tls {
    tp_rec *recs;       /* the current chunk's records */
    uint32_t n, cap;    /* written / allowed in the current chunk (invariant 4) */
    uint32_t gen;       /* window the chunk belongs to; 0 = none */
    uint32_t owed;      /* ends owed: kept ranges still open in this window */
    int32_t depth;      /* ranges open on this thread in this session */
    int32_t drop_depth; /* INT32_MAX, or the depth at which this window's dropping began */
    int32_t deep;       /* the dropping is for nesting too deep, not budget: it ends (inv. 5) */
    uint32_t deep_cap;  /* cap before that dropping began, restored when it ends */
    tp_chunk *chunk;
    tp_thread *thr;
    uint64_t session; /* tp_session_serial this state belongs to */
} tp_tls;

#define TP_HIDDEN __attribute__((visibility("hidden")))
extern __thread tp_tls tp_tls_cur TP_HIDDEN __attribute__((tls_model("initial-exec")));
extern uint32_t tp_gen TP_HIDDEN; /* a window's generation, a gap's (TP_GEN_IDLE), or 0 */
/* The streamed window's generation (stored before tp_gen), or 0; read on the slow path only. */
extern uint32_t tp_stream_gen TP_HIDDEN;
extern uint64_t tp_session_serial TP_HIDDEN; /* changes at every session start */

#define TP_GEN_IDLE 0x80000000u
static inline int tp_gen_records(uint32_t g) {
    return g != 0 && !(g & TP_GEN_IDLE);
}

/* ---- the hot path's shared pieces (record.c, api.c) ---- */

/* Room for `need` more records beyond the owed ends, in the current window's chunk; NULL when
 * not recording or when the thread is dropping (the drop is then counted). */
tp_rec *tp_room_slow(tp_tls *t, uint32_t need);
static inline tp_rec *tp_room(tp_tls *t, uint32_t need) {
    if (TP_LIKELY(TP_LOAD_RLX(&tp_gen) == t->gen && t->cap - t->n >= t->owed + need))
        return t->recs + t->n;
    return tp_room_slow(t, need);
}
static inline void tp_publish(tp_tls *t, uint32_t k) {
    t->n += k;
    TP_STORE_REL(&t->chunk->count, t->n);
}
/* Invariants 1, 4 and 5 of the calling thread's state, after each record (Debug builds only). */
static inline void tp_tls_check(const tp_tls *t) {
    (void)t;
    assert(t == &tp_tls_cur);                               /* 1: the owner writes */
    assert(t->n <= t->cap && t->cap <= TP_CHUNK_RECS);      /* 4 */
    assert(t->cap - t->n >= t->owed);                       /* 4 */
    assert(t->depth >= 0 && (uint32_t)t->depth >= t->owed); /* 5: kept ranges are open */
    assert(!t->deep || t->drop_depth != INT32_MAX);         /* 5: too deep is a way of dropping */
}
/* Brings t up to date with the session and window (thread registration, depth reset, leaving
 * a closed window's chunk). Returns the current generation. */
uint32_t tp_tls_sync(tp_tls *t);
/* The calling thread's copy of s, stable until the thread's state is freed; NULL if out of
 * memory. Requires a registered thread (after tp_tls_sync in a session). */
const char *tp_intern(tp_tls *t, const char *s);
/* Sets the category of the calling thread's innermost kept range (copied), e.g. "cpu_op" for the
 * ops the Python binding records, as Kineto writes them; ranges default to "user_annotation". */
void tp_range_category(const char *category);
/* An arg of the calling thread's innermost kept range whose value is JSON text (copied), e.g.
 * Kineto's "Input type" list; text that is not JSON is kept as a string. key must live as long
 * as the process (a literal, model/kineto.h's): it is not copied. */
void tp_range_arg_json(const char *key, const char *json);
/* An op's range as torch's observer records it (python/observer): tprof_begin_copy_(name),
 * then its category, Kineto's "cpu_op", and, when seq >= 0, the integer args "Sequence number"
 * and "Fwd thread id", written in one reservation with category and keys as pointers. Returns
 * 1 when the range is kept, so that its annotations may follow; 0 when not (no window records,
 * the thread is dropping). While CUPTI records external correlation ids (tp_opts.ext_corr), a
 * kept op also gets a process-unique "External id", its first arg as in Kineto's traces, pushed
 * to CUPTI: then 1 | TP_OP_PUSHED, and the caller must call tp_op_pop on this thread at the op's
 * end. Call only in an active session. */
#define TP_OP_PUSHED 2
int tp_op_begin(const char *name, int64_t seq, int64_t fwd_tid);
/* Pops the external correlation id of an op begun with TP_OP_PUSHED (on the same thread). */
void tp_op_pop(void);
/* A range that began at begin_ticks (tp_clock_ticks) and ends now, written whole now (name
 * copied; the default category, "user_annotation"): it never sits on the thread's stack, so
 * ranges that begin and end meanwhile, in any order, are not closed by it (torch's
 * record_function ranges, which enclose hooks that end tprof's own ranges: Lightning runs its
 * training step inside Optimizer.step). A begin before the window is the window's start. Call
 * only in an active session; kept only while a window records. */
void tp_range_complete(const char *name, uint64_t begin_ticks);
/* Ends the calling thread's innermost range, as tprof_end does. When that range began before the
 * recording window (a window opened while it was open: an epoch's range and a schedule's first
 * recorded step), it is written now, named `name` (copied), from the window's start to now and
 * flagged truncated, as a range still open when its window closes is; without a name its end
 * would be skipped and the range missing from the window. Call only in an active session. */
void tp_range_end_named(const char *name);
/* The calling thread's n innermost ranges, begun before the recording window and still open,
 * named names[0] (the outermost) .. names[n-1], become ranges of the window: each begins at the
 * window's start, flagged truncated, and ends at its end, or at its own end if that comes first
 * (the host calls it in the window's last step, tp_steps_window_ends: the recorder does not know
 * the names of ranges begun before the window). Nothing is written unless the thread has no
 * range of this window open (their order on its stack would be wrong) and n such ranges.
 * Copies the names. Call only in an active session. */
void tp_ranges_open_cut(const char *const *names, size_t n);
/* A memory event as an allocator reports it with its own totals (torch's c10 memory reporting):
 * bytes > 0 allocated at ptr, < 0 freed; total_allocated and total_reserved as the allocator
 * counts them after the change. Kept only when profile_memory is on and a window records. */
void tp_memory_reported(int device, const void *ptr, int64_t bytes, int64_t total_allocated,
                        int64_t total_reserved);

/* ---- thread registry and chunks (thread.c) ---- */

/* Registers the calling thread (once per thread lifetime). NULL if out of memory. */
tp_thread *tp_thread_register(void);
/* The calling thread joins a new session: the strings it copied for the last one are freed
 * (that session's windows are all written), its name is kept. */
void tp_thread_new_session(tp_thread *thr);
/* A chunk for window gen with up to `want` records of budget (0 if none is left), or NULL when
 * out of memory or, for min > 0, when fewer than min records of budget are left (then nothing is
 * taken: the current chunk stays its owner's newest, invariant 8). */
tp_chunk *tp_chunk_take(tp_thread *thr, tp_chunk *current, uint32_t gen, uint32_t want,
                        uint32_t min);
void tp_budget_reset(int64_t records);
/* 1 when at least `want` records of budget are left now (a hint: another thread may take them). */
int tp_budget_left(uint32_t want);

/* Calls fn for every thread with chunks of the generations lo .. hi (one window's: lo == hi, but
 * for the flight recorder's), with those chunks in recording order. Runs on the writer thread;
 * chunks stay valid until tp_window_done(hi) or, with the flight recorder, until their
 * generation is released. */
typedef void (*tp_chunk_visit)(void *ctx, tp_thread *thr, tp_chunk **chunks, size_t n);
int tp_collect_chunks(uint32_t lo, uint32_t hi, tp_chunk_visit fn, void *ctx);
/* Chunks a thread gives a streamed window's segment at most (4 MB of records), so that a segment's
 * model stays small when the writer has fallen behind: it takes several segments then. */
enum { TP_STREAM_BATCH = 64 };
/* A streamed window's chunks not read yet (record.h, invariant 8), in recording order, thread by
 * thread: each thread's chunks of generation gen other than its newest, up to TP_STREAM_BATCH, or,
 * when `all`, every one (the window closed). Chunks read before `all` are marked streamed once fn
 * returns: their owner may reuse them; those of the final call stay until tp_window_done(gen).
 * Before `all`, fn is called for every thread with records of gen, n possibly 0, and chunks[n]
 * is the thread's first chunk left unread, which fn may only look at: its records[0 .. count)
 * with count read with acquire (invariant 2), as its owner may still be writing it (window.c:
 * what a later segment may still hold). Writer thread only. */
int tp_stream_chunks(uint32_t gen, int all, tp_chunk_visit fn, void *ctx);
/* The flight recorder: chunks of generations up to `upto` may be reused (their budget returns);
 * never lowers what was released. */
void tp_gens_release(uint32_t upto);
/* The writer finished window gen: its chunks' budget returns, their owners may reuse them, and
 * exited threads with nothing left to write are freed. */
void tp_window_done(uint32_t gen);
/* The session ended and every window is written: all budget is released. */
void tp_threads_session_end(void);
/* The registry's lock, for the session's fork handlers only. */
pthread_mutex_t *tp_threads_mutex(void);

#endif
