/* arena.c - chunks of small pieces and blocks of big ones (see arena.h). */
#include "util/arena.h"

#include "util/vec.h"

#include <assert.h>
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN alignof(max_align_t)

/* Headers are padded to ALIGN so that what follows them is aligned for any type. */
struct tp_arena_chunk {
    union {
        struct tp_arena_chunk *next;
        max_align_t pad;
    } h;
};

/* link is the pointer that points at this block (the arena's head or the previous block's
 * next), so that a block moved by realloc is relinked without a walk. */
struct tp_arena_block {
    union {
        struct {
            struct tp_arena_block *next, **link;
            size_t bytes; /* the block's size, header included */
        } l;
        max_align_t pad;
    } h;
};

static size_t round_up(size_t n) {
    return (n + ALIGN - 1) & ~(ALIGN - 1);
}

static void *block_data(struct tp_arena_block *b) {
    return b + 1;
}

static struct tp_arena_block *block_of(void *p) {
    return (struct tp_arena_block *)p - 1;
}

static void *alloc_block(tp_arena *a, size_t bytes, int zero) {
    if (bytes > SIZE_MAX - sizeof(struct tp_arena_block)) return NULL;
    size_t total = sizeof(struct tp_arena_block) + bytes;
    struct tp_arena_block *b = zero ? calloc(1, total) : malloc(total);
    if (!b) return NULL;
    b->h.l.bytes = total;
    b->h.l.next = a->blocks;
    b->h.l.link = &a->blocks;
    if (a->blocks) a->blocks->h.l.link = &b->h.l.next;
    a->blocks = b;
    return block_data(b);
}

/* bytes (at most TP_ARENA_BIG) from the first chunk, a new one when it has no room. */
static void *alloc_small(tp_arena *a, size_t bytes) {
    bytes = round_up(bytes ? bytes : 1);
    if (!a->next || (size_t)(a->end - a->next) < bytes) {
        struct tp_arena_chunk *c = malloc(TP_ARENA_CHUNK);
        if (!c) return NULL;
        c->h.next = a->chunks;
        a->chunks = c;
        a->next = (char *)(c + 1);
        a->end = (char *)c + TP_ARENA_CHUNK;
    }
    void *p = a->next;
    a->next += bytes;
    return p;
}

void *tp_arena_alloc(tp_arena *a, size_t n, size_t elem) {
    if (elem && n > SIZE_MAX / elem) return NULL;
    size_t bytes = n * elem;
    return bytes > TP_ARENA_BIG ? alloc_block(a, bytes, 0) : alloc_small(a, bytes);
}

void *tp_arena_calloc(tp_arena *a, size_t n, size_t elem) {
    if (elem && n > SIZE_MAX / elem) return NULL;
    size_t bytes = n * elem;
    if (bytes > TP_ARENA_BIG) return alloc_block(a, bytes, 1); /* calloc: fresh pages stay free */
    void *p = alloc_small(a, bytes);
    if (p) memset(p, 0, bytes);
    return p;
}

/* The big array at p grown to bytes by realloc (tp_grow's, for its huge-page advice). */
static void *grow_block(void *p, size_t bytes) {
    struct tp_arena_block *b = block_of(p);
    size_t cap = b->h.l.bytes;
    if (bytes > SIZE_MAX - sizeof(*b) || tp_grow((void **)&b, &cap, sizeof(*b) + bytes, 1))
        return NULL;
    b->h.l.bytes = cap;
    *b->h.l.link = b; /* the block may have moved */
    if (b->h.l.next) b->h.l.next->h.l.link = &b->h.l.next;
    return block_data(b);
}

int tp_arena_grow(tp_arena *a, void **ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    /* twice the room, or all that is asked when that is more: each element is copied O(1)
     * times on average */
    size_t ncap = need < 16 ? 16 : need;
    if (*cap <= SIZE_MAX / 2 && *cap * 2 > ncap) ncap = *cap * 2;
    if (ncap > SIZE_MAX / elem) return -1;
    size_t old = *cap * elem; /* where *ptr lives follows from its size, as in tp_arena_alloc */
    void *p;
    if (*ptr && old > TP_ARENA_BIG) {
        p = grow_block(*ptr, ncap * elem);
    } else {
        p = tp_arena_alloc(a, ncap, elem);
        if (p && *ptr) memcpy(p, *ptr, old);
    }
    if (!p) return -1;
    *ptr = p;
    *cap = ncap;
    return 0;
}

void tp_arena_free(tp_arena *a) {
    for (struct tp_arena_chunk *c = a->chunks, *next; c; c = next) {
        next = c->h.next;
        free(c);
    }
    struct tp_arena_block **link = &a->blocks; /* where the next block's link must point */
    for (struct tp_arena_block *b = a->blocks, *next; b; b = next) {
        assert(b->h.l.link == link); /* (compared, not read: the previous block is freed) */
        next = b->h.l.next;
        link = &b->h.l.next;
        free(b);
    }
    (void)link; /* read only by the assert */
    *a = (tp_arena){0};
}
