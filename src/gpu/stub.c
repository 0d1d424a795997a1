/* stub.c - src/record/gpu_calls.h where CUDA's headers were not found at build time: no GPU source.
 *
 * CMake builds this file instead of the rest of src/gpu. Profiling then stays CPU-only; asking for
 * the GPU explicitly (`gpu: on`) says why once, as a machine without a GPU would. */
#include "record/gpu_calls.h"

#include "config/config.h"
#include "util/log.h"

#include <stddef.h>

void tp_gpu_attach(const tprof_config *cfg) {
    if (cfg->gpu == TP_GPU_ON)
        tp_log_warn("gpu: on, but this tprof was built without CUDA's CUPTI headers; continuing "
                    "CPU-only");
}

void tp_gpu_set_extra_dirs(const char *const *dirs) {
    (void)dirs;
}

void tp_nvtx_push(const char *name) {
    (void)name;
}

void tp_nvtx_pop(void) {}

void tp_gpu_ext_push(uint64_t id) {
    (void)id;
}

void tp_gpu_ext_pop(void) {}
