/* fake_cuda.c - a stand-in NVIDIA driver (built as libcuda.so.1) for tests without a GPU.
 *
 * One device shaped like an H100 (FAKE_CUDA_DEVICES=<n> for n of them; 0 makes cuInit report
 * CUDA_ERROR_NO_DEVICE). cuProfilerStart/Stop append "start"/"stop" lines to $FAKE_CUDA_LOG. */
#include "fake_log.h"

#include <cuda.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAKE_API __attribute__((visibility("default")))

static int devices(void) {
    const char *v = getenv("FAKE_CUDA_DEVICES");
    return v && *v ? atoi(v) : 1;
}

FAKE_API CUresult cuInit(unsigned int flags) {
    (void)flags;
    return devices() > 0 ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

FAKE_API CUresult cuDeviceGetCount(int *n) {
    *n = devices();
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
    if (ordinal < 0 || ordinal >= devices()) return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
    snprintf(name, (size_t)len, "Fake H100 #%d", dev);
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
    (void)dev;
    *bytes = 85018279936u;
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev) {
    (void)dev;
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *v = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *v = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *v = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        *v = 2048;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
        *v = 32;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
        *v = 65536;
        break;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
        *v = 233472;
        break;
    case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
        *v = 1024;
        break;
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuGetErrorName(CUresult r, const char **s) {
    *s = r == CUDA_ERROR_NO_DEVICE ? "CUDA_ERROR_NO_DEVICE" : "CUDA_ERROR_UNKNOWN";
    return CUDA_SUCCESS;
}

FAKE_API CUresult cuProfilerStart(void);
FAKE_API CUresult cuProfilerStop(void);
CUresult cuProfilerStart(void) {
    fake_log("FAKE_CUDA_LOG", "cuProfilerStart", NULL);
    return CUDA_SUCCESS;
}
CUresult cuProfilerStop(void) {
    fake_log("FAKE_CUDA_LOG", "cuProfilerStop", NULL);
    return CUDA_SUCCESS;
}
