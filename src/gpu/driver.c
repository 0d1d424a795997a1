/* driver.c - what tprof asks the CUDA driver (libcuda): device properties for the trace's
 * deviceProperties and the occupancy estimate, and the reason CUPTI cannot start.
 *
 * Device queries only use a driver the program already loaded, so tprof never initialises CUDA
 * in a process that does not use it; only the failure path (naming a cause) loads libcuda. */
#include "gpu/cupti_api.h"

#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct driver {
    CUresult (*Init)(unsigned int flags);
    CUresult (*DeviceGetCount)(int *count);
    CUresult (*DeviceGet)(CUdevice *dev, int ordinal);
    CUresult (*DeviceGetName)(char *name, int len, CUdevice dev);
    CUresult (*DeviceTotalMem)(size_t *bytes, CUdevice dev);
    CUresult (*DeviceGetAttribute)(int *value, CUdevice_attribute attr, CUdevice dev);
    CUresult (*GetErrorName)(CUresult r, const char **name); /* optional */
} driver;

static int driver_resolve(void *h, driver *d) {
    memset(d, 0, sizeof(*d));
    tp_dlsym_fn(h, "cuGetErrorName", &d->GetErrorName);
    return tp_dlsym_fn(h, "cuInit", &d->Init) |
           tp_dlsym_fn(h, "cuDeviceGetCount", &d->DeviceGetCount) |
           tp_dlsym_fn(h, "cuDeviceGet", &d->DeviceGet) |
           tp_dlsym_fn(h, "cuDeviceGetName", &d->DeviceGetName) |
           tp_dlsym_fn(h, "cuDeviceTotalMem_v2", &d->DeviceTotalMem) |
           tp_dlsym_fn(h, "cuDeviceGetAttribute", &d->DeviceGetAttribute);
}

static const char *error_name(const driver *d, CUresult r, char *buf, size_t n) {
    const char *s = NULL;
    if (d->GetErrorName && d->GetErrorName(r, &s) == CUDA_SUCCESS && s) return s;
    snprintf(buf, n, "CUDA error %d", (int)r);
    return buf;
}

void tp_cuda_diagnose(char *why, size_t n) {
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *err = dlerror();
        snprintf(why, n, "no NVIDIA driver (%s)", err ? err : "libcuda.so.1 not found");
        return;
    }
    /* libcuda stays loaded: it may have started threads, and the program will want it anyway */
    driver d;
    char buf[32];
    if (driver_resolve(h, &d)) {
        snprintf(why, n, "the NVIDIA driver's libcuda.so.1 lacks functions CUDA needs");
        return;
    }
    int count = 0;
    CUresult r = d.Init(0);
    if (r == CUDA_SUCCESS) r = d.DeviceGetCount(&count);
    if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && count == 0))
        snprintf(why, n, "no CUDA-capable GPU (the driver reports %s)",
                 r == CUDA_SUCCESS ? "0 devices" : error_name(&d, r, buf, sizeof(buf)));
    else if (r != CUDA_SUCCESS)
        snprintf(why, n, "the NVIDIA driver does not initialise (cuInit: %s)",
                 error_name(&d, r, buf, sizeof(buf)));
    else
        why[0] = '\0';
}

int tp_cuda_driver_present(void) {
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!h) return 0;
    dlclose(h); /* loaded only to look: none of it was called */
    return 1;
}

static int attr(const driver *d, CUdevice dev, CUdevice_attribute a) {
    int v = 0;
    return d->DeviceGetAttribute(&v, a, dev) == CUDA_SUCCESS ? v : 0;
}

static void query_device(const driver *d, CUdevice dev, int ordinal, tp_cupti_dev *out) {
    memset(out, 0, sizeof(*out));
    out->id = ordinal;
    if (d->DeviceGetName(out->name, (int)sizeof(out->name), dev) != CUDA_SUCCESS) out->name[0] = 0;
    size_t mem = 0;
    if (d->DeviceTotalMem(&mem, dev) == CUDA_SUCCESS) out->total_mem = mem;
    out->cc_major = attr(d, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
    out->cc_minor = attr(d, dev, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
    out->num_sms = attr(d, dev, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
    out->warp_size = attr(d, dev, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
    out->max_threads_per_sm = attr(d, dev, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
    out->max_blocks_per_sm = attr(d, dev, CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
    out->regs_per_sm = attr(d, dev, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
    out->smem_per_sm = attr(d, dev, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
    out->smem_reserved_per_block =
        attr(d, dev, CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
}

int tp_cuda_devices(tp_cupti_dev **devs, size_t *n) {
    *devs = NULL;
    *n = 0;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!h) return -1;
    driver d;
    int count = 0;
    if (driver_resolve(h, &d) || d.Init(0) != CUDA_SUCCESS ||
        d.DeviceGetCount(&count) != CUDA_SUCCESS || count <= 0 ||
        !(*devs = calloc((size_t)count, sizeof(**devs)))) {
        dlclose(h);
        return -1;
    }
    for (int i = 0; i < count; i++) {
        CUdevice dev;
        if (d.DeviceGet(&dev, i) == CUDA_SUCCESS) query_device(&d, dev, i, &(*devs)[(*n)++]);
    }
    dlclose(h); /* only drops the reference RTLD_NOLOAD took: the program holds its own */
    return 0;
}
