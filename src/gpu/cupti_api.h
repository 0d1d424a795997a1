/* cupti_api.h - the CUDA libraries tprof loads at run time: libcupti's function table, and the
 * driver (libcuda) queries behind device properties and the causes named in warnings.
 *
 * Nothing is linked: every function is resolved with dlsym, so libtprof loads and runs where CUDA
 * is absent. Functions marked optional may be NULL (older libcupti). */
#ifndef TP_GPU_CUPTI_API_H
#define TP_GPU_CUPTI_API_H

#include "gpu/convert.h"

#include <cupti.h>
#include <stddef.h>

typedef struct tp_cupti_api {
    void *handle;
    char path[512];                               /* the file loaded (as given to dlopen) */
    CUptiResult (*GetVersion)(uint32_t *version); /* optional */
    CUptiResult (*Subscribe)(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *user);
    CUptiResult (*Subscribe_v2)(CUpti_SubscriberHandle *sub, CUpti_CallbackFunc cb, void *user,
                                CUpti_SubscriberParams *params); /* optional */
    CUptiResult (*Unsubscribe)(CUpti_SubscriberHandle sub);
    CUptiResult (*EnableCallback)(uint32_t enable, CUpti_SubscriberHandle sub,
                                  CUpti_CallbackDomain d, CUpti_CallbackId cbid); /* optional */
    CUptiResult (*ActivityEnable)(CUpti_ActivityKind kind);
    CUptiResult (*ActivityDisable)(CUpti_ActivityKind kind);
    CUptiResult (*ActivityEnableRuntimeApi)(CUpti_CallbackId cbid, uint8_t enable); /* optional */
    CUptiResult (*ActivityRegisterCallbacks)(CUpti_BuffersCallbackRequestFunc request,
                                             CUpti_BuffersCallbackCompleteFunc complete);
    CUptiResult (*ActivityRegisterTimestampCallback)(CUpti_TimestampCallbackFunc f); /* optional */
    CUptiResult (*ActivityFlushAll)(uint32_t flag);
    CUptiResult (*ActivityGetNextRecord)(uint8_t *buffer, size_t valid, CUpti_Activity **record);
    CUptiResult (*ActivityGetNumDroppedRecords)(CUcontext ctx, uint32_t stream, size_t *dropped);
    CUptiResult (*GetResultString)(CUptiResult result, const char **str);
    CUptiResult (*GetCallbackName)(CUpti_CallbackDomain d, uint32_t cbid,
                                   const char **name);               /* opt. */
    CUptiResult (*SetThreadIdType)(CUpti_ActivityThreadIdType type); /* opt. */
    CUptiResult (*GetTimestamp)(uint64_t *ts);                       /* opt. */
    CUptiResult (*ActivityPushExternalCorrelationId)(CUpti_ExternalCorrelationKind kind,
                                                     uint64_t id); /* optional */
    CUptiResult (*ActivityPopExternalCorrelationId)(CUpti_ExternalCorrelationKind kind,
                                                    uint64_t *last); /* optional */
} tp_cupti_api;

typedef enum tp_cupti_load_status {
    TP_CUPTI_LOADED = 0,
    TP_CUPTI_NOT_FOUND = -1, /* no candidate file exists */
    TP_CUPTI_BROKEN = -2,    /* a file exists but does not load, or lacks functions */
} tp_cupti_load_status;

/* Loads libcupti into api. Search order: the explicit path alone when given; otherwise a libcupti
 * this process already loaded (a second CUPTI in one process would fight the first), then
 * $CUDA_HOME/extras/CUPTI/lib64 and $CUDA_HOME/lib64, the same under the compile-time
 * TPROF_CUDA_HOME, the default library path, and extra_dirs; in each place libcupti.so, .so.13,
 * .so.12, .so.11. On failure why holds one line naming the file or the places searched. */
tp_cupti_load_status tp_cupti_load(tp_cupti_api *api, const char *explicit_path,
                                   const char *const *extra_dirs, char *why, size_t whylen);

/* CUPTI's name of a result code ("CUPTI_ERROR_NOT_INITIALIZED"), or "CUPTI error <n>". */
const char *tp_cupti_result_str(const tp_cupti_api *api, CUptiResult r, char *buf, size_t n);

/* Why CUDA cannot be profiled, as the driver sees it: "no NVIDIA driver (...)", "no CUDA-capable
 * GPU (...)", or "" when the driver loads and reports a device. Loads libcuda when needed. */
void tp_cuda_diagnose(char *why, size_t n);

/* 1 when an NVIDIA driver (libcuda.so.1) can be loaded. */
int tp_cuda_driver_present(void);

/* The properties of every device of the driver this process already loaded (libcuda is never
 * loaded here: the program loads it when it first uses CUDA). 0 with *devs (malloc'd, *n
 * entries), or -1 when the driver is not loaded yet or reports no device. */
int tp_cuda_devices(tp_cupti_dev **devs, size_t *n);

/* dlsym into a function pointer of any type (ISO C has no cast from void * to functions). */
int tp_dlsym_fn(void *handle, const char *name, void *fn_ptr);

#endif
