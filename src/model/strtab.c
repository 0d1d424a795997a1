/* strtab.c - the intern table behind tp_str ids (see strtab.h). */
#include "model/strtab.h"

#include "util/hash.h"

#include <stdlib.h>
#include <string.h>

/* Strings live in blocks of at least this size; a longer string gets a block of its own. */
enum { TP_ARENA_BLOCK = 64 * 1024 };

struct tp_arena_block {
    struct tp_arena_block *next;
    size_t used, cap;
    char data[];
};

static char *arena_copy(tp_strtab *t, const char *s, size_t len) {
    struct tp_arena_block *b = t->arena;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > TP_ARENA_BLOCK ? len + 1 : TP_ARENA_BLOCK;
        b = malloc(sizeof(*b) + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        /* A big one-off string goes behind the current block so the latter keeps filling. */
        if (t->arena && cap > TP_ARENA_BLOCK) {
            b->next = t->arena->next;
            t->arena->next = b;
        } else {
            b->next = t->arena;
            t->arena = b;
        }
    }
    char *p = b->data + b->used;
    memcpy(p, s, len);
    p[len] = '\0';
    b->used += len + 1;
    t->bytes += len + 1;
    return p;
}

static int rehash(tp_strtab *t, uint32_t nslots) {
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots) return -1;
    for (uint32_t id = 0; id < t->n; id++) {
        uint32_t i = t->ents[id].hash & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = id + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

void tp_strtab_init(tp_strtab *t) {
    memset(t, 0, sizeof(*t));
    tp_strtab_intern(t, "", 0);
}

void tp_strtab_free(tp_strtab *t) {
    struct tp_arena_block *b = t->arena;
    while (b) {
        struct tp_arena_block *next = b->next;
        free(b);
        b = next;
    }
    free(t->ents);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static uint32_t probe(const tp_strtab *t, const char *s, size_t len, uint32_t h, int *found) {
    uint32_t i = h & (t->nslots - 1);
    for (;;) {
        uint32_t slot = t->slots[i];
        if (!slot) break;
        const struct tp_strent *e = &t->ents[slot - 1];
        if (e->hash == h && e->len == len && memcmp(e->s, s, len) == 0) {
            *found = 1;
            return slot - 1;
        }
        i = (i + 1) & (t->nslots - 1);
    }
    *found = 0;
    return i;
}

tp_str tp_strtab_find(const tp_strtab *t, const char *s, size_t len) {
    if (!t->nslots) return UINT32_MAX;
    int found;
    uint32_t r = probe(t, s, len, (uint32_t)tp_hash_bytes(s, len), &found);
    return found ? r : UINT32_MAX;
}

tp_str tp_strtab_intern(tp_strtab *t, const char *s, size_t len) {
    if (len > UINT32_MAX - 1) len = UINT32_MAX - 1;
    uint32_t h = (uint32_t)tp_hash_bytes(s, len);
    /* Keep the load factor at or below 1/2 so probes stay short. */
    if ((t->n + 1) * 2 > t->nslots && rehash(t, t->nslots ? t->nslots * 2 : 1024)) goto fail;
    int found;
    uint32_t i = probe(t, s, len, h, &found);
    if (found) return i;
    if (t->n == t->cap) {
        uint32_t ncap = t->cap ? t->cap * 2 : 1024;
        struct tp_strent *e = realloc(t->ents, ncap * sizeof(*e));
        if (!e) goto fail;
        t->ents = e;
        t->cap = ncap;
    }
    char *copy = arena_copy(t, s, len);
    if (!copy) goto fail;
    t->ents[t->n] = (struct tp_strent){copy, (uint32_t)len, h};
    t->slots[i] = t->n + 1;
    return t->n++;
fail:
    t->failed = 1;
    return TP_STR_EMPTY;
}
