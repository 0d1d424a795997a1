/* cupti_stream.c - a training loop whose every step launches kernels, through a whole tprof
 * session with the fake libcupti, for tests/integration/test_cupti_stream.py.
 *
 *   cupti_stream STEPS [--profiling.KEY=VALUE ...]
 *
 * CUDA_HOME must point at the fake's folder (tests/tools/gpu/CMakeLists.txt). Each step is a
 * `forward` range of about 4.5 ms around LAUNCHES launches, each after OPS short `op` ranges (so
 * that the thread fills a chunk of records every few steps: the writer reads only filled ones)
 * and each a cudaLaunchKernel record and its kernel, timed on the session clock as CUPTI's records
 * are, one after the other on their stream as a GPU runs a stream's work (in launch order); every
 * LATE_EVERY-th step's first kernel completes two flushes late (the GPU running behind), and so
 * does the last step's. Correlation ids count from 1, so two runs of the same program have
 * the same ones. With CUPTI_STREAM_BEHIND=1 in the environment every kernel runs in the step
 * after its launch's, its records made as that step begins (a GPU a step behind its host, as a
 * loop that never waits for it runs), in launch order on the stream. With CUPTI_STREAM_GIVE_UP=1
 * the first kernel of the window's sixth step ran at once but its record comes GIVE_UP_MS later
 * (two flushes after the program hands it over): tprof's GPU source has written its launch
 * without it by then (cupti.c's STREAM_WAIT_MS), and the kernel joins a later segment. */
#include "tprof.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum {
    LAUNCHES = 4,
    OPS = 50,
    LATE_EVERY = 60,
    LAG_EVERY = 2,
    GIVE_UP_STEP = 5,
    GIVE_UP_MS = 2500
};

static int (*push)(const void *rec, size_t size);
static int (*push_late)(const void *rec, size_t size, int flushes);
static uint64_t (*cupti_now)(void);

static void *fake_fn(void *lib, const char *name) {
    void *sym = dlsym(lib, name);
    if (!sym) {
        fprintf(stderr, "cupti_stream: %s not found (is CUDA_HOME the fake's?)\n", name);
        exit(2);
    }
    return sym;
}

static void bind_fake(void) {
    void *lib = dlopen(TPROF_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
    if (!lib) {
        fprintf(stderr, "cupti_stream: the fake libcupti is not loaded\n");
        exit(2);
    }
    void *sym = fake_fn(lib, "fake_cupti_push");
    memcpy(&push, &sym, sizeof(sym));
    sym = fake_fn(lib, "fake_cupti_push_late");
    memcpy(&push_late, &sym, sizeof(sym));
    sym = fake_fn(lib, "fake_cupti_now");
    memcpy(&cupti_now, &sym, sizeof(sym));
}

static void spin_us(int64_t us) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
        clock_gettime(CLOCK_MONOTONIC, &t);
    while ((t.tv_sec - t0.tv_sec) * 1000000 + (t.tv_nsec - t0.tv_nsec) / 1000 < us);
}

static uint64_t stream_free; /* when the stream's last kernel ends (ns) */

/* The kernel of launch corr, 100 us long, from `ready` (ns) or when the stream's kernel before
 * it ends. */
static CUpti_ActivityKernel10 kernel(uint32_t corr, uint64_t ready) {
    uint64_t start = ready > stream_free ? ready : stream_free;
    stream_free = start + 100000;
    return (CUpti_ActivityKernel10){.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                    .registersPerThread = 32,
                                    .start = start,
                                    .end = start + 100000,
                                    .contextId = 1,
                                    .streamId = 7,
                                    .gridX = 64,
                                    .gridY = 1,
                                    .gridZ = 1,
                                    .blockX = 128,
                                    .blockY = 1,
                                    .blockZ = 1,
                                    .correlationId = corr,
                                    .name = "_Z4stepPfi"};
}

/* The kernel of launch corr, ready from `ready` (ns), handed over now; late by two flushes if
 * asked. */
static void run_kernel(uint32_t corr, uint64_t ready, int late) {
    CUpti_ActivityKernel10 k = kernel(corr, ready);
    if (late)
        push_late(&k, sizeof(k), 2);
    else
        push(&k, sizeof(k));
}

/* One launch: the runtime call now, its kernel `lag_us` after, or later (lag_us < 0: the caller
 * runs it). Returns the launch's time. */
static uint64_t launch(uint32_t corr, int late, int64_t lag_us) {
    uint64_t t = cupti_now();
    CUpti_ActivityAPI a = {.kind = CUPTI_ACTIVITY_KIND_RUNTIME,
                           .cbid = 211, /* cudaLaunchKernel_v7000 */
                           .start = t,
                           .end = t + 5000,
                           .processId = (uint32_t)getpid(),
                           .threadId = (uint32_t)gettid(), /* inside the step's ranges */
                           .correlationId = corr};
    push(&a, sizeof(a));
    if (lag_us >= 0) run_kernel(corr, t + (uint64_t)lag_us * 1000, late);
    spin_us(100);
    return t;
}

/* CUPTI_STREAM_GIVE_UP's kernel (see the head of this file): held from its launch at `at` until
 * GIVE_UP_MS have passed, then handed over. */
typedef struct held_kernel {
    int held;
    uint64_t at;
    CUpti_ActivityKernel10 k;
} held_kernel;

static void hand_over_if_due(held_kernel *h) {
    if (!h->held || cupti_now() - h->at < (uint64_t)GIVE_UP_MS * 1000000) return;
    push_late(&h->k, sizeof(h->k), 2);
    h->held = 0;
}

/* A GPU a step behind: the kernels of the step before's launches (after corr, LAUNCHES of them)
 * run from 50 us on, one after the other on the stream, inside the step that begins. Not at
 * once: the step began a few us before, and a streamed window converts the host's ranges and
 * CUPTI's records along lines up to 2 ppm apart (docs/CONFIG.md, stream), a few us over the
 * test's window, which put a first kernel back in its launch's step (CI, 14% of them). */
static void run_behind(uint32_t corr) {
    if (!push || corr < LAUNCHES) return; /* nothing launched yet */
    uint64_t t = cupti_now() + 50000;
    for (uint32_t i = 0; i < LAUNCHES; i++)
        run_kernel(corr - LAUNCHES + 1 + i, t + 200000 * (uint64_t)i, 0);
}

int main(int argc, char **argv) {
    int steps = argc > 1 ? atoi(argv[1]) : 0;
    if (steps <= 0 || tprof_init(&argc, argv) != 0) {
        fprintf(stderr, "usage: cupti_stream STEPS [--profiling.KEY=VALUE ...] (%s)\n",
                tprof_last_error() ? tprof_last_error() : "");
        return 2;
    }
    const char *behind_env = getenv("CUPTI_STREAM_BEHIND");
    const char *give_up_env = getenv("CUPTI_STREAM_GIVE_UP");
    int behind = behind_env && strcmp(behind_env, "1") == 0;
    int give_up = give_up_env && strcmp(give_up_env, "1") == 0;
    uint32_t corr = 0;
    held_kernel held = {0};
    for (int s = 0, recorded = 0; s < steps; s++) {
        if (behind) run_behind(corr);
        if (push) hand_over_if_due(&held);
        tprof_begin("forward");
        if (tprof_is_recording() && !push) bind_fake();
        for (int i = 0; i < LAUNCHES; i++) {
            for (int j = 0; j < OPS; j++) {
                tprof_begin("op");
                tprof_end();
            }
            int late = i == 0 && (s % LATE_EVERY == LATE_EVERY - 1 || s == steps - 1);
            int lag = i == LAUNCHES - 1 && s % LAG_EVERY == 0;
            int hold = give_up && recorded == GIVE_UP_STEP && i == 0;
            int64_t lag_us = behind || hold ? -1 : lag ? 6000 : 20;
            uint64_t at = push ? launch(++corr, late && !behind, lag_us) : 0;
            if (hold) held = (held_kernel){1, at, kernel(corr, at + 20000)};
        }
        recorded += tprof_is_recording();
        spin_us(4000);
        tprof_end();
        tprof_step();
    }
    if (behind) run_behind(corr);
    tprof_shutdown();
    printf("launches=%u\n", corr);
    return 0;
}
