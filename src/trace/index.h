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
#ifndef TP_INDEX_H
#define TP_INDEX_H

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

/* Bit i of the block masks, as a position in the buffer: 64 * block + i. */
static inline size_t tp_index_pos(const tp_ixblock *ix, const tp_ixblock *b, uint64_t m) {
    return ((size_t)(b - ix) << 6) + (size_t)__builtin_ctzll(m);
}

#endif
