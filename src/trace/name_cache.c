/* name_cache.c - the name cache (see names.h). */
#include "trace/names.h"

#include <stdlib.h>
#include <string.h>

void tp_names_init(tp_names *nc) {
    nc->slots = NULL;
}

void tp_names_free(tp_names *nc) {
    free(nc->slots);
    nc->slots = NULL;
}

/* The first min(len, 16) bytes of s, zeros after. */
static void head_of(const char *s, size_t len, uint64_t head[2]) {
    memcpy(head, s, TP_NAMES_HEAD);
    if (len < 8) {
        head[0] &= len ? ~0ULL >> (64 - 8 * len) : 0;
        head[1] = 0;
    } else if (len < 16) {
        head[1] &= len > 8 ? ~0ULL >> (64 - 8 * (len - 8)) : 0;
    }
}

/* Whether s holds a raw NUL: then *nul_at, when it is still NULL, is set to the first one. */
static int note_nul(const char *s, size_t len, const char **nul_at) {
    const char *nul = memchr(s, '\0', len);
    if (__builtin_expect(nul == NULL, 1)) return 0;
    if (!*nul_at) *nul_at = nul;
    return 1;
}

tp_str tp_names_intern(tp_names *nc, tp_model *m, const char *s, size_t len, const char **nul_at) {
    if (!nc->slots && !(nc->slots = calloc(TP_NAMES_SLOTS, sizeof(*nc->slots)))) {
        note_nul(s, len, nul_at);
        return tp_model_intern(m, s, len);
    }
    uint64_t head[2], last;
    head_of(s, len, head);
    if (len >= 8)
        memcpy(&last, s + len - 8, 8);
    else
        last = head[0];
    uint64_t h = (head[0] * 0x9e3779b97f4a7c15ULL) ^ (last * 0xc2b2ae3d27d4eb4fULL) ^ len;
    tp_name_slot *slot = &nc->slots[(h ^ h >> 29) & (TP_NAMES_SLOTS - 1)];
    uint64_t had[2];
    memcpy(had, slot->head, sizeof(had));
    if (slot->len == len && slot->s && had[0] == head[0] && had[1] == head[1] &&
        (len <= TP_NAMES_HEAD ||
         memcmp(slot->s + TP_NAMES_HEAD, s + TP_NAMES_HEAD, len - TP_NAMES_HEAD) == 0))
        return slot->id; /* the same bytes as a name cached without a NUL */
    int nul = note_nul(s, len, nul_at);
    tp_str id = tp_model_intern(m, s, len);
    /* Not cached: the id may stand for another string, or a hit would skip the NUL check. */
    if (m->strings.failed || nul) return id;
    memcpy(slot->head, head, TP_NAMES_HEAD);
    slot->s = tp_model_str(m, id);
    slot->len = (uint32_t)len;
    slot->id = id;
    return id;
}
