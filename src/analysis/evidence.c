/* evidence.c - what the nesting walk notes for the recommendations beyond the op table: host
 * synchronizations inside steps and the op that called them, the ops an Optimizer.step runs
 * (one per parameter, or a few _foreach_/_fused_ ones), the self time of Python frames, Python
 * garbage collections inside steps, the matrix ops that ran in fp32, and the run's setup that
 * tprof.torch records ("tprof.setup" args). docs/METRICS.md (Recommendations) defines each. */
#include "analysis/internal.h"

#include "model/kineto.h"
#include "model/flops.h"

#include "util/vec.h"

#include <stddef.h>
#include <stdlib.h>
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
    if (strcmp(name, "gc") == 0) f |= TP_NAME_GC;
    if (strcmp(name, tp_karg_setup) == 0) f |= TP_NAME_SETUP;
    if (strncmp(name, "nn.Module: ", 11) == 0) f |= TP_NAME_MODULE;
    if (tp_flops_fcm_counted(name, strlen(name))) f |= TP_NAME_FCM;
    static const char *const matrix[] = {"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm",
                                         "aten::*convolution*"};
    for (size_t i = 0; i < sizeof(matrix) / sizeof(matrix[0]); i++)
        if (tp_glob_match(matrix[i], name)) f |= TP_NAME_MATRIX;
    return f;
}

/* A setup value as a count >= 0 into *out; 0 when it is not one. */
static int setup_count(const char *val, size_t vlen, int64_t *out) {
    char num[24], *end;
    if (vlen == 0 || vlen >= sizeof(num)) return 0;
    memcpy(num, val, vlen);
    num[vlen] = '\0';
    long long v = strtoll(num, &end, 10);
    if (*end != '\0' || v < 0) return 0;
    *out = v;
    return 1;
}

/* One "key=value" of a setup string into the setup: a setting (the last value read wins) or a
 * measurement, which each record holds a part of (CPU time over an interval, a worker start or
 * stop: summed); unknown keys are skipped (a newer tprof's records read by an older one). */
static void setup_pair(tp_setup *su, const char *key, size_t klen, const char *val, size_t vlen) {
    static const struct {
        const char *key;
        size_t off;
        int summed;
    } ints[] = {
        {"cpu_count", offsetof(tp_setup, cpu_count), 0},
        {"num_workers", offsetof(tp_setup, num_workers), 0},
        {"pin_memory", offsetof(tp_setup, pin_memory), 0},
        {"persistent_workers", offsetof(tp_setup, persistent_workers), 0},
        {"batch_size", offsetof(tp_setup, batch_size), 0},
        {"prefetch_factor", offsetof(tp_setup, prefetch_factor), 0},
        {"foreach", offsetof(tp_setup, foreach), 0},
        {"fused", offsetof(tp_setup, fused), 0},
        {"loader_cpu_ns", offsetof(tp_setup, loader_cpu_ns), 1},
        {"process_cpu_ns", offsetof(tp_setup, process_cpu_ns), 1},
        {"reading_ns", offsetof(tp_setup, reading_ns), 1},
        {"loader_start_ns", offsetof(tp_setup, loader_start_ns), 1},
        {"loader_starts", offsetof(tp_setup, loader_starts), 1},
        {"loader_stop_ns", offsetof(tp_setup, loader_stop_ns), 1},
    };
    static const struct {
        const char *key;
        size_t off, size;
    } strs[] = {
        {"optimizer", offsetof(tp_setup, optimizer), sizeof(su->optimizer)},
        {"param_dtype", offsetof(tp_setup, param_dtype), sizeof(su->param_dtype)},
        {"device", offsetof(tp_setup, device), sizeof(su->device)},
    };
    for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
        if (strlen(ints[i].key) != klen || memcmp(ints[i].key, key, klen) != 0) continue;
        int64_t v, *field = (int64_t *)((char *)su + ints[i].off);
        if (setup_count(val, vlen, &v)) *field = ints[i].summed ? tp_add_sat(*field, v) : v;
        return;
    }
    for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
        if (strlen(strs[i].key) != klen || memcmp(strs[i].key, key, klen) != 0) continue;
        char *dst = (char *)su + strs[i].off;
        size_t n = vlen < strs[i].size - 1 ? vlen : strs[i].size - 1;
        memcpy(dst, val, n);
        dst[n] = '\0';
        return;
    }
}

void tp_setup_parse(tp_setup *su, const char *text) {
    while (*text) {
        size_t len = strcspn(text, ";");
        const char *eq = memchr(text, '=', len);
        if (eq) setup_pair(su, text, (size_t)(eq - text), eq + 1, len - (size_t)(eq - text) - 1);
        text += len + (text[len] == ';');
    }
}

/* Whether an "Input type" array (raw JSON) starts with the dtype "float" (torch's fp32). */
static int first_is_float(const char *json) {
    while (*json == '[' || *json == ' ')
        json++;
    return strncmp(json, "\"float\"", 7) == 0;
}

void tp_evidence_call(tp_walk *s, const tp_event *e, tp_name_stats *ns) {
    if (!(ns->what & TP_NAME_MATRIX) || s->itype_key == UINT32_MAX || !e->nargs) return;
    const tp_arg *t = tp_event_arg(s->m, e, s->itype_key);
    if (t && t->type == TP_ARG_JSON && first_is_float(tp_model_str(s->m, t->v.s))) ns->fp32_calls++;
}

int tp_evidence_open(tp_walk *s, const tp_event *e, tp_name_stats *ns, int is_op, int in_optim,
                     uint32_t op_stat) {
    tp_analysis *a = s->a;
    tp_walk_name_flags(s, ns, e);
    int64_t dur = tp_call_dur(s, e), ts = tp_call_ts(s, e);          /* a call, counted whole */
    if (dur < 0) return in_optim || (ns->what & TP_NAME_OPTIM_STEP); /* a part: no call */
    if (s->setup_key != UINT32_MAX && e->nargs) {
        const tp_arg *su = tp_event_arg(s->m, e, s->setup_key);
        if (su && su->type == TP_ARG_STR) tp_setup_parse(&a->setup, tp_model_str(s->m, su->v.s));
    }
    if ((ns->what & TP_NAME_GC) && tp_step_at(s, ts) >= 0) {
        a->gc_ns = tp_add_sat(a->gc_ns, dur);
        a->gc_calls++;
        if (dur > a->gc_max_ns) a->gc_max_ns = dur;
    }
    if (in_optim) {
        a->optim_ops += is_op && !(ns->what & TP_NAME_SETUP);
        a->optim_multi_ops += (ns->what & TP_NAME_MULTI_TENSOR) != 0;
    } else if (ns->what & TP_NAME_OPTIM_STEP) {
        a->optim_steps++;
        a->optim_ns = tp_add_sat(a->optim_ns, dur);
    }
    size_t nsync = s->nsync_ends;
    if ((ns->what & TP_NAME_SYNC) && !TP_AGROW(&s->keep, s->sync_ends, s->cap_sync_ends, nsync + 1))
        s->sync_ends[s->nsync_ends++] = tp_ev_end(e); /* lost if out of memory */
    if ((ns->what & TP_NAME_SYNC) && tp_step_at(s, ts) >= 0) {
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
