/* vec.c - the growth policy behind TP_GROW (see vec.h). */
#include "util/vec.h"

#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

enum {
    TP_HUGE_PAGE = 2 << 20, /* x86-64's and arm64's transparent huge page */
    TP_HUGE_MIN = 8 << 20,  /* arrays this large ask for huge pages */
};

static int huge_pages_allowed; /* written once, before any thread: see vec.h */

void tp_grow_allow_huge_pages(void) {
    huge_pages_allowed = 1;
}

void tp_free_strings(char **v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* Asks for transparent huge pages under the whole 2 MB pages of [p, p + len): an array of
 * millions of events (a big trace's model, the analysis' lists) otherwise takes a page fault
 * per 4 KB as it fills, which cost about 6% of `tprof analyze`'s time (a sixth of it in the
 * kernel). Pages are still only given as they are touched: the reserved tail costs at most the
 * 2 MB page the touched part ends in.
 * Where the kernel says no (THP "never", another system), nothing changes. */
static void want_huge_pages(void *p, size_t len) {
#ifdef MADV_HUGEPAGE
    size_t head = (size_t)(-(uintptr_t)p & (TP_HUGE_PAGE - 1)); /* up to the first boundary */
    size_t body = len > head ? (len - head) & ~(size_t)(TP_HUGE_PAGE - 1) : 0;
    if (body) (void)madvise((char *)p + head, body, MADV_HUGEPAGE);
#else
    (void)p;
    (void)len;
#endif
}

int tp_grow(void **ptr, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) return -1;
        ncap *= 2;
    }
    if (ncap > SIZE_MAX / elem) return -1;
    void *p = realloc(*ptr, ncap * elem);
    if (!p) return -1;
    if (huge_pages_allowed && ncap * elem >= TP_HUGE_MIN) want_huge_pages(p, ncap * elem);
    *ptr = p;
    *cap = ncap;
    return 0;
}
