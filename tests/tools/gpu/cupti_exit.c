/* cupti_exit.c - a program that exits with the CUPTI source alive, for tests/integration.
 *
 *   cupti_exit real [LIBRARY]   create against the real libcupti (no driver here) and start a
 *                                window: claiming CUPTI must fail with one warning, and the
 *                                program exit at once
 *   cupti_exit fake LIBRARY     the fake libcupti with FAKE_CUPTI_TEARDOWN=1: record a window,
 *                                then exit() without tprof_shutdown; an atexit handler registered
 *                                before the source (as the recorder's is) collects and shuts down
 *   cupti_exit naive LIBRARY    control: that handler calls CUPTI itself after CUDA's teardown,
 *                                which the fake reports (exit status 97) as a real one would hang
 *   cupti_exit idle LIBRARY     CUDA starts (its driver loaded, found through LD_LIBRARY_PATH)
 *                                before the window, which then records nothing before exit()
 * Prints "create=<rc> warnings=<n>" and, from the late handler, "collected=<events>". */
#include "gpu/cupti.h"
#include "model/model.h"
#include "util/log.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef TPROF_HAVE_CUPTI_HEADERS
#include <cupti.h>
#endif

static tp_source src;
static void *fake;
static int naive;
static int64_t now = 1000;

static int64_t test_clock(void) {
    return now;
}

static void late_handler(void) {
    if (naive) {
        int (*flush)(uint32_t) = NULL;
        void *sym = dlsym(fake, "cuptiActivityFlushAll");
        memcpy(&flush, &sym, sizeof(sym));
        flush(0);
    }
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "exit", .start_ns = 0, .end_ns = INT64_MAX / 2};
    src.collect(src.ctx, &m, &w);
    src.shutdown(src.ctx);
    printf("collected=%zu\n", m.nevents);
    fflush(stdout);
    tp_model_free(&m);
}

#ifdef TPROF_HAVE_CUPTI_HEADERS
static void record_window(void) {
    int (*push)(const void *, size_t) = NULL;
    void *sym = dlsym(fake, "fake_cupti_push");
    memcpy(&push, &sym, sizeof(sym));
    CUpti_ActivityAPI api = {.kind = CUPTI_ACTIVITY_KIND_RUNTIME,
                             .cbid = 211,
                             .start = 1100,
                             .end = 1200,
                             .processId = 1,
                             .threadId = 1,
                             .correlationId = 7};
    CUpti_ActivityKernel10 k = {.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                .start = 1300,
                                .end = 1400,
                                .correlationId = 7,
                                .name = "k",
                                .gridX = 1,
                                .gridY = 1,
                                .gridZ = 1,
                                .blockX = 1,
                                .blockY = 1,
                                .blockZ = 1};
    push(&api, sizeof(api));
    push(&k, sizeof(k));
}
#endif

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    const char *lib = argc > 2 ? argv[2] : NULL;
    tp_log_set_quiet(1);
    int fake_mode = strcmp(argv[1], "real") != 0;
    int idle = strcmp(argv[1], "idle") == 0;
    naive = strcmp(argv[1], "naive") == 0;
    if (fake_mode) {
        setenv("FAKE_CUPTI_TEARDOWN", "1", 1);
        atexit(late_handler); /* before the source exists, as tprof_init's handler would be */
    }
    tp_gpu_opts o = {.required = 1, .library = lib, .now_ns = test_clock};
    int rc = tp_cupti_source_create(&o, &src);
    if (!rc && !fake_mode) src.on_action(src.ctx, TP_ACTION_WARMUP); /* CUPTI claimed here */
    printf("create=%d warnings=%zu\n", rc, tp_log_count());
    for (size_t i = 0; i < tp_log_count(); i++)
        printf("warning: %s\n", tp_log_get(i));
    fflush(stdout);
    if (!fake_mode) return tp_log_count() == 1 ? 0 : 3;
    if (rc != 0) return 0;
#ifdef TPROF_HAVE_CUPTI_HEADERS
    fake = dlopen(lib, RTLD_NOW | RTLD_NOLOAD);
    if (idle) {
        void (*start_cuda)(void) = NULL;
        void *sym = dlsym(fake, "fake_cupti_start_cuda");
        memcpy(&start_cuda, &sym, sizeof(sym));
        if (!start_cuda || !dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) return 4;
        start_cuda();
    }
    src.on_action(src.ctx, TP_ACTION_WARMUP);
    src.on_action(src.ctx, TP_ACTION_RECORD);
    if (!idle) record_window();
#endif
    exit(0); /* no shutdown: the handlers must end it cleanly */
}
