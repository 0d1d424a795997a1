/* test_analysis_compare.c - compare (docs/SEMANTICS.md §5) on two hand-built analyses. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/analysis.h"
#include "analysis/compare.h"
#include "model/model.h"

#include "test_analysis_build.h"

#include <math.h>
#include <string.h>

/* A run: two steps, top-level ops (self = duration) and kernels. */
typedef struct run {
    int64_t step1, step2; /* durations; 0 = no steps */
    const char *ops[3];
    int64_t op_ns[3];
    const char *kernels[2];
    int64_t kernel_ns[2];
} run;

static tp_analysis *analyse(const run *r) {
    tp_model m;
    tp_model_init(&m);
    if (r->step1) {
        tb_add(&m, TP_HOST_RANGE, 1, 1, "ProfilerStep#1", NULL, 0, r->step1);
        tb_add(&m, TP_HOST_RANGE, 1, 1, "ProfilerStep#2", NULL, 100000, r->step2);
    }
    for (int i = 0; i < 3 && r->ops[i]; i++)
        tb_add(&m, TP_HOST_RANGE, 1, 2, r->ops[i], NULL, (int64_t)i * 1000, r->op_ns[i]);
    for (int i = 0; i < 2 && r->kernels[i]; i++)
        tb_add(&m, TP_KERNEL, 0, 7, r->kernels[i], NULL, (int64_t)i * 1000, r->kernel_ns[i]);
    tp_analysis *a = tp_analysis_new(NULL);
    assert_int_equal(tp_analysis_add_model(a, &m, "run.json"), 0);
    tp_analysis_finish(a);
    tp_model_free(&m);
    return a;
}

static void test_compare_deltas(void **state) {
    (void)state;
    /* A: steps 100 and 300 (mean 200); ops X 100, Y 50; kernel K 10.
     * B: steps 250 and 250 (mean 250, +25%); ops X 130, Z 40; kernels K 5, K2 7. */
    tp_analysis *a = analyse(&(run){100, 300, {"X", "Y"}, {100, 50}, {"K"}, {10}});
    tp_analysis *b = analyse(&(run){250, 250, {"X", "Z"}, {130, 40}, {"K", "K2"}, {5, 7}});
    tp_compare *c = tp_compare_new(a, b);
    assert_non_null(c);
    assert_int_equal(c->a_mean_ns, 200);
    assert_int_equal(c->b_mean_ns, 250);
    assert_true(fabs(c->step_change_pct - 25.0) < 1e-12);
    assert_int_equal(tp_compare_regressed(c, 20), 1);
    assert_int_equal(tp_compare_regressed(c, 25), 0); /* not more than 25% */
    assert_int_equal(tp_compare_regressed(c, 30), 0);
    /* ops by |change|: Y removed -50, Z added +40, X +30 (+30%) */
    assert_int_equal(c->nops, 3);
    assert_string_equal(c->ops[0].name, "Y");
    assert_int_equal(c->ops[0].status, TP_DELTA_REMOVED);
    assert_int_equal(c->ops[0].delta_ns, -50);
    assert_true(fabs(c->ops[0].delta_pct + 100.0) < 1e-12);
    assert_string_equal(c->ops[1].name, "Z");
    assert_int_equal(c->ops[1].status, TP_DELTA_ADDED);
    assert_int_equal(c->ops[1].a_ns, 0);
    assert_true(isnan(c->ops[1].delta_pct));
    assert_string_equal(c->ops[2].name, "X");
    assert_int_equal(c->ops[2].status, TP_DELTA_CHANGED);
    assert_int_equal(c->ops[2].a_ns, 100);
    assert_int_equal(c->ops[2].b_ns, 130);
    assert_true(fabs(c->ops[2].delta_pct - 30.0) < 1e-12);
    assert_int_equal(c->ops_added, 1);
    assert_int_equal(c->ops_removed, 1);
    /* kernels by |change| of total: K2 +7 (added), K -5 */
    assert_int_equal(c->nkernels, 2);
    assert_string_equal(c->kernels[0].name, "K2");
    assert_int_equal(c->kernels[0].status, TP_DELTA_ADDED);
    assert_string_equal(c->kernels[1].name, "K");
    assert_int_equal(c->kernels[1].delta_ns, -5);
    assert_int_equal(c->kernels_added, 1);
    assert_int_equal(c->kernels_removed, 0);
    tp_compare_free(c);

    /* B against itself: nothing changed, no regression at 0%. */
    c = tp_compare_new(b, b);
    assert_true(c->step_change_pct == 0);
    assert_int_equal(tp_compare_regressed(c, 0), 0);
    for (size_t i = 0; i < c->nops; i++)
        assert_int_equal(c->ops[i].delta_ns, 0);
    tp_compare_free(c);
    tp_analysis_free(a);
    tp_analysis_free(b);
}

static void test_compare_without_steps(void **state) {
    (void)state;
    tp_analysis *a = analyse(&(run){0, 0, {"X"}, {100}, {NULL}, {0}});
    tp_analysis *b = analyse(&(run){10, 10, {"X"}, {90}, {NULL}, {0}});
    tp_compare *c = tp_compare_new(a, b);
    assert_true(isnan(c->step_change_pct));
    assert_int_equal(tp_compare_regressed(c, 5), -1);
    assert_int_equal(c->ops[0].delta_ns, -10);
    assert_int_equal(c->nkernels, 0);
    tp_compare_free(c);
    tp_analysis_free(a);
    tp_analysis_free(b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_compare_deltas),
        cmocka_unit_test(test_compare_without_steps),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
