/* cupti_ids.h - CUPTI's callback ids of the API functions tprof singles out, one list each:
 * the runtime's queries (left out of the RUNTIME kind) and the driver's launch functions (called
 * back in place of the DRIVER kind). convert.c makes tprof's tables of them, and
 * bench/gpu/cupti_floor.c its own, so that CUPTI alone with "tprof's kinds" is tprof's set by
 * construction. Needs <cupti.h> before it. */
#ifndef TP_GPU_CUPTI_IDS_H
#define TP_GPU_CUPTI_IDS_H

/* Runtime queries: no work, no copy, no allocation, no wait; frequent (PyTorch asks for the
 * current device hundreds of times a step). Kineto's traces leave most of them out too. */
#define TP_CUPTI_RUNTIME_QUERY_IDS                                                                 \
    CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaSetDevice_v3020,    \
        CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,                                           \
        CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,                                        \
        CUPTI_RUNTIME_TRACE_CBID_cudaGetDeviceCount_v3020

/* The driver's kernel and graph launches: those made without the runtime (Triton's, cuBLASLt's),
 * and those the runtime's own launches make. */
#define TP_CUPTI_DRIVER_LAUNCH_IDS                                                                 \
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,           \
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,   \
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,                                         \
        CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,                                    \
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz

#endif
