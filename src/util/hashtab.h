/* hashtab.h - the one open-addressing hash table of tprof.
 *
 * Every keyed table in tprof (interned strings, a model's tracks, rows by name, (op, shapes)
 * pairs, live allocations) is this table: slots that begin with {hash, ref} (ref 0: empty), found
 * by linear probing from the hash's home slot. Most callers keep their items in an array of their
 * own and use the table as an index (ref: the item's index + 1, slots of just the header). A
 * caller whose entries are small and looked up on a hot path keeps them in the slots instead:
 * a slot of `esz` bytes, the header first, its payload after (record/memory.c: an allocation's
 * address, size and device, so that a free touches one slot instead of a slot and an item).
 * The caller decides what equal keys mean (its eq function); the table never reads a payload,
 * so growing and deleting need only the hashes in the headers, and move slots whole.
 *
 * Invariants (tp_hashtab_valid checks them all; the functions below assert their parts):
 *   H1  nslots is 0 (no slots yet) or a power of two; mask = nslots - 1.
 *   H2  n, the occupied slots, stays at most nslots / 2 (tp_hashtab_reserve grows before an
 *       insert would pass it): probes stay short and an empty slot always ends one.
 *   H3  no gap: every slot from an occupied slot's home (hash & mask) up to it, cyclically, is
 *       occupied. Lookups stop at the first empty slot, so a gap would hide entries; removal
 *       keeps H3 by moving later entries of the cluster back (no tombstones to accumulate).
 *
 * The lookup is static inline with the eq function passed by the caller, because it runs on
 * the trace reader's hot path (one interned name per event member) and the recorder's (every
 * allocation): inlined, the compiler turns eq into straight-line code and the probe costs what
 * the hand-written tables did. Growing and removing are rare and live in hashtab.c. */
#ifndef TP_UTIL_HASHTAB_H
#define TP_UTIL_HASHTAB_H

#include <assert.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tp_hslot {
    uint32_t hash; /* the key's hash (its low bits pick the home slot) */
    uint32_t ref;  /* not 0 when occupied: an index user's item index + 1 */
} tp_hslot;

typedef struct tp_hashtab {
    unsigned char *slots;
    size_t nslots; /* 0 or a power of two (H1) */
    size_t n;      /* occupied slots, at most nslots / 2 (H2) */
    size_t esz;    /* bytes per slot: a tp_hslot, then the caller's payload (0: the header only) */
} tp_hashtab;

/* Whether the entry in slot s (its hash already equal) has the key the caller looks for (ctx:
 * the caller's items, or nothing when the key is in the slot). */
typedef int (*tp_hashtab_eq_fn)(const void *ctx, const tp_hslot *s, const void *key);

/* Slot i: its header, the caller's payload after it when esz says so. */
static inline tp_hslot *tp_hashtab_at(const tp_hashtab *t, size_t i) {
    assert(i < t->nslots);
    return (tp_hslot *)(void *)(t->slots + i * (t->esz ? t->esz : sizeof(tp_hslot)));
}

/* Doubles the slots (a new table gets `first`, a power of two, of esz bytes each), moving every
 * entry. 0 or -1. */
int tp_hashtab_grow(tp_hashtab *t, size_t first);

/* Room for one more entry: grows when an insert would pass H2. Call it before the lookup whose
 * empty slot an insert will fill (growing moves slots). 0, or -1 when out of memory (the table is
 * unchanged). Inline: interning calls it once per string looked up. */
static inline int tp_hashtab_reserve(tp_hashtab *t, size_t first) {
    return (t->n + 1) * 2 <= t->nslots ? 0 : tp_hashtab_grow(t, first);
}

/* The slot holding the key of hash h (eq says which), or the empty slot that ends its probe.
 * The table must have slots (nslots > 0). */
static inline size_t tp_hashtab_find(const tp_hashtab *t, uint32_t h, tp_hashtab_eq_fn eq,
                                     const void *ctx, const void *key) {
    assert(t->nslots && (t->nslots & (t->nslots - 1)) == 0);
    size_t mask = t->nslots - 1, i = h & mask;
    for (const tp_hslot *s; (s = tp_hashtab_at(t, i))->ref; i = (i + 1) & mask)
        if (s->hash == h && eq(ctx, s, key)) break;
    return i;
}

/* The ref in slot i (0: empty). */
static inline uint32_t tp_hashtab_ref(const tp_hashtab *t, size_t i) {
    return tp_hashtab_at(t, i)->ref;
}

/* Fills the empty slot i, which ends the probe of h (from tp_hashtab_find after
 * tp_hashtab_reserve), with ref (not 0); a payload is the caller's to write (tp_hashtab_at). */
static inline void tp_hashtab_put(tp_hashtab *t, size_t i, uint32_t h, uint32_t ref) {
    tp_hslot *s = tp_hashtab_at(t, i);
    assert(!s->ref && ref && t->n < t->nslots / 2);
    s->hash = h;
    s->ref = ref;
    t->n++;
}

/* The entry of hash h whose ref is old_ref (it must be present) gets new_ref (not 0): for an
 * item the caller moved in its array, as when it fills a removed item's place with its last. */
void tp_hashtab_renumber(tp_hashtab *t, uint32_t h, uint32_t old_ref, uint32_t new_ref);

/* Empties the occupied slot i, moving later entries of its cluster back so H3 holds. */
void tp_hashtab_remove(tp_hashtab *t, size_t i);

/* Forgets every entry, keeping the slots. */
void tp_hashtab_clear(tp_hashtab *t);
void tp_hashtab_free(tp_hashtab *t);

/* 1 when H1-H3 hold (O(nslots): for tests and assertions). */
int tp_hashtab_valid(const tp_hashtab *t);

#endif
