/* test_analysis_build.h - models built by hand for the analysis and report tests: one event at
 * a time on track (pid, tid), steps flagged by name as the producers flag them. Include after
 * cmocka.h. */
#ifndef TP_TEST_ANALYSIS_BUILD_H
#define TP_TEST_ANALYSIS_BUILD_H

#include "model/model.h"

/* The category the recorder writes for each kind (docs/ARCHITECTURE.md). */
static inline const char *tb_category(tp_kind kind) {
    switch (kind) {
    case TP_HOST_RANGE:
        return "cpu_op";
    case TP_KERNEL:
        return "kernel";
    case TP_MEMCPY:
        return "gpu_memcpy";
    case TP_MEMSET:
        return "gpu_memset";
    case TP_GPU_ANNOTATION:
        return "gpu_user_annotation";
    case TP_MEMORY:
        return "cpu_instant_event";
    default:
        return "";
    }
}

/* A new event; cat NULL gives the kind's usual category. */
static inline tp_event *tb_add(tp_model *m, tp_kind kind, int64_t pid, int64_t tid,
                               const char *name, const char *cat, int64_t ts, int64_t dur) {
    uint32_t track = tp_model_track(m, pid, 0, tid, 0);
    tp_event *e = tp_model_add_event(m);
    assert_non_null(e);
    e->kind = (uint8_t)kind;
    e->track = track;
    e->name = tp_model_intern_cstr(m, name);
    e->cat = tp_model_intern_cstr(m, cat ? cat : tb_category(kind));
    e->ts = ts;
    e->dur = dur;
    if (kind == TP_HOST_RANGE && tp_step_number(name) >= 0) e->flags |= TP_EVF_STEP;
    return e;
}

#endif
