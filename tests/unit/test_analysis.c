/* test_analysis.c - the figures of docs/SEMANTICS.md §3 on models built by hand, one test per
 * rule. Expected values are worked out by hand in the comments next to each model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/analysis.h"
#include "model/model.h"

#include "test_analysis_build.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- building models ------------------------------------------------------------------------ */

/* A host range on thread (1, 1). */
static tp_event *host(tp_model *m, const char *name, int64_t ts, int64_t dur) {
    return tb_add(m, TP_HOST_RANGE, 1, 1, name, "cpu_op", ts, dur);
}

/* A host range on thread (100, 1). */
static tp_event *host_on(tp_model *m, const char *name, int64_t ts, int64_t dur) {
    return tb_add(m, TP_HOST_RANGE, 100, 1, name, "cpu_op", ts, dur);
}

static tp_analysis *analyse(const tp_model *m) {
    tp_analysis *a = tp_analysis_new(NULL);
    assert_non_null(a);
    assert_int_equal(tp_analysis_add_model(a, m, "hand-built"), 0);
    tp_analysis_finish(a);
    assert_int_equal(a->failed, 0);
    return a;
}

/* A window analysed in two pieces (first->piece set), as a streamed window's summary is. */
static tp_analysis *analyse_pieces(const tp_model *first, const tp_model *second) {
    tp_analysis *a = tp_analysis_new(NULL);
    assert_non_null(a);
    assert_int_equal(tp_analysis_add_model(a, first, "piece"), 0);
    assert_int_equal(tp_analysis_add_model(a, second, "piece"), 0);
    tp_analysis_finish(a);
    assert_int_equal(a->failed, 0);
    return a;
}

static const tp_op_row *op(const tp_analysis *a, const char *name) {
    for (size_t i = 0; i < a->nops; i++)
        if (strcmp(a->ops[i].name, name) == 0) return &a->ops[i];
    fail_msg("no op row %s", name);
    return NULL;
}

static const tp_kernel_row *kernel(const tp_analysis *a, const char *name) {
    for (size_t i = 0; i < a->nkernels; i++)
        if (strcmp(a->kernels[i].name, name) == 0) return &a->kernels[i];
    fail_msg("no kernel row %s", name);
    return NULL;
}

static const tp_stage_row *stage(const tp_analysis *a, const char *name) {
    for (size_t i = 0; i < a->nstages; i++)
        if (strcmp(a->stages[i].name, name) == 0) return &a->stages[i];
    fail_msg("no stage %s", name);
    return NULL;
}

static int has_reco(const tp_analysis *a, const char *id) {
    for (size_t i = 0; i < a->nrecos; i++)
        if (strcmp(a->recos[i].id, id) == 0) return 1;
    return 0;
}

/* ---- self time ------------------------------------------------------------------------------ */

static void test_self_time_nesting(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    /* A [0,100) holds B [10,40) (which holds C [15,25)) and D [50,90); added out of order.
     * self: A = 100 - 30 - 40 = 30, B = 30 - 10 = 20, C = 10, D = 40. */
    host(&m, "D", 50, 40);
    host(&m, "C", 15, 10);
    host(&m, "A", 0, 100);
    host(&m, "B", 10, 30);
    tp_analysis *a = analyse(&m);
    assert_int_equal(op(a, "A")->self_ns, 30);
    assert_int_equal(op(a, "B")->self_ns, 20);
    assert_int_equal(op(a, "C")->self_ns, 10);
    assert_int_equal(op(a, "D")->self_ns, 40);
    assert_int_equal(op(a, "A")->total_ns, 100);
    /* sorted by self time; self_pct of the sum 100 */
    assert_string_equal(a->ops[0].name, "D");
    assert_true(fabs(a->ops[0].self_pct - 40.0) < 1e-9);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* One thread's ranges, and the self time each name must get. */
typedef struct range_case {
    const char *name;
    int64_t ts, dur;
} range_case;

typedef struct self_case {
    const char *name;
    int64_t self_ns;
} self_case;

static void check_self_times(const range_case *ranges, size_t n, const self_case *want,
                             size_t nwant) {
    tp_model m;
    tp_model_init(&m);
    for (size_t i = 0; i < n; i++)
        host(&m, ranges[i].name, ranges[i].ts, ranges[i].dur);
    tp_analysis *a = analyse(&m);
    for (size_t i = 0; i < nwant; i++)
        if (op(a, want[i].name)->self_ns != want[i].self_ns)
            fail_msg("self of %s: %lld, want %lld", want[i].name,
                     (long long)op(a, want[i].name)->self_ns, (long long)want[i].self_ns);
    tp_analysis_free(a);
    tp_model_free(&m);
}

#define CHECK_SELF(ranges, want)                                                                   \
    check_self_times((ranges), sizeof(ranges) / sizeof((ranges)[0]), (want),                       \
                     sizeof(want) / sizeof((want)[0]))

static void test_self_time_equal_starts(void **state) {
    (void)state;
    /* Equal starts: the longer range is the parent; equal durations: the earlier event is.
     * P [0,100) > Q [0,60) > R [0,60): P = 40, Q = 0, R = 60. */
    static const range_case ranges[] = {{"P", 0, 100}, {"Q", 0, 60}, {"R", 0, 60}};
    static const self_case want[] = {{"P", 40}, {"Q", 0}, {"R", 60}};
    CHECK_SELF(ranges, want);
}

static void test_self_time_overlap(void **state) {
    (void)state;
    /* B [30,80) ends after A [0,50): A is popped (c.end > top.end), B is not A's child;
     * C [60,70) is B's. A = 50, B = 40, C = 10.
     * Children that overlap each other can sum past their parent: self stops at zero.
     * P [1000,1100) holds c1 [1000,1080) and c2 [1030,1100) (c2 ends after c1: P's child). */
    static const range_case ranges[] = {{"A", 0, 50},     {"B", 30, 50},    {"C", 60, 10},
                                        {"P", 1000, 100}, {"c1", 1000, 80}, {"c2", 1030, 70}};
    static const self_case want[] = {{"A", 50}, {"B", 40}, {"C", 10}, {"P", 0}, {"c2", 70}};
    CHECK_SELF(ranges, want);
}

static void test_self_time_zero_durations(void **state) {
    (void)state;
    /* Zero-length ranges are never parents: Z2 and Z4 at 50 are both children of A, Z3 at
     * A's end is not inside A. Y [60,70) is A's child too: A = 100 - 10 = 90. */
    static const range_case ranges[] = {{"A", 0, 100}, {"Z1", 0, 0},   {"Z2", 50, 0},
                                        {"Z4", 50, 0}, {"Z3", 100, 0}, {"Y", 60, 10}};
    static const self_case want[] = {{"A", 90}, {"Y", 10}, {"Z1", 0}, {"Z2", 0}, {"Z3", 0}};
    CHECK_SELF(ranges, want);
}

static void test_self_time_tracks_and_steps(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    /* Ranges on another thread are never children: X on (1,2) inside A's time stays whole.
     * The step is a parent like any range (torch's rule): "train" [-100,2000) holds the step
     * [0,1000), so train's self is 2100 - 1000; the step has no op row. */
    host(&m, "A", 0, 100);
    tb_add(&m, TP_HOST_RANGE, 1, 2, "X", "cpu_op", 10, 40);
    tb_add(&m, TP_HOST_RANGE, 1, 2, "A", "cpu_op", 500, 7);
    host(&m, "train", -100, 2100);
    host(&m, "ProfilerStep#3", 0, 1000);
    tp_analysis *a = analyse(&m);
    assert_int_equal(op(a, "X")->self_ns, 40);
    assert_int_equal(op(a, "A")->calls, 2);
    assert_int_equal(op(a, "A")->self_ns, 107);
    assert_int_equal(op(a, "A")->min_ns, 7);
    assert_int_equal(op(a, "A")->max_ns, 100);
    assert_int_equal(op(a, "train")->self_ns, 1100);
    for (size_t i = 0; i < a->nops; i++)
        assert_string_not_equal(a->ops[i].name, "ProfilerStep#3");
    assert_int_equal(a->nops, 3);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* ---- steps and percentiles ------------------------------------------------------------------ */

static void test_steps(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    m.base_ns = 1000000;
    /* durations 100, 400, 200, 300, 1000: total 2000, mean 400; sorted 100 200 300 400 1000:
     * p50 = rank 2 = 300, p95 = rank 3.8 = 400 + 0.8 x 600 = 880, max 1000. */
    static const int64_t durs[] = {100, 400, 200, 300, 1000};
    static const int64_t starts[] = {2000, 0, 3000, 500, 4000};
    char name[32];
    for (int i = 0; i < 5; i++) {
        snprintf(name, sizeof(name), "ProfilerStep#%d", 10 + i);
        host(&m, name, starts[i], durs[i]);
    }
    tp_analysis *a = analyse(&m);
    assert_int_equal(a->nsteps, 5);
    assert_int_equal(a->steps_total_ns, 2000);
    assert_int_equal(a->steps_mean_ns, 400);
    assert_int_equal(a->steps_p50_ns, 300);
    assert_int_equal(a->steps_p95_ns, 880);
    assert_int_equal(a->steps_max_ns, 1000);
    /* steps are listed by start, with absolute times */
    assert_string_equal(a->steps[0].name, "ProfilerStep#11");
    assert_int_equal(a->steps[0].number, 11);
    assert_int_equal(a->steps[0].start_ns, 1000000);
    assert_int_equal(a->steps[4].start_ns, 1004000);
    /* the slowest first */
    assert_string_equal(a->steps[a->steps_by_dur[0]].name, "ProfilerStep#14");
    assert_string_equal(a->steps[a->steps_by_dur[1]].name, "ProfilerStep#11");
    /* window: first step start to last step end = 0 .. 5000 */
    assert_int_equal(a->window_ns, 5000);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* The definition in exact integer arithmetic (values here stay far from overflow): rank
 * r = p (n - 1) / 100, value v[lo] + (r - lo) (v[lo+1] - v[lo]), rounded half up. */
static int64_t percentile_by_definition(const int64_t *v, size_t n, int p) {
    int64_t num = (int64_t)p * (int64_t)(n - 1); /* 100 x rank */
    size_t lo = (size_t)(num / 100);
    if (lo >= n - 1) return v[n - 1];
    int64_t scaled = v[lo] * 100 + (num - (int64_t)lo * 100) * (v[lo + 1] - v[lo]) + 50;
    int64_t q = scaled / 100;
    return scaled % 100 < 0 ? q - 1 : q; /* floor division */
}

static void test_percentiles(void **state) {
    (void)state;
    static const int64_t one[] = {10};
    assert_int_equal(tp_percentile(one, 1, 50), 10);
    assert_int_equal(tp_percentile(one, 1, 95), 10);
    static const int64_t two[] = {0, 10};
    assert_int_equal(tp_percentile(two, 2, 50), 5);
    assert_int_equal(tp_percentile(two, 2, 95), 10); /* 9.5 rounds half up */
    assert_int_equal(tp_percentile(two, 2, 0), 0);
    assert_int_equal(tp_percentile(two, 2, 100), 10);
    static const int64_t odd[] = {0, 8};
    assert_int_equal(tp_percentile(odd, 2, 12.5), 1);
    assert_int_equal(tp_percentile(NULL, 0, 50), 0);
    /* against the definition on every small sorted array of a pseudo-random family */
    uint64_t x = 88172645463325252ULL;
    static const int ps[] = {0, 1, 5, 10, 25, 33, 50, 66, 75, 90, 95, 99, 100};
    for (size_t n = 1; n <= 9; n++) {
        for (int rep = 0; rep < 200; rep++) {
            int64_t v[9];
            for (size_t i = 0; i < n; i++) {
                x ^= x << 13, x ^= x >> 7, x ^= x << 17;
                v[i] = (int64_t)(x % 1000000007ULL) - 1000;
            }
            tp_sort_i64(v, n);
            for (size_t i = 1; i < n; i++)
                assert_true(v[i - 1] <= v[i]);
            for (size_t k = 0; k < sizeof(ps) / sizeof(ps[0]); k++)
                assert_int_equal(tp_percentile(v, n, ps[k]), percentile_by_definition(v, n, ps[k]));
        }
    }
    /* means round to the nearest, halves away from zero */
    assert_int_equal(tp_mean_ns(10, 4), 3);
    assert_int_equal(tp_mean_ns(9, 4), 2);
    assert_int_equal(tp_mean_ns(-10, 4), -3);
    assert_int_equal(tp_mean_ns(7, 0), 0);
}

/* ---- GPU busy ------------------------------------------------------------------------------- */

static void gpu_model(tp_model *m) {
    /* device 0: K1 [0,100) on stream 7 overlaps K2 [50,150) on stream 8, a copy [200,250):
     * busy 150 + 50 = 200. Device 1: K3 [0,50), K4 [100,120): 70. An annotation [0,1000) on
     * device 1 is not work, but it is an event: without steps the window is 0 .. 1000. */
    tb_add(m, TP_KERNEL, 0, 7, "K1", "kernel", 0, 100);
    tb_add(m, TP_KERNEL, 0, 8, "K2", "kernel", 50, 100);
    tb_add(m, TP_MEMCPY, 0, 7, "Memcpy HtoD", "gpu_memcpy", 200, 50);
    tb_add(m, TP_KERNEL, 1, 7, "K3", "kernel", 0, 50);
    tb_add(m, TP_KERNEL, 1, 7, "K4", "kernel", 100, 20);
    tb_add(m, TP_GPU_ANNOTATION, 1, 7, "ProfilerStep#0", "gpu_user_annotation", 0, 1000);
    tb_add(m, TP_HOST_RANGE, 100, 100, "cpu", "cpu_op", 0, 400);
}

static void test_gpu_busy(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    gpu_model(&m);
    tp_analysis *a = analyse(&m);
    assert_int_equal(a->gpu_busy_ns, 270);
    assert_int_equal(a->gpu_devices, 2);
    assert_int_equal(a->gpu_capacity_ns, 2000);
    assert_true(fabs(a->gpu_utilization_pct - 13.5) < 1e-9);
    assert_int_equal(a->kernel_count, 4);
    assert_int_equal(a->kernel_total_ns, 270);
    assert_int_equal(a->gpu_work_ns, 320);
    assert_int_equal(kernel(a, "K2")->total_ns, 100);
    assert_int_equal(a->nkernels, 4); /* the copy is work, not a kernel */
    tp_analysis_free(a);

    /* With a step [100,300) the window is 200 ns: capacity 400. Busy counts only the work
     * inside the window: device 0 K2 [100,150) and the copy, 100; device 1 K4, 20: 30%. */
    host(&m, "ProfilerStep#1", 100, 200);
    a = analyse(&m);
    assert_int_equal(a->gpu_busy_ns, 120);
    assert_int_equal(a->gpu_capacity_ns, 400);
    assert_true(fabs(a->gpu_utilization_pct - 30.0) < 1e-9);
    tp_analysis_free(a);
    tp_model_free(&m);

    /* No device work: utilization does not apply. */
    tp_model_init(&m);
    host(&m, "ProfilerStep#1", 0, 10);
    a = analyse(&m);
    assert_int_equal(a->gpu_devices, 0);
    assert_true(a->gpu_utilization_pct < 0);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* Four steps of 1000 ns on thread (100, 1), each launching a kernel on device 0 ([200, 500) of
 * the step); step 0 also one on device 1 ([400, 600)). With `from`/`to`: only the events placed
 * in [from, to) (GPU work by its launch), as a streamed window's pieces hold them. */
static void two_devices(tp_model *m, int64_t from, int64_t to) {
    for (int64_t k = 0; k < 4; k++) {
        int64_t t = k * 1000;
        if (t < from || t >= to) continue;
        tb_add(m, TP_HOST_RANGE, 100, 1, k % 2 ? "ProfilerStep#1" : "ProfilerStep#0", "cpu_op", t,
               1000)
            ->flags |= TP_EVF_STEP;
        tb_add(m, TP_HOST_RANGE, 100, 1, "cudaLaunchKernel", "cuda_runtime", t + 100, 10)->corr =
            (uint64_t)(10 + k);
        tb_add(m, TP_KERNEL, 0, 7, "K", NULL, t + 200, 300)->corr = (uint64_t)(10 + k);
        if (k) continue;
        tb_add(m, TP_HOST_RANGE, 100, 1, "cudaLaunchKernel", "cuda_runtime", t + 150, 10)->corr =
            99;
        tb_add(m, TP_KERNEL, 1, 7, "K1", NULL, t + 400, 200)->corr = 99;
    }
}

/* A window analysed in pieces (sink/artifacts.c) gives the figures of the whole window, also for
 * a device with work in only some pieces: it counts in the whole window's capacity. */
static void test_gpu_in_pieces(void **state) {
    (void)state;
    tp_model whole, first, rest;
    tp_model_init(&whole);
    tp_model_init(&first);
    tp_model_init(&rest);
    two_devices(&whole, INT64_MIN, INT64_MAX);
    two_devices(&first, INT64_MIN, 2000);
    two_devices(&rest, 2000, INT64_MAX);
    first.piece = 1;
    first.piece_end = 2000;
    tp_analysis *w = analyse(&whole), *p = analyse_pieces(&first, &rest);
    /* by hand: a window of 4000 ns, two devices: capacity 8000, busy 1200 + 200 */
    assert_int_equal(w->gpu_capacity_ns, 8000);
    assert_int_equal(w->gpu_busy_ns, 1400);
    assert_int_equal(p->gpu_capacity_ns, w->gpu_capacity_ns);
    assert_int_equal(p->gpu_busy_ns, w->gpu_busy_ns);
    assert_int_equal(p->gpu_devices, w->gpu_devices);
    assert_int_equal(p->window_ns, w->window_ns);
    assert_int_equal(p->nidle, w->nidle);
    for (size_t i = 0; i < w->nidle; i++) {
        const tp_idle_row *x = &w->idle[i], *y = &p->idle[i];
        assert_int_equal(y->device, x->device);
        assert_int_equal(y->busy_ns, x->busy_ns);
        assert_int_equal(y->window_ns, x->window_ns);
        assert_int_equal(y->idle_ns, x->idle_ns);
        assert_int_equal(y->host_ns, x->host_ns);
        assert_int_equal(y->other_ns, x->other_ns);
    }
    tp_analysis_free(w);
    tp_analysis_free(p);
    tp_model_free(&whole);
    tp_model_free(&first);
    tp_model_free(&rest);
}

/* A range around four steps on thread (100, 1), epoch [50, 4200), steps of 999 ns every 1000 ns
 * from 100, each with an op "fwd" of 500 ns. part: the window's first piece, up to the third
 * step (epoch cut there: its part before the last), or its second (epoch's last part). */
enum { WHOLE, FIRST, SECOND };
static void around_steps(tp_model *m, int part) {
    const int64_t cut = 2100;
    if (part == WHOLE) host_on(m, "epoch", 50, 4150);
    if (part == FIRST) host_on(m, "epoch", 50, cut - 50)->flags |= TP_EVF_PART;
    for (int64_t k = 0; k < 4; k++) {
        int64_t t = 100 + k * 1000;
        if ((part == FIRST && t >= cut) || (part == SECOND && t < cut)) continue;
        tb_add(m, TP_HOST_RANGE, 100, 1, "ProfilerStep#1", "cpu_op", t, 999);
        host_on(m, "fwd", t + 10, 500);
    }
    if (part == SECOND) {
        tp_event *last = host_on(m, "epoch", cut, 4200 - cut);
        last->flags |= TP_EVF_LAST_PART;
        assert_int_equal(tp_model_arg_int(m, last, TP_PART_WHOLE_DUR, 4150), 0);
    }
    if (part == FIRST) {
        m->piece = 1;
        m->piece_end = cut;
    }
}

/* A range cut into parts across a window's pieces (model.h, TP_EVF_PART) is one call: the op
 * table, steps and stages are the whole window's. */
static void test_parts_of_a_range_in_pieces(void **state) {
    (void)state;
    tp_model whole, first, second;
    tp_model_init(&whole);
    tp_model_init(&first);
    tp_model_init(&second);
    around_steps(&whole, WHOLE);
    around_steps(&first, FIRST);
    around_steps(&second, SECOND);
    tp_analysis *w = analyse(&whole), *p = analyse_pieces(&first, &second);
    /* by hand: epoch lasts 4150 ns, its children the four steps (999 each) */
    const tp_op_row *e = op(p, "epoch");
    assert_int_equal(e->calls, 1);
    assert_int_equal(e->total_ns, 4150);
    assert_int_equal(e->self_ns, 4150 - 4 * 999);
    assert_int_equal(e->min_ns, 4150);
    assert_int_equal(e->max_ns, 4150);
    assert_int_equal(p->nops, w->nops);
    for (size_t i = 0; i < w->nops; i++) {
        const tp_op_row *x = &w->ops[i], *y = op(p, x->name);
        assert_int_equal(y->calls, x->calls);
        assert_int_equal(y->total_ns, x->total_ns);
        assert_int_equal(y->self_ns, x->self_ns);
        assert_int_equal(y->min_ns, x->min_ns);
        assert_int_equal(y->max_ns, x->max_ns);
    }
    assert_int_equal(p->nsteps, w->nsteps);
    assert_int_equal(p->steps_total_ns, w->steps_total_ns);
    assert_int_equal(p->lead_ns, w->lead_ns);
    tp_analysis_free(w);
    tp_analysis_free(p);
    tp_model_free(&whole);
    tp_model_free(&first);
    tp_model_free(&second);
}

/* ---- stages --------------------------------------------------------------------------------- */

static void test_stages_default_patterns(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    host(&m, "ProfilerStep#1", 0, 1000);
    host(&m, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 100);
    host(&m, "dataloader", 10, 40); /* nested in a dataloader range: not counted again */
    host(&m, "forward", 100, 300);
    host(&m, "aten::mm", 150, 50);
    host(&m, "Optimizer.zero_grad#SGD.zero_grad", 210, 10); /* inside forward: not counted */
    host(&m, "## backward ##", 400, 300);
    host(&m, "Optimizer.step#SGD.step", 700, 200);
    host(&m, "ProfilerStep#2", 1000, 1000);
    host(&m, "DataPipe.next", 1000, 300);
    host(&m, "MyModel.training_step", 1300, 200);
    host(&m, "loss.BACKWARD", 1500, 100);
    host(&m, "my_optimizer_step", 1600, 100);
    host(&m, "not_a_stage", 1800, 100);
    /* another thread: outermost there, and it starts (500) inside step 1 */
    tb_add(&m, TP_HOST_RANGE, 1, 2, "DataLoader worker", "user_annotation", 500, 300);
    tp_analysis *a = analyse(&m);
    /* dataloader 100 + 300 + 300; forward 300 + 200; backward 300 + 100; optimizer 200 + 100;
     * steps total 2000. */
    const tp_stage_row *dl = stage(a, "dataloader"), *fw = stage(a, "forward");
    const tp_stage_row *bw = stage(a, "backward"), *opt = stage(a, "optimizer");
    assert_int_equal(dl->count, 3);
    assert_int_equal(dl->total_ns, 700);
    assert_int_equal(dl->max_ns, 300);
    assert_int_equal(dl->p50_ns, 300);
    assert_int_equal(dl->mean_ns, 233);
    assert_int_equal(dl->min_ns, 100);
    assert_int_equal(fw->count, 2);
    assert_int_equal(fw->total_ns, 500);
    assert_int_equal(bw->total_ns, 400);
    assert_int_equal(opt->count, 2);
    assert_int_equal(opt->total_ns, 300);
    assert_true(fabs(dl->pct - 35.0) < 1e-9);
    assert_true(fabs(fw->pct - 25.0) < 1e-9);
    assert_true(fabs(a->dataloader_pct - 35.0) < 1e-9);
    /* per step: step 1 has dataloader 100 + 300 (other thread), step 2 has 300 */
    assert_string_equal(a->steps[0].name, "ProfilerStep#1");
    assert_int_equal(a->steps[0].stage_ns[0], 400);
    assert_int_equal(a->steps[1].stage_ns[0], 300);
    assert_int_equal(a->steps[0].stage_ns[1], 300);
    assert_int_equal(a->steps[1].stage_ns[1], 200);
    assert_int_equal(a->steps[0].stage_ns[3], 200);
    assert_int_equal(a->steps[1].stage_ns[3], 100);
    tp_analysis_free(a);
    tp_model_free(&m);
}

static void test_stages_custom_and_glob(void **state) {
    (void)state;
    static const char *const io[] = {"read_?", "load*file"};
    static const char *const none[] = {"nothing"};
    const tp_stage_def defs[] = {{"io", io, 2}, {"idle", none, 1}};
    tp_analysis_opts opts = {.stages = defs, .nstages = 2};
    tp_model m;
    tp_model_init(&m);
    host(&m, "read_x", 0, 10);
    host(&m, "read_xy", 20, 10); /* ? is one character */
    host(&m, "LOAD_the_FILE", 40, 10);
    host(&m, "read_\xc3\xa9", 60, 10); /* ? is one UTF-8 character */
    tp_analysis *a = tp_analysis_new(&opts);
    assert_int_equal(tp_analysis_add_model(a, &m, NULL), 0);
    tp_analysis_finish(a);
    assert_int_equal(a->nstages, 2);
    assert_int_equal(stage(a, "io")->count, 3);
    assert_int_equal(stage(a, "io")->total_ns, 30);
    assert_int_equal(stage(a, "idle")->count, 0);
    assert_true(stage(a, "io")->pct < 0); /* no steps: the share does not apply */
    assert_true(a->dataloader_pct < 0);   /* no stage named dataloader */
    assert_int_equal(a->windows, 1);      /* added without a path: a recorded window */
    tp_analysis_free(a);
    tp_model_free(&m);

    assert_true(tp_glob_match("*DataLoader*", "enumerate(dataloader)#x"));
    assert_true(tp_glob_match("forward", "FORWARD"));
    assert_false(tp_glob_match("forward", "forward2"));
    assert_true(tp_glob_match("*", ""));
    assert_false(tp_glob_match("?", ""));
    assert_true(tp_glob_match("a*b*c", "aXbYbZc"));
    assert_false(tp_glob_match("a*b*c", "aXbYbZ"));
    assert_true(tp_glob_match("*.backward", "loss.backward"));
    assert_false(tp_glob_match("*.backward", "backward"));
    assert_true(tp_glob_match("**x", "x"));
}

/* ---- memory --------------------------------------------------------------------------------- */

static tp_event *mem_event(tp_model *m, int64_t ts, int64_t type, int64_t id, const char *key,
                           int64_t value) {
    tp_event *e = tb_add(m, TP_MEMORY, 1, 1, "[memory]", "cpu_instant_event", ts, 0);
    if (type >= 0) tp_model_arg_int(m, e, "Device Type", type);
    tp_model_arg_int(m, e, "Device Id", id);
    tp_model_arg_int(m, e, key, value);
    return e;
}

static void test_memory(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    m.base_ns = 1000000000;
    tp_model_device(&m, 0)->total_mem = 1000;
    /* CUDA 0 with Total Allocated: the maximum, 800, first reached at 20 (again at 40). */
    mem_event(&m, 30, 1, 0, "Total Allocated", 500);
    mem_event(&m, 10, 1, 0, "Total Allocated", 100);
    mem_event(&m, 20, 1, 0, "Total Allocated", 800);
    mem_event(&m, 40, 1, 0, "Total Allocated", 800);
    /* CPU with Bytes only, added out of time order: in time order +50 -30 +100 +10 runs
     * 50 20 120 130: peak 130 at 7 (in insertion order it would be 150 at 1). */
    mem_event(&m, 5, 0, -1, "Bytes", 100);
    mem_event(&m, 1, 0, -1, "Bytes", 50);
    mem_event(&m, 3, 0, -1, "Bytes", -30);
    mem_event(&m, 7, 0, -1, "Bytes", 10);
    mem_event(&m, 8, -1, -1, "Bytes", 99999); /* no Device Type: ignored */
    tp_analysis *a = analyse(&m);
    assert_int_equal(a->nmemory, 2);
    const tp_mem_row *cpu = &a->memory[0], *gpu = &a->memory[1];
    assert_int_equal(cpu->device_type, 0);
    assert_int_equal(cpu->device_id, -1);
    assert_int_equal(cpu->peak_bytes, 130);
    assert_int_equal(cpu->peak_ts_ns, 1000000007);
    assert_int_equal(cpu->capacity_bytes, 0);
    assert_true(cpu->capacity_pct < 0);
    assert_int_equal(gpu->device_type, 1);
    assert_int_equal(gpu->peak_bytes, 800);
    assert_int_equal(gpu->peak_ts_ns, 1000000020);
    assert_int_equal(gpu->capacity_bytes, 1000);
    assert_true(fabs(gpu->capacity_pct - 80.0) < 1e-9);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* ---- FLOPs ---------------------------------------------------------------------------------- */

static void test_flops(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    tp_model_arg_int(&m, host(&m, "aten::mm", 0, 100), "flops", 1000000);
    tp_model_arg_double(&m, host(&m, "aten::mm", 200, 100), "flops", 2.5e6);
    host(&m, "aten::add", 0, 50);
    tp_analysis *a = analyse(&m);
    /* 3.5e6 FLOP over 200 ns of carrying ranges: 1.75e13 FLOP/s */
    assert_true(a->flops == 3.5e6);
    assert_int_equal(a->flops_time_ns, 200);
    assert_true(fabs(a->flops_per_s - 1.75e13) < 1);
    assert_true(op(a, "aten::mm")->flops == 3.5e6);
    assert_int_equal(op(a, "aten::mm")->flops_time_ns, 200);
    assert_true(op(a, "aten::add")->flops == 0);
    tp_analysis_free(a);
    tp_model_free(&m);

    tp_model_init(&m);
    host(&m, "aten::add", 0, 50);
    a = analyse(&m);
    assert_true(a->flops_per_s < 0);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* FlopCounterMode's FLOPs (flops_fcm): an op counts where no counted op encloses it, from its
 * "flops_fcm" arg (the reader's) or, without one, from its "Input Dims" and "Concrete Inputs"
 * (a window's own ops). */
static void test_flops_fcm(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    /* aten::convolution holding aten::_convolution: the outer one alone counts */
    tp_model_arg_int(&m, host(&m, "aten::convolution", 0, 100), "flops_fcm", 1000);
    tp_model_arg_int(&m, host(&m, "aten::_convolution", 10, 80), "flops_fcm", 1000);
    /* an mm inside an uncounted op counts; its torch.profiler figure is apart */
    host(&m, "aten::matmul", 200, 100);
    tp_event *mm = host(&m, "aten::mm", 210, 80);
    tp_model_arg_int(&m, mm, "flops_fcm", 300);
    tp_model_arg_int(&m, mm, "flops", 7);
    /* no arg: the formula of its texts, 2 x 4 x 5 x 6 (a [4, 5] by [5, 6] product) */
    tp_event *addmm = host(&m, "aten::addmm", 400, 50);
    tp_model_arg_json(&m, addmm, "Input Dims", "[[6], [4, 5], [5, 6], [], []]");
    tp_model_arg_json(&m, addmm, "Concrete Inputs", "[\"\", \"\", \"\", \"1\", \"1\"]");
    /* an op FlopCounterMode does not count keeps none, whatever it carries */
    tp_model_arg_int(&m, host(&m, "aten::mul", 500, 10), "flops_fcm", 99);
    tp_analysis *a = analyse(&m);
    assert_true(op(a, "aten::convolution")->fcm_flops == 1000);
    assert_true(op(a, "aten::_convolution")->fcm_flops == 0);
    assert_true(op(a, "aten::mm")->fcm_flops == 300);
    assert_true(op(a, "aten::mm")->flops == 7);
    assert_true(op(a, "aten::addmm")->fcm_flops == 240);
    assert_true(op(a, "aten::mul")->fcm_flops == 0);
    assert_true(a->fcm_flops == 1540);
    assert_true(a->flops == 7);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* ---- launch attribution --------------------------------------------------------------------- */

static void launch(tp_model *m, const char *name, const char *cat, int64_t ts, int64_t dur,
                   uint64_t corr) {
    tb_add(m, TP_HOST_RANGE, 1, 1, name, cat, ts, dur)->corr = corr;
}

static void device(tp_model *m, tp_kind kind, const char *name, int64_t ts, int64_t dur,
                   uint64_t corr) {
    tb_add(m, kind, 0, 7, name, kind == TP_KERNEL ? "kernel" : "gpu_memcpy", ts, dur)->corr = corr;
}

static void test_launch_attribution(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "ProfilerStep#1", "user_annotation", 0, 2000);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "forward", "user_annotation", 0, 1000);
    host(&m, "aten::mm", 100, 400);
    launch(&m, "cudaLaunchKernel", "cuda_runtime", 200, 10, 7); /* in aten::mm */
    launch(&m, "cudaMemcpyAsync", "cuda_runtime", 600, 10, 8);  /* directly in forward */
    tb_add(&m, TP_HOST_RANGE, 1, 1, "model.py(3): forward", "python_function", 650, 50);
    launch(&m, "cudaLaunchKernel", "cuda_runtime", 660, 10, 9); /* python fn: skip to forward */
    launch(&m, "cudaLaunchKernel", "cuda_runtime", 800, 50, 10);
    launch(&m, "cuLaunchKernel", "cuda_driver", 810, 10, 11);     /* in a runtime call: forward */
    launch(&m, "cudaLaunchKernel", "cuda_runtime", 1500, 10, 12); /* in the step only */
    device(&m, TP_KERNEL, "gemm", 300, 50, 7);
    device(&m, TP_KERNEL, "gemm", 360, 30, 7); /* two kernels under one id */
    device(&m, TP_MEMCPY, "Memcpy HtoD", 700, 20, 8);
    device(&m, TP_KERNEL, "relu", 720, 5, 9);
    device(&m, TP_KERNEL, "add", 900, 4, 11);
    device(&m, TP_KERNEL, "orphan", 950, 1000, 99); /* no launch in the trace */
    device(&m, TP_KERNEL, "late", 1600, 6, 12);
    tp_analysis *a = analyse(&m);
    assert_int_equal(op(a, "aten::mm")->gpu_ns, 80);
    assert_int_equal(op(a, "aten::mm")->kernels, 2);
    assert_int_equal(op(a, "forward")->gpu_ns, 29);
    assert_int_equal(op(a, "forward")->kernels, 3);
    assert_int_equal(op(a, "cudaLaunchKernel")->gpu_ns, 0);
    assert_int_equal(op(a, "model.py(3): forward")->gpu_ns, 0);
    assert_int_equal(a->gpu_attributed_ns, 109);
    assert_int_equal(a->gpu_work_ns, 1115);
    assert_int_equal(a->nops_by_gpu, 2);
    assert_string_equal(a->ops[a->ops_by_gpu[0]].name, "aten::mm");
    assert_true(fabs(a->ops[a->ops_by_gpu[0]].gpu_pct - 100.0 * 80 / 1115) < 1e-9);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* ---- recommendations ------------------------------------------------------------------------ */

typedef struct reco_case {
    int64_t dataloader_ns; /* inside a 1000 ns step */
    int64_t kernel_ns;     /* one kernel in the step */
    int64_t peak, capacity;
    int64_t nccl_ns;
    int nkernels; /* short kernels in a long window, for launch_bound */
    int64_t short_ns;
} reco_case;

static tp_analysis *reco_analysis(const reco_case *c) {
    tp_model m;
    tp_model_init(&m);
    int64_t step = 1000;
    if (c->nkernels) step = (int64_t)c->nkernels * c->short_ns * 3;
    host(&m, "ProfilerStep#0", 0, step);
    if (c->dataloader_ns) host(&m, "dataloader", 0, c->dataloader_ns);
    if (c->kernel_ns) tb_add(&m, TP_KERNEL, 0, 7, "gemm", "kernel", 0, c->kernel_ns);
    if (c->nccl_ns) tb_add(&m, TP_KERNEL, 0, 8, "ncclKernel_AllReduce", "kernel", 0, c->nccl_ns);
    for (int i = 0; i < c->nkernels; i++)
        tb_add(&m, TP_KERNEL, 0, 7, "tiny", "kernel", (int64_t)i * c->short_ns * 2, c->short_ns);
    if (c->capacity) {
        tp_model_device(&m, 0)->total_mem = (uint64_t)c->capacity;
        mem_event(&m, 1, 1, 0, "Total Allocated", c->peak);
    }
    tp_analysis *a = analyse(&m);
    tp_model_free(&m);
    return a;
}

static void expect_reco(const reco_case *c, const char *id, int fires) {
    tp_analysis *a = reco_analysis(c);
    assert_int_equal(has_reco(a, id), fires);
    for (size_t i = 0; i < a->nrecos; i++)
        assert_non_null(strpbrk(a->recos[i].message, "0123456789"));
    tp_analysis_free(a);
}

static void test_recommendation_thresholds(void **state) {
    (void)state;
    /* dataloader > 5% of step time: 50/1000 is not, 51/1000 is */
    expect_reco(&(reco_case){.dataloader_ns = 50}, "dataloader", 0);
    expect_reco(&(reco_case){.dataloader_ns = 51}, "dataloader", 1);
    /* GPU utilization < 50%: 500/1000 is not, 499/1000 is; no GPU: never */
    expect_reco(&(reco_case){.kernel_ns = 500}, "gpu_idle", 0);
    expect_reco(&(reco_case){.kernel_ns = 499}, "gpu_idle", 1);
    expect_reco(&(reco_case){.dataloader_ns = 1}, "gpu_idle", 0);
    /* peak > 90% of capacity */
    expect_reco(&(reco_case){.kernel_ns = 900, .peak = 900, .capacity = 1000}, "memory_pressure",
                0);
    expect_reco(&(reco_case){.kernel_ns = 900, .peak = 901, .capacity = 1000}, "memory_pressure",
                1);
    /* NCCL kernels > 10% of step time */
    expect_reco(&(reco_case){.nccl_ns = 100}, "nccl", 0);
    expect_reco(&(reco_case){.nccl_ns = 101}, "nccl", 1);
    /* launch-bound: >= 100 kernels averaging < 10 us with utilization < 50% (here 1/3) */
    expect_reco(&(reco_case){.nkernels = 100, .short_ns = 9999}, "launch_bound", 1);
    expect_reco(&(reco_case){.nkernels = 99, .short_ns = 9999}, "launch_bound", 0);
    expect_reco(&(reco_case){.nkernels = 100, .short_ns = 10000}, "launch_bound", 0);
    expect_reco(&(reco_case){.nkernels = 100, .short_ns = 9999}, "gpu_idle", 1);
}

/* Lightning runs training_step and backward inside Optimizer.step: they are carved out of it;
 * ranges of the stage already counted add nothing; an explicit stage hides what PyTorch writes
 * inside it; other is the step time no stage range covers; lead is the time before the step's
 * first range. */
static void test_stages_carved_and_explicit(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    host(&m, "ProfilerStep#1", 0, 1000);
    host(&m, "[pl][profile][LightningModule]M.optimizer_step", 100, 800);
    host(&m, "Optimizer.step#SGD.step", 110, 780);
    host(&m, "[pl][profile][Strategy]S.training_step", 120, 200);
    host(&m, "Optimizer.zero_grad#SGD.zero_grad", 330, 10);
    host(&m, "[pl][profile][Strategy]S.backward", 350, 300);
    host(&m, "autograd::engine::evaluate_function: AddmmBackward0", 360, 40);
    host(&m, "ProfilerStep#2", 1000, 1000);
    host(&m, "backward", 1000, 500); /* explicit: counts whole, hides what is inside */
    host(&m, "Optimizer.zero_grad#SGD.zero_grad", 1010, 10);
    host(&m, "autograd::engine::evaluate_function: MmBackward0", 1100, 100);
    host(&m, "[pl][profile][_EvaluationLoop].val_next", 1600, 300);
    host(&m, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 1650, 200);
    tp_analysis *a = analyse(&m);
    const tp_stage_row *opt = stage(a, "optimizer"), *fw = stage(a, "forward");
    const tp_stage_row *bw = stage(a, "backward"), *val = stage(a, "validation");
    const tp_stage_row *dl = stage(a, "dataloader");
    assert_int_equal(opt->count, 1);
    assert_int_equal(opt->total_ns, 800 - 200 - 300);
    assert_int_equal(fw->count, 1);
    assert_int_equal(fw->total_ns, 200);
    assert_int_equal(bw->count, 2);
    assert_int_equal(bw->total_ns, 300 + 500);
    assert_int_equal(val->total_ns, 300 - 200);
    assert_int_equal(dl->total_ns, 200);
    /* other: step 1 is covered from 100 to 900, step 2 from 1000 to 1500 and 1600 to 1900 */
    assert_int_equal(a->steps[0].other_ns, 200);
    assert_int_equal(a->steps[1].other_ns, 200);
    assert_int_equal(a->other.count, 2);
    assert_int_equal(a->other.total_ns, 400);
    assert_true(fabs(a->other.pct - 20.0) < 1e-9);
    assert_int_equal(a->steps[0].lead_ns, 100);
    assert_int_equal(a->steps[1].lead_ns, 0);
    assert_int_equal(a->lead_ns, 100);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* A step of 1000 ns whose op waits on the GPU for sync_ns, with a pageable copy of copy_ns. */
static tp_analysis *sync_case(int64_t sync_ns, int64_t copy_ns) {
    tp_model m;
    tp_model_init(&m);
    host(&m, "ProfilerStep#1", 0, 1000);
    host(&m, "aten::item", 100, sync_ns + 20);
    tb_add(&m, TP_HOST_RANGE, 1, 1, "cudaStreamSynchronize", "cuda_runtime", 110, sync_ns);
    tb_add(&m, TP_MEMCPY, 0, 7, "Memcpy HtoD (Pageable -> Device)", NULL, 0, copy_ns);
    tb_add(&m, TP_MEMCPY, 0, 7, "Memcpy HtoD (Pinned -> Device)", NULL, 200, 500);
    tb_add(&m, TP_KERNEL, 0, 7, "gemm", NULL, 0, 990);
    tp_analysis *a = analyse(&m);
    tp_model_free(&m);
    return a;
}

static const tp_reco *reco(const tp_analysis *a, const char *id) {
    for (size_t i = 0; i < a->nrecos; i++)
        if (strcmp(a->recos[i].id, id) == 0) return &a->recos[i];
    return NULL;
}

static void test_sync_and_pageable_rules(void **state) {
    (void)state;
    tp_analysis *a = sync_case(50, 10); /* 5% and 1%: not beyond */
    assert_int_equal(a->sync_ns, 50);
    assert_int_equal(a->sync_calls, 1);
    assert_int_equal(a->h2d_pageable_ns, 10);
    assert_null(reco(a, "sync"));
    assert_null(reco(a, "pageable_copy"));
    tp_analysis_free(a);
    a = sync_case(51, 11);
    const tp_reco *r = reco(a, "sync");
    assert_non_null(r);
    assert_int_equal(r->saving_ns, 51);
    assert_non_null(strstr(r->message, "most from aten::item (1 calls"));
    assert_non_null(r = reco(a, "pageable_copy"));
    assert_int_equal(r->saving_ns, 11);
    /* ranked by saving: sync (51) before the pageable copy (11) */
    assert_true(reco(a, "sync") < reco(a, "pageable_copy"));
    tp_analysis_free(a);
}

/* MFU: the flops of each step over its time against the peak: --peak-tflops, else the GPU table
 * at the widest math the kernels show (an A100 running a bf16 GEMM: 312 TFLOP/s). */
static tp_analysis *mfu_case(const char *device_name, const char *kernel, double peak) {
    tp_model m;
    tp_model_init(&m);
    host(&m, "ProfilerStep#1", 0, 1000000); /* 1 ms */
    tp_model_arg_int(&m, host(&m, "aten::mm", 100, 500000), "flops", 156000000);
    host(&m, "ProfilerStep#2", 1000000, 1000000);
    tp_model_arg_int(&m, host(&m, "aten::mm", 1000100, 500000), "flops", 78000000);
    if (device_name) {
        tp_device *d = tp_model_device(&m, 0);
        d->name = tp_model_intern_cstr(&m, device_name);
        d->compute_major = 8;
        tb_add(&m, TP_KERNEL, 0, 7, kernel, NULL, 100, 400000);
    }
    tp_analysis *a = tp_analysis_new(&(tp_analysis_opts){.peak_tflops = peak});
    assert_int_equal(tp_analysis_add_model(a, &m, "hand-built"), 0);
    tp_analysis_finish(a);
    tp_model_free(&m);
    return a;
}

static void test_mfu(void **state) {
    (void)state;
    /* 234 MFLOP in 2 ms of steps: 117 GFLOP/s */
    tp_analysis *a = mfu_case("NVIDIA A100-SXM4-80GB", "ampere_bf16_s16816gemm_bf16_128x128", 0);
    assert_true(fabs(a->achieved_flops_per_s - 117e9) < 1);
    assert_true(fabs(a->peak_tflops - 312.0) < 1e-9);
    assert_string_equal(a->peak_dtype, "bf16/fp16");
    assert_true(fabs(a->mfu_pct - 100.0 * 117e9 / 312e12) < 1e-9);
    assert_true(fabs(a->steps[0].mfu_pct - 100.0 * 156e9 / 312e12) < 1e-9);
    tp_analysis_free(a);
    a = mfu_case("NVIDIA A100-SXM4-80GB", "ampere_sgemm_128x64_nn", 0); /* FP32 math */
    assert_true(fabs(a->peak_tflops - 19.5) < 1e-9);
    tp_analysis_free(a);
    a = mfu_case("Tesla V100-DGXS-32GB", "cutlass_tensorop_s1688gemm", 0); /* no TF32: FP32 */
    assert_string_equal(a->peak_dtype, "fp32");
    tp_analysis_free(a);
    a = mfu_case("Some Future GPU", "gemm", 0); /* unknown: no MFU */
    assert_true(a->mfu_pct < 0);
    assert_true(a->achieved_flops_per_s > 0);
    tp_analysis_free(a);
    a = mfu_case(NULL, NULL, 0); /* a CPU: none unless given */
    assert_true(a->mfu_pct < 0);
    tp_analysis_free(a);
    a = mfu_case(NULL, NULL, 1.17); /* given: 117 GFLOP/s of 1.17 TFLOP/s */
    assert_true(fabs(a->mfu_pct - 10.0) < 1e-9);
    assert_string_equal(a->peak_source, "given");
    tp_analysis_free(a);
}

/* ---- accumulating models -------------------------------------------------------------------- */

static void test_merge_two_models(void **state) {
    (void)state;
    tp_analysis *a = tp_analysis_new(NULL);
    tp_model m;
    /* Model 1: interns "aten::mm" first. */
    tp_model_init(&m);
    host(&m, "ProfilerStep#1", 0, 1000);
    host(&m, "aten::mm", 10, 100);
    tb_add(&m, TP_KERNEL, 0, 7, "gemm", "kernel", 0, 400);
    mem_event(&m, 5, 1, 0, "Total Allocated", 700);
    m.input_events = 10;
    m.input_bytes = 100;
    assert_int_equal(tp_analysis_add_model(a, &m, "one.json"), 0);
    tp_model_free(&m); /* the analysis keeps copies, not model ids */
    tp_analysis_finish(a);
    assert_int_equal(op(a, "aten::mm")->calls, 1);

    /* Model 2: other strings first, so every id differs; two devices; added after a finish. */
    tp_model_init(&m);
    host(&m, "other", 0, 5);
    host(&m, "ProfilerStep#2", 0, 3000);
    host(&m, "aten::mm", 10, 300);
    tb_add(&m, TP_KERNEL, 0, 7, "gemm", "kernel", 0, 600);
    tb_add(&m, TP_KERNEL, 1, 7, "gemm", "kernel", 0, 600);
    mem_event(&m, 5, 1, 0, "Total Allocated", 500);
    mem_event(&m, 6, 1, 1, "Total Allocated", 900);
    m.input_events = 20;
    m.input_bytes = 200;
    assert_int_equal(tp_analysis_add_model(a, &m, "two.json"), 0);
    tp_model_free(&m);
    tp_analysis_finish(a);

    assert_int_equal(a->ninputs, 2);
    assert_int_equal(a->npaths, 2);
    assert_string_equal(a->input_path, "one.json");
    assert_int_equal(a->input_events, 30);
    assert_int_equal(a->input_bytes, 300);
    assert_int_equal(a->nsteps, 2);
    assert_int_equal(a->steps_total_ns, 4000);
    assert_int_equal(a->steps_mean_ns, 2000);
    const tp_op_row *mm = op(a, "aten::mm");
    assert_int_equal(mm->calls, 2);
    assert_int_equal(mm->total_ns, 400);
    assert_int_equal(mm->min_ns, 100);
    assert_int_equal(mm->max_ns, 300);
    assert_int_equal(kernel(a, "gemm")->calls, 3);
    assert_int_equal(kernel(a, "gemm")->total_ns, 1600);
    /* busy 400 + 1200, capacity 1000 x 1 + 3000 x 2, most devices in one input: 2 */
    assert_int_equal(a->gpu_busy_ns, 1600);
    assert_int_equal(a->gpu_capacity_ns, 7000);
    assert_int_equal(a->gpu_devices, 2);
    assert_true(fabs(a->gpu_utilization_pct - 100.0 * 1600 / 7000) < 1e-9);
    /* memory peaks are maxed per device */
    assert_int_equal(a->nmemory, 2);
    assert_int_equal(a->memory[0].peak_bytes, 700);
    assert_int_equal(a->memory[1].peak_bytes, 900);
    /* percentages come from the sums: self of mm 400 of 400 + 5 */
    assert_true(fabs(mm->self_pct - 100.0 * 400 / 405) < 1e-9);
    tp_analysis_free(a);
}

static void test_empty_and_degenerate_models(void **state) {
    (void)state;
    tp_model m;
    tp_model_init(&m);
    tp_analysis *a = analyse(&m);
    assert_int_equal(a->nsteps, 0);
    assert_int_equal(a->nops, 0);
    assert_true(a->gpu_utilization_pct < 0);
    assert_int_equal(a->nrecos, 0);
    tp_analysis_free(a);
    /* absurd times saturate instead of overflowing; a negative duration counts as zero */
    host(&m, "far", INT64_MAX - 5, INT64_MAX);
    host(&m, "neg", INT64_MIN, -50);
    host(&m, "ProfilerStep#1", INT64_MIN + 1, INT64_MAX);
    tb_add(&m, TP_KERNEL, 0, 7, "k", "kernel", INT64_MAX - 1, INT64_MAX);
    a = analyse(&m);
    assert_int_equal(op(a, "neg")->total_ns, 0);
    assert_int_equal(op(a, "far")->calls, 1);
    tp_analysis_free(a);
    tp_model_free(&m);
}

/* A model big enough that add_model.c sorts on a second thread (TP_HELPER_MIN = 2^18 ranges),
 * written far out of order: groups newest first, each parent after its children. parent
 * [0, 10) holds c1 [1, 4) and c2 [5, 9): self times 3, 3, 4. A stream's kernel [20, 30) in each
 * group, newest first too: in start order, GROUPS - 1 gaps of 90 ns, each a launch gap (under
 * 30 us, no launch in the trace); out of order they would overlap, gaps of 0. */
static void test_self_time_sorted_on_a_thread(void **state) {
    (void)state;
    enum { GROUPS = 50000 };
    tp_model m;
    tp_model_init(&m);
    for (int64_t tid = 1; tid <= 2; tid++) {
        for (int64_t g = GROUPS - 1; g >= 0; g--) {
            tb_add(&m, TP_HOST_RANGE, 1, tid, "c1", "cpu_op", g * 100 + 1, 3);
            tb_add(&m, TP_HOST_RANGE, 1, tid, "c2", "cpu_op", g * 100 + 5, 4);
            tb_add(&m, TP_HOST_RANGE, 1, tid, "parent", "cpu_op", g * 100, 10);
        }
    }
    for (int64_t g = GROUPS - 1; g >= 0; g--)
        tb_add(&m, TP_KERNEL, 0, 7, "K", "kernel", g * 100 + 20, 10);
    assert_true(m.nevents >= 1 << 18);
    tp_analysis *a = analyse(&m);
    assert_int_equal(op(a, "parent")->calls, 2 * GROUPS);
    assert_int_equal(op(a, "parent")->self_ns, 2 * GROUPS * 3);
    assert_int_equal(op(a, "c1")->self_ns, 2 * GROUPS * 3);
    assert_int_equal(op(a, "c2")->self_ns, 2 * GROUPS * 4);
    assert_int_equal(kernel(a, "K")->calls, GROUPS); /* classified on the helper */
    assert_int_equal(kernel(a, "K")->total_ns, GROUPS * 10);
    assert_int_equal(a->nidle, 1);
    assert_int_equal(a->idle[0].idle_ns, (GROUPS - 1) * 90);
    assert_int_equal(a->idle[0].launch_ns, (GROUPS - 1) * 90);
    tp_analysis_free(a);
    tp_model_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_time_nesting),
        cmocka_unit_test(test_self_time_equal_starts),
        cmocka_unit_test(test_self_time_overlap),
        cmocka_unit_test(test_self_time_zero_durations),
        cmocka_unit_test(test_self_time_tracks_and_steps),
        cmocka_unit_test(test_steps),
        cmocka_unit_test(test_percentiles),
        cmocka_unit_test(test_gpu_busy),
        cmocka_unit_test(test_gpu_in_pieces),
        cmocka_unit_test(test_parts_of_a_range_in_pieces),
        cmocka_unit_test(test_stages_default_patterns),
        cmocka_unit_test(test_stages_custom_and_glob),
        cmocka_unit_test(test_memory),
        cmocka_unit_test(test_flops),
        cmocka_unit_test(test_flops_fcm),
        cmocka_unit_test(test_launch_attribution),
        cmocka_unit_test(test_recommendation_thresholds),
        cmocka_unit_test(test_stages_carved_and_explicit),
        cmocka_unit_test(test_sync_and_pageable_rules),
        cmocka_unit_test(test_mfu),
        cmocka_unit_test(test_merge_two_models),
        cmocka_unit_test(test_empty_and_degenerate_models),
        cmocka_unit_test(test_self_time_sorted_on_a_thread),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
