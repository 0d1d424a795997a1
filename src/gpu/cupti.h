/* cupti.h - the GPU sources inside src/gpu: the CUPTI activity source and Nsight capture windows.
 *
 * attach.c joins them to a session (the recorder sees only gpu.h); the GPU tests drive them
 * directly. Built only where CUDA's headers are; nothing here links a CUDA library. */
#ifndef TP_GPU_CUPTI_H
#define TP_GPU_CUPTI_H

#include "record/gpu_calls.h"
#include "record/source.h"

#include <stdint.h>

typedef struct tp_gpu_opts {
    int required;                  /* gpu: on (warn loudly if unavailable) vs auto */
    const char *library;           /* explicit libcupti path or NULL */
    const char *const *extra_dirs; /* more folders to search, NULL-terminated, or NULL */
    int64_t (*now_ns)(void);       /* the session clock */
    int graph_level;               /* cuda_graphs: graph (one record per graph launch) */
    size_t max_pending; /* records held for their window at most, beyond dropped (0: 4 M) */
} tp_gpu_opts;

/* Loads and initialises CUPTI and fills *src (see src/record/source.h). 0, or -1 after one warning
 * naming the cause (no libcupti, no driver, no GPU, another subscriber such as Nsight Systems or
 * torch.profiler already holds CUPTI); tprof then continues CPU-only. With required == 0 (auto),
 * a machine without the NVIDIA driver returns -1 without a warning: nothing to profile there.
 *
 * At most one CUPTI source exists at a time (CUPTI has one set of callbacks per process); a second
 * create while one is alive fails with a warning. src->shutdown releases it. */
int tp_cupti_source_create(const tp_gpu_opts *o, tp_source *src);

/* Nsight mirroring (config `nsight: true`). tp_nsight_enable(1) turns tp_nvtx_push/pop (gpu.h)
 * and tp_nsight_window on; each is a no-op while off or when no CUDA runtime or NVTX tool is
 * present. tp_nsight_window(1) at a window's start and (0) at its end call cudaProfilerStart/Stop,
 * so `nsys profile --capture-range=cudaProfilerApi` captures the same steps. */
void tp_nsight_enable(int on);
void tp_nsight_window(int begin);

#endif
