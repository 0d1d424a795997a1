/* json.c - the analysis as JSON: `tprof analyze --json` (and summary.json) and the
 * stage_times.json run artifact, which share the stage and per-step objects.
 *
 * The keys of docs/SEMANTICS.md §4 never change meaning; every key is documented in
 * docs/ANALYZE_JSON.md. Times are microseconds with nanosecond precision; null marks a figure
 * that does not apply (no steps, no GPU work). */
#include "report/report.h"

#include "report/columns.h"
#include "report/jsonw.h"
#include "report/modules.h"
#include "report/ranks.h"
#include "report/stacks_report.h"

#include "util/jsonvalid.h"

static void stage_row(tp_jw *w, const char *key, const tp_stage_row *r) {
    int any = r->count > 0;
    tp_jw_object(w, key);
    tp_jw_str(w, tp_col_stage, r->name);
    tp_jw_u64(w, tp_col_count, r->count);
    tp_jw_us(w, tp_col_total, r->total_ns);
    tp_jw_us_opt(w, tp_col_mean, any ? r->mean_ns : -1);
    tp_jw_us_opt(w, tp_col_min, any ? r->min_ns : -1);
    tp_jw_us_opt(w, tp_col_p50, any ? r->p50_ns : -1);
    tp_jw_us_opt(w, tp_col_p95, any ? r->p95_ns : -1);
    tp_jw_us_opt(w, tp_col_max, any ? r->max_ns : -1);
    tp_jw_double_opt(w, tp_col_pct, r->pct);
    tp_jw_end_object(w);
}

/* The stages in definition order, then "other" (the step time none covers). */
static void stage_rows(tp_jw *w, const tp_analysis *a) {
    tp_jw_array(w, "stages");
    for (size_t st = 0; st < a->nstages; st++)
        stage_row(w, NULL, &a->stages[st]);
    tp_jw_end_array(w);
    stage_row(w, "other", &a->other);
}

/* Every step, or with o's max_list every k-th (the first included), evenly over the run. */
static void step_list(tp_jw *w, const char *key, const tp_analysis *a, const tp_report_opts *o) {
    size_t stride = tp_report_stride(o, a->nsteps);
    tp_jw_array(w, key);
    for (size_t i = 0; i < a->nsteps; i += stride) {
        const tp_step_row *s = &a->steps[i];
        tp_jw_object(w, NULL);
        tp_jw_str(w, tp_col_name, s->name);
        tp_jw_i64(w, tp_col_number, s->number);
        tp_jw_us(w, tp_col_start, s->start_ns);
        tp_jw_us(w, tp_col_dur, s->dur_ns);
        tp_jw_object(w, "stages");
        for (size_t st = 0; st < a->nstages; st++)
            tp_jw_us(w, a->stages[st].name, s->stage_ns[st]);
        tp_jw_end_object(w);
        tp_jw_us(w, "other_us", s->other_ns);
        tp_jw_us(w, "lead_us", s->lead_ns);
        tp_jw_double(w, tp_col_flops, s->flops);
        tp_jw_double_opt(w, "mfu_pct", s->mfu_pct);
        tp_jw_double(w, tp_col_flops_fcm, s->fcm_flops);
        tp_jw_double_opt(w, "mfu_fcm_pct", s->fcm_mfu_pct);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
}

static void input(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    tp_jw_object(w, "input");
    tp_jw_str(w, "path", a->input_path ? a->input_path : "");
    tp_jw_u64(w, "bytes", a->input_bytes);
    tp_jw_u64(w, "events", a->input_events);
    tp_jw_u64(w, "count", a->ninputs);
    tp_jw_array(w, "paths");
    for (size_t i = 0; i < tp_report_list(o, a->npaths); i++)
        tp_jw_str(w, NULL, a->paths[i]);
    tp_jw_end_array(w);
    tp_jw_end_object(w);
    tp_jw_object(w, "windows");
    tp_jw_u64(w, "count", a->windows);
    tp_jw_u64(w, "partial", a->partial_windows);
    tp_jw_u64(w, "dropped_events", a->dropped_events);
    tp_jw_end_object(w);
}

static void steps(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    int any = a->nsteps > 0;
    tp_jw_object(w, "steps");
    tp_jw_u64(w, "count", a->nsteps);
    tp_jw_us(w, "total_us", a->steps_total_ns);
    tp_jw_us_opt(w, "mean_us", any ? a->steps_mean_ns : -1);
    tp_jw_us_opt(w, "p50_us", any ? a->steps_p50_ns : -1);
    tp_jw_us_opt(w, "p95_us", any ? a->steps_p95_ns : -1);
    tp_jw_us_opt(w, "max_us", any ? a->steps_max_ns : -1);
    tp_jw_us(w, "window_us", a->window_ns);
    tp_jw_us(w, "lead_us", a->lead_ns);
    tp_jw_array(w, "slowest");
    for (size_t i = 0; a->steps_by_dur && i < tp_report_rows(o, a->nsteps); i++) {
        const tp_step_row *s = &a->steps[a->steps_by_dur[i]];
        tp_jw_object(w, NULL);
        tp_jw_str(w, "name", s->name);
        tp_jw_i64(w, "number", s->number);
        tp_jw_us(w, "dur_us", s->dur_ns);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
    step_list(w, "list", a, o);
    tp_jw_end_object(w);
}

/* The members every table row starts with. */
static void row_head(tp_jw *w, const char *name, uint64_t calls, int64_t total_ns) {
    tp_jw_str(w, tp_col_name, name);
    tp_jw_u64(w, tp_col_calls, calls);
    tp_jw_us(w, tp_col_total, total_ns);
}

/* mean, min and max of a row's durations */
static void row_spread(tp_jw *w, uint64_t calls, int64_t total_ns, int64_t min_ns, int64_t max_ns) {
    tp_jw_us(w, tp_col_mean, tp_mean_ns(total_ns, calls));
    tp_jw_us(w, tp_col_min, min_ns);
    tp_jw_us(w, tp_col_max, max_ns);
}

/* A row of top_cpu_ops, or of top_cpu_ops_by_shape (with its input_shapes and input_types). */
static void op_row(tp_jw *w, const tp_op_row *r) {
    tp_jw_object(w, NULL);
    row_head(w, r->name, r->calls, r->total_ns);
    if (r->shapes) tp_jw_str(w, "input_shapes", r->shapes);
    if (r->shapes && r->dtypes && tp_json_valid(r->dtypes, strlen(r->dtypes)))
        tp_jw_raw(w, "input_types", r->dtypes, strlen(r->dtypes)); /* a JSON array as read */
    else if (r->shapes)
        tp_jw_null(w, "input_types");
    tp_jw_us(w, tp_col_self, r->self_ns);
    tp_jw_double(w, tp_col_self_pct, r->self_pct);
    row_spread(w, r->calls, r->total_ns, r->min_ns, r->max_ns);
    tp_jw_double(w, tp_col_flops, r->flops);
    tp_jw_double(w, tp_col_flops_fcm, r->fcm_flops);
    tp_jw_us(w, tp_col_gpu, r->gpu_ns);
    tp_jw_u64(w, tp_col_kernels, r->kernels);
    tp_jw_end_object(w);
}

static void ops(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    tp_jw_array(w, "top_cpu_ops");
    for (size_t i = 0; i < tp_report_rows(o, a->nops); i++)
        op_row(w, &a->ops[i]);
    tp_jw_end_array(w);
    tp_jw_array(w, "top_cpu_ops_by_shape");
    for (size_t i = 0; a->shapes_order && i < tp_report_rows(o, a->nops_by_shape); i++)
        op_row(w, &a->ops_by_shape[a->shapes_order[i]]);
    tp_jw_end_array(w);
    tp_jw_array(w, "top_ops_by_gpu_time");
    for (size_t i = 0; a->ops_by_gpu && i < tp_report_rows(o, a->nops_by_gpu); i++) {
        const tp_op_row *r = &a->ops[a->ops_by_gpu[i]];
        tp_jw_object(w, NULL);
        tp_jw_str(w, tp_col_name, r->name);
        tp_jw_us(w, tp_col_gpu, r->gpu_ns);
        tp_jw_double(w, tp_col_pct, r->gpu_pct);
        tp_jw_u64(w, tp_col_kernels, r->kernels);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
    tp_jw_array(w, "top_ops_by_allocation");
    for (size_t i = 0; a->ops_by_alloc && i < tp_report_rows(o, a->nops_by_alloc); i++) {
        const tp_op_row *r = &a->ops[a->ops_by_alloc[i]];
        tp_jw_object(w, NULL);
        tp_jw_str(w, "name", r->name);
        tp_jw_i64(w, "alloc_bytes", r->alloc_bytes);
        tp_jw_u64(w, "allocs", r->allocs);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
}

/* Busy and idle per device over the window: idle is window - busy, the time no work ran, which
 * the idle rows above explain gap by gap. */
static void per_device(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    tp_jw_array(w, "per_device");
    for (size_t i = 0; i < tp_report_list(o, a->nidle); i++) {
        const tp_idle_row *r = &a->idle[i];
        tp_jw_object(w, NULL);
        tp_jw_i64(w, "device", r->device);
        tp_jw_us(w, "busy_us", r->busy_ns);
        tp_jw_us(w, "idle_us", r->window_ns - r->busy_ns);
        tp_jw_us(w, "window_us", r->window_ns);
        tp_jw_double_opt(w, "utilization_pct",
                         r->window_ns > 0 ? 100.0 * (double)r->busy_ns / (double)r->window_ns : -1);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
}

static void kernels(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    tp_jw_array(w, "top_gpu_kernels");
    for (size_t i = 0; i < tp_report_rows(o, a->nkernels); i++) {
        const tp_kernel_row *r = &a->kernels[i];
        tp_jw_object(w, NULL);
        row_head(w, r->name, r->calls, r->total_ns);
        tp_jw_double(w, tp_col_pct, r->pct);
        row_spread(w, r->calls, r->total_ns, r->min_ns, r->max_ns);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
    tp_jw_object(w, "gpu");
    tp_jw_us(w, "busy_us", a->gpu_busy_ns);
    tp_jw_double_opt(w, "utilization_pct", a->gpu_utilization_pct);
    tp_jw_u64(w, "kernel_count", a->kernel_count);
    tp_jw_u64(w, "devices", a->gpu_devices);
    tp_jw_us(w, "capacity_us", a->gpu_capacity_ns);
    tp_jw_us(w, "kernel_us", a->kernel_total_ns);
    tp_jw_us(w, "work_us", a->gpu_work_ns);
    tp_jw_us(w, "attributed_us", a->gpu_attributed_ns);
    tp_jw_array(w, "idle");
    for (size_t i = 0; i < tp_report_list(o, a->nidle); i++) {
        const tp_idle_row *r = &a->idle[i];
        tp_jw_object(w, NULL);
        tp_jw_i64(w, "device", r->device);
        tp_jw_us(w, "idle_us", r->idle_ns);
        tp_jw_us(w, "host_us", r->host_ns);
        tp_jw_us(w, "sync_us", r->sync_ns);
        tp_jw_us(w, "launch_us", r->launch_ns);
        tp_jw_us(w, "other_us", r->other_ns);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
    per_device(w, a, o);
    tp_jw_end_object(w);
}

/* A string, or null when s is NULL. */
static void str_opt(tp_jw *w, const char *key, const char *s) {
    if (s)
        tp_jw_str(w, key, s);
    else
        tp_jw_null(w, key);
}

static void memory_and_flops(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    tp_jw_array(w, "memory");
    for (size_t i = 0; i < tp_report_list(o, a->nmemory); i++) {
        const tp_mem_row *r = &a->memory[i];
        tp_jw_object(w, NULL);
        tp_jw_i64(w, "device_type", r->device_type);
        tp_jw_i64(w, "device_id", r->device_id);
        tp_jw_i64(w, "peak_bytes", r->peak_bytes);
        tp_jw_us(w, "peak_ts_us", r->peak_ts_ns);
        tp_jw_u64(w, "capacity_bytes", r->capacity_bytes);
        tp_jw_double_opt(w, "capacity_pct", r->capacity_pct);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
    tp_jw_object(w, "flops");
    tp_jw_double(w, "total", a->flops);
    tp_jw_us(w, "time_us", a->flops_time_ns);
    tp_jw_double_opt(w, "per_second", a->flops_per_s);
    tp_jw_str(w, "convention", TP_FLOPS_NOTE);
    tp_jw_end_object(w);
    tp_jw_object(w, tp_col_flops_fcm);
    tp_jw_double(w, "total", a->fcm_flops);
    tp_jw_double(w, "step_flops", a->step_fcm_flops);
    tp_jw_double_opt(w, "achieved_tflops",
                     a->achieved_fcm_flops_per_s >= 0 ? a->achieved_fcm_flops_per_s / 1e12 : -1);
    tp_jw_double_opt(w, "mfu_pct", a->fcm_mfu_pct);
    tp_jw_str(w, "convention", TP_FLOPS_FCM_NOTE);
    tp_jw_end_object(w);
    tp_jw_object(w, "mfu");
    tp_jw_double(w, "step_flops", a->step_flops);
    tp_jw_double_opt(w, "achieved_tflops",
                     a->achieved_flops_per_s >= 0 ? a->achieved_flops_per_s / 1e12 : -1);
    str_opt(w, "device", a->gpu_name);
    tp_jw_double_opt(w, "peak_tflops", a->peak_tflops > 0 ? a->peak_tflops : -1);
    str_opt(w, "peak_source", a->peak_source);
    str_opt(w, "dtype", a->peak_dtype);
    tp_jw_double_opt(w, "pct", a->mfu_pct);
    tp_jw_end_object(w);
}

/* "flight": one object per flight recorder's trace (docs/ANALYZE_JSON.md). */
static void flight(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    tp_jw_array(w, "flight");
    for (size_t i = 0; i < tp_report_list(o, a->nflights); i++) {
        const tp_flight_row *f = &a->flights[i];
        const tp_step_row *s = &a->steps[f->step];
        tp_jw_object(w, NULL);
        tp_jw_str(w, "reason", f->reason);
        tp_jw_str(w, "step", s->name);
        tp_jw_i64(w, "number", s->number);
        tp_jw_us(w, "dur_us", s->dur_ns);
        tp_jw_u64(w, "other_steps", f->others);
        tp_jw_us_opt(w, "median_us", f->median_ns);
        tp_jw_double_opt(w, "ratio", f->ratio);
        str_opt(w, "stage", tp_flight_stage_name(a, f));
        tp_jw_us_opt(w, "stage_step_us", f->stage >= -1 ? f->stage_step_ns : -1);
        tp_jw_us_opt(w, "stage_median_us", f->stage >= -1 ? f->stage_median_ns : -1);
        tp_jw_array(w, "ops");
        for (size_t k = 0; k < f->nops; k++) {
            tp_jw_object(w, NULL);
            tp_jw_str(w, "name", f->ops[k].name);
            tp_jw_us(w, "step_us", f->ops[k].step_ns);
            tp_jw_us(w, "mean_others_us", f->ops[k].typical_ns);
            tp_jw_end_object(w);
        }
        tp_jw_end_array(w);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
}

void tp_report_json(tp_buf *out, const tp_analysis *a, const tp_report_opts *o) {
    tp_jw w;
    tp_jw_begin_report(&w, out);
    w.max_str = o ? o->max_str : 0;
    input(&w, a, o);
    steps(&w, a, o);
    flight(&w, a, o);
    ops(&w, a, o);
    kernels(&w, a, o);
    stage_rows(&w, a);
    tp_jw_double_opt(&w, "dataloader_pct", a->dataloader_pct);
    memory_and_flops(&w, a, o);
    tp_report_modules_json(&w, a, o);
    tp_report_ranks_json(&w, a, o);
    tp_report_stacks_json(&w, a, o);
    tp_report_rank_summary_json(&w, a, o);
    tp_jw_array(&w, "warnings");
    for (size_t i = 0; i < tp_report_list(o, a->nwarnings); i++)
        tp_jw_str(&w, NULL, a->warnings[i]);
    tp_jw_end_array(&w);
    tp_jw_array(&w, "recommendations");
    for (size_t i = 0; i < a->nrecos; i++) {
        tp_jw_object(&w, NULL);
        tp_jw_str(&w, "id", a->recos[i].id);
        tp_jw_str(&w, "message", a->recos[i].message);
        tp_jw_us(&w, "saving_us", a->recos[i].saving_ns);
        tp_jw_end_object(&w);
    }
    tp_jw_end_array(&w);
    tp_jw_end_report(&w, o ? o->extra_json : NULL);
}

void tp_report_stage_times_json(tp_buf *out, const tp_analysis *a) {
    tp_jw w;
    tp_jw_init(&w, out);
    tp_jw_object(&w, NULL);
    stage_rows(&w, a);
    step_list(&w, "steps", a, NULL);
    tp_jw_end_object(&w);
    tp_buf_putc(out, '\n');
}
