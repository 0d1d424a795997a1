/* text.c - the readable report a training-loop user wants at a glance, as plain text (the
 * console summary, `tprof analyze`) or Markdown (`--markdown`): one tp_doc, two layouts.
 *
 * Sections: header, step time, stages, top ops by self time, top kernels, top ops by the GPU time
 * they launched, GPU, memory, FLOPs, warnings, recommendations. A figure that does not apply
 * says "n/a" and why, rather than printing a misleading zero. */
#include "report/report.h"

#include "report/doc.h"
#include "report/format.h"
#include "report/modules.h"
#include "report/ranks.h"
#include "report/stacks_report.h"

#include <stdio.h>

enum {
    SLOWEST_STEPS = 3,
    BAR_WIDTH = 20,
};

/* `tprof analyze --summaries` reads no trace: its analysis holds the ranks and nothing else, so
 * the single-run sections would all say n/a. */
static int ranks_only(const tp_analysis *a) {
    return a->ranks && a->npaths == 0 && a->input_events == 0;
}

static void header(tp_doc *d, const tp_analysis *a, const tp_report_opts *o) {
    tp_doc_title(d, "%s", o && o->title ? o->title : "tprof report");
    if (a->npaths == 1)
        tp_doc_line(d, "input: %s (%llu events, %s)", a->paths[0],
                    (unsigned long long)a->input_events, tp_fmt_bytes((int64_t)a->input_bytes).s);
    else if (a->npaths > 1)
        tp_doc_line(d, "inputs: %zu files, first %s (%llu events, %s in all)", a->npaths,
                    a->paths[0], (unsigned long long)a->input_events,
                    tp_fmt_bytes((int64_t)a->input_bytes).s);
    if (a->windows)
        tp_doc_line(d, "recorded windows: %zu (%zu partial)", a->windows, a->partial_windows);
    if (!ranks_only(a))
        tp_doc_line(d, "steps: %zu, window %s", a->nsteps, tp_fmt_dur(a->window_ns).s);
}

static void steps(tp_doc *d, const tp_analysis *a) {
    tp_doc_heading(d, "Step time");
    if (!a->nsteps) {
        tp_doc_line(d, "n/a: no ProfilerStep#<n> ranges (call tprof_step() or use "
                       "torch.profiler's schedule to mark steps)");
        return;
    }
    static const char *const head[] = {"steps", "total", "mean", "p50", "p95", "max"};
    static const unsigned flags[] = {TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT,
                                     TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
    tp_doc_table(d, 6, head, flags);
    tp_doc_cell(d, "%zu", a->nsteps);
    tp_doc_cell(d, "%s", tp_fmt_dur(a->steps_total_ns).s);
    tp_doc_cell(d, "%s", tp_fmt_dur(a->steps_mean_ns).s);
    tp_doc_cell(d, "%s", tp_fmt_dur(a->steps_p50_ns).s);
    tp_doc_cell(d, "%s", tp_fmt_dur(a->steps_p95_ns).s);
    tp_doc_cell(d, "%s", tp_fmt_dur(a->steps_max_ns).s);
    char slow[256] = "";
    size_t used = 0;
    for (size_t i = 0; a->steps_by_dur && i < (size_t)SLOWEST_STEPS && i < a->nsteps; i++) {
        const tp_step_row *s = &a->steps[a->steps_by_dur[i]];
        int n = snprintf(slow + used, sizeof(slow) - used, "%s%s %s", i ? ", " : "", s->name,
                         tp_fmt_dur(s->dur_ns).s);
        if (n < 0 || (size_t)n >= sizeof(slow) - used) break;
        used += (size_t)n;
    }
    tp_doc_line(d, "slowest: %s", slow);
}

/* A flight recorder's trace: its triggering step against the others (docs/FLIGHT.md). */
static void flight(tp_doc *d, const tp_analysis *a) {
    for (size_t i = 0; i < a->nflights; i++) {
        const tp_flight_row *f = &a->flights[i];
        const tp_step_row *s = &a->steps[f->step];
        tp_doc_heading(d, "Flight recorder: %s (%s)", s->name, f->reason);
        if (f->ratio < 0) {
            tp_doc_line(d, "%s took %s; no other step to compare it with", s->name,
                        tp_fmt_dur(s->dur_ns).s);
            continue;
        }
        tp_doc_line(d, "%s took %s, %.1fx the median %s of the other %zu steps", s->name,
                    tp_fmt_dur(s->dur_ns).s, f->ratio, tp_fmt_dur(f->median_ns).s, f->others);
        const char *stage = tp_flight_stage_name(a, f);
        if (stage)
            tp_doc_line(d, "stage that grew most: %s, %s against a median %s", stage,
                        tp_fmt_dur(f->stage_step_ns).s, tp_fmt_dur(f->stage_median_ns).s);
        static const char *const head[] = {"op", "self in step", "mean in others", "extra"};
        static const unsigned flags[] = {0, TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
        if (f->nops) tp_doc_table(d, 4, head, flags);
        for (size_t k = 0; k < f->nops; k++) {
            tp_doc_cell(d, "%s", f->ops[k].name);
            tp_doc_cell(d, "%s", tp_fmt_dur(f->ops[k].step_ns).s);
            tp_doc_cell(d, "%s", tp_fmt_dur(f->ops[k].typical_ns).s);
            tp_doc_cell(d, "+%s", tp_fmt_dur(f->ops[k].step_ns - f->ops[k].typical_ns).s);
        }
    }
}

static void stages(tp_doc *d, const tp_analysis *a) {
    if (!a->nstages) return;
    tp_doc_heading(d, "Stages (share of step time)");
    static const char *const head[] = {"stage", "count", "total",  "mean", "p50",
                                       "p95",   "max",   "step %", ""};
    static const unsigned flags[] = {0,
                                     TP_COL_RIGHT,
                                     TP_COL_RIGHT,
                                     TP_COL_RIGHT,
                                     TP_COL_RIGHT,
                                     TP_COL_RIGHT,
                                     TP_COL_RIGHT,
                                     TP_COL_RIGHT,
                                     TP_COL_TEXT_ONLY};
    tp_doc_table(d, 9, head, flags);
    for (size_t st = 0; st <= a->nstages; st++) { /* the stages, then "other" */
        const tp_stage_row *r = st < a->nstages ? &a->stages[st] : &a->other;
        int any = r->count > 0;
        tp_doc_cell(d, "%s", r->name);
        tp_doc_cell(d, "%llu", (unsigned long long)r->count);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->total_ns).s);
        tp_doc_cell(d, "%s", any ? tp_fmt_dur(r->mean_ns).s : "n/a");
        tp_doc_cell(d, "%s", any ? tp_fmt_dur(r->p50_ns).s : "n/a");
        tp_doc_cell(d, "%s", any ? tp_fmt_dur(r->p95_ns).s : "n/a");
        tp_doc_cell(d, "%s", any ? tp_fmt_dur(r->max_ns).s : "n/a");
        tp_doc_cell(d, "%s", tp_fmt_pct(r->pct).s);
        tp_doc_cell(d, "%s", tp_fmt_bar(r->pct, BAR_WIDTH).s);
    }
}

/* The heading of a top-K table, or when there are no rows a heading and the reason; returns
 * whether rows follow. */
static int table_heading(tp_doc *d, const tp_report_opts *o, size_t n, const char *what,
                         const char *empty_heading, const char *why_empty) {
    if (!n) {
        tp_doc_heading(d, "%s", empty_heading);
        tp_doc_line(d, "n/a: %s", why_empty);
        return 0;
    }
    tp_doc_heading(d, "Top %zu of %zu %s", tp_report_rows(o, n), n, what);
    return 1;
}

/* The cells every table row starts with and ends with. */
static void name_cells(tp_doc *d, const char *name, uint64_t calls) {
    tp_doc_cell(d, "%s", name);
    tp_doc_cell(d, "%llu", (unsigned long long)calls);
}

static void spread_cells(tp_doc *d, uint64_t calls, int64_t total_ns, int64_t max_ns) {
    tp_doc_cell(d, "%s", tp_fmt_dur(tp_mean_ns(total_ns, calls)).s);
    tp_doc_cell(d, "%s", tp_fmt_dur(max_ns).s);
}

static void ops(tp_doc *d, const tp_analysis *a, const tp_report_opts *o) {
    if (!table_heading(d, o, a->nops, "ops by self time", "Ops", "no host ranges")) return;
    static const char *const head[] = {"op", "calls", "self", "self %", "total", "mean", "max"};
    static const unsigned flags[] = {TP_COL_NAME,  TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT,
                                     TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
    tp_doc_table(d, 7, head, flags);
    for (size_t i = 0; i < tp_report_rows(o, a->nops); i++) {
        const tp_op_row *r = &a->ops[i];
        name_cells(d, r->name, r->calls);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->self_ns).s);
        tp_doc_cell(d, "%s", tp_fmt_pct(r->self_pct).s);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->total_ns).s);
        spread_cells(d, r->calls, r->total_ns, r->max_ns);
    }
}

static void kernels(tp_doc *d, const tp_analysis *a, const tp_report_opts *o) {
    if (!table_heading(d, o, a->nkernels, "GPU kernels by total time", "GPU kernels",
                       "no GPU kernels in the input"))
        return;
    static const char *const head[] = {"kernel", "calls", "total", "%", "mean", "max"};
    static const unsigned flags[] = {TP_COL_NAME,  TP_COL_RIGHT, TP_COL_RIGHT,
                                     TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
    tp_doc_table(d, 6, head, flags);
    for (size_t i = 0; i < tp_report_rows(o, a->nkernels); i++) {
        const tp_kernel_row *r = &a->kernels[i];
        name_cells(d, r->name, r->calls);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->total_ns).s);
        tp_doc_cell(d, "%s", tp_fmt_pct(r->pct).s);
        spread_cells(d, r->calls, r->total_ns, r->max_ns);
    }
}

static void launched(tp_doc *d, const tp_analysis *a, const tp_report_opts *o) {
    if (!a->nops_by_gpu) return;
    tp_doc_heading(d, "Top ops by the GPU time they launched");
    static const char *const head[] = {"op", "GPU time", "% of GPU work", "launched"};
    static const unsigned flags[] = {TP_COL_NAME, TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
    tp_doc_table(d, 4, head, flags);
    for (size_t i = 0; i < tp_report_rows(o, a->nops_by_gpu); i++) {
        const tp_op_row *r = &a->ops[a->ops_by_gpu[i]];
        tp_doc_cell(d, "%s", r->name);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->gpu_ns).s);
        tp_doc_cell(d, "%s", tp_fmt_pct(r->gpu_pct).s);
        tp_doc_cell(d, "%llu", (unsigned long long)r->kernels);
    }
}

/* Why each device idles between its work (stream gaps, as HTA splits them). */
static void idle(tp_doc *d, const tp_analysis *a) {
    if (!a->nidle) return;
    static const char *const head[] = {"device", "idle (streams)", "host",
                                       "sync",   "launch",         "other"};
    static const unsigned flags[] = {TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT,
                                     TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
    tp_doc_table(d, 6, head, flags);
    for (size_t i = 0; i < a->nidle; i++) {
        const tp_idle_row *r = &a->idle[i];
        double whole = r->idle_ns > 0 ? (double)r->idle_ns : 1;
        tp_doc_cell(d, "%lld", (long long)r->device);
        tp_doc_cell(d, "%s", tp_fmt_dur(r->idle_ns).s);
        tp_doc_cell(d, "%.1f%%", 100.0 * (double)r->host_ns / whole);
        tp_doc_cell(d, "%.1f%%", 100.0 * (double)r->sync_ns / whole);
        tp_doc_cell(d, "%.1f%%", 100.0 * (double)r->launch_ns / whole);
        tp_doc_cell(d, "%.1f%%", 100.0 * (double)r->other_ns / whole);
    }
}

static void gpu(tp_doc *d, const tp_analysis *a) {
    tp_doc_heading(d, "GPU");
    if (!a->gpu_devices) {
        tp_doc_line(d, "n/a: no kernels, copies or sets in the input");
        return;
    }
    tp_doc_line(d, "busy %s of %s (%zu device%s x window): utilization %s",
                tp_fmt_dur(a->gpu_busy_ns).s, tp_fmt_dur(a->gpu_capacity_ns).s, a->gpu_devices,
                a->gpu_devices == 1 ? "" : "s", tp_fmt_pct(a->gpu_utilization_pct).s);
    tp_doc_line(d, "kernels: %llu taking %s; GPU work charged to ops: %s of %s",
                (unsigned long long)a->kernel_count, tp_fmt_dur(a->kernel_total_ns).s,
                tp_fmt_dur(a->gpu_attributed_ns).s, tp_fmt_dur(a->gpu_work_ns).s);
    idle(d, a);
}

static void device_name(char *out, size_t n, const tp_mem_row *r) {
    if (r->device_type == 0)
        snprintf(out, n, "CPU");
    else if (r->device_type == 1)
        snprintf(out, n, "CUDA %lld", (long long)r->device_id);
    else
        snprintf(out, n, "type %lld id %lld", (long long)r->device_type, (long long)r->device_id);
}

static void memory(tp_doc *d, const tp_analysis *a) {
    tp_doc_heading(d, "Memory peaks");
    if (!a->nmemory) {
        tp_doc_line(d, "n/a: no [memory] events (enable profile_memory)");
        return;
    }
    static const char *const head[] = {"device", "peak", "capacity", "% of capacity"};
    static const unsigned flags[] = {0, TP_COL_RIGHT, TP_COL_RIGHT, TP_COL_RIGHT};
    tp_doc_table(d, 4, head, flags);
    for (size_t i = 0; i < a->nmemory; i++) {
        const tp_mem_row *r = &a->memory[i];
        char name[64];
        device_name(name, sizeof(name), r);
        tp_doc_cell(d, "%s", name);
        tp_doc_cell(d, "%s", tp_fmt_bytes(r->peak_bytes).s);
        tp_doc_cell(d, "%s",
                    r->capacity_bytes ? tp_fmt_bytes((int64_t)r->capacity_bytes).s : "n/a");
        tp_doc_cell(d, "%s", tp_fmt_pct(r->capacity_pct).s);
    }
}

/* The achieved rate over the steps of one convention's FLOPs and its MFU; nothing when n/a. */
static void mfu_line(tp_doc *d, const tp_analysis *a, double achieved, double mfu_pct) {
    if (achieved < 0) return;
    if (mfu_pct < 0)
        tp_doc_line(d, "  over the steps: %s; MFU n/a: %s", tp_fmt_si(achieved, "FLOP/s").s,
                    a->gpu_devices ? "device not in the table (give --peak-tflops)"
                                   : "no GPU (give --peak-tflops for the CPU's peak)");
    else
        tp_doc_line(d, "  over the steps: %s; MFU %.1f%% of %.1f TFLOP/s x %zu (%s%s%s)",
                    tp_fmt_si(achieved, "FLOP/s").s, mfu_pct, a->peak_tflops,
                    a->gpu_devices ? a->gpu_devices : 1, a->peak_source, a->peak_dtype ? ": " : "",
                    a->peak_dtype ? a->peak_dtype : "");
}

/* Both conventions' figures, each with what it counts. */
static void flops(tp_doc *d, const tp_analysis *a) {
    tp_doc_heading(d, "FLOPs");
    if (a->flops_per_s < 0 && a->fcm_flops <= 0) {
        tp_doc_line(d, "n/a: no range carries a flops count (tprof_flops, with_flops)");
        return;
    }
    if (a->flops_per_s >= 0) {
        tp_doc_line(d, "%s in %s of the ranges that carry them: %s", tp_fmt_si(a->flops, "FLOP").s,
                    tp_fmt_dur(a->flops_time_ns).s, tp_fmt_si(a->flops_per_s, "FLOP/s").s);
        tp_doc_line(d, "  convention: " TP_FLOPS_NOTE);
        mfu_line(d, a, a->achieved_flops_per_s, a->mfu_pct);
    }
    if (a->fcm_flops > 0) {
        tp_doc_line(d, "%s forward and backward", tp_fmt_si(a->fcm_flops, "FLOP").s);
        tp_doc_line(d, "  convention: " TP_FLOPS_FCM_NOTE);
        mfu_line(d, a, a->achieved_fcm_flops_per_s, a->fcm_mfu_pct);
    }
}

static void notes(tp_doc *d, const tp_analysis *a) {
    /* dropped events and partial windows are among the warnings (tp_analysis_finish) */
    if (a->nwarnings) {
        tp_doc_heading(d, "Warnings");
        for (size_t i = 0; i < a->nwarnings; i++)
            tp_doc_line(d, "%s", a->warnings[i]);
    }
    tp_doc_heading(d, "Recommendations");
    if (!a->nrecos) tp_doc_line(d, "none: no figure crossed a threshold");
    /* the few that could save the most (recos are sorted by saving), the rest in --json */
    for (size_t i = 0; i < a->nrecos && i < TP_RECO_SHOWN; i++) {
        const tp_reco *r = &a->recos[i];
        if (r->saving_ns > 0)
            tp_doc_line(d, "[%s] (could save up to %s) %s", r->id, tp_fmt_dur(r->saving_ns).s,
                        r->message);
        else
            tp_doc_line(d, "[%s] %s", r->id, r->message);
    }
    if (a->nrecos > TP_RECO_SHOWN)
        tp_doc_line(d, "%zu more, each saving less: %s", a->nrecos - TP_RECO_SHOWN,
                    "see recommendations[] in --json");
}

typedef struct report_args {
    const tp_analysis *a;
    const tp_report_opts *o;
} report_args;

static void build(tp_doc *d, const void *arg) {
    const tp_analysis *a = ((const report_args *)arg)->a;
    const tp_report_opts *o = ((const report_args *)arg)->o;
    header(d, a, o);
    if (!ranks_only(a)) {
        steps(d, a);
        flight(d, a);
        stages(d, a);
        ops(d, a, o);
        kernels(d, a, o);
        launched(d, a, o);
        tp_report_stacks_text(d, a, o);
        gpu(d, a);
        memory(d, a);
        flops(d, a);
        tp_report_modules_text(d, a);
    }
    tp_report_ranks_text(d, a);
    notes(d, a);
}

void tp_report_text(tp_buf *out, const tp_analysis *a, const tp_report_opts *o) {
    tp_doc_write(out, TP_DOC_TEXT, build, &(report_args){a, o});
}

void tp_report_markdown(tp_buf *out, const tp_analysis *a, const tp_report_opts *o) {
    tp_doc_write(out, TP_DOC_MARKDOWN, build, &(report_args){a, o});
}
