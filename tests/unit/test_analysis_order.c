/* test_analysis_order.c - the index sort and grouping behind every analysis pass, and the name
 * index, checked against straightforward implementations written here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/internal.h"
#include "analysis/names.h"
#include "analysis/order.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const tp_event *ref_events;

/* The order of order.h, written plainly: start, then longer first, then index. */
static int ref_cmp(const void *pa, const void *pb) {
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    const tp_event *x = &ref_events[a], *y = &ref_events[b];
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    if (x->dur != y->dur) return x->dur > y->dur ? -1 : 1;
    return (a > b) - (a < b);
}

/* Sorts idx with tp_order_ranges and checks it against qsort with ref_cmp. */
static void check_sort(tp_order *o, const tp_event *ev, uint32_t *idx, size_t n) {
    uint32_t *want = malloc((n ? n : 1) * sizeof(*want));
    memcpy(want, idx, n * sizeof(*idx));
    ref_events = ev;
    qsort(want, n, sizeof(*want), ref_cmp);
    assert_int_equal(tp_order_ranges(o, ev, idx, n), 0);
    for (size_t i = 0; i < n; i++)
        if (idx[i] != want[i])
            fail_msg("n=%zu: position %zu holds %u, want %u", n, i, idx[i], want[i]);
    free(want);
}

typedef enum { RANDOM, SORTED, REVERSED, POST_ORDER, DEEP_POST_ORDER, ALL_EQUAL, EXTREMES } shape;

static void fill(tp_event *ev, size_t n, shape s) {
    for (size_t i = 0; i < n; i++) {
        tp_event *e = &ev[i];
        memset(e, 0, sizeof(*e));
        e->dur = (int64_t)(next() % 8) * 10;
        switch (s) {
        case RANDOM:
            e->ts = (int64_t)(next() % (n * 4 + 1));
            break;
        case SORTED:
            e->ts = (int64_t)i * 3;
            break;
        case REVERSED:
            e->ts = (int64_t)(n - i) * 3;
            break;
        case POST_ORDER:
            /* as Kineto writes a thread: children first, then the parent that started earlier */
            e->ts = (int64_t)i * 10 - ((i % 5 == 4) ? 45 : 0);
            break;
        case DEEP_POST_ORDER:
            /* as above, and every 50th a parent of many: too far back to insert in place */
            e->ts = (int64_t)i * 10 - ((i % 5 == 4) ? 45 : 0) - ((i % 50 == 49) ? 600 : 0);
            break;
        case ALL_EQUAL:
            e->ts = 42;
            break;
        case EXTREMES: {
            static const int64_t v[] = {INT64_MIN,     INT64_MAX,    0, -1, 1,
                                        INT64_MIN + 1, INT64_MAX - 1};
            e->ts = v[next() % 7];
            break;
        }
        }
    }
}

static void test_order_matches_reference(void **state) {
    (void)state;
    static const size_t sizes[] = {0, 1, 2, 3, 31, 32, 33, 100, 1000, 70000};
    tp_order o = {0};
    for (int s = RANDOM; s <= EXTREMES; s++) {
        for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
            size_t n = sizes[k];
            tp_event *ev = malloc((n ? n : 1) * sizeof(*ev));
            uint32_t *idx = malloc((n ? n : 1) * sizeof(*idx));
            fill(ev, n, (shape)s);
            for (size_t i = 0; i < n; i++)
                idx[i] = (uint32_t)i;
            check_sort(&o, ev, idx, n);
            /* a subset in scrambled order sorts the same as the reference too */
            size_t m = n / 2;
            for (size_t i = 0; i < m; i++)
                idx[i] = (uint32_t)(next() % n);
            check_sort(&o, ev, idx, m);
            free(idx);
            free(ev);
        }
    }
    tp_order_free(&o);
}

static void test_order_nearly_sorted(void **state) {
    (void)state;
    /* A few far-displaced elements (the straggler path) in a long sorted run. */
    size_t n = 50000;
    tp_event *ev = calloc(n, sizeof(*ev));
    uint32_t *idx = malloc(n * sizeof(*idx));
    for (size_t i = 0; i < n; i++) {
        ev[i].ts = (int64_t)i * 100;
        ev[i].dur = 5;
        idx[i] = (uint32_t)i;
    }
    ev[10].ts = 4000000; /* far ahead */
    ev[40000].ts = 7;    /* far behind */
    ev[30000].ts = ev[29999].ts;
    ev[30000].dur = 9; /* equal start, longer: goes first */
    tp_order o = {0};
    check_sort(&o, ev, idx, n);
    tp_order_free(&o);
    free(idx);
    free(ev);
}

/* Indices fed one at a time to a run end in the same order as the one-call sort. */
static void test_run_streaming(void **state) {
    (void)state;
    size_t n = 20000;
    tp_event *ev = calloc(n, sizeof(*ev));
    uint32_t *idx = malloc(n * sizeof(*idx));
    for (size_t i = 0; i < n; i++) {
        /* mostly ascending, with parents after children and a late block */
        ev[i].ts = (int64_t)i * 10 - (i % 7 == 0 ? 25 : 0) - (i > n - 500 ? 150000 : 0);
        ev[i].dur = (int64_t)(next() % 50);
        idx[i] = (uint32_t)i;
    }
    tp_order o = {0};
    tp_run r = {0};
    for (size_t i = 0; i < n; i++)
        assert_int_equal(tp_run_add(&r, ev, (uint32_t)i), 0);
    assert_int_equal(tp_run_finish(&o, ev, &r), 0);
    check_sort(&o, ev, idx, n);
    assert_int_equal(r.n, n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(r.v[i], idx[i]);
    tp_run_free(&r);
    tp_order_free(&o);
    free(idx);
    free(ev);
}

/* Ids collapse with their durations summed, and every id is found from any hint. */
static void test_corr_table(void **state) {
    (void)state;
    size_t n = 5000;
    tp_keyed *recs = malloc(n * sizeof(*recs));
    enum { IDS = 1500 };
    static int64_t sum[IDS];
    static uint32_t count[IDS];
    memset(sum, 0, sizeof(sum));
    memset(count, 0, sizeof(count));
    for (size_t i = 0; i < n; i++) {
        uint64_t id = next() % IDS;
        int64_t d = (int64_t)(next() % 1000);
        recs[i] = (tp_keyed){id * 3 + 1, (uint64_t)d}; /* ids with gaps between them */
        sum[id] += d;
        count[id]++;
    }
    tp_order o = {0};
    tp_corr_table t = {0};
    tp_arena ar = {0};
    assert_int_equal(tp_corr_build(&t, &o, recs, n, &ar), 0);
    size_t present = 0;
    for (size_t id = 0; id < IDS; id++)
        present += count[id] != 0;
    assert_int_equal(t.n, present);
    for (size_t id = 0; id < IDS; id++) {
        size_t hint = (size_t)(next() % (t.n + 3)), pos = tp_corr_find(&t, id * 3 + 1, &hint);
        if (!count[id]) {
            assert_true(pos == SIZE_MAX);
            continue;
        }
        assert_true(pos != SIZE_MAX);
        assert_true(t.ids[pos].key == id * 3 + 1);
        assert_true((int64_t)t.ids[pos].val == sum[id]);
        assert_int_equal(t.use[pos].count, count[id]);
        assert_true(tp_corr_find(&t, id * 3 + 2, &hint) == SIZE_MAX); /* between ids */
    }
    size_t hint = 0;
    assert_true(tp_corr_find(&t, 0, &hint) == SIZE_MAX);
    assert_true(tp_corr_find(&t, IDS * 3 + 10, &hint) == SIZE_MAX);
    tp_arena_free(&ar);
    free(recs); /* the table was built in place: the records are the caller's */
    tp_order_free(&o);
}

static void test_group_by_key(void **state) {
    (void)state;
    enum { N = 1000, K = 7 };
    uint32_t idx[N], key[N], out[N];
    size_t start[K + 1];
    for (uint32_t i = 0; i < N; i++) {
        idx[i] = i * 3;
        key[i] = (uint32_t)(next() % K);
    }
    key[5] = K - 1;
    tp_group_by_key(idx, key, N, K, out, start);
    assert_int_equal(start[0], 0);
    assert_int_equal(start[K], N);
    size_t pos = 0;
    for (uint32_t g = 0; g < K; g++) {
        /* group g holds exactly the indices with key g, in their original order */
        for (size_t i = 0; i < N; i++)
            if (key[i] == g) assert_int_equal(out[pos++], idx[i]);
        assert_int_equal(pos, start[g + 1]);
    }
}

static void test_name_index(void **state) {
    (void)state;
    tp_name_index ix = {0};
    assert_int_equal(tp_name_index_get(&ix, "absent"), UINT32_MAX);
    enum { N = 5000 };
    static char names[N][16];
    for (uint32_t i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "op_%u", i);
        assert_int_equal(tp_name_index_put(&ix, names[i], i), 0);
    }
    for (uint32_t i = 0; i < N; i++)
        assert_int_equal(tp_name_index_get(&ix, names[i]), i);
    assert_int_equal(tp_name_index_put(&ix, names[7], 99), 0); /* replaces */
    assert_int_equal(tp_name_index_get(&ix, "op_7"), 99);
    assert_int_equal(ix.n, N);
    assert_int_equal(tp_name_index_get(&ix, "op_"), UINT32_MAX);
    tp_name_index_clear(&ix);
    assert_int_equal(tp_name_index_get(&ix, "op_1"), UINT32_MAX);
    tp_name_index_free(&ix);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_matches_reference),
        cmocka_unit_test(test_order_nearly_sorted),
        cmocka_unit_test(test_run_streaming),
        cmocka_unit_test(test_corr_table),
        cmocka_unit_test(test_group_by_key),
        cmocka_unit_test(test_name_index),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
