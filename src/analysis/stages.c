/* stages.c - the glob patterns that assign a range to a stage (definitions in model/stage.h).
 *
 * The default patterns are in model/stage.c; only the outermost matching range counts
 * (nesting.c), so an explicit tprof stage around PyTorch's ranges takes precedence over them. */
#include "analysis/internal.h"

#include <stddef.h>

static unsigned char lower(unsigned char c) {
    return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c;
}

/* Bytes of the UTF-8 character at s (1 for anything that is not a lead byte). */
static size_t char_len(const unsigned char *s) {
    size_t n = 1;
    if (*s >= 0xc0)
        while ((s[n] & 0xc0) == 0x80)
            n++;
    return n;
}

int tp_glob_match(const char *pattern, const char *name) {
    const unsigned char *p = (const unsigned char *)pattern, *s = (const unsigned char *)name;
    /* On a mismatch, retry from the last `*` with one more character swallowed by it; earlier
     * stars never need revisiting, so this is linear in practice. */
    const unsigned char *star = NULL, *resume = NULL;
    while (*s) {
        if (*p == '*') {
            star = ++p;
            resume = s;
        } else if (*p == '?') {
            p++;
            s += char_len(s);
        } else if (*p && lower(*p) == lower(*s)) {
            p++;
            s++;
        } else if (star) {
            p = star;
            resume += char_len(resume);
            s = resume;
        } else {
            return 0;
        }
    }
    while (*p == '*')
        p++;
    return *p == '\0';
}

int tp_stage_of(const tp_analysis *a, const char *name) {
    const struct tp_analysis_priv *pv = a->priv;
    for (size_t st = 0; st < a->nstages; st++)
        for (size_t i = 0; i < pv->npatterns[st]; i++)
            if (tp_glob_match(pv->patterns[st][i], name)) return (int)st;
    return -1;
}
