/* hashtab.c - growing, removing and checking the hash index (see hashtab.h). */
#include "util/hashtab.h"

#include <stdlib.h>
#include <string.h>

static size_t slot_size(const tp_hashtab *t) {
    return t->esz ? t->esz : sizeof(tp_hslot);
}

/* How far slot i lies from home slot `home`, counting forward cyclically. */
static size_t dist(size_t i, size_t home, size_t mask) {
    return (i - home) & mask;
}

int tp_hashtab_grow(tp_hashtab *t, size_t first) {
    assert(first >= 2 && (first & (first - 1)) == 0);
    assert(t->esz == 0 || (t->esz >= sizeof(tp_hslot) && t->esz % sizeof(uint64_t) == 0));
    size_t nslots = t->nslots ? t->nslots * 2 : first, esz = slot_size(t);
    /* refs are 32 bits, so no table needs more than 2^33 slots; refuse before size_t wraps */
    if (nslots < t->nslots || nslots > SIZE_MAX / esz) return -1;
    tp_hashtab grown = {calloc(nslots, esz), nslots, t->n, t->esz};
    if (!grown.slots) return -1;
    size_t mask = nslots - 1;
    /* Reinserting in any order keeps H3: each entry lands on the first empty slot from home. */
    for (size_t i = 0; i < t->nslots; i++) {
        const tp_hslot *s = tp_hashtab_at(t, i);
        if (!s->ref) continue;
        size_t j = s->hash & mask;
        while (tp_hashtab_at(&grown, j)->ref)
            j = (j + 1) & mask;
        memcpy(tp_hashtab_at(&grown, j), s, esz);
    }
    free(t->slots);
    *t = grown;
    return 0;
}

void tp_hashtab_renumber(tp_hashtab *t, uint32_t h, uint32_t old_ref, uint32_t new_ref) {
    assert(t->nslots && new_ref);
    size_t mask = t->nslots - 1, i = h & mask;
    while (tp_hashtab_at(t, i)->ref != old_ref) {
        assert(tp_hashtab_at(t, i)->ref); /* an empty slot: old_ref was not in the table */
        i = (i + 1) & mask;
    }
    tp_hashtab_at(t, i)->ref = new_ref;
}

/* Backward-shift deletion: walking the cluster after the hole, an entry moves into the hole when
 * its home does not lie cyclically after the hole (then the hole sits on its probe path, H3), and
 * the hole moves to where it was. The walk ends at the first empty slot, the cluster's end. */
void tp_hashtab_remove(tp_hashtab *t, size_t hole) {
    assert(tp_hashtab_at(t, hole)->ref && t->n > 0);
    size_t mask = t->nslots - 1, esz = slot_size(t);
    for (size_t j = (hole + 1) & mask; tp_hashtab_at(t, j)->ref; j = (j + 1) & mask) {
        size_t home = tp_hashtab_at(t, j)->hash & mask;
        if (dist(j, home, mask) >= dist(j, hole, mask)) {
            memcpy(tp_hashtab_at(t, hole), tp_hashtab_at(t, j), esz);
            hole = j;
        }
    }
    memset(tp_hashtab_at(t, hole), 0, esz);
    t->n--;
}

void tp_hashtab_clear(tp_hashtab *t) {
    if (t->slots) memset(t->slots, 0, t->nslots * slot_size(t));
    t->n = 0;
}

void tp_hashtab_free(tp_hashtab *t) {
    free(t->slots);
    *t = (tp_hashtab){.esz = t->esz};
}

int tp_hashtab_valid(const tp_hashtab *t) {
    if (!t->nslots) return !t->slots && !t->n;              /* H1, empty */
    if (t->nslots & (t->nslots - 1) || !t->slots) return 0; /* H1 */
    size_t mask = t->nslots - 1, n = 0;
    for (size_t i = 0; i < t->nslots; i++) {
        const tp_hslot *s = tp_hashtab_at(t, i);
        if (!s->ref) continue;
        n++;
        /* H3: nothing empty between the entry's home and it */
        for (size_t k = s->hash & mask; k != i; k = (k + 1) & mask)
            if (!tp_hashtab_at(t, k)->ref) return 0;
    }
    return n == t->n && n * 2 <= t->nslots; /* H2 */
}
