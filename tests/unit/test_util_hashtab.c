/* test_util_hashtab.c - the hash index (util/hashtab.h) against a plain array: inserts through
 * growth, lookups, removal without tombstones in crowded clusters that wrap around the end of the
 * slots, renumbering after a swap-remove, clear, entries kept in slots with a payload; the
 * invariants H1-H3 checked after every step. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "util/hashtab.h"

#include <stdlib.h>
#include <string.h>

/* splitmix64: every key distinct enough, the same sequence on every run */
static uint64_t next(void) {
    static uint64_t state;
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The items: keys in an array, ref = index + 1, kept dense by swap-remove (as record/memory.c). */
typedef struct items {
    uint64_t *keys;
    size_t n;
    uint32_t hash_bits; /* few bits: long clusters and many equal hashes */
} items;

static uint32_t hash_of(const items *it, uint64_t key) {
    uint32_t h = (uint32_t)(key * 0x9e3779b97f4a7c15ULL >> 32);
    return it->hash_bits >= 32 ? h : h & ((1u << it->hash_bits) - 1);
}

static int eq(const void *ctx, const tp_hslot *slot, const void *key) {
    const items *it = ctx;
    return it->keys[slot->ref - 1] == *(const uint64_t *)key;
}

static size_t find(const tp_hashtab *t, const items *it, uint64_t key) {
    return tp_hashtab_find(t, hash_of(it, key), eq, it, &key);
}

static void insert(tp_hashtab *t, items *it, uint64_t key) {
    assert_int_equal(tp_hashtab_reserve(t, 8), 0);
    size_t i = find(t, it, key);
    assert_int_equal(tp_hashtab_ref(t, i), 0);
    it->keys[it->n++] = key;
    tp_hashtab_put(t, i, hash_of(it, key), (uint32_t)it->n);
}

static void remove_key(tp_hashtab *t, items *it, uint64_t key) {
    size_t i = find(t, it, key);
    uint32_t ref = tp_hashtab_ref(t, i);
    assert_int_not_equal(ref, 0);
    tp_hashtab_remove(t, i);
    uint32_t last = (uint32_t)it->n;
    if (ref != last) {
        it->keys[ref - 1] = it->keys[last - 1];
        tp_hashtab_renumber(t, hash_of(it, it->keys[ref - 1]), last, ref);
    }
    it->n--;
}

/* Every item found at its own ref; the table holds exactly the items. */
static void check_all(const tp_hashtab *t, const items *it) {
    assert_true(tp_hashtab_valid(t));
    assert_int_equal(t->n, it->n);
    for (size_t k = 0; k < it->n; k++)
        assert_int_equal(tp_hashtab_ref(t, find(t, it, it->keys[k])), k + 1);
}

static void run(uint32_t hash_bits, size_t count) {
    tp_hashtab t = {0};
    assert_true(tp_hashtab_valid(&t));
    items it = {.keys = malloc(count * sizeof(uint64_t)), .hash_bits = hash_bits};
    uint64_t *removed = malloc(count * sizeof(uint64_t));
    size_t nremoved = 0;
    for (size_t k = 0; k < count; k++) {
        insert(&t, &it, next() | 1);
        if (k % 97 == 0) check_all(&t, &it);
    }
    check_all(&t, &it);
    assert_true(t.nslots >= 2 * count && t.nslots < 4 * count + 16);
    /* remove a random half, one at a time, checking the whole table as clusters close up */
    while (it.n > count / 2) {
        uint64_t key = it.keys[next() % it.n];
        remove_key(&t, &it, key);
        removed[nremoved++] = key;
        assert_int_equal(tp_hashtab_ref(&t, find(&t, &it, key)), 0);
        if (nremoved % 31 == 0) check_all(&t, &it);
    }
    check_all(&t, &it);
    for (size_t k = 0; k < nremoved; k++)
        assert_int_equal(tp_hashtab_ref(&t, find(&t, &it, removed[k])), 0);
    /* removed keys come back; the slots do not grow while the load stays under the bound */
    size_t nslots = t.nslots;
    for (size_t k = 0; k < nremoved && it.n < count; k++)
        insert(&t, &it, removed[k]);
    check_all(&t, &it);
    assert_int_equal(t.nslots, nslots);
    /* everything out again: an empty table, every slot empty */
    while (it.n)
        remove_key(&t, &it, it.keys[next() % it.n]);
    check_all(&t, &it);
    for (size_t i = 0; i < t.nslots; i++)
        assert_int_equal(tp_hashtab_ref(&t, i), 0);
    free(removed);
    free(it.keys);
    tp_hashtab_free(&t);
    assert_true(tp_hashtab_valid(&t));
}

static void test_hashtab_spread(void **state) {
    (void)state;
    run(32, 5000);
}

/* Eight distinct hashes: clusters as long as the table, wrapping past the last slot. */
static void test_hashtab_crowded(void **state) {
    (void)state;
    run(3, 600);
}

/* One hash for every key: deletion must move entries whose home is behind the hole. */
static void test_hashtab_one_hash(void **state) {
    (void)state;
    run(0, 200);
}

/* Entries whose home is near the end wrap to the front; removing before the wrap must pull them
 * back across it, and must leave alone entries at home after the hole. */
static void test_hashtab_wrap(void **state) {
    (void)state;
    tp_hashtab t = {0};
    items it = {.keys = malloc(8 * sizeof(uint64_t)), .hash_bits = 32};
    uint64_t keys[5];
    /* keys whose home in 16 slots is 15, 15, 0, 1 and 3: five entries grow 8 slots to 16 */
    const uint32_t want[5] = {15, 15, 0, 1, 3};
    for (int k = 0; k < 5; k++)
        do
            keys[k] = next();
        while ((hash_of(&it, keys[k]) & 15) != want[k]);
    for (int k = 0; k < 5; k++)
        insert(&t, &it, keys[k]);
    assert_int_equal(t.nslots, 16);
    check_all(&t, &it);
    /* slots: 15 = k0, 0 = k1 (wrapped), 1 = k2, 2 = k3, 3 = k4 (at home) */
    remove_key(&t, &it, keys[0]);
    check_all(&t, &it);
    assert_int_equal(it.keys[tp_hashtab_ref(&t, 15) - 1], keys[1]);
    assert_int_equal(it.keys[tp_hashtab_ref(&t, 0) - 1], keys[2]);
    assert_int_equal(it.keys[tp_hashtab_ref(&t, 1) - 1], keys[3]);
    assert_int_equal(tp_hashtab_ref(&t, 2), 0);
    assert_int_equal(it.keys[tp_hashtab_ref(&t, 3) - 1], keys[4]);
    tp_hashtab_clear(&t);
    it.n = 0;
    check_all(&t, &it);
    assert_int_equal(t.nslots, 16);
    free(it.keys);
    tp_hashtab_free(&t);
}

/* Entries in the slots (esz: the header, then a key and a value), as record/memory.c keeps
 * them: removal must move the payloads with their headers. */
typedef struct kv_slot {
    tp_hslot h;
    uint64_t key, value;
} kv_slot;

static int kv_eq(const void *ctx, const tp_hslot *slot, const void *key) {
    (void)ctx;
    return ((const kv_slot *)(const void *)slot)->key == *(const uint64_t *)key;
}

static kv_slot *kv_find(const tp_hashtab *t, uint64_t key) {
    uint32_t h = (uint32_t)(key >> 40) & 63; /* 64 hashes: crowded clusters */
    return (kv_slot *)(void *)tp_hashtab_at(t, tp_hashtab_find(t, h, kv_eq, NULL, &key));
}

static void test_hashtab_payload(void **state) {
    (void)state;
    enum { N = 2000 };
    tp_hashtab t = {.esz = sizeof(kv_slot)};
    uint64_t keys[N];
    for (size_t k = 0; k < N; k++) {
        keys[k] = next() | 1;
        assert_int_equal(tp_hashtab_reserve(&t, 16), 0);
        uint32_t h = (uint32_t)(keys[k] >> 40) & 63;
        size_t i = tp_hashtab_find(&t, h, kv_eq, NULL, &keys[k]);
        assert_int_equal(tp_hashtab_ref(&t, i), 0);
        tp_hashtab_put(&t, i, h, 1);
        kv_slot *s = (kv_slot *)(void *)tp_hashtab_at(&t, i);
        s->key = keys[k];
        s->value = ~keys[k];
    }
    assert_true(tp_hashtab_valid(&t));
    for (size_t k = 0; k < N; k += 2) {
        uint32_t h = (uint32_t)(keys[k] >> 40) & 63;
        tp_hashtab_remove(&t, tp_hashtab_find(&t, h, kv_eq, NULL, &keys[k]));
    }
    assert_true(tp_hashtab_valid(&t));
    assert_int_equal(t.n, N / 2);
    for (size_t k = 0; k < N; k++) {
        kv_slot *s = kv_find(&t, keys[k]);
        if (k % 2) {
            assert_int_equal(s->h.ref, 1);
            assert_int_equal(s->key, keys[k]);
            assert_int_equal(s->value, ~keys[k]);
        } else {
            assert_int_equal(s->h.ref, 0);
        }
    }
    tp_hashtab_free(&t);
    assert_int_equal(t.esz, sizeof(kv_slot)); /* ready for reuse */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hashtab_spread),   cmocka_unit_test(test_hashtab_crowded),
        cmocka_unit_test(test_hashtab_one_hash), cmocka_unit_test(test_hashtab_wrap),
        cmocka_unit_test(test_hashtab_payload),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
