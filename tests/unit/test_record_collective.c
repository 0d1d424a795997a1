/* test_record_collective.c - tprof_collective_begin/end: the range and its args, and what the
 * cross-rank analysis makes of them (analysis/ranks.h): keyed by seq, blocking or not. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "analysis/ranks.h"
#include "tprof.h"
#include "util/log.h"

static int setup(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    return 0;
}

static void test_collective_range_and_args(void **state) {
    (void)state;
    assert_int_equal(start_with(NULL), 0);
    tprof_collective_begin("mpi:allreduce", 7, 4096, 8, 0);
    tprof_collective_end();
    TPROF_COLLECTIVE_BEGIN("nccl:all_gather", 8, 1 << 20, 8, 1);
    TPROF_COLLECTIVE_END();
    tprof_collective_begin(NULL, 9, 0, 2, 0); /* a name is optional */
    tprof_collective_end();
    tprof_shutdown();
    assert_true(cap.n >= 1);
    tp_model *m = cap.models[0];
    const tp_event *ev = find_named(m, "mpi:allreduce");
    assert_non_null(ev);
    assert_int_equal(arg_of(m, ev, "seq")->v.i, 7);
    assert_int_equal(arg_of(m, ev, "bytes")->v.i, 4096);
    assert_int_equal(arg_of(m, ev, "Group size")->v.i, 8);
    assert_null(arg_of(m, ev, "async"));
    ev = find_named(m, "nccl:all_gather");
    assert_non_null(ev);
    assert_int_equal(arg_of(m, ev, "async")->v.i, 1);
    assert_non_null(find_named(m, "collective"));

    tp_coll_list l = {0};
    assert_int_equal(tp_collectives_of(m, &l), 0);
    tp_coll_sort(&l);
    assert_int_equal(l.n, 3);
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(l.v[i].key, 7 + i);
        assert_true(l.v[i].keyed);
        assert_int_equal(l.v[i].sync, i != 1); /* the async one's end aligns no clock */
        assert_true(l.v[i].end_ns >= l.v[i].start_ns);
    }
    free(l.v);
    cap_reset();
}

static void test_nothing_without_a_session(void **state) {
    (void)state;
    tprof_collective_begin("mpi:barrier", 1, 0, 2, 0); /* no session: no range, no warning */
    tprof_collective_end();
    assert_int_equal(cap.n, 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_collective_range_and_args),
        cmocka_unit_test(test_nothing_without_a_session),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
