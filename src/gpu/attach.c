/* attach.c - joins the GPU sources to a session: the CUPTI activity source (config `gpu`) and
 * Nsight capture windows (config `nsight`), both through the tp_source interface
 * (record/source.h); record/gpu_calls.h declares what the recorder calls here.
 *
 * Called after the session has started and its lock is released (tp_session_add_source takes it).
 */
#include "record/gpu_calls.h"

#include "gpu/cupti.h"
#include "record/clock.h"
#include "config/config.h"
#include "record/session.h"

#include <stddef.h>

/* Folders where a wheel-installed CUPTI lives, set by the Python binding before a session. */
static const char *const *extra_cupti_dirs;

void tp_gpu_set_extra_dirs(const char *const *dirs) {
    extra_cupti_dirs = dirs;
}

/* Nsight: cudaProfilerStart when a recording window opens, cudaProfilerStop when it closes, so
 * `nsys --capture-range=cudaProfilerApi` captures exactly the steps tprof records. */
static int nsight_capturing;

static void nsight_on_action(void *ctx, tp_action action) {
    (void)ctx;
    int records = action == TP_ACTION_RECORD || action == TP_ACTION_RECORD_AND_SAVE;
    if (records == nsight_capturing) return;
    nsight_capturing = records;
    tp_nsight_window(records);
}

static void nsight_shutdown(void *ctx) {
    nsight_on_action(ctx, TP_ACTION_NONE);
    tp_nsight_enable(0);
    tp_session_set_nsight(0);
}

void tp_gpu_attach(const tprof_config *cfg) {
    if (cfg->nsight) {
        tp_nsight_enable(1);
        nsight_capturing = 0;
        tp_source nsight = {
            .name = "nsight", .on_action = nsight_on_action, .shutdown = nsight_shutdown};
        if (tp_session_add_source(&nsight) == 0) tp_session_set_nsight(1);
    }
    if (cfg->gpu == TP_GPU_OFF) return;
    tp_gpu_opts o = {.required = cfg->gpu == TP_GPU_ON,
                     .extra_dirs = extra_cupti_dirs,
                     .now_ns = tp_clock_now_ns,
                     .graph_level = cfg->cuda_graphs == TP_GRAPHS_GRAPH};
    tp_source cupti;
    if (tp_cupti_source_create(&o, &cupti) == 0 && tp_session_add_source(&cupti) != 0)
        cupti.shutdown(cupti.ctx);
}
