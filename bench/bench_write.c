/* bench_write.c - the Chrome trace writer's cost per event, against a straightforward
 * fprintf writer of the same JSON measured in the same run (the baseline).
 *
 * The model imitates a recorded window of a GPU training loop: steps holding nested host
 * ranges with args (shapes, FLOPs), runtime launches correlated with kernels on two streams,
 * and memory instants. Both writers go to /dev/null, plain and gzip (level 1 for both), so the
 * figures are formatting (and compression) cost only. Prints the medians over several runs of
 * each writer's time per event and of the ratio tprof / baseline within each run.
 *     bench_write [EVENTS] [RUNS] [OUT_DIR]
 * With OUT_DIR, both plain outputs are also written there once (tprof.json, baseline.json) so
 * that their equivalence can be checked. */
#include "bench.h"
#include "export/chrome.h"
#include "model/model.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

/* ---- the model --------------------------------------------------------------------------------
 */

typedef struct gen {
    tp_model *m;
    uint32_t host, stream[2];
    int64_t now;
    uint64_t corr;
    uint64_t rng;
} gen;

static uint64_t next_rand(gen *g) {
    g->rng ^= g->rng << 13;
    g->rng ^= g->rng >> 7;
    g->rng ^= g->rng << 17;
    return g->rng;
}

static tp_event *add(gen *g, int kind, uint32_t track, const char *cat, const char *name,
                     int64_t ts, int64_t dur) {
    tp_event *ev = tp_model_add_event(g->m);
    if (!ev) {
        fprintf(stderr, "bench_write: out of memory\n");
        exit(1);
    }
    ev->kind = (uint8_t)kind;
    ev->track = track;
    ev->cat = tp_model_intern_cstr(g->m, cat);
    ev->name = tp_model_intern_cstr(g->m, name);
    ev->ts = ts;
    ev->dur = dur;
    return ev;
}

/* One aten op: the op (shapes, FLOPs), its inner op, the launch and its kernel, a memory
 * event: 5 events. */
static void add_op(gen *g, const char *op, const char *inner, const char *kernel) {
    int64_t t0 = g->now, r = (int64_t)(next_rand(g) % 4000);
    tp_event *ev = add(g, TP_HOST_RANGE, g->host, "cpu_op", op, t0, 41000 + r);
    tp_model_arg_json(g->m, ev, "Input Dims", "[[64, 784], [784, 256], []]");
    tp_model_arg_int(g->m, ev, "flops", 25690112 + r);
    add(g, TP_HOST_RANGE, g->host, "cpu_op", inner, t0 + 1234, 30111 + r);
    uint64_t corr = ++g->corr;
    ev = add(g, TP_HOST_RANGE, g->host, "cuda_runtime", "cudaLaunchKernel", t0 + 5001, 7007);
    ev->corr = corr;
    ev = add(g, TP_KERNEL, g->stream[corr % 2], "kernel", kernel, t0 + 20017, 9013 + r);
    ev->corr = corr;
    tp_model_arg_int(g->m, ev, "device", 0);
    tp_model_arg_int(g->m, ev, "stream", 7);
    ev = add(g, TP_MEMORY, g->host, "cpu_instant_event", "[memory]", t0 + 40001, 0);
    tp_model_arg_int(g->m, ev, "Device Type", 1);
    tp_model_arg_int(g->m, ev, "Device Id", 0);
    tp_model_arg_int(g->m, ev, "Addr", (int64_t)(0x7f0000000000 + (next_rand(g) % 65536) * 512));
    tp_model_arg_int(g->m, ev, "Bytes", 200704);
    tp_model_arg_int(g->m, ev, "Total Allocated", 91505152 + r * 512);
    g->now += 45000 + r;
}

static void build(tp_model *m, size_t nevents) {
    static const char *stage[] = {"forward", "backward", "optimizer"};
    static const char *ops[][3] = {
        {"aten::linear", "aten::addmm", "ampere_sgemm_128x64_tn"},
        {"aten::relu", "aten::clamp_min", "void at::native::vectorized_elementwise_kernel<4>"},
        {"aten::mm", "aten::mm", "ampere_sgemm_64x64_nn"},
        {"Optimizer.step#SGD.step", "aten::add_", "void at::native::unrolled_elementwise_kernel"},
    };
    gen g = {.m = m, .rng = 0x9e3779b97f4a7c15ULL};
    m->base_ns = 1700000000123456789;
    m->rank = 0;
    m->world_size = 1;
    g.host = tp_model_track(m, 4242, 0, 4242, 0);
    g.stream[0] = tp_model_track(m, 0, 0, 7, 0);
    g.stream[1] = tp_model_track(m, 0, 0, 13, 0);
    tp_device *d = tp_model_device(m, 0);
    d->name = tp_model_intern_cstr(m, "NVIDIA H100 80GB HBM3");
    d->total_mem = 85018279936;
    for (int64_t step = 0; m->nevents < nevents; step++) {
        char name[48];
        snprintf(name, sizeof(name), "ProfilerStep#%" PRId64, step);
        size_t step_ev = m->nevents;
        int64_t step_t0 = g.now;
        add(&g, TP_HOST_RANGE, g.host, "user_annotation", name, g.now, 0)->flags = TP_EVF_STEP;
        for (int s = 0; s < 3; s++) {
            size_t stage_ev = m->nevents;
            int64_t t0 = g.now;
            add(&g, TP_HOST_RANGE, g.host, "user_annotation", stage[s], t0, 0);
            for (int k = 0; k < 20 && m->nevents < nevents; k++)
                add_op(&g, ops[k % 4][0], ops[k % 4][1], ops[k % 4][2]);
            m->events[stage_ev].dur = g.now - t0;
        }
        m->events[step_ev].dur = g.now - step_t0;
    }
}

/* ---- the baseline: fprintf of the same JSON ---------------------------------------------------
 */

static const char *esc(const char *s, char *buf, size_t cap) {
    size_t o = 0;
    for (; *s && o + 7 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            o += (size_t)snprintf(buf + o, cap - o, "\\%c", c);
        else if (c < 0x20)
            o += (size_t)snprintf(buf + o, cap - o, "\\u%04x", c);
        else
            buf[o++] = (char)c;
    }
    buf[o] = '\0';
    return buf;
}

/* With gzip, the baseline's FILE writes through zlib (a stdio cookie), so it stays fprintf. */
static ssize_t gz_cookie_write(void *cookie, const char *data, size_t len) {
    return gzwrite(cookie, data, (unsigned)len) == (int)len ? (ssize_t)len : -1;
}

static int gz_cookie_close(void *cookie) {
    return gzclose(cookie) == Z_OK ? 0 : -1;
}

#define US(ns) (int64_t)((ns) / 1000), (int)((ns) % 1000)

static void baseline_args(FILE *o, const tp_model *m, const tp_event *ev) {
    char k[256], v[256];
    if (!ev->nargs && !ev->corr) return;
    fprintf(o, ",\"args\":{");
    for (unsigned i = 0; i < ev->nargs; i++) {
        const tp_arg *a = &m->args[ev->arg0 + i];
        fprintf(o, "%s\"%s\":", i ? "," : "", esc(tp_model_str(m, a->key), k, sizeof(k)));
        if (a->type == TP_ARG_INT)
            fprintf(o, "%" PRId64, a->v.i);
        else if (a->type == TP_ARG_JSON)
            fprintf(o, "%s", tp_model_str(m, a->v.s));
        else
            fprintf(o, "\"%s\"", esc(tp_model_str(m, a->v.s), v, sizeof(v)));
    }
    if (ev->corr) fprintf(o, "%s\"correlation\":%" PRIu64, ev->nargs ? "," : "", ev->corr);
    fprintf(o, "}");
}

static void baseline_write(const tp_model *m, FILE *o) {
    char c[256], n[256];
    fprintf(o, "{\"schemaVersion\":1,\n\"traceEvents\":[");
    for (size_t t = 0; t < m->ntracks; t++) {
        const tp_track *tr = &m->tracks[t];
        fprintf(o,
                "%s\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%" PRId64
                ",\"args\":{\"name\":\"thread %" PRId64 "\"}}",
                t ? "," : "", tr->pid, tr->tid, tr->tid);
    }
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *ev = &m->events[i];
        const tp_track *tr = &m->tracks[ev->track];
        esc(tp_model_str(m, ev->cat), c, sizeof(c));
        esc(tp_model_str(m, ev->name), n, sizeof(n));
        if (ev->kind == TP_MEMORY)
            fprintf(o,
                    ",\n{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%" PRId64
                    ",\"tid\":%" PRId64 ",\"ts\":%" PRId64 ".%03d",
                    c, n, tr->pid, tr->tid, US(ev->ts));
        else
            fprintf(o,
                    ",\n{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"%s\",\"pid\":%" PRId64
                    ",\"tid\":%" PRId64 ",\"ts\":%" PRId64 ".%03d,\"dur\":%" PRId64 ".%03d",
                    c, n, tr->pid, tr->tid, US(ev->ts), US(ev->dur));
        baseline_args(o, m, ev);
        fprintf(o, "}");
        if (ev->corr)
            fprintf(o,
                    ",\n{\"ph\":\"%s\",\"id\":%" PRIu64 ",\"pid\":%" PRId64 ",\"tid\":%" PRId64
                    ",\"ts\":%" PRId64 ".%03d,\"cat\":\"ac2g\",\"name\":\"ac2g\"%s}",
                    ev->kind == TP_KERNEL ? "f" : "s", ev->corr, tr->pid, tr->tid, US(ev->ts),
                    ev->kind == TP_KERNEL ? ",\"bp\":\"e\"" : "");
    }
    fprintf(o, "\n],\n\"baseTimeNanoseconds\":%" PRId64 "}\n", m->base_ns);
}

/* ---- timing ------------------------------------------------------------------------------- */

/* Wall time, and the CPU time of this thread: on a shared machine the second is the steadier
 * measure of what writing costs the writer thread. */
typedef struct timing {
    double wall, cpu;
} timing;

static timing now(void) {
    struct timespec w, c;
    clock_gettime(CLOCK_MONOTONIC, &w);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c);
    return (timing){(double)w.tv_sec + (double)w.tv_nsec * 1e-9,
                    (double)c.tv_sec + (double)c.tv_nsec * 1e-9};
}

static timing since(timing t0) {
    timing t = now();
    return (timing){t.wall - t0.wall, t.cpu - t0.cpu};
}

static int to_file(void *ctx, const void *data, size_t len) {
    return fwrite(data, 1, len, ctx) == len ? 0 : -1;
}

static timing time_tprof(const tp_model *m, int gzip, const char *path) {
    FILE *f = fopen(path, "wb");
    tp_chrome_opts o = {.gzip = gzip};
    timing t0 = now();
    int rc = tp_chrome_write(m, &o, to_file, f);
    fclose(f);
    if (rc) {
        fprintf(stderr, "bench_write: tp_chrome_write failed\n");
        exit(1);
    }
    return since(t0);
}

static timing time_baseline(const tp_model *m, int gzip, const char *path) {
    FILE *f = fopen(path, "wb");
    if (gzip) {
        cookie_io_functions_t io = {.write = gz_cookie_write, .close = gz_cookie_close};
        f = fopencookie(gzdopen(fileno(f), "wb1"), "w", io);
    }
    timing t0 = now();
    baseline_write(m, f);
    fclose(f);
    return since(t0);
}

int main(int argc, char **argv) {
    size_t nevents = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000000;
    int runs = argc > 2 ? atoi(argv[2]) : 5;
    if (runs < 1 || runs > 100) runs = 5;
    tp_model m;
    tp_model_init(&m);
    build(&m, nevents);
    if (argc > 3) {
        char p[4096];
        snprintf(p, sizeof(p), "%s/tprof.json", argv[3]);
        time_tprof(&m, 0, p);
        snprintf(p, sizeof(p), "%s/baseline.json", argv[3]);
        time_baseline(&m, 0, p);
    }
    printf("bench_write: %zu events, medians of %d runs, output to /dev/null; ns per event, "
           "wall (thread CPU)\n",
           m.nevents, runs);
    for (int gzip = 0; gzip <= 1; gzip++) {
        /* Runs alternate the two writers, so a busy machine slows both alike; the ratio within
         * each pair is the robust figure. */
        double tw[100] = {0}, tc[100] = {0}, bw[100] = {0}, bc[100] = {0}, ratio[100] = {0};
        for (int r = 0; r < runs; r++) {
            timing t = time_tprof(&m, gzip, "/dev/null");
            timing b = time_baseline(&m, gzip, "/dev/null");
            tw[r] = t.wall * 1e9 / (double)m.nevents;
            tc[r] = t.cpu * 1e9 / (double)m.nevents;
            bw[r] = b.wall * 1e9 / (double)m.nevents;
            bc[r] = b.cpu * 1e9 / (double)m.nevents;
            ratio[r] = t.cpu / b.cpu;
        }
        double rt = bench_median(ratio, runs);
        printf("%-5s tprof %6.1f (%6.1f)   fprintf baseline %7.1f (%7.1f)   CPU ratio %.3f "
               "(%.1fx faster)\n",
               gzip ? "gzip" : "plain", bench_median(tw, runs), bench_median(tc, runs),
               bench_median(bw, runs), bench_median(bc, runs), rt, 1 / rt);
    }
    tp_model_free(&m);
    return 0;
}
