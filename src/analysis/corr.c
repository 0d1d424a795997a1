/* corr.c - correlation ids to the GPU work they name and the host range that launched it.
 *
 * A fixed-size open-addressing table: the caller counts the ids first, so it never rehashes. */
#include "analysis/internal.h"

#include "util/hash.h"

#include <stdlib.h>

int tp_corr_map_init(tp_corr_map *map, size_t entries) {
    size_t nslots = 16;
    while (nslots < entries * 2)
        nslots *= 2;
    map->slots = calloc(nslots, sizeof(*map->slots));
    map->nslots = map->slots ? nslots : 0;
    return map->slots ? 0 : -1;
}

void tp_corr_map_free(tp_corr_map *map) {
    free(map->slots);
    *map = (tp_corr_map){0};
}

tp_corr_entry *tp_corr_map_get(tp_corr_map *map, uint64_t corr, int insert) {
    if (!map->nslots) return NULL;
    size_t mask = map->nslots - 1;
    for (size_t i = tp_hash_mix(corr * 0x9e3779b97f4a7c15ULL) & mask;; i = (i + 1) & mask) {
        tp_corr_entry *e = &map->slots[i];
        if (e->corr == corr) return e;
        if (e->corr == 0) {
            if (!insert) return NULL;
            *e = (tp_corr_entry){.corr = corr, .launch = UINT32_MAX};
            return e;
        }
    }
}
