/* test_util_arena.c - the arena (util/arena.h): pieces aligned and apart, zeroed where asked,
 * big pieces in blocks of their own, arrays grown across the small/big line with their
 * contents kept, overflowing sizes refused, and one free for everything (AddressSanitizer's
 * leak check, under make sanitize, holds the last to account). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/arena.h"

#include <stdalign.h>
#include <string.h>

static int aligned(const void *p) {
    return ((uintptr_t)p % alignof(max_align_t)) == 0;
}

/* Small pieces of many sizes come out aligned, do not overlap, and outnumber one chunk. */
static void test_small_pieces(void **state) {
    (void)state;
    tp_arena a = {0};
    enum { N = 4000 };
    unsigned char *p[N];
    for (size_t i = 0; i < N; i++) {
        size_t len = i % 97;
        p[i] = tp_arena_alloc(&a, len, 1);
        assert_non_null(p[i]);
        assert_true(aligned(p[i]));
        memset(p[i], (int)(i & 0xff), len);
    }
    for (size_t i = 0; i < N; i++)
        for (size_t k = 0; k < i % 97; k++)
            assert_int_equal(p[i][k], i & 0xff);
    assert_non_null(a.chunks);
    tp_arena_free(&a);
    assert_null(a.chunks);
    assert_null(a.blocks);
}

static void test_calloc_and_big(void **state) {
    (void)state;
    tp_arena a = {0};
    for (int round = 0; round < 2; round++) { /* the arena is reusable after a free */
        uint64_t *small = tp_arena_calloc(&a, 100, sizeof(*small));
        uint64_t *big = tp_arena_calloc(&a, 1 << 20, sizeof(*big));
        assert_non_null(small);
        assert_non_null(big);
        assert_true(aligned(big));
        for (size_t i = 0; i < 100; i++)
            assert_true(small[i] == 0);
        for (size_t i = 0; i < 1 << 20; i += 4096)
            assert_true(big[i] == 0);
        assert_non_null(a.blocks); /* 8 MB: a block of its own */
        tp_arena_free(&a);
    }
}

/* An array grown from nothing to millions of entries, through small pieces and then a block
 * that realloc moves, keeps every entry; a block grown among others keeps the list sound. */
static void test_grow(void **state) {
    (void)state;
    tp_arena a = {0};
    uint32_t *v = NULL, *w = NULL;
    size_t cap = 0, capw = 0;
    for (uint32_t i = 0; i < 3000000; i++) {
        assert_int_equal(TP_AGROW(&a, v, cap, (size_t)i + 1), 0);
        v[i] = i * 7;
        if (i % 3 == 0) {
            assert_int_equal(TP_AGROW(&a, w, capw, (size_t)i / 3 + 1), 0);
            w[i / 3] = i;
        }
        if (i % 100000 == 0) assert_non_null(tp_arena_alloc(&a, 20000, 1)); /* blocks between */
    }
    assert_true(cap >= 3000000);
    for (uint32_t i = 0; i < 3000000; i++)
        assert_true(v[i] == i * 7);
    for (uint32_t i = 0; i < 1000000; i++)
        assert_true(w[i] == i * 3);
    assert_int_equal(TP_AGROW(&a, v, cap, 10), 0); /* room already there: nothing moves */
    tp_arena_free(&a);
}

static void test_refused(void **state) {
    (void)state;
    tp_arena a = {0};
    assert_null(tp_arena_alloc(&a, SIZE_MAX / 2, 4));
    assert_null(tp_arena_calloc(&a, SIZE_MAX, 2));
    assert_non_null(tp_arena_alloc(&a, 0, 8)); /* empty, but a piece */
    void *v = NULL;
    size_t cap = 0;
    assert_int_equal(tp_arena_grow(&a, &v, &cap, SIZE_MAX / 2, 8), -1);
    assert_null(v);
    assert_true(cap == 0);
    tp_arena_free(&a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_pieces),
        cmocka_unit_test(test_calloc_and_big),
        cmocka_unit_test(test_grow),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
