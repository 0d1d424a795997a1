/* bench_record.c - the cost of a range on the training thread, as ratios to baselines measured in
 * the same run: an empty loop, the raw counter read (rdtsc, cntvct_el0) and clock_gettime.
 *
 * Cases (each the median of REPS runs, after one warm-up run, of N begin+end pairs when the
 * ranges are kept and 10 N when not):
 *   idle       no session: the inline test of tprof_active_ alone
 *   between    a session between windows (a NONE step): depth counting only
 *   recording  a window records every range (ticks from `clock: auto`)
 *   monotonic  the same under `clock: monotonic`: ticks from clock_gettime
 *   4 threads  four threads record at once; cost per thread from its CPU time, so that the
 *              machine's core count does not show as waiting
 *   convert    the writer thread's conversion of the recorded window into a model
 * Usage: bench_record [N]  (default 1000000); BENCH_VERBOSE=1 also prints every run. */
#include "bench.h"
#include "config/config.h"
#include "record/clock.h"
#include "tprof.h"
#include "util/log.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { REPS = 7, THREADS = 4 };

static long iters = 1000000;
static int counter; /* `clock: auto` reads the counter on this machine */

/* ---- the loops; each returns ns per iteration, timed on clk ---- */

static double loop_empty(clockid_t clk, long n) {
    double t0 = bench_now_s(clk);
    for (long i = 0; i < n; i++)
        __asm__ volatile("" ::: "memory");
    return (bench_now_s(clk) - t0) * 1e9 / (double)n;
}

/* The raw counter read, whatever the session's source (rdtsc, cntvct_el0). */
static double loop_counter(clockid_t clk, long n) {
    uint64_t sum = 0;
    double t0 = bench_now_s(clk);
    for (long i = 0; i < n; i++) {
        sum += tp_clock_inline_ticks();
        __asm__ volatile("" ::: "memory");
    }
    double ns = (bench_now_s(clk) - t0) * 1e9 / (double)n;
    if (sum == 42) puts(""); /* keep the reads */
    return ns;
}

static double loop_gettime(clockid_t clk, long n) {
    uint64_t sum = 0;
    double t0 = bench_now_s(clk);
    for (long i = 0; i < n; i++) {
        sum += tp_clock_ticks_mono();
        __asm__ volatile("" ::: "memory");
    }
    double ns = (bench_now_s(clk) - t0) * 1e9 / (double)n;
    if (sum == 42) puts(""); /* keep the reads */
    return ns;
}

static double loop_ranges(clockid_t clk, long n) {
    double t0 = bench_now_s(clk);
    for (long i = 0; i < n; i++) {
        tprof_begin("bench");
        tprof_end();
    }
    return (bench_now_s(clk) - t0) * 1e9 / (double)n;
}

/* ---- sessions ---- */

static void start(const char *wait, const char *clock) {
    tprof_config *c = tprof_config_new();
    char max[32];
    snprintf(max, sizeof(max), "%ld", iters * 2 * THREADS + 4096);
    tprof_config_set(c, "enabled", "true");
    tprof_config_set(c, "signals", "false");
    tprof_config_set(c, "summary", "false"); /* the figures below are the output */
    tprof_config_set(c, "max_events", max);
    if (wait) tprof_config_set(c, "wait", wait);
    if (clock) tprof_config_set(c, "clock", clock);
    if (tprof_start(c)) {
        fprintf(stderr, "bench_record: %s\n", tprof_last_error());
        exit(1);
    }
    tprof_config_free(c);
}

static void *thread_ranges(void *arg) {
    *(double *)arg = loop_ranges(CLOCK_THREAD_CPUTIME_ID, iters);
    return NULL;
}

/* Four threads recording at once: the threads' mean CPU ns per range. */
static double threads_run(void) {
    pthread_t th[THREADS];
    double ns[THREADS], sum = 0;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, thread_ranges, &ns[i]);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < THREADS; i++)
        sum += ns[i];
    return sum / THREADS;
}

enum { EMPTY, COUNTER, GETTIME, IDLE, BETWEEN, RECORDING, MONOTONIC, THREADS4, CONVERT, NCASES };

/* One run of every case, on this thread's CPU time. Sessions start and end outside the timed
 * loops, so the writer's conversion at shutdown is not counted. */
static void run_cases(double *out) {
    const clockid_t cpu = CLOCK_THREAD_CPUTIME_ID;
    const long many = iters * 10; /* the cases that keep nothing run longer, for a steadier time */
    out[EMPTY] = loop_empty(cpu, many);
    out[COUNTER] = counter ? loop_counter(cpu, many) : 0;
    out[GETTIME] = loop_gettime(cpu, many);
    out[IDLE] = loop_ranges(cpu, many);
    start("1000000000", NULL); /* step 0 waits: no window */
    out[BETWEEN] = loop_ranges(cpu, many);
    tprof_shutdown();
    start(NULL, "monotonic");
    out[MONOTONIC] = loop_ranges(cpu, iters);
    tprof_shutdown();
    start(NULL, NULL);
    out[RECORDING] = loop_ranges(cpu, iters);
    double t0 = bench_now_s(CLOCK_MONOTONIC);
    tprof_shutdown(); /* waits for the writer thread to turn the window into a model */
    out[CONVERT] = (bench_now_s(CLOCK_MONOTONIC) - t0) * 1e9 / (double)iters;
    start(NULL, NULL);
    out[THREADS4] = threads_run();
    tprof_shutdown();
}

int main(int argc, char **argv) {
    if (argc > 1) iters = atol(argv[1]);
    if (iters < 1000) iters = 1000;
    tp_log_set_quiet(1);
    counter = tp_clock_setup(TP_CLOCK_AUTO);
    double runs[NCASES][REPS], med[NCASES];
    for (int r = -1; r < REPS; r++) {
        double one[NCASES];
        run_cases(one);
        for (int c = 0; c < NCASES && r >= 0; c++)
            runs[c][r] = one[c];
        if (getenv("BENCH_VERBOSE"))
            fprintf(stderr, "run %d: between %.2f idle %.2f rec %.2f\n", r, one[BETWEEN], one[IDLE],
                    one[RECORDING]);
    }
    for (int c = 0; c < NCASES; c++)
        med[c] = bench_median(runs[c], REPS);
    double empty = med[EMPTY], cnt = med[COUNTER], cgt = med[GETTIME], idle = med[IDLE] - empty;
    double between = med[BETWEEN] - empty, rec = med[RECORDING] - empty,
           mono = med[MONOTONIC] - empty, rec4 = med[THREADS4] - empty;
    /* The goal: 2 reads of the clock the session uses + 2 ns (issue 25). */
    double read = counter ? cnt : cgt, budget = 2 * read + 2;

    printf("bench_record: %ld begin+end pairs per run (x10 unrecorded), median of %d runs, thread "
           "CPU time (clock: auto = %s)\n",
           iters, REPS, counter ? "the CPU's counter" : "clock_gettime (no safe counter here)");
    printf("  %-36s %7.2f ns\n", "empty loop iteration (subtracted)", empty);
    if (counter) printf("  %-36s %7.2f ns\n", "raw counter read", cnt);
    printf("  %-36s %7.2f ns\n", "clock_gettime(CLOCK_MONOTONIC)", cgt);
    printf("  %-36s %7.2f ns   budget <= 2 ns\n", "begin+end, no session", idle);
    printf("  %-36s %7.2f ns\n", "begin+end, session between windows", between);
    printf("  %-36s %7.2f ns = %.2f counter reads = %.2f clock_gettime = %.2f x budget (2 reads "
           "+ 2 ns = %.1f ns)\n",
           "begin+end, recording", rec, counter ? rec / cnt : 0, rec / cgt, rec / budget, budget);
    printf("  %-36s %7.2f ns = %.2f clock_gettime = %.2f x the recording above\n",
           "begin+end, recording, clock: monotonic", mono, mono / cgt, mono / rec);
    printf("  %-36s %7.2f ns = %.2f clock reads = %.2f x budget, per thread\n",
           "begin+end, recording, 4 threads", rec4, rec4 / read, rec4 / budget);
    printf("  %-36s %7.2f ns per range (wall time of tprof_shutdown, off the recording thread)\n",
           "window to model, writer thread", med[CONVERT]);
    return 0;
}
