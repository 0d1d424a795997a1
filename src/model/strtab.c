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
    tp_hashtab_free(&t->index);
    memset(t, 0, sizeof(*t));
}

/* The key of a lookup: the bytes, not NUL-terminated. */
typedef struct strkey {
    const char *s;
    size_t len;
} strkey;

/* The slot's hash already matched, so the lengths and bytes decide. */
static int str_eq(const void *ctx, const tp_hslot *slot, const void *key) {
    const struct tp_strent *e = &((const struct tp_strent *)ctx)[slot->ref - 1];
    const strkey *k = key;
    return e->len == k->len && memcmp(e->s, k->s, k->len) == 0;
}

uint32_t tp_strtab_hash_of(const char *s, size_t len) {
    return (uint32_t)tp_hash_bytes(s, len);
}

tp_str tp_strtab_find_h(const tp_strtab *t, const char *s, size_t len, uint32_t h) {
    if (!t->index.nslots) return UINT32_MAX;
    strkey k = {s, len};
    uint32_t ref = tp_hashtab_ref(&t->index, tp_hashtab_find(&t->index, h, str_eq, t->ents, &k));
    return ref ? ref - 1 : UINT32_MAX;
}

tp_str tp_strtab_find(const tp_strtab *t, const char *s, size_t len) {
    return tp_strtab_find_h(t, s, len, tp_strtab_hash_of(s, len));
}

tp_str tp_strtab_intern(tp_strtab *t, const char *s, size_t len) {
    if (len > UINT32_MAX - 1) len = UINT32_MAX - 1;
    return tp_strtab_intern_h(t, s, len, tp_strtab_hash_of(s, len));
}

tp_str tp_strtab_intern_h(tp_strtab *t, const char *s, size_t len, uint32_t h) {
    if (len > UINT32_MAX - 1) goto fail; /* no hash of it was stored: tp_strtab_intern's cut */
    if (tp_hashtab_reserve(&t->index, 1024)) goto fail;
    strkey k = {s, len};
    size_t i = tp_hashtab_find(&t->index, h, str_eq, t->ents, &k);
    uint32_t ref = tp_hashtab_ref(&t->index, i);
    if (ref) return ref - 1;
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
    tp_hashtab_put(&t->index, i, h, t->n + 1);
    return t->n++;
fail:
    t->failed = 1;
    return TP_STR_EMPTY;
}
