/* bench_analysis.c - the analysis' throughput on a realistic synthetic model of a few million
 * events, against a baseline measured in the same run: a plain qsort of the same events by
 * start time (what a straightforward analysis does first).
 *
 * The model imitates a Kineto trace of a training loop on one GPU: steps holding a dataloader
 * range, a forward pass of nested aten ops with runtime launches, kernels with correlation ids,
 * flops and memory events, a backward pass on a second thread, an optimizer step. It is measured
 * in three event orders: the recorder's (each thread in start order), Kineto's older post-order
 * (children before their parents), and shuffled.
 *
 * With --file, the model is instead read from a trace (say bench/out/big.json) and the analysis
 * of that model is timed, with its working memory: the growth of the peak RSS over the model's
 * footprint while the analysis runs (Linux: the peak is reset through /proc/self/clear_refs).
 *
 * usage: bench_analysis [events (default 3000000)] [repetitions (default 5)]
 *        bench_analysis --file TRACE [repetitions (default 5)] */
#include "bench.h"
#include "analysis/analysis.h"
#include "model/model.h"
#include "trace/reader.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { LAYERS = 20, OP_NAMES = 8 };

typedef struct gen {
    tp_model *m;
    uint32_t host1, host2, stream;
    uint64_t corr;
    int64_t allocated;
    tp_str cat_op, cat_rt, cat_annot, cat_kernel, cat_mem, launch, mem;
    tp_str kernels[LAYERS][3];
} gen;

static tp_event *range(gen *g, uint32_t track, tp_str name, tp_str cat, int64_t ts, int64_t dur) {
    tp_event *e = tp_model_add_event(g->m);
    if (!e) {
        fprintf(stderr, "bench_analysis: out of memory\n");
        exit(1);
    }
    e->kind = TP_HOST_RANGE;
    e->track = track;
    e->name = name;
    e->cat = cat;
    e->ts = ts;
    e->dur = dur;
    return e;
}

/* A runtime launch at ts on the host thread and its kernel on the stream a little later. */
static void launch(gen *g, uint32_t thread, int64_t ts, tp_str kernel, int64_t kdur) {
    uint64_t corr = ++g->corr;
    range(g, thread, g->launch, g->cat_rt, ts, 4000)->corr = corr;
    tp_event *k = range(g, g->stream, kernel, g->cat_kernel, ts + 15000, kdur);
    k->kind = TP_KERNEL;
    k->corr = corr;
}

static void memory(gen *g, int64_t ts, int64_t bytes) {
    g->allocated += bytes;
    tp_event *e = range(g, g->host1, g->mem, g->cat_mem, ts, 0);
    e->kind = TP_MEMORY;
    tp_model_arg_int(g->m, e, "Device Type", 1);
    tp_model_arg_int(g->m, e, "Device Id", 0);
    tp_model_arg_int(g->m, e, "Bytes", bytes);
    tp_model_arg_int(g->m, e, "Total Allocated", g->allocated);
}

static tp_str name(gen *g, const char *fmt, int i) {
    char buf[256];
    snprintf(buf, sizeof(buf), fmt, i);
    return tp_model_intern_cstr(g->m, buf);
}

/* One training step starting at t; returns its end. */
static int64_t step(gen *g, int64_t k, int64_t t) {
    static const char *const ops[OP_NAMES] = {"aten::linear",     "aten::t",     "aten::transpose",
                                              "aten::as_strided", "aten::addmm", "aten::relu",
                                              "aten::clamp_min",  "aten::mm"};
    tp_str op[OP_NAMES];
    for (int i = 0; i < OP_NAMES; i++)
        op[i] = tp_model_intern_cstr(g->m, ops[i]);
    int64_t start = t;
    /* the step comes first; build() sets its duration */
    range(g, g->host1, name(g, "ProfilerStep#%d", (int)k), g->cat_annot, t, 0)->flags = TP_EVF_STEP;
    range(g, g->host1,
          tp_model_intern_cstr(g->m, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
          g->cat_annot, t + 1000, 20000);
    t += 25000;
    int64_t fwd = t;
    tp_event *forward =
        range(g, g->host1, tp_model_intern_cstr(g->m, "## forward ##"), g->cat_annot, t, 0);
    size_t forward_index = (size_t)(forward - g->m->events);
    for (int l = 0; l < LAYERS; l++) {
        int64_t a = t + 1000;
        range(g, g->host1, op[0], g->cat_op, a, 60000);
        range(g, g->host1, op[1], g->cat_op, a + 1000, 6000);
        range(g, g->host1, op[2], g->cat_op, a + 2000, 4000);
        range(g, g->host1, op[3], g->cat_op, a + 3000, 1500);
        tp_event *mm = range(g, g->host1, op[4], g->cat_op, a + 10000, 40000);
        tp_model_arg_int(g->m, mm, "flops", (int64_t)2 * 64 * 1024 * 1024);
        launch(g, g->host1, a + 20000, g->kernels[l][0], 30000 + l * 100);
        memory(g, a + 25000, 262144);
        range(g, g->host1, op[5], g->cat_op, a + 62000, 12000);
        range(g, g->host1, op[6], g->cat_op, a + 63000, 10000);
        launch(g, g->host1, a + 64000, g->kernels[l][1], 5000);
        t = a + 80000;
    }
    g->m->events[forward_index].dur = t - fwd;
    /* backward on its own thread, layers in reverse */
    int64_t bwd = t;
    tp_event *backward =
        range(g, g->host2, tp_model_intern_cstr(g->m, "## backward ##"), g->cat_annot, t, 0);
    size_t backward_index = (size_t)(backward - g->m->events);
    for (int l = LAYERS - 1; l >= 0; l--) {
        int64_t a = t + 1000;
        range(g, g->host2, name(g, "autograd::engine::evaluate_function: AddmmBackward%d", l % 4),
              g->cat_op, a, 70000);
        range(g, g->host2, name(g, "AddmmBackward%d", l % 4), g->cat_op, a + 1000, 65000);
        range(g, g->host2, op[7], g->cat_op, a + 2000, 30000);
        launch(g, g->host2, a + 3000, g->kernels[l][2], 28000);
        range(g, g->host2, op[7], g->cat_op, a + 35000, 30000);
        launch(g, g->host2, a + 36000, g->kernels[l][2], 27000);
        memory(g, a + 40000, -262144);
        t = a + 75000;
    }
    g->m->events[backward_index].dur = t - bwd;
    range(g, g->host1, tp_model_intern_cstr(g->m, "Optimizer.step#SGD.step"), g->cat_annot, t,
          40000);
    range(g, g->host1, tp_model_intern_cstr(g->m, "aten::_foreach_add_"), g->cat_op, t + 2000,
          30000);
    launch(g, g->host1, t + 5000, g->kernels[0][0], 20000);
    t += 45000;
    return t - start;
}

static void build(tp_model *m, size_t target) {
    gen g = {.m = m};
    g.host1 = tp_model_track(m, 4242, 0, 4242, 0);
    g.host2 = tp_model_track(m, 4242, 0, 4300, 0);
    g.stream = tp_model_track(m, 0, 0, 7, 0);
    g.cat_op = tp_model_intern_cstr(m, "cpu_op");
    g.cat_rt = tp_model_intern_cstr(m, "cuda_runtime");
    g.cat_annot = tp_model_intern_cstr(m, "user_annotation");
    g.cat_kernel = tp_model_intern_cstr(m, "kernel");
    g.cat_mem = tp_model_intern_cstr(m, "cpu_instant_event");
    g.launch = tp_model_intern_cstr(m, "cudaLaunchKernel");
    g.mem = tp_model_intern_cstr(m, "[memory]");
    /* kernel names as long as real ones (hundreds of characters) */
    char buf[400];
    for (int l = 0; l < LAYERS; l++)
        for (int j = 0; j < 3; j++) {
            snprintf(
                buf, sizeof(buf),
                "void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_%dx%d_16x4_nn_align%d>(Params)"
                " at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
                "float, float, at::native::(anonymous namespace)::MulFunctor<float> >, "
                "at::detail::Array<char*, 3> >(int, Functor, at::detail::Array<char*, 3>)",
                64 << (l % 3), 32 << j, l);
            g.kernels[l][j] = tp_model_intern_cstr(m, buf);
        }
    int64_t t = 0;
    for (int64_t k = 0; m->nevents < target; k++) {
        size_t first = m->nevents;
        int64_t dur = step(&g, k, t);
        m->events[first].dur = dur;
        t += dur + 3000;
    }
}

static int cmp_ts(const void *pa, const void *pb) {
    const tp_event *a = pa, *b = pb;
    return (a->ts > b->ts) - (a->ts < b->ts);
}

static int cmp_end(const void *pa, const void *pb) {
    const tp_event *a = pa, *b = pb;
    int64_t x = a->ts + a->dur, y = b->ts + b->dur;
    return (x > y) - (x < y);
}

/* Seconds for new + add_model + finish + free. */
static double time_analysis(const tp_model *m, uint64_t *check) {
    double t0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
    tp_analysis *a = tp_analysis_new(NULL);
    if (!a || tp_analysis_add_model(a, m, "bench")) {
        fprintf(stderr, "bench_analysis: analysis failed\n");
        exit(1);
    }
    tp_analysis_finish(a);
    *check = a->kernel_count + a->nops + (uint64_t)a->gpu_attributed_ns;
    tp_analysis_free(a);
    return bench_now_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
}

static double time_qsort(const tp_model *m, tp_event *scratch) {
    memcpy(scratch, m->events, m->nevents * sizeof(*scratch));
    double t0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
    qsort(scratch, m->nevents, sizeof(*scratch), cmp_ts);
    return bench_now_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
}

/* kB of a VmRSS / VmHWM line of /proc/self/status; -1 when unknown. */
static long status_kb(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t len = strlen(field);
    while (f && fgets(line, sizeof(line), f))
        if (strncmp(line, field, len) == 0 && line[len] == ':')
            kb = strtol(line + len + 1, NULL, 10);
    if (f) fclose(f);
    return kb;
}

/* Resets the peak RSS to the current RSS; 0, or -1 when the kernel does not allow it. */
static int reset_peak_rss(void) {
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return -1;
    int rc = fputs("5", f) < 0;
    return fclose(f) || rc ? -1 : 0;
}

/* The analysis of the model of one trace file: CPU time, working memory. */
static int bench_file(const char *path, int reps) {
    tp_model m;
    tp_model_init(&m);
    char err[512];
    if (tp_trace_read_file(path, &m, NULL, err, sizeof(err))) {
        fprintf(stderr, "bench_analysis: %s\n", err);
        tp_model_free(&m);
        return 1;
    }
    tp_event *scratch = malloc((m.nevents ? m.nevents : 1) * sizeof(*scratch));
    if (!scratch) return 1;
    double ta[99] = {0}, tq[99] = {0};
    uint64_t check = 0, first_check = 0;
    long extra_kb = -1;
    for (int r = 0; r < reps; r++) {
        long rss = status_kb("VmRSS");
        int reset = reset_peak_rss();
        ta[r] = time_analysis(&m, &check);
        if (r == 0 && reset == 0 && rss >= 0) extra_kb = status_kb("VmHWM") - rss;
        if (r == 0) first_check = check;
        if (check != first_check) fprintf(stderr, "bench_analysis: results differ by run!\n");
        tq[r] = time_qsort(&m, scratch);
    }
    double a = bench_median(ta, reps), q = bench_median(tq, reps);
    printf("bench_analysis: %s: %zu events, %u strings, %zu tracks, median of %d\n", path,
           m.nevents, m.strings.n, m.ntracks, reps);
    /* on a shared machine the fastest run is the one least disturbed (ta is sorted now) */
    printf("  analysis %.1f ms CPU (%.2f Mevents/s; fastest %.1f ms); qsort by ts %.1f ms: "
           "ratio %.2f\n",
           a * 1e3, (double)m.nevents / a / 1e6, ta[0] * 1e3, q * 1e3, a / q);
    printf("  working memory (peak RSS above the model's): %.1f MB; check %llu\n",
           (double)extra_kb / 1024, (unsigned long long)first_check);
    free(scratch);
    tp_model_free(&m);
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "--file") == 0) {
        int reps = argc > 3 ? atoi(argv[3]) : 5;
        return bench_file(argv[2], reps < 1 || reps > 99 ? 5 : reps);
    }
    size_t target = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 3000000;
    int reps = argc > 2 ? atoi(argv[2]) : 5;
    if (reps < 1 || reps > 99) reps = 5;
    tp_model m;
    tp_model_init(&m);
    build(&m, target);
    tp_event *scratch = malloc(m.nevents * sizeof(*scratch));
    if (!scratch) return 1;
    size_t host = 0, device = 0;
    for (size_t i = 0; i < m.nevents; i++) {
        host += m.events[i].kind == TP_HOST_RANGE;
        device += m.events[i].kind == TP_KERNEL;
    }
    printf("bench_analysis: %zu events (%zu host ranges, %zu kernels, %zu memory), median of %d\n",
           m.nevents, host, device, m.nevents - host - device, reps);
    printf("%-12s %12s %10s %16s %22s\n", "order", "analysis ms", "Mevents/s", "qsort by ts ms",
           "analysis / qsort time");
    static const char *const orders[] = {"recorder", "post-order", "shuffled"};
    uint64_t first_check = 0;
    for (int o = 0; o < 3; o++) {
        if (o == 1) qsort(m.events, m.nevents, sizeof(*m.events), cmp_end);
        if (o == 2) {
            uint64_t x = 0x2545f4914f6cdd1dULL;
            for (size_t i = m.nevents - 1; i > 0; i--) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                size_t j = (size_t)(x % (i + 1));
                tp_event tmp = m.events[i];
                m.events[i] = m.events[j];
                m.events[j] = tmp;
            }
        }
        double ta[99] = {0}, tq[99] = {0};
        uint64_t check = 0;
        for (int r = 0; r < reps; r++) {
            ta[r] = time_analysis(&m, &check);
            tq[r] = time_qsort(&m, scratch);
        }
        if (o == 0) first_check = check;
        if (check != first_check) fprintf(stderr, "bench_analysis: results differ by order!\n");
        double a = bench_median(ta, reps), q = bench_median(tq, reps);
        printf("%-12s %12.1f %10.2f %16.1f %22.2f\n", orders[o], a * 1e3,
               (double)m.nevents / a / 1e6, q * 1e3, a / q);
    }
    free(scratch);
    tp_model_free(&m);
    return 0;
}
