/* fake_cudart.c - a stand-in CUDA runtime (libcudart.so.13) with only the profiler calls, which
 * append "cudaProfilerStart"/"cudaProfilerStop" lines to $FAKE_CUDA_LOG. */
#include "fake_log.h"

#define FAKE_API __attribute__((visibility("default")))

FAKE_API int cudaProfilerStart(void);
FAKE_API int cudaProfilerStop(void);
int cudaProfilerStart(void) {
    fake_log("FAKE_CUDA_LOG", "cudaProfilerStart", NULL);
    return 0;
}
int cudaProfilerStop(void) {
    fake_log("FAKE_CUDA_LOG", "cudaProfilerStop", NULL);
    return 0;
}
