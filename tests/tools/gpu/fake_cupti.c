/* fake_cupti.c - a stand-in libcupti for tests on machines without a GPU.
 *
 * It exports the CUPTI functions tprof resolves, with the same signatures, and behaves like CUPTI
 * where tprof depends on it: records of enabled kinds only, written into buffers obtained from
 * the registered request callback and handed back through the completion callback on another
 * thread (when full or flushed), timestamps from the registered clock. As in CUPTI, GPU work
 * (kernels, copies, sets) goes to a buffer of its own, apart from API and other host records,
 * and a default flush holds that buffer back while a record in it is incomplete. Tests steer it
 * through environment variables (read at each call) and the fake_cupti_* functions:
 *   FAKE_CUPTI_SUBSCRIBE=<code>      cuptiSubscribe returns it (39: FAKE_CUPTI_HOLDER holds CUPTI)
 *   FAKE_CUPTI_MULTI=1               cuptiSubscribe_v2 knows allowMultipleSubscribers (13.3, r610)
 *   FAKE_CUPTI_STRICT_SIZE=1         without MULTI, cuptiSubscribe_v2 refuses a longer struct
 * Built twice: with cuptiSubscribe_v2, and without it (FAKE_NO_SUBSCRIBE_V2: an older CUPTI)
 *   FAKE_CUPTI_ENABLE_FAIL=<kind>:<code>[,...]   cuptiActivityEnable(kind) returns code
 *   FAKE_CUPTI_NO_TS_CALLBACK=1      no timestamp callback; cuptiGetTimestamp returns 5000
 *   FAKE_CUPTI_NO_CALLBACKS=1        cuptiEnableCallback refuses (CUPTI_ERROR_NOT_SUPPORTED)
 *   FAKE_CUPTI_TEARDOWN=1            "CUDA starts" at the first activity (push) or at
 *                                    fake_cupti_start_cuda, registering its exit teardown as CUDA
 *                                    does; once that ran, a CUPTI call exits 97, as a real flush
 *                                    would hang */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* gettid */
#endif
#include <cupti.h>

#include <assert.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FAKE_API __attribute__((visibility("default")))

#define MAX_KINDS 64
#define MAX_CBID  1024
#define MAX_LATE  256

typedef struct late_rec {
    uint8_t bytes[512];
    size_t size;
    int flushes_left;
} late_rec;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc request_cb;
static CUpti_BuffersCallbackCompleteFunc complete_cb;
static CUpti_TimestampCallbackFunc clock_fn;
static int kind_on[MAX_KINDS];
/* Runtime functions left out while RUNTIME is on (cuptiActivityEnableRuntimeApi(cbid, 0)). */
static uint8_t runtime_api_off[MAX_CBID];
static uint8_t driver_called[MAX_CBID];  /* cuptiEnableCallback on the driver's cbid */
static CUpti_CallbackFunc subscriber_fn; /* tprof's subscriber callback, and its argument */
static void *subscriber_arg;
static int subscribed;
static int torn_down;
typedef struct fake_buffer {
    uint8_t *p; /* being filled; NULL until the first record */
    size_t size, used;
} fake_buffer;
enum { HOST_BUF, DEVICE_BUF };
static fake_buffer bufs[2];
static late_rec late[MAX_LATE];
static int nlate;
static size_t dropped_to_report, disabled_records;

static int env_int(const char *name, int dflt) {
    const char *v = getenv(name);
    return v && *v ? atoi(v) : dflt;
}

static void check_alive(const char *fn) {
    if (!torn_down) return;
    fprintf(stderr, "fake-cupti: %s called after CUDA teardown\n", fn);
    _exit(97);
}

static void teardown(void) {
    torn_down = 1;
}

/* ---- buffers ---- (a record is stored as [uint64 size][bytes, padded to 8]) */

static size_t round8(size_t n) {
    return (n + 7) & ~(size_t)7;
}

typedef struct delivery {
    uint8_t *buf;
    size_t size, used;
} delivery;

static void *deliver_thread(void *arg) {
    delivery *d = arg;
    complete_cb(NULL, 0, d->buf, d->size, d->used);
    return NULL;
}

/* Hands a buffer back on a thread of its own, as CUPTI's worker does. */
static void deliver(delivery d) {
    if (!d.buf) return;
    pthread_t t;
    if (pthread_create(&t, NULL, deliver_thread, &d) == 0)
        pthread_join(t, NULL);
    else
        deliver_thread(&d);
}

static int buffer_of(const void *rec) {
    switch (((const CUpti_Activity *)rec)->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_MEMCPY:
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
    case CUPTI_ACTIVITY_KIND_MEMSET:
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
        return DEVICE_BUF;
    default:
        return HOST_BUF;
    }
}

/* Appends under lock; returns a full buffer to deliver (outside the lock), or an empty one. */
static delivery append(const void *rec, size_t size) {
    fake_buffer *b = &bufs[buffer_of(rec)];
    delivery full = {0};
    if (b->p && b->used + 8 + round8(size) > b->size) {
        full = (delivery){b->p, b->size, b->used};
        b->p = NULL;
    }
    if (!b->p) {
        size_t max_records = 0;
        request_cb(&b->p, &b->size, &max_records);
        b->used = 0;
        if (!b->p || !b->size) {
            b->p = NULL;
            dropped_to_report++;
            return full;
        }
    }
    uint64_t sz = size;
    memcpy(b->p + b->used, &sz, 8);
    memcpy(b->p + b->used + 8, rec, size);
    b->used += 8 + round8(size);
    return full;
}

/* Takes buffer i for delivery if it holds records. */
static int take(int i, delivery *out) {
    if (!bufs[i].p || !bufs[i].used) return 0;
    *out = (delivery){bufs[i].p, bufs[i].size, bufs[i].used};
    bufs[i].p = NULL;
    return 1;
}

/* The graph a kernel, copy or set ran in (0: none), as each record version places it. */
static uint32_t graph_of(const void *rec) {
    switch (((const CUpti_Activity *)rec)->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL:
        return ((const CUpti_ActivityKernel10 *)rec)->graphId;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
        return ((const CUpti_ActivityMemcpy6 *)rec)->graphId;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
        return ((const CUpti_ActivityMemcpyPtoP4 *)rec)->graphId;
    case CUPTI_ACTIVITY_KIND_MEMSET:
        return ((const CUpti_ActivityMemset4 *)rec)->graphId;
    default:
        return 0;
    }
}

/* As CUPTI: a graph is traced at one level, its launch (GRAPH_TRACE on) or its nodes. */
static int produced(const void *rec) {
    CUpti_ActivityKind kind = ((const CUpti_Activity *)rec)->kind;
    if (graph_of(rec) && kind_on[CUPTI_ACTIVITY_KIND_GRAPH_TRACE]) return 0;
    if (kind == CUPTI_ACTIVITY_KIND_RUNTIME) {
        uint32_t cbid = ((const CUpti_ActivityAPI *)rec)->cbid;
        return kind_on[kind] && !(cbid < MAX_CBID && runtime_api_off[cbid]);
    }
    return kind < MAX_KINDS && kind_on[kind];
}

/* ---- control for tests ---- */

FAKE_API void fake_cupti_start_cuda(void);
FAKE_API int fake_cupti_push(const void *rec, size_t size);
FAKE_API int fake_cupti_push_late(const void *rec, size_t size, int flushes);
FAKE_API uint64_t fake_cupti_now(void);
FAKE_API int fake_cupti_kind_enabled(int kind);
FAKE_API int fake_cupti_subscribed(void);
FAKE_API void fake_cupti_drop(size_t n);
FAKE_API size_t fake_cupti_disabled_records(void);
FAKE_API int fake_cupti_other_subscriber(const char *name, int shares);
FAKE_API int fake_cupti_nsubscribers(void);
FAKE_API int fake_cupti_called_back(int cbid);
FAKE_API int fake_cupti_driver_launch(uint32_t cbid, uint32_t corr);

/* Activity happened: a record of an enabled kind lands in the current buffer. 1 if recorded. */
void fake_cupti_start_cuda(void) {
    static int started;
    if (!started && env_int("FAKE_CUPTI_TEARDOWN", 0)) atexit(teardown);
    started = 1;
}

/* The external ids pushed on this thread (cuptiActivityPushExternalCorrelationId), innermost
 * last: as CUPTI does, an API record made while one is pushed comes after a record tying its
 * correlation id to the innermost id, when EXTERNAL_CORRELATION is on. */
static __thread uint64_t ext_stack[64];
static __thread int ext_depth;

static delivery append_external(const void *rec) {
    CUpti_ActivityKind kind = ((const CUpti_Activity *)rec)->kind;
    if ((kind != CUPTI_ACTIVITY_KIND_RUNTIME && kind != CUPTI_ACTIVITY_KIND_DRIVER) || !ext_depth ||
        !kind_on[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION])
        return (delivery){0};
    CUpti_ActivityExternalCorrelation x = {.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                           .externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0,
                                           .externalId = ext_stack[ext_depth - 1],
                                           .correlationId =
                                               ((const CUpti_ActivityAPI *)rec)->correlationId};
    return append(&x, sizeof(x));
}

int fake_cupti_push(const void *rec, size_t size) {
    fake_cupti_start_cuda();
    pthread_mutex_lock(&lock);
    int ok = produced(rec);
    delivery first = {0}, full = {0};
    if (ok) {
        first = append_external(rec);
        full = append(rec, size);
    } else {
        disabled_records++;
    }
    pthread_mutex_unlock(&lock);
    deliver(first);
    deliver(full);
    return ok;
}

/* GPU work still running (a kernel record): it completes only after `flushes` more flushes,
 * and holds back the buffer it is in until then. */
int fake_cupti_push_late(const void *rec, size_t size, int flushes) {
    pthread_mutex_lock(&lock);
    int ok = produced(rec) && nlate < MAX_LATE && size <= sizeof(late[0].bytes);
    if (ok) {
        memcpy(late[nlate].bytes, rec, size);
        late[nlate].size = size;
        late[nlate++].flushes_left = flushes;
    }
    pthread_mutex_unlock(&lock);
    return ok;
}

uint64_t fake_cupti_now(void) {
    return clock_fn ? clock_fn() : 0;
}
int fake_cupti_kind_enabled(int kind) {
    return kind >= 0 && kind < MAX_KINDS && kind_on[kind];
}
int fake_cupti_subscribed(void) {
    return subscribed;
}
void fake_cupti_drop(size_t n) {
    __atomic_add_fetch(&dropped_to_report, n, __ATOMIC_RELAXED);
}
size_t fake_cupti_disabled_records(void) {
    return disabled_records;
}

/* ---- the CUPTI API ---- */

/* The API version of the headers, or FAKE_CUPTI_VERSION (tests of version-gated features). */
FAKE_API CUptiResult cuptiGetVersion(uint32_t *v) {
    *v = (uint32_t)env_int("FAKE_CUPTI_VERSION", CUPTI_API_VERSION);
    return CUPTI_SUCCESS;
}

/* Subscribers: tprof's, and others a test adds (fake_cupti_other_subscriber) as Nsight would. A
 * subscriber that asked for sharing (cuptiSubscribe_v2 with allowMultipleSubscribers, which this
 * fake knows under FAKE_CUPTI_MULTI=1: CUPTI 13.3 on an r610 driver) coexists with others that
 * did; any other finds CUPTI held. */
typedef struct fake_sub {
    char name[64];
    int shares;
} fake_sub;
static fake_sub subs[4];
static int nsubs;

static CUptiResult add_subscriber(const char *name, int shares, char *holder, size_t n) {
    CUptiResult r = (CUptiResult)env_int("FAKE_CUPTI_SUBSCRIBE", CUPTI_SUCCESS);
    for (int i = 0; r == CUPTI_SUCCESS && i < nsubs; i++)
        if (!shares || !subs[i].shares) r = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    const char *forced = getenv("FAKE_CUPTI_HOLDER");
    const char *who = forced ? forced : nsubs ? subs[0].name : NULL;
    if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED && holder && n && who)
        snprintf(holder, n, "%s", who);
    if (r != CUPTI_SUCCESS || nsubs == 4) return r;
    snprintf(subs[nsubs].name, sizeof(subs[nsubs].name), "CUPTI for %s", name ? name : "?");
    subs[nsubs++].shares = shares;
    if (name && strcmp(name, "tprof") == 0) subscribed = 1;
    return r;
}

FAKE_API CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *u) {
    check_alive("cuptiSubscribe");
    subscriber_fn = cb, subscriber_arg = u;
    *s = (CUpti_SubscriberHandle)&subscribed;
    return add_subscriber("tprof", 0, NULL, 0);
}

#ifndef FAKE_NO_SUBSCRIBE_V2
/* The fields after oldSubscriberSize, as CUPTI 13.2 and later have them. A CUPTI that does not
 * know them (FAKE_CUPTI_MULTI unset) reads the struct only as far as it knows, or, under
 * FAKE_CUPTI_STRICT_SIZE=1, refuses a longer one. */
typedef struct params_13_2 {
    CUpti_SubscriberParams base;
    uint8_t allowMultipleSubscribers;
} params_13_2;

FAKE_API CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *s, CUpti_CallbackFunc cb, void *u,
                                       CUpti_SubscriberParams *p) {
    check_alive("cuptiSubscribe_v2");
    subscriber_fn = cb, subscriber_arg = u;
    if (p && p->structSize < CUpti_SubscriberParams_STRUCT_SIZE)
        return CUPTI_ERROR_INVALID_PARAMETER;
    int knows_multi = env_int("FAKE_CUPTI_MULTI", 0);
    if (p && p->structSize > CUpti_SubscriberParams_STRUCT_SIZE && !knows_multi &&
        env_int("FAKE_CUPTI_STRICT_SIZE", 0))
        return CUPTI_ERROR_INVALID_PARAMETER;
    int shares = knows_multi && p &&
                 p->structSize >= offsetof(params_13_2, allowMultipleSubscribers) + 1 &&
                 ((params_13_2 *)p)->allowMultipleSubscribers;
    *s = (CUpti_SubscriberHandle)&subscribed;
    return add_subscriber(p ? p->subscriberName : NULL, shares, p ? p->oldSubscriberName : NULL,
                          p ? p->oldSubscriberSize : 0);
}
#endif

/* Another tool subscribes first, sharing CUPTI (1) or not (0). Its result code. */
FAKE_API int fake_cupti_other_subscriber(const char *name, int shares) {
    return (int)add_subscriber(name, shares, NULL, 0);
}
FAKE_API int fake_cupti_nsubscribers(void) {
    return nsubs;
}

FAKE_API CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle s) {
    (void)s;
    check_alive("cuptiUnsubscribe");
    assert(nsubs <= (int)(sizeof(subs) / sizeof(subs[0])));
    for (int i = nsubs - 1; i >= 0; i--) /* backwards: the last one moves into a checked slot */
        if (strcmp(subs[i].name, "CUPTI for tprof") == 0) subs[i] = subs[--nsubs];
    subscribed = 0;
    return CUPTI_SUCCESS;
}

static CUptiResult enable_result(CUpti_ActivityKind kind) {
    const char *spec = getenv("FAKE_CUPTI_ENABLE_FAIL");
    for (const char *p = spec; p && *p;) {
        int k, code, used = 0;
        if (sscanf(p, "%d:%d%n", &k, &code, &used) != 2) break;
        if (k == (int)kind) return (CUptiResult)code;
        p += used;
        if (*p == ',') p++;
    }
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind) {
    check_alive("cuptiActivityEnable");
    CUptiResult r = enable_result(kind);
    if (r == CUPTI_SUCCESS && kind < MAX_KINDS) kind_on[kind] = 1;
    return r;
}

FAKE_API CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                            uint64_t id) {
    check_alive("cuptiActivityPushExternalCorrelationId");
    if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || ext_depth == 64)
        return CUPTI_ERROR_INVALID_PARAMETER;
    ext_stack[ext_depth++] = id;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                           uint64_t *last) {
    check_alive("cuptiActivityPopExternalCorrelationId");
    if (kind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0 || !ext_depth)
        return CUPTI_ERROR_QUEUE_EMPTY;
    *last = ext_stack[--ext_depth];
    return CUPTI_SUCCESS;
}

FAKE_API int fake_cupti_ext_depth(void);
int fake_cupti_ext_depth(void) {
    return ext_depth;
}

FAKE_API CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind) {
    check_alive("cuptiActivityDisable");
    if (kind < MAX_KINDS) kind_on[kind] = 0;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t enable) {
    check_alive("cuptiActivityEnableRuntimeApi");
    if (cbid < MAX_CBID) runtime_api_off[cbid] = !enable;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle s,
                                         CUpti_CallbackDomain d, CUpti_CallbackId cbid) {
    (void)s;
    check_alive("cuptiEnableCallback");
    if (env_int("FAKE_CUPTI_NO_CALLBACKS", 0)) return CUPTI_ERROR_NOT_SUPPORTED;
    if (d == CUPTI_CB_DOMAIN_DRIVER_API && cbid < MAX_CBID) driver_called[cbid] = enable != 0;
    return CUPTI_SUCCESS;
}

/* Whether the driver function cbid calls the subscriber back. */
FAKE_API int fake_cupti_called_back(int cbid) {
    return cbid >= 0 && cbid < MAX_CBID && driver_called[cbid];
}

/* The program calls the driver's launch function cbid (correlation id corr) on this thread: the
 * subscriber is called back at its entry and exit where that is on, else a DRIVER record lands
 * if the kind is on (times now, this process and OS thread). 1 if either happened. */
FAKE_API int fake_cupti_driver_launch(uint32_t cbid, uint32_t corr) {
    if (cbid < MAX_CBID && driver_called[cbid] && subscriber_fn) {
        CUpti_CallbackData data = {.callbackSite = CUPTI_API_ENTER,
                                   .functionName = "cuLaunchKernel",
                                   .correlationId = corr};
        subscriber_fn(subscriber_arg, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
        data.callbackSite = CUPTI_API_EXIT;
        subscriber_fn(subscriber_arg, CUPTI_CB_DOMAIN_DRIVER_API, cbid, &data);
        return 1;
    }
    uint64_t now = fake_cupti_now();
    CUpti_ActivityAPI a = {.kind = CUPTI_ACTIVITY_KIND_DRIVER,
                           .cbid = cbid,
                           .start = now,
                           .end = now,
                           .processId = (uint32_t)getpid(),
                           .threadId = (uint32_t)gettid(),
                           .correlationId = corr};
    return fake_cupti_push(&a, sizeof(a));
}

FAKE_API CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                    CUpti_BuffersCallbackCompleteFunc done) {
    request_cb = req;
    complete_cb = done;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f) {
    if (env_int("FAKE_CUPTI_NO_TS_CALLBACK", 0)) return CUPTI_ERROR_NOT_SUPPORTED;
    clock_fn = f;
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetTimestamp(uint64_t *ts) {
    *ts = 5000;
    return CUPTI_SUCCESS;
}

/* As CUPTI: a default flush returns the GPU-work buffer only when all its records are complete
 * (no late record pending); a forced flush returns it anyway, late records without timestamps. */
FAKE_API CUptiResult cuptiActivityFlushAll(uint32_t flag) {
    check_alive("cuptiActivityFlushAll");
    int forced = (flag & CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) != 0;
    pthread_mutex_lock(&lock);
    delivery spill[MAX_LATE + 2];
    int nspill = 0;
    for (int i = 0; i < nlate;) {
        if (--late[i].flushes_left > 0 && !forced) {
            i++;
            continue;
        }
        if (late[i].flushes_left > 0) { /* still running: CUPTI has no timestamps for it */
            CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)late[i].bytes;
            k->start = k->end = 0;
        }
        delivery full = append(late[i].bytes, late[i].size);
        if (full.buf) spill[nspill++] = full;
        late[i] = late[--nlate];
    }
    nspill += take(HOST_BUF, &spill[nspill]);
    if (forced || nlate == 0) nspill += take(DEVICE_BUF, &spill[nspill]);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < nspill; i++)
        deliver(spill[i]);
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid,
                                                CUpti_Activity **rec) {
    uint8_t *p = buffer;
    if (*rec) {
        uint64_t size;
        memcpy(&size, (uint8_t *)*rec - 8, 8);
        p = (uint8_t *)*rec + round8(size);
    }
    if (p + 8 > buffer + valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *rec = (CUpti_Activity *)(p + 8);
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *n) {
    (void)ctx, (void)stream;
    *n = __atomic_exchange_n(&dropped_to_report, 0, __ATOMIC_RELAXED);
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetResultString(CUptiResult r, const char **s) {
    switch (r) {
    case CUPTI_SUCCESS:
        *s = "CUPTI_SUCCESS";
        break;
    case CUPTI_ERROR_NOT_SUPPORTED:
        *s = "CUPTI_ERROR_NOT_SUPPORTED";
        break;
    case CUPTI_ERROR_NOT_INITIALIZED:
        *s = "CUPTI_ERROR_NOT_INITIALIZED";
        break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        *s = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
        break;
    case CUPTI_ERROR_UNKNOWN:
        *s = "CUPTI_ERROR_UNKNOWN";
        break;
    default:
        return CUPTI_ERROR_INVALID_PARAMETER;
    }
    return CUPTI_SUCCESS;
}

FAKE_API CUptiResult cuptiGetCallbackName(CUpti_CallbackDomain d, uint32_t cbid,
                                          const char **name) {
    static const struct {
        CUpti_CallbackDomain d;
        uint32_t cbid;
        const char *name;
    } names[] = {
        {CUPTI_CB_DOMAIN_RUNTIME_API, 211, "cudaLaunchKernel_v7000"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, 41, "cudaMemcpyAsync_v3020"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, 131, "cudaStreamSynchronize_v3020"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, 20, "cudaMalloc_v3020"},
        {CUPTI_CB_DOMAIN_RUNTIME_API, 311, "cudaGraphLaunch_v10000"},
        {CUPTI_CB_DOMAIN_DRIVER_API, 307, "cuLaunchKernel"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (names[i].d == d && names[i].cbid == cbid) {
            *name = names[i].name;
            return CUPTI_SUCCESS;
        }
    *name = NULL;
    return CUPTI_ERROR_INVALID_PARAMETER;
}

FAKE_API CUptiResult cuptiSetThreadIdType(CUpti_ActivityThreadIdType type) {
    return type == CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM ? CUPTI_SUCCESS
                                                        : CUPTI_ERROR_INVALID_PARAMETER;
}
