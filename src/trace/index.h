/* index.h - the structural index of the scanner's buffer: for each 64-byte block, bitmasks of
 * the quotes that open or close strings, of the brackets outside strings and of backslashes.
 *
 * Computed once per buffer fill, branch-free and 32 or 16 bytes at a time (AVX2 when the CPU
 * has it, else SSE2, else a byte loop), so the parser finds the end of a string or of a skipped
 * value with bit operations instead of looking at every byte of it: skipping what the reader
 * does not need (flows, most args) then costs next to nothing.
 *
 * The masks are exactly what a byte-by-byte lexer starting outside any string would see (a
 * backslash escapes the next byte only inside a string): the vector path assumes backslashes
 * occur only inside strings, checks it, and hands buffers where that fails to the byte loop. */
#ifndef TP_TRACE_INDEX_H
#define TP_TRACE_INDEX_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_ixblock {
    uint64_t quote;   /* '"' that opens or closes a string */
    uint64_t bracket; /* { } [ ] outside strings */
    uint64_t bslash;  /* '\\' anywhere */
} tp_ixblock;

/* Indexes the blocks of buf[0 .. 64 * nblocks), which must be readable; buf[0] is outside any
 * string. Returns 1 when byte len - 1 (len >= 1) is inside a string, with *open at the quote
 * that opened it; else 0. */
int tp_index_build(tp_ixblock *ix, const char *buf, size_t nblocks, size_t len, size_t *open);

/* The first position at or after `at` with a quote (brackets: 0) or a bracket (1). The caller
 * knows one lies ahead within the index (the scanner puts both past its data). */
static inline size_t tp_index_next(const tp_ixblock *ix, size_t at, int brackets) {
    size_t i = at >> 6;
    uint64_t m = (brackets ? ix[i].bracket : ix[i].quote) & (~0ULL << (at & 63));
    while (!m) {
        i++;
        m = brackets ? ix[i].bracket : ix[i].quote;
    }
    return (i << 6) + (size_t)__builtin_ctzll(m);
}

#endif
