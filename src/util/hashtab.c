/* hashtab.c - growing, removing and checking the hash index (see hashtab.h). */
#include "util/hashtab.h"

#include <stdlib.h>
#include <string.h>

/* How far slot i lies from home slot `home`, counting forward cyclically. */
static size_t dist(size_t i, size_t home, size_t mask) {
    return (i - home) & mask;
}

int tp_hashtab_grow(tp_hashtab *t, size_t first) {
    assert(first >= 2 && (first & (first - 1)) == 0);
    size_t nslots = t->nslots ? t->nslots * 2 : first;
    /* refs are 32 bits, so no table needs more than 2^33 slots; refuse before size_t wraps */
    if (nslots < t->nslots || nslots > SIZE_MAX / sizeof(tp_hslot)) return -1;
    tp_hslot *slots = calloc(nslots, sizeof(*slots));
    if (!slots) return -1;
    size_t mask = nslots - 1;
    /* Reinserting in any order keeps H3: each entry lands on the first empty slot from home. */
    for (size_t i = 0; i < t->nslots; i++) {
        if (!t->slots[i].ref) continue;
        size_t j = t->slots[i].hash & mask;
        while (slots[j].ref)
            j = (j + 1) & mask;
        slots[j] = t->slots[i];
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

void tp_hashtab_renumber(tp_hashtab *t, uint32_t h, uint32_t old_ref, uint32_t new_ref) {
    assert(t->nslots && new_ref);
    size_t mask = t->nslots - 1, i = h & mask;
    while (t->slots[i].ref != old_ref) {
        assert(t->slots[i].ref); /* an empty slot: old_ref was not in the table */
        i = (i + 1) & mask;
    }
    t->slots[i].ref = new_ref;
}

/* Backward-shift deletion: walking the cluster after the hole, an entry moves into the hole when
 * its home does not lie cyclically after the hole (then the hole sits on its probe path, H3), and
 * the hole moves to where it was. The walk ends at the first empty slot, the cluster's end. */
void tp_hashtab_remove(tp_hashtab *t, size_t hole) {
    assert(hole < t->nslots && t->slots[hole].ref && t->n > 0);
    size_t mask = t->nslots - 1;
    for (size_t j = (hole + 1) & mask; t->slots[j].ref; j = (j + 1) & mask) {
        size_t home = t->slots[j].hash & mask;
        if (dist(j, home, mask) >= dist(j, hole, mask)) {
            t->slots[hole] = t->slots[j];
            hole = j;
        }
    }
    t->slots[hole] = (tp_hslot){0, 0};
    t->n--;
}

void tp_hashtab_clear(tp_hashtab *t) {
    if (t->slots) memset(t->slots, 0, t->nslots * sizeof(*t->slots));
    t->n = 0;
}

void tp_hashtab_free(tp_hashtab *t) {
    free(t->slots);
    *t = (tp_hashtab){0};
}

int tp_hashtab_valid(const tp_hashtab *t) {
    if (!t->nslots) return !t->slots && !t->n;                /* H1, empty */
    if (t->nslots & (t->nslots - 1) || !t->slots) return 0; /* H1 */
    size_t mask = t->nslots - 1, n = 0;
    for (size_t i = 0; i < t->nslots; i++) {
        if (!t->slots[i].ref) continue;
        n++;
        /* H3: nothing empty between the entry's home and it */
        for (size_t k = t->slots[i].hash & mask; k != i; k = (k + 1) & mask)
            if (!t->slots[k].ref) return 0;
    }
    return n == t->n && n * 2 <= t->nslots; /* H2 */
}
