/* bench_stream.c - one long window, streamed (`stream: true`) or held whole: what it costs the
 * training thread, how fast the writer gets it to disk, and what it drops.
 *
 * Records `events` ranges (begin+end, 2 records each) on each of `threads` threads, as a loop of
 * `op` ranges inside a `block` range every 1000 ops, in the one window of a session without a
 * schedule (it closes at tprof_shutdown), the first thread calling tprof_step after every
 * STEP blocks (0: never, the window is one step), inside an `epoch` range around them all with
 * AROUND 1 (a range open across every step, which the summary cuts into parts), then prints
 *   record     ns per range on the recording threads (wall time of the loop / ranges)
 *   tail       the wall time tprof_shutdown takes after the loop (the writer finishing)
 *   written    ranges per second from the loop's start to the end of the shutdown
 *   dropped    the trace's dropped_events (goal 0)
 *   peak RSS   the process's (getrusage; /usr/bin/time -f %M gives the same)
 *   summary    whether summary.json holds the window (its steps), and any line leaving it out
 * Usage: bench_stream EVENTS STREAM(0|1) [THREADS [MAX_EVENTS [OUTPUT_DIR [SPIN_NS [STEP
 * [FORMAT [AROUND]]]]]]]: SPIN_NS of busy work inside each op paces the loop (0: ranges back to
 * back, faster than any writer); FORMAT the trace_format key (json, perfetto). Without arguments
 * (scripts/bench): 2000000 1 1 4194304 bench_stream_out 500 0 json 0. */
#include "bench.h"
#include "tprof.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum { BLOCK = 1000 };

static long per_thread;
static double spin_s;    /* work inside each op, so that the loop runs at a training loop's pace */
static long step_blocks; /* blocks per step on the first thread (0: no tprof_step) */
static int around;       /* an `epoch` range around the first thread's loop */

static void spin(void) {
    if (spin_s <= 0) return;
    double until = bench_now_s(CLOCK_MONOTONIC) + spin_s;
    while (bench_now_s(CLOCK_MONOTONIC) < until) {
    }
}

static void *record(void *first) { /* first: non-NULL on the first thread, which steps */
    int steps = step_blocks > 0 && first;
    if (around && first) tprof_begin("epoch");
    for (long i = 0, b = 0; i < per_thread; i += BLOCK) {
        tprof_begin("block");
        for (long k = 1; k < BLOCK && i + k < per_thread; k++) {
            tprof_begin("op");
            spin();
            tprof_end();
        }
        tprof_end();
        if (steps && ++b % step_blocks == 0) tprof_step();
    }
    if (around && first) tprof_end();
    return NULL;
}

static char summary[1 << 24]; /* the run's summary.json */

static void read_summary(const char *dir) {
    char path[512];
    snprintf(path, sizeof(path), "%s/stream/tprof/summary.json", dir);
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(summary, 1, sizeof(summary) - 1, f) : 0;
    if (f) fclose(f);
    summary[n] = '\0';
}

/* The integer after key in the summary's member `in` (NULL: anywhere), or -1. */
static long long summary_int(const char *in, const char *key) {
    const char *at = in ? strstr(summary, in) : summary;
    const char *p = at ? strstr(at, key) : NULL;
    return p ? atoll(p + strlen(key)) : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr,
                "usage: bench_stream EVENTS STREAM(0|1) [THREADS [MAX_EVENTS [DIR [SPIN_NS [STEP "
                "[FORMAT [AROUND]]]]]]]\n");
        return 2;
    }
    long events = atol(argv[1]);
    int threads = argc > 3 ? atoi(argv[3]) : 1;
    const char *max = argc > 4 ? argv[4] : "4194304";
    const char *dir = argc > 5 ? argv[5] : "bench_stream_out";
    spin_s = argc > 6 ? atof(argv[6]) * 1e-9 : 0;
    step_blocks = argc > 7 ? atol(argv[7]) : 0;
    const char *format = argc > 8 ? argv[8] : "json";
    around = argc > 9 && argv[9][0] == '1';
    if (events <= 0 || threads <= 0 || threads > 64) return 2;
    per_thread = events / threads;
    tprof_config *c = tprof_config_new();
    tprof_config_set(c, "enabled", "true");
    tprof_config_set(c, "signals", "false");
    tprof_config_set(c, "summary", "false");
    tprof_config_set(c, "html_report", "false");
    tprof_config_set(c, "output_dir", dir);
    tprof_config_set(c, "run_id", "stream");
    tprof_config_set(c, "max_events", max);
    tprof_config_set(c, "stream", argv[2][0] == '1' ? "true" : "false");
    tprof_config_set(c, "trace_format", format);
    if (tprof_start(c)) {
        fprintf(stderr, "bench_stream: %s\n", tprof_last_error());
        return 1;
    }
    tprof_config_free(c);
    pthread_t t[64];
    double t0 = bench_now_s(CLOCK_MONOTONIC);
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, record, i == 0 ? t : NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    double t1 = bench_now_s(CLOCK_MONOTONIC);
    tprof_shutdown();
    double t2 = bench_now_s(CLOCK_MONOTONIC);
    long ranges = per_thread * threads;
    printf("ranges %ld threads %d stream %s max_events %s spin %.0f ns format %s%s\n", ranges,
           threads, argv[2], max, spin_s * 1e9, format,
           around ? " (an epoch around the steps)" : "");
    printf("  record   %8.2f ns per range (spin included)\n",
           (t1 - t0) * 1e9 / (double)ranges * threads);
    printf("  tail     %8.3f s (tprof_shutdown after the loop)\n", t2 - t1);
    printf("  written  %8.2f M ranges/s (loop start to shutdown end)\n",
           (double)ranges / (t2 - t0) / 1e6);
    read_summary(dir);
    printf("  dropped  %lld (goal 0)\n", summary_int("\"run\":", "\"dropped_events\":"));
    const char *out = strstr(summary, "the summary leaves");
    printf("  summary  %lld steps%s%.*s\n", summary_int("\"steps\":", "\"count\":"),
           out ? ": " : "", out ? (int)strcspn(out, "\"") : 0, out ? out : "");
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("  peak RSS %8.1f MB\n", (double)ru.ru_maxrss / 1024.0);
    return 0;
}
