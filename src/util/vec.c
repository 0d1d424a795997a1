/* vec.c - the growth policy behind TP_GROW (see vec.h). */
#include "util/vec.h"

#include <stdint.h>
#include <stdlib.h>

void tp_free_strings(char **v, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
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
    *ptr = p;
    *cap = ncap;
    return 0;
}
