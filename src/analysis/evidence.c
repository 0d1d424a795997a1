/* evidence.c - what the nesting walk notes for the recommendations beyond the op table: host
 * synchronizations inside steps and the op that called them, the ops an Optimizer.step runs
 * (one per parameter, or a few _foreach_/_fused_ ones), and the self time of Python frames.
 * docs/METRICS.md (Recommendations) defines each figure. */
#include "analysis/internal.h"

#include "util/vec.h"

#include <stddef.h>
#include <string.h>

/* Runtime calls after which the host waits for the GPU: explicit synchronizations and the
 * blocking copies behind .item(), .cpu() and .tolist() (cudaMemcpy, not cudaMemcpyAsync). */
static const char *const sync_names[] = {
    "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
    "hipDeviceSynchronize",  "hipStreamSynchronize",  "hipEventSynchronize",  "hipMemcpy",
};

unsigned tp_name_flags(const char *name) {
    unsigned f = TP_NAME_KNOWN;
    for (size_t i = 0; i < sizeof(sync_names) / sizeof(sync_names[0]); i++)
        if (strcmp(name, sync_names[i]) == 0) f |= TP_NAME_SYNC;
    if (strncmp(name, "Optimizer.step#", 15) == 0) f |= TP_NAME_OPTIM_STEP;
    if (strstr(name, "_foreach_") || strstr(name, "_fused_")) f |= TP_NAME_MULTI_TENSOR;
    return f;
}

int tp_evidence_open(tp_walk *s, const tp_event *e, tp_name_stats *ns, int is_op, int in_optim,
                     uint32_t op_stat) {
    tp_analysis *a = s->a;
    if (!(ns->what & TP_NAME_KNOWN)) ns->what = tp_name_flags(tp_model_str(s->m, e->name));
    int64_t dur = tp_ev_dur(e);
    if (in_optim) {
        a->optim_ops += is_op != 0;
        a->optim_multi_ops += (ns->what & TP_NAME_MULTI_TENSOR) != 0;
    } else if (ns->what & TP_NAME_OPTIM_STEP) {
        a->optim_steps++;
        a->optim_ns = tp_add_sat(a->optim_ns, dur);
    }
    size_t nsync = s->nsync_ends;
    if ((ns->what & TP_NAME_SYNC) && !TP_AGROW(&s->keep, s->sync_ends, s->cap_sync_ends, nsync + 1))
        s->sync_ends[s->nsync_ends++] = tp_ev_end(e); /* lost if out of memory */
    if ((ns->what & TP_NAME_SYNC) && tp_step_at(s, e->ts) >= 0) {
        a->sync_ns = tp_add_sat(a->sync_ns, dur);
        a->sync_calls++;
        tp_name_stats *caller = op_stat != UINT32_MAX ? &s->stats[op_stat] : ns;
        caller->sync_ns = tp_add_sat(caller->sync_ns, dur);
        caller->sync_calls++;
    }
    return in_optim || (ns->what & TP_NAME_OPTIM_STEP);
}

void tp_evidence_python(tp_walk *s, const tp_event *e, int64_t self_ns) {
    ptrdiff_t k = tp_step_at(s, e->ts);
    /* whole frames only: the profiler's own step() starts in the last step and runs on */
    if (k < 0 || tp_ev_end(e) > tp_ev_end(&s->m->events[s->steps[k]])) return;
    s->a->python_self_ns = tp_add_sat(s->a->python_self_ns, self_ns);
    s->a->python_ranges++;
}
