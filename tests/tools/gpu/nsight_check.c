/* nsight_check.c - mirrors two nested ranges and one window to NVTX and the CUDA profiler API,
 * for tests/integration/test_cupti_tools.py.
 *
 *   nsight_check off|driver|runtime [RUNTIME_LIBRARY]
 * off: mirroring stays disabled. driver: the program "uses CUDA" by loading libcuda.so.1 (found
 * through LD_LIBRARY_PATH). runtime: it also loads RUNTIME_LIBRARY globally, as a program linked
 * with libcudart has it. */
#include "gpu/cupti.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    if (strcmp(argv[1], "off") != 0) {
        if (!dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) return 3;
        if (strcmp(argv[1], "runtime") == 0 &&
            (argc < 3 || !dlopen(argv[2], RTLD_NOW | RTLD_GLOBAL)))
            return 4;
        tp_nsight_enable(1);
    }
    tp_nsight_window(1);
    tp_nvtx_push("forward");
    tp_nvtx_push("inner");
    tp_nvtx_pop();
    tp_nvtx_pop();
    tp_nsight_window(0);
    return 0;
}
