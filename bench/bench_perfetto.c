/* bench_perfetto.c - the trace formats side by side: one window written as JSON, gzip JSON and
 * Perfetto's protobuf (`trace_format: perfetto`), each file's size, the writer's time, and the
 * time `tprof analyze` takes to read it and analyse it (one thread), as ratios to the JSON's,
 * measured in the same run.
 *
 * Usage: bench_perfetto TRACE [RUNS [KEEP]]: TRACE (any trace tprof reads; bench/make_big_trace.py
 * makes a large one) is read once into the model that is written three ways into a temporary
 * folder; each figure is the median of RUNS (default 3). With KEEP, an existing folder, the three
 * files are written there and left (t.json, t.json.gz, t.pftrace), for `tprof analyze` to be
 * timed on them (its peak RSS too: BENCHMARKS.md). */
#include "bench.h"
#include "analysis/analysis.h"
#include "export/chrome.h"
#include "export/perfetto.h"
#include "trace/reader.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

enum { FORMATS = 3, MAX_RUNS = 15 };

static int write_format(const tp_model *m, int f, const char *path, char *err, size_t n) {
    tp_chrome_opts o = {.gzip = f == 1};
    return f == 2 ? tp_perfetto_write_file(m, path, &o, err, n)
                  : tp_chrome_write_file(m, path, &o, err, n);
}

/* Seconds to read path and analyse it, as `tprof analyze` does, on one thread. */
static double analyse(const char *path) {
    char err[512];
    tp_model m;
    tp_model_init(&m);
    tp_read_opts o = {.threads = 1};
    double t0 = bench_now_s(CLOCK_MONOTONIC);
    if (tp_trace_read_file(path, &m, &o, err, sizeof(err))) {
        fprintf(stderr, "bench_perfetto: %s\n", err);
        exit(1);
    }
    tp_analysis *a = tp_analysis_new(NULL);
    if (!a || tp_analysis_add_model(a, &m, path)) exit(1);
    tp_analysis_finish(a);
    double s = bench_now_s(CLOCK_MONOTONIC) - t0;
    tp_analysis_free(a);
    tp_model_free(&m);
    return s;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: bench_perfetto TRACE [RUNS [KEEP]]\n");
        return 2;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 3;
    if (runs < 1 || runs > MAX_RUNS) runs = 3;
    tp_log_set_quiet(1);
    char err[512], dir[] = "/tmp/tprof_bench_formats_XXXXXX";
    tp_model m;
    tp_model_init(&m);
    const char *keep = argc > 3 ? argv[3] : NULL;
    if (tp_trace_read_file(argv[1], &m, NULL, err, sizeof(err)) || (!keep && !mkdtemp(dir))) {
        fprintf(stderr, "bench_perfetto: %s\n", err);
        return 1;
    }
    static const char *const names[FORMATS] = {"JSON", "gzip JSON", "Perfetto"};
    static const char *const files[FORMATS] = {"t.json", "t.json.gz", "t.pftrace"};
    char paths[FORMATS][600];
    double size[FORMATS], wr[FORMATS], rd[FORMATS], v[MAX_RUNS] = {0};
    for (int f = 0; f < FORMATS; f++) {
        snprintf(paths[f], sizeof(paths[f]), "%s/%s", keep ? keep : dir, files[f]);
        for (int r = 0; r < runs; r++) {
            double t0 = bench_now_s(CLOCK_PROCESS_CPUTIME_ID);
            if (write_format(&m, f, paths[f], err, sizeof(err))) {
                fprintf(stderr, "bench_perfetto: %s\n", err);
                return 1;
            }
            v[r] = bench_now_s(CLOCK_PROCESS_CPUTIME_ID) - t0;
        }
        wr[f] = bench_median(v, runs);
        struct stat st;
        size[f] = stat(paths[f], &st) ? 0 : (double)st.st_size;
    }
    for (int f = 0; f < FORMATS; f++) {
        for (int r = 0; r < runs; r++)
            v[r] = analyse(paths[f]);
        rd[f] = bench_median(v, runs);
    }
    printf("bench_perfetto: %s, %zu events; median of %d runs (write: CPU time; read + analysis: "
           "wall time, one thread)\n",
           argv[1], m.nevents, runs);
    printf("  %-10s %12s %8s %10s %8s %12s %8s\n", "format", "bytes", "x JSON", "write s", "x JSON",
           "analyze s", "x JSON");
    for (int f = 0; f < FORMATS; f++)
        printf("  %-10s %12.0f %8.3f %10.3f %8.2f %12.3f %8.2f\n", names[f], size[f],
               size[f] / size[0], wr[f], wr[f] / wr[0], rd[f], rd[f] / rd[0]);
    for (int f = 0; f < FORMATS && !keep; f++)
        unlink(paths[f]);
    if (!keep) rmdir(dir);
    tp_model_free(&m);
    return 0;
}
