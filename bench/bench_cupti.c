/* bench_cupti.c - the cost of turning CUPTI activity records into model events, per record.
 *
 * A training-like stream of records (per step: 25 kernel launches with their kernels, two copies,
 * a memset, a synchronization) goes through the two halves of the CUPTI source: reduce (on
 * CUPTI's buffer thread, as each buffer completes) and take (on the writer thread: sort, place in
 * the window, emit events with Kineto's args). The baseline, measured in the same run, appends the
 * same events with the same number of args, keys interned once, straight into a model: the floor
 * any converter pays. Each figure is the median of 5 rounds.
 *
 *   build/bench/bench_cupti [records]     (default 1000000) */
#include <stdio.h>

#ifdef TPROF_HAVE_CUPTI_HEADERS

#include "bench.h"
#include "gpu/convert.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef union raw_record {
    CUpti_Activity any;
    CUpti_ActivityKernel10 kernel;
    CUpti_ActivityAPI api;
    CUpti_ActivityMemcpy6 memcpy;
    CUpti_ActivityMemset4 memset;
    CUpti_ActivitySynchronization2 sync;
} raw_record;

static const char *const kernel_names[] = {"_Z4gemmILb0ELb1EEvPKfS1_Pfiii",
                                           "_Z8add_biasPfPKfii",
                                           "_Z4reluPfi",
                                           "_Z13relu_backwardPKfPfi",
                                           "_Z10column_sumPKfPfii",
                                           "_Z10sgd_updatePfPKffi",
                                           "_Z4gemmILb1ELb0EEvPKfS1_Pfiii",
                                           "_Z21softmax_cross_entropyPKfPKiPfS3_i"};

/* One record of the stream: i-th, time t (ns). */
static void make_record(size_t i, uint64_t t, raw_record *r) {
    uint32_t corr = (uint32_t)(i / 2 + 1);
    memset(r, 0, sizeof(*r));
    size_t slot = i % 60;
    if (slot < 50 && slot % 2 == 0) {
        r->api = (CUpti_ActivityAPI){.kind = CUPTI_ACTIVITY_KIND_RUNTIME,
                                     .cbid = 211,
                                     .start = t,
                                     .end = t + 3000,
                                     .processId = 7,
                                     .threadId = 7,
                                     .correlationId = corr};
    } else if (slot < 50) {
        r->kernel = (CUpti_ActivityKernel10){.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
                                             .registersPerThread = 32,
                                             .start = t + 5000,
                                             .end = t + 9000,
                                             .contextId = 1,
                                             .streamId = 7,
                                             .gridX = 64,
                                             .gridY = 4,
                                             .gridZ = 1,
                                             .blockX = 16,
                                             .blockY = 16,
                                             .blockZ = 1,
                                             .correlationId = corr,
                                             .name = kernel_names[slot % 8]};
    } else if (slot < 56) {
        r->memcpy = (CUpti_ActivityMemcpy6){.kind = CUPTI_ACTIVITY_KIND_MEMCPY,
                                            .copyKind = 1,
                                            .srcKind = 2,
                                            .dstKind = 3,
                                            .bytes = 262144,
                                            .start = t,
                                            .end = t + 2000,
                                            .contextId = 1,
                                            .streamId = 7,
                                            .correlationId = corr};
    } else if (slot < 58) {
        r->memset = (CUpti_ActivityMemset4){.kind = CUPTI_ACTIVITY_KIND_MEMSET,
                                            .bytes = 8,
                                            .start = t,
                                            .end = t + 1000,
                                            .contextId = 1,
                                            .streamId = 7,
                                            .correlationId = corr,
                                            .memoryKind = 3};
    } else {
        r->sync = (CUpti_ActivitySynchronization2){.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
                                                   .type = 3,
                                                   .start = t,
                                                   .end = t + 20000,
                                                   .correlationId = corr,
                                                   .contextId = 1,
                                                   .streamId = 7};
    }
}

static const char *api_name(int driver, uint32_t cbid) {
    (void)driver, (void)cbid;
    return "cudaLaunchKernel_v7000";
}

/* The floor: the same events, args counted per kind, appended with constant names. */
static void baseline(const tp_cupti_rec *recs, size_t n, tp_model *m) {
    static const int nargs[] = {[TP_CUPTI_KERNEL] = 11,
                                [TP_CUPTI_MEMCPY] = 5,
                                [TP_CUPTI_MEMSET] = 5,
                                [TP_CUPTI_RUNTIME] = 1,
                                [TP_CUPTI_SYNC] = 4};
    for (size_t i = 0; i < n; i++) {
        uint32_t track = tp_model_track(m, recs[i].device, 0, recs[i].stream, 0);
        tp_event *ev = tp_model_add_event(m);
        if (!ev) return;
        ev->ts = recs[i].start;
        ev->dur = recs[i].end - recs[i].start;
        ev->corr = recs[i].corr;
        ev->name = tp_model_intern_cstr(m, "kernel");
        ev->track = track;
        for (int a = 0; a < nargs[recs[i].kind]; a++)
            tp_model_arg_int(m, ev, "arg", a);
    }
}

enum { ROUNDS = 5 };

/* An A100, so that kernels carry their occupancy args. */
static tp_cupti_dev *a100(void) {
    tp_cupti_dev *dev = calloc(1, sizeof(*dev));
    if (!dev) return NULL;
    snprintf(dev->name, sizeof(dev->name), "A100");
    dev->cc_major = 8, dev->num_sms = 108, dev->warp_size = 32, dev->max_threads_per_sm = 2048;
    dev->max_blocks_per_sm = 32, dev->regs_per_sm = 65536, dev->smem_per_sm = 167936;
    dev->smem_reserved_per_block = 1024;
    return dev;
}

/* One round: reduce, take and the baseline, seconds into t[round] of each. 0, or -1. */
static int round_once(const raw_record *raw, tp_cupti_rec *reduced, size_t n, double *t_reduce,
                      double *t_take, double *t_base, long *events) {
    tp_cupti_conv c;
    tp_cupti_conv_init(&c);
    c.api_name = api_name;
    tp_cupti_dev *dev = a100();
    if (!dev) return -1;
    tp_cupti_conv_set_devices(&c, dev, 1);
    tp_cupti_pending p;
    tp_cupti_pending_init(&p, n);
    double t0 = bench_now_s(CLOCK_MONOTONIC);
    for (size_t i = 0; i < n; i++)
        if (tp_cupti_reduce(&c, &raw[i].any, &reduced[i])) tp_cupti_pending_add(&p, &reduced[i]);
    *t_reduce = bench_now_s(CLOCK_MONOTONIC) - t0;

    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "bench", .start_ns = 0, .end_ns = INT64_MAX / 2};
    t0 = bench_now_s(CLOCK_MONOTONIC);
    *events = tp_cupti_pending_take(&p, &c, &m, &w, NULL);
    *t_take = bench_now_s(CLOCK_MONOTONIC) - t0;
    size_t nargs = m.nargs;
    tp_model_free(&m);

    tp_model_init(&m);
    t0 = bench_now_s(CLOCK_MONOTONIC);
    baseline(reduced, n, &m);
    *t_base = bench_now_s(CLOCK_MONOTONIC) - t0;
    int same = m.nevents == (size_t)*events && m.nargs == nargs;
    tp_model_free(&m);
    tp_cupti_pending_free(&p);
    tp_cupti_conv_free(&c);
    return same ? 0 : -1;
}

int main(int argc, char **argv) {
    size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000000;
    raw_record *raw = malloc(n * sizeof(*raw));
    tp_cupti_rec *reduced = malloc(n * sizeof(*reduced));
    double t_reduce[ROUNDS], t_take[ROUNDS], t_base[ROUNDS];
    long events = 0;
    int rc = !n || !raw || !reduced;
    for (size_t i = 0; !rc && i < n; i++)
        make_record(i, 1000000 + (uint64_t)i * 1000, &raw[i]);
    for (int r = 0; !rc && r < ROUNDS; r++)
        rc = round_once(raw, reduced, n, &t_reduce[r], &t_take[r], &t_base[r], &events);
    if (rc) {
        fprintf(stderr, "bench_cupti: out of memory, or the baseline built a different model\n");
        free(raw);
        free(reduced);
        return 1;
    }
    double reduce = bench_median(t_reduce, ROUNDS), take = bench_median(t_take, ROUNDS),
           base = bench_median(t_base, ROUNDS);
    printf("records %zu -> events %ld, median of %d rounds\n", n, events, ROUNDS);
    printf("reduce (CUPTI thread)      %7.1f ns/record\n", reduce * 1e9 / n);
    printf("take (writer thread)       %7.1f ns/record\n", take * 1e9 / n);
    printf("baseline (append to model) %7.1f ns/record\n", base * 1e9 / n);
    printf("ratio take/baseline        %7.2f\n", take / base);
    free(raw);
    free(reduced);
    return 0;
}

#else
int main(void) {
    puts("bench_cupti: built without CUDA's CUPTI headers");
    return 0;
}
#endif
