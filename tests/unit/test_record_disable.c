/* test_record_disable.c - the compile-time switch. Built twice: as is (the glob of
 * tests/CMakeLists.txt), where the TPROF_ macros record, and with -DTPROF_DISABLE
 * (cmake/record.cmake), where they expand to nothing and their arguments are not evaluated;
 * a ctest there also checks with nm that the disabled object does not reference tprof_begin_. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "tprof.h"
#include "util/log.h"

#ifdef TPROF_DISABLE
enum { ENABLED = 0 };
#else
enum { ENABLED = 1 };
#endif

static int evaluated;

__attribute__((unused)) static const char *name_of(const char *s) {
    evaluated++;
    return s;
}

static void test_macros(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    /* The functions stay callable either way; only the macros change. */
    assert_int_equal(start_with(NULL), 0);
    {
        TPROF_ZONE(name_of("zone"));
        TPROF_BEGIN(name_of("begin"));
        TPROF_FLOPS((uint64_t)evaluated++);
        TPROF_ARG_INT(name_of("k"), 1);
        TPROF_COUNTER(name_of("counter"), 1.0);
        TPROF_END();
        TPROF_STEP();
    }
    tprof_shutdown();
    assert_int_equal(evaluated, ENABLED ? 5 : 0);
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    assert_int_equal(count_named(m, "zone"), ENABLED);
    assert_int_equal(count_named(m, "begin"), ENABLED);
    assert_int_equal(count_named(m, "counter"), ENABLED);
    assert_int_equal(count_named(m, "ProfilerStep#1"), ENABLED); /* TPROF_STEP moved the step */
    cap_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_macros)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
