/* names.c - the open-addressing index behind tp_name_index (see names.h). */
#include "analysis/names.h"

#include "util/hash.h"

#include <stdlib.h>
#include <string.h>

struct tp_name_slot {
    const char *name; /* NULL: empty */
    uint64_t hash;
    uint32_t value;
};

static size_t find_slot(const struct tp_name_slot *slots, size_t nslots, const char *name,
                        uint64_t h) {
    size_t i = h & (nslots - 1);
    while (slots[i].name && (slots[i].hash != h || strcmp(slots[i].name, name) != 0))
        i = (i + 1) & (nslots - 1);
    return i;
}

static int grow(tp_name_index *ix) {
    size_t nslots = ix->nslots ? ix->nslots * 2 : 64;
    struct tp_name_slot *slots = calloc(nslots, sizeof(*slots));
    if (!slots) return -1;
    for (size_t i = 0; i < ix->nslots; i++) {
        const struct tp_name_slot *old = &ix->slots[i];
        if (old->name) slots[find_slot(slots, nslots, old->name, old->hash)] = *old;
    }
    free(ix->slots);
    ix->slots = slots;
    ix->nslots = nslots;
    return 0;
}

int tp_name_index_put(tp_name_index *ix, const char *name, uint32_t value) {
    /* Load factor at most 1/2 keeps probes short. */
    if ((ix->n + 1) * 2 > ix->nslots && grow(ix)) return -1;
    uint64_t h = tp_hash_bytes(name, strlen(name));
    struct tp_name_slot *s = &ix->slots[find_slot(ix->slots, ix->nslots, name, h)];
    if (!s->name) ix->n++;
    *s = (struct tp_name_slot){name, h, value};
    return 0;
}

uint32_t tp_name_index_get(const tp_name_index *ix, const char *name) {
    if (!ix->nslots) return UINT32_MAX;
    const struct tp_name_slot *s =
        &ix->slots[find_slot(ix->slots, ix->nslots, name, tp_hash_bytes(name, strlen(name)))];
    return s->name ? s->value : UINT32_MAX;
}

void tp_name_index_clear(tp_name_index *ix) {
    if (ix->slots) memset(ix->slots, 0, ix->nslots * sizeof(*ix->slots));
    ix->n = 0;
}

void tp_name_index_free(tp_name_index *ix) {
    free(ix->slots);
    *ix = (tp_name_index){0};
}
