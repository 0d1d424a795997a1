/* arena.h - scratch memory given out piece by piece and taken back all at once.
 *
 * A pass of the analysis needs a handful of arrays for as long as it runs (or as long as its
 * model is analysed) and then none of them: an arena hands them out and tp_arena_free returns
 * them together, so no pass keeps a list of frees in step with its allocations.
 *
 * Small pieces are bumped out of chunks of TP_ARENA_CHUNK bytes; a piece above
 * TP_ARENA_BIG bytes gets a block of its own, so that the arrays of a big model (millions of
 * entries) cost what malloc costs, grow with realloc (tp_arena_grow) and never sit in a chunk
 * half used. Every piece is aligned for any type (max_align_t).
 *
 * An arena has one user at a time: it takes no lock. A zero-initialised tp_arena is empty and
 * ready; tp_arena_free leaves it so. Functions return NULL or -1 when memory runs out, never
 * abort: callers degrade as with tp_grow (util/vec.h). */
#ifndef TP_UTIL_ARENA_H
#define TP_UTIL_ARENA_H

#include <stddef.h>

enum {
    TP_ARENA_CHUNK = 64 << 10, /* the size of a chunk of small pieces */
    TP_ARENA_BIG = 16 << 10,   /* pieces above this get a block of their own */
};

typedef struct tp_arena {
    struct tp_arena_chunk *chunks; /* newest first; small pieces come from the first */
    struct tp_arena_block *blocks; /* big pieces, newest first (doubly linked) */
    char *next, *end;              /* the free room of the first chunk */
} tp_arena;

/* n elements of elem bytes, uninitialised; NULL when out of memory or n * elem overflows. A
 * request for 0 bytes gets a piece of its own too (never NULL for want of size). */
void *tp_arena_alloc(tp_arena *a, size_t n, size_t elem);
/* The same, zeroed. */
void *tp_arena_calloc(tp_arena *a, size_t n, size_t elem);
/* tp_grow (util/vec.h) for an array of the arena: makes room for need elements of elem bytes
 * in *ptr (NULL, or an array that this arena gave out with *cap elements of elem bytes: the
 * size decides where it lives), at least doubling the capacity. 0, or -1 with *ptr untouched.
 * The room a small array leaves behind is only taken back with the rest. */
int tp_arena_grow(tp_arena *a, void **ptr, size_t *cap, size_t need, size_t elem);
/* Every piece freed; a is empty again. */
void tp_arena_free(tp_arena *a);

/* TP_AGROW(arena, array, cap, need): tp_arena_grow for a typed pointer. */
#define TP_AGROW(ar, arr, cap, need)                                                               \
    tp_arena_grow((ar), (void **)&(arr), &(cap), (need), sizeof(*(arr)))

#endif
