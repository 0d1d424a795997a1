/* convert.h - CUPTI activity records as tprof model events, and which window each belongs to.
 *
 * Pure code (convert.c, emit.c, gpu_window.c, occupancy.c): no dlopen, no
 * CUPTI calls, so tests drive it with record structs they fill in. The source (cupti.c) reduces
 * each raw record to a tp_cupti_rec as its buffer completes, keeps the reduced records pending,
 * and at each window's collect moves those of the window into the model.
 *
 * Record layouts: only fields whose offsets are the same in every record version since CUDA 11
 * are read (tests/unit/test_gpu_convert.c checks this against the deprecated structs), so
 * records from libcupti 11, 12 and 13 convert alike through the CUDA 13 structs. The graph
 * fields (graphId, graphNodeId) are read too: graphId came in CUDA 11.1's records, so a CUDA 11.0
 * CUPTI's graph ids are not to be trusted. */
#ifndef TP_GPU_CONVERT_H
#define TP_GPU_CONVERT_H

#include "model/model.h"
#include "record/source.h"

#include <cupti.h>
#include <stddef.h>
#include <stdint.h>

/* What the occupancy estimate and deviceProperties need to know about one device. */
typedef struct tp_cupti_dev {
    int64_t id;
    char name[256];
    uint64_t total_mem;
    int cc_major, cc_minor, num_sms;
    int warp_size, max_threads_per_sm, max_blocks_per_sm;
    int regs_per_sm, smem_per_sm, smem_reserved_per_block; /* bytes for smem */
} tp_cupti_dev;

typedef enum tp_cupti_kind {
    TP_CUPTI_KERNEL = 1,
    TP_CUPTI_MEMCPY,
    TP_CUPTI_MEMCPY_P2P,
    TP_CUPTI_MEMSET,
    TP_CUPTI_RUNTIME,
    TP_CUPTI_DRIVER,
    TP_CUPTI_SYNC,
    TP_CUPTI_MEMORY,
    TP_CUPTI_GRAPH,    /* a whole graph launch (cuda_graphs: graph) */
    TP_CUPTI_EXTERNAL, /* an op's external id for a correlation id: no event of its own */
} tp_cupti_kind;

/* One activity record reduced to what conversion needs. Times are on the session clock. */
typedef struct tp_cupti_rec {
    int64_t start, end; /* memory records: start == end == the operation's time */
    uint32_t corr;
    uint8_t kind; /* tp_cupti_kind */
    uint8_t sub;  /* memcpy: copy kind; memset: memory kind; sync: type; memory: operation */
    uint8_t src_kind, dst_kind; /* memcpy memory kinds; memory: memory kind in src_kind */
    uint32_t device, context, stream;
    uint32_t graph_id;   /* GPU work run by a CUDA graph launch: its graph; 0 outside graphs */
    uint64_t graph_node; /* and the node, unique in the process */
    uint64_t ext;        /* the op's "External id" (EXTERNAL; API and GPU work as emitted), or 0 */
    union {
        struct {
            const char *name; /* demangled, owned by the tp_cupti_conv */
            int32_t grid[3], block[3];
            int32_t smem_static, smem_dynamic;
            uint16_t regs;
        } k;
        struct {
            uint64_t bytes;
            uint32_t src_device, dst_device, src_context, dst_context; /* P2P only */
        } copy;
        struct {
            uint32_t cbid, pid, tid;
        } api;
        struct {
            uint32_t event;
        } sync;
        struct {
            uint64_t bytes, addr;
            uint32_t pid;
        } mem;
    } u;
} tp_cupti_rec;

/* State that outlives windows: name caches, devices, context -> device, memory totals. */
typedef struct tp_cupti_conv {
    /* CUPTI's name of an API function ("cudaLaunchKernel_v7000"), or NULL when unknown. */
    const char *(*api_name)(int driver, uint32_t cbid);
    /* __cxa_demangle's signature; NULL leaves kernel names as CUPTI gives them. */
    char *(*demangle)(const char *mangled, char *out, size_t *len, int *status);
    int64_t clock_delta_ns; /* added to every CUPTI time: 0 when CUPTI uses the session clock */
    tp_strtab names;        /* kernel names as given and as shown, API names */
    uint32_t *shown;        /* names id -> id of the name shown for it, + 1 (0 = not yet) */
    size_t cap_shown;
    uint32_t *api_ids; /* (cbid * 2 + driver) -> names id + 1 (0 = not yet) */
    size_t cap_api_ids;
    tp_cupti_dev *devs;
    size_t ndevs;
    uint32_t (*ctx_dev)[2]; /* (context id, device id) pairs seen */
    size_t nctx, cap_ctx;
    int64_t *mem_total; /* bytes allocated, by device id, over the whole session */
    size_t cap_mem_total;
} tp_cupti_conv;

void tp_cupti_conv_init(tp_cupti_conv *c);
void tp_cupti_conv_free(tp_cupti_conv *c);
/* Takes over devs (malloc'd, n entries) as the devices' properties. */
void tp_cupti_conv_set_devices(tp_cupti_conv *c, tp_cupti_dev *devs, size_t n);
/* Adds the known devices to m (its deviceProperties). */
void tp_cupti_add_devices(const tp_cupti_conv *c, tp_model *m);

/* Reduces a raw record. 1 when out holds a record to keep; 0 for kinds that carry no event
 * (contexts, whose device is remembered; records without timestamps; unknown kinds). */
int tp_cupti_reduce(tp_cupti_conv *c, const CUpti_Activity *raw, tp_cupti_rec *out);

/* A model being filled, with the strings every event uses (arg keys, categories) interned once. */
#define TP_CUPTI_NSTRINGS 40
typedef struct tp_cupti_out {
    tp_model *m;
    tp_str s[TP_CUPTI_NSTRINGS];
} tp_cupti_out;
void tp_cupti_out_init(tp_cupti_out *o, tp_model *m);
/* Appends the event of r to o->m with times (session clock) - offset_ns (emit.c). Memory
 * records also move the device's total. 0, or -1 when the model ran out of memory. */
int tp_cupti_emit(tp_cupti_conv *c, tp_cupti_out *o, const tp_cupti_rec *r, int64_t offset_ns);
/* Moves the device's "Total Allocated" by a memory record; returns the new total. Emitting a
 * memory record applies it; records outside every window are applied without an event. */
int64_t tp_cupti_memory_apply(tp_cupti_conv *c, const tp_cupti_rec *r);
/* Both at once: the unit the tests drive with real record structs. 1 appended, 0 nothing, -1. */
int tp_cupti_convert(tp_cupti_conv *c, tp_model *m, const CUpti_Activity *raw, int64_t offset_ns);

/* The name an API record shows: CUPTI's name without its version suffix ("cudaLaunchKernel"). */
const char *tp_cupti_api_shown(tp_cupti_conv *c, int driver, uint32_t cbid);
/* 1 for API functions that launch kernels or graphs (each launch yields at least one record of
 * GPU work with its correlation id: a kernel, or a graph's kernel, copy, set or graph record). */
int tp_cupti_launches_work(int driver, uint32_t cbid);
/* 1 for API records kept: every runtime call but the queries below, and the driver's launches
 * (the DRIVER kind records every driver call the program makes itself). */
int tp_cupti_api_kept(int driver, uint32_t cbid);
/* Runtime queries (cudaGetDevice, cudaGetLastError, ...): left out, at CUPTI where it filters by
 * function and in the reduction. */
extern const uint32_t tp_cupti_runtime_queries[];
extern const size_t tp_cupti_nruntime_queries;
/* The driver's launch functions (cuLaunchKernel, cuGraphLaunch, ...): launches made without the
 * runtime (Triton's, cuBLASLt's), caught by a callback on each of them (cupti.c). */
extern const uint32_t tp_cupti_driver_launches[];
extern const size_t tp_cupti_ndriver_launches;

/* Kineto's "est. achieved occupancy %": the share of an SM's threads the kernel keeps busy,
 * min(blocks per SM, resident blocks) x block threads / max threads per SM, rounded, where
 * resident blocks is the occupancy calculator's limit from threads, blocks, registers and shared
 * memory. -1 when the device's properties are unknown. */
int tp_cupti_occupancy_pct(const tp_cupti_dev *d, int regs_per_thread, int smem_per_block,
                           int block_threads, double blocks_per_sm);

/* ---- Windows -------------------------------------------------------------------------------
 * Records wait in a pending list until the window they belong to is collected:
 *  - host records (API calls, synchronizations) belong to the window their start lies in;
 *  - GPU work belongs to the window of its launch (an API record with the same correlation id),
 *    or, when the launch is not in the window, to the window its start lies in (work launched in
 *    warmup that ran inside the window);
 *  - memory records move the device totals in time order; those inside the window are emitted;
 *  - a driver call made inside a runtime call carries the runtime call's correlation id (a
 *    cudaLaunchKernel's cuLaunchKernel, called back like Triton's): the runtime's record stands
 *    for the pair, and the driver's is dropped.
 * Records that may belong to a later window stay pending; older ones are dropped. */

typedef struct tp_cupti_pending {
    tp_cupti_rec *recs;
    size_t n, cap, max; /* max bounds memory; records beyond it are dropped and counted */
    uint64_t dropped;
} tp_cupti_pending;

void tp_cupti_pending_init(tp_cupti_pending *p, size_t max);
void tp_cupti_pending_free(tp_cupti_pending *p);
void tp_cupti_pending_add(tp_cupti_pending *p, const tp_cupti_rec *r);
/* The flight recorder's ring moved (record/source.h retain): records starting before `before`
 * are dropped, memory ones applied to the device totals first. GPU work launched inside the
 * ring starts after its launch, so it is never among them. */
void tp_cupti_pending_prune(tp_cupti_pending *p, tp_cupti_conv *c, int64_t before);
/* Launches in [start, end) (kernels, graphs) with no record of their GPU work yet: the GPU may
 * still run it. A graph's first record stands for all of it. */
size_t tp_cupti_pending_unfinished(tp_cupti_pending *p, int64_t start, int64_t end);
/* The launches of a streamed window already moved into its segments (correlation id and start),
 * so that work of theirs arriving later still goes to their window, and a driver record of the
 * same call is still left out. Launches that started TP_CUPTI_EMITTED_MS before the settled time
 * are forgotten, so that it stays small however long the window (the source lets a launch go
 * without its work after half that: cupti.c's STREAM_WAIT_MS). */
enum { TP_CUPTI_EMITTED_MS = 4000 };
typedef struct tp_cupti_emitted {
    int64_t window_start_ns; /* the window they belong to (its start_ns) */
    struct tp_cupti_launch {
        uint32_t corr;
        int64_t start;
        uint32_t work_take; /* the take (below) that last brought work of it; 0: none yet */
        int nodes;          /* that work held a graph's nodes: more may come */
    } * launches;           /* sorted by corr */
    size_t n, cap;
    uint32_t takes; /* the window's takes so far */
} tp_cupti_emitted;
void tp_cupti_emitted_free(tp_cupti_emitted *e);

/* Moves the records of window w into m (times - w->model_offset_ns); keeps later ones. API
 * records and GPU work whose correlation id has an external id (an op's, pushed while it ran)
 * get it as their "External id". External ids of calls not yet in a window wait with them; older
 * ones are dropped. With `e` (a streamed window: NULL otherwise), work of the launches moved
 * into its segments goes to w too, and e is emptied. Returns the number of events appended, or
 * -1 when m ran out of memory. */
long tp_cupti_pending_take(tp_cupti_pending *p, tp_cupti_conv *c, tp_model *m,
                           const tp_window_info *w, tp_cupti_emitted *e);
/* A streamed window's segment, while it records (w->end_ns not known yet): moves into m the
 * records of w whose place is final, all those that start before a time S, and returns a time
 * T <= S (session clock): no later take of w holds a record that starts before T, nor GPU work of
 * a launch that starts before T, except work coming after its launch is forgotten (below) and a
 * graph's nodes coming a whole take after the one before. S is the earliest of `upto` and the
 * start of every launch of w whose work has not arrived, that started from `wait_from` on: such a
 * launch waits with every record after it, so that a launch and its work go into the same
 * segment; one older than that goes without its work (which may never come: memory stays
 * bounded), and T stays at or before its start until its work comes or it is forgotten, so that
 * the sink's summary does not cut the window between the two. A graph's nodes come one by one as
 * they run (per-node tracing): T stays at or before its launch until a take brings none of them.
 * Host records CUPTI had not delivered by `upto` (calls still running then) are the other
 * exception. The launches moved are added to e (emptied first when it held another window's).
 * *appended counts the events, -1 when m ran out of memory. */
int64_t tp_cupti_pending_take_settled(tp_cupti_pending *p, tp_cupti_conv *c, tp_model *m,
                                      const tp_window_info *w, int64_t upto, int64_t wait_from,
                                      tp_cupti_emitted *e, long *appended);

#endif
