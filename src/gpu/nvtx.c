/* nvtx.c - Nsight mirroring: tprof's ranges as NVTX ranges, its windows as the CUDA profiler's
 * capture range (`nsight: true`; interface in src/record/gpu_calls.h and cupti.h).
 *
 * NVTX 3 is header-only: with no tool attached each call is a cheap no-op, and under Nsight
 * Systems the tool's injection library receives it. cudaProfilerStart/Stop come from the CUDA
 * runtime the program already loaded (or the driver's cuProfilerStart/Stop), never a new copy. */
#include "record/gpu_calls.h"
#include "gpu/cupti.h"

#include "gpu/cupti_api.h"
#include "util/lock.h"

#include <dlfcn.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>

static int nsight_on; /* read with relaxed loads on every range */

static pthread_mutex_t profiler_lock = PTHREAD_MUTEX_INITIALIZER;
static int (*profiler_start)(void), (*profiler_stop)(void); /* cudaError_t / CUresult */

static int nsight_enabled(void) {
    return __atomic_load_n(&nsight_on, __ATOMIC_RELAXED);
}

void tp_nsight_enable(int on) {
    __atomic_store_n(&nsight_on, on != 0, __ATOMIC_RELAXED);
}

void tp_nvtx_push(const char *name) {
    if (nsight_enabled()) nvtxRangePushA(name);
}

void tp_nvtx_pop(void) {
    if (nsight_enabled()) nvtxRangePop();
}

static int resolve_pair(void *h, const char *start, const char *stop) {
    if (!h || tp_dlsym_fn(h, start, &profiler_start) || tp_dlsym_fn(h, stop, &profiler_stop)) {
        profiler_start = profiler_stop = NULL;
        return 0;
    }
    return 1;
}

/* The profiler API of the CUDA the program uses: its runtime if visible or loaded, else the
 * driver's. Only libraries already loaded are used (RTLD_NOLOAD). */
static void find_profiler_api(void) {
    static const char *const runtimes[] = {"libcudart.so", "libcudart.so.13", "libcudart.so.12",
                                           "libcudart.so.11.0"};
    if (resolve_pair(RTLD_DEFAULT, "cudaProfilerStart", "cudaProfilerStop")) return;
    for (size_t i = 0; i < sizeof(runtimes) / sizeof(runtimes[0]); i++) {
        void *h = dlopen(runtimes[i], RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
        if (resolve_pair(h, "cudaProfilerStart", "cudaProfilerStop")) return;
        if (h) dlclose(h);
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!resolve_pair(h, "cuProfilerStart", "cuProfilerStop") && h) dlclose(h);
}

void tp_nsight_window(int begin) {
    if (!nsight_enabled()) return;
    tp_lock(&profiler_lock);
    if (!profiler_start) find_profiler_api(); /* until CUDA is loaded there is nothing to find */
    int (*fn)(void) = begin ? profiler_start : profiler_stop;
    tp_unlock(&profiler_lock);
    if (fn) fn();
}
