/* corr.c - correlation ids to the GPU work they name and the host range that launched it.
 *
 * Fixed-size tables (see internal.h): the caller counts the ids first, so they never grow. */
#include "analysis/internal.h"

#include "util/hash.h"

#include <stdlib.h>

int tp_corr_map_init(tp_corr_map *map, size_t entries, uint64_t lo, uint64_t hi) {
    *map = (tp_corr_map){0};
    if (!entries) return 0;
    size_t nslots = 16;
    if (hi - lo < (uint64_t)entries * 4 + 1024) {
        map->dense = 1;
        map->base = lo;
        nslots = (size_t)(hi - lo) + 1;
    } else {
        while (nslots < entries * 2)
            nslots *= 2;
    }
    map->slots = calloc(nslots, sizeof(*map->slots));
    map->nslots = map->slots ? nslots : 0;
    return map->slots ? 0 : -1;
}

void tp_corr_map_free(tp_corr_map *map) {
    free(map->slots);
    *map = (tp_corr_map){0};
}

tp_corr_entry *tp_corr_map_get_hashed(tp_corr_map *map, uint64_t corr, int insert) {
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
