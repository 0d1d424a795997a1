/* test_util_sort.c - the keyed radix sort (util/sort.h) against qsort with a stable comparison
 * written here, over key spans of one pass, several passes and all 64 bits; input already in
 * order; and the signed-time keys. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Stable by key: equal keys keep their input order (val records it). */
static int ref_keyed_cmp(const void *pa, const void *pb) {
    const tp_keyed *a = pa, *b = pb;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return (a->val > b->val) - (a->val < b->val);
}

static void test_sort_keyed(void **state) {
    (void)state;
    /* spans that take one pass, several passes, and the whole 64 bits */
    const uint64_t spans[] = {1, 3, 2000, 1u << 20, UINT64_C(1) << 40, 0};
    tp_sort_buf spare = {0};
    for (size_t s = 0; s < sizeof(spans) / sizeof(spans[0]); s++) {
        size_t n = 3000;
        tp_keyed *v = malloc(n * sizeof(*v)), *want = malloc(n * sizeof(*want));
        uint64_t base = next();
        for (size_t i = 0; i < n; i++)
            v[i] = (tp_keyed){spans[s] ? base % 1000 + next() % spans[s] : next(), i};
        memcpy(want, v, n * sizeof(*v));
        qsort(want, n, sizeof(*want), ref_keyed_cmp);
        assert_int_equal(tp_sort_keyed(&spare, v, n), 0);
        for (size_t i = 0; i < n; i++)
            if (v[i].key != want[i].key || v[i].val != want[i].val)
                fail_msg("span %zu: position %zu differs", s, i);
        free(v);
        free(want);
    }
    tp_sort_buf_free(&spare);
}

static void test_time_key(void **state) {
    (void)state;
    const int64_t t[] = {INT64_MIN, INT64_MIN + 1, -5, -1, 0, 1, 7, INT64_MAX - 1, INT64_MAX};
    size_t n = sizeof(t) / sizeof(t[0]);
    for (size_t i = 0; i < n; i++) {
        assert_true(tp_key_time(tp_time_key(t[i])) == t[i]);
        if (i) assert_true(tp_time_key(t[i - 1]) < tp_time_key(t[i]));
    }
}

/* Sorted input (the Chrome writer's correlation ids, counted up) is left as it is, equal keys
 * in their order, and needs no second buffer. */
static void test_sorted_input_kept(void **state) {
    (void)state;
    size_t n = 1000;
    tp_keyed *v = malloc(n * sizeof(*v));
    for (size_t i = 0; i < n; i++)
        v[i] = (tp_keyed){i / 3, n - i};
    tp_sort_buf spare = {0};
    assert_int_equal(tp_sort_keyed(&spare, v, n), 0);
    for (size_t i = 0; i < n; i++) {
        assert_true(v[i].key == i / 3);
        assert_true(v[i].val == n - i);
    }
    assert_null(spare.v);
    assert_int_equal(tp_sort_keyed(&spare, v, 1), 0);
    assert_int_equal(tp_sort_keyed(&spare, NULL, 0), 0);
    tp_sort_buf_free(&spare);
    free(v);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sort_keyed),
        cmocka_unit_test(test_sorted_input_kept),
        cmocka_unit_test(test_time_key),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
