/* fake_cudart.c - a stand-in CUDA runtime (libcudart.so.13) with only the profiler calls, which
 * append "cudaProfilerStart"/"cudaProfilerStop" lines to $FAKE_CUDA_LOG. */
#include <stdio.h>
#include <stdlib.h>

#define FAKE_API __attribute__((visibility("default")))

static int log_line(const char *line) {
    const char *path = getenv("FAKE_CUDA_LOG");
    FILE *f = path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%s\n", line);
        fclose(f);
    }
    return 0;
}

FAKE_API int cudaProfilerStart(void);
FAKE_API int cudaProfilerStop(void);
int cudaProfilerStart(void) {
    return log_line("cudaProfilerStart");
}
int cudaProfilerStop(void) {
    return log_line("cudaProfilerStop");
}
