/* vec.h - growing arrays (the one place that decides how tprof's arrays grow) and freeing arrays of
 * strings.
 *
 * tp_grow makes room for `need` elements of `elem` bytes in *ptr, doubling the capacity, and
 * returns 0, or -1 with *ptr untouched when memory runs out (callers degrade, never abort). */
#ifndef TP_UTIL_VEC_H
#define TP_UTIL_VEC_H

#include <stddef.h>

int tp_grow(void **ptr, size_t *cap, size_t need, size_t elem);

/* Lets tp_grow ask for transparent huge pages under arrays of 8 MB or more. Off by default: the
 * library lives in its host's process, where a huge-page fault may stall on the kernel's
 * compaction; the CLI, which owns its process, turns it on before it starts any thread. */
void tp_grow_allow_huge_pages(void);

/* TP_GROW(array, cap, need): tp_grow for a typed pointer, the common case (room already: most
 * calls append one element) tested inline. Evaluates cap and need twice. */
#define TP_GROW(arr, cap, need)                                                                    \
    ((need) <= (cap) ? 0 : tp_grow((void **)&(arr), &(cap), (need), sizeof(*(arr))))

/* Frees each of the n strings of v, then v. */
void tp_free_strings(char **v, size_t n);

#endif
