/* names.c - the index behind tp_name_index (see names.h): names and values in entries, found
 * through util/hashtab. */
#include "analysis/names.h"

#include "util/hash.h"
#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

struct tp_name_entry {
    const char *name;
    uint32_t value;
};

static int name_eq(const void *ctx, const tp_hslot *slot, const void *key) {
    return strcmp(((const struct tp_name_entry *)ctx)[slot->ref - 1].name, key) == 0;
}

static uint32_t name_hash(const char *name) {
    return (uint32_t)tp_hash_bytes(name, strlen(name));
}

int tp_name_index_put(tp_name_index *ix, const char *name, uint32_t value) {
    uint32_t h = name_hash(name);
    if (tp_hashtab_reserve(&ix->tab, 64)) return -1;
    size_t i = tp_hashtab_find(&ix->tab, h, name_eq, ix->entries, name);
    uint32_t ref = tp_hashtab_ref(&ix->tab, i);
    if (!ref) {
        if (ix->n >= UINT32_MAX - 1 || TP_GROW(ix->entries, ix->cap, ix->n + 1)) return -1;
        ref = (uint32_t)++ix->n;
        tp_hashtab_put(&ix->tab, i, h, ref);
    }
    /* a re-put takes the new pointer too: the row's name may have moved with its row */
    ix->entries[ref - 1] = (struct tp_name_entry){name, value};
    return 0;
}

uint32_t tp_name_index_get(const tp_name_index *ix, const char *name) {
    if (!ix->tab.nslots) return UINT32_MAX;
    uint32_t ref = tp_hashtab_ref(
        &ix->tab, tp_hashtab_find(&ix->tab, name_hash(name), name_eq, ix->entries, name));
    return ref ? ix->entries[ref - 1].value : UINT32_MAX;
}

void tp_name_index_clear(tp_name_index *ix) {
    tp_hashtab_clear(&ix->tab);
    ix->n = 0;
}

void tp_name_index_free(tp_name_index *ix) {
    tp_hashtab_free(&ix->tab);
    free(ix->entries);
    *ix = (tp_name_index){0};
}
