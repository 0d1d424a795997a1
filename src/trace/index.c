/* index.c - the structural index (see index.h): the masks of each 64-byte block from byte
 * comparisons, the escaped quotes removed with carries, the strings found by prefix parity. */
#include "trace/index.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* What carries from one block to the next. */
typedef struct lex_state {
    uint64_t escape_next; /* 1: the next block's first byte is escaped */
    uint64_t inside;      /* all ones when the next block starts inside a string */
    uint64_t stray;       /* backslashes seen outside strings (the vector path is then wrong) */
    uint64_t tail_inside; /* the inside mask of the block holding byte len - 1 */
} lex_state;

static const uint64_t even_bits = 0x5555555555555555ULL;

/* The quotes not escaped by a backslash. A byte is escaped when the run of backslashes just
 * before it has odd length. Adding each run's first bit to the backslashes carries through the
 * run and leaves one bit just past its end; the run is odd when that bit's parity differs from
 * its first bit's, so runs starting on even and on odd bits are added apart. A run reaching the
 * block's end carries out of the odd-start sum exactly when the next block's first byte is
 * escaped. */
static inline uint64_t unescaped_quotes(lex_state *st, uint64_t quotes, uint64_t bslash) {
    if (!(bslash | st->escape_next)) return quotes; /* nearly every block */
    uint64_t b = bslash & ~st->escape_next;         /* an escaped backslash escapes nothing */
    uint64_t starts = b & ~(b << 1);
    uint64_t after_even = b + (starts & even_bits), after_odd;
    uint64_t carry = __builtin_add_overflow(b, starts & ~even_bits, &after_odd);
    uint64_t escaped =
        (after_even & ~b & ~even_bits) | (after_odd & ~b & even_bits) | st->escape_next;
    st->escape_next = carry;
    return quotes & ~escaped;
}

/* parity: bit i is the xor of quote bits 0..i, so the bits from an opening quote up to (not
 * including) its closing quote. */
static inline void finish_block(tp_ixblock *out, lex_state *st, uint64_t quotes, uint64_t parity,
                                uint64_t brackets, uint64_t bslash, int tail) {
    uint64_t inside = parity ^ st->inside;
    st->inside = 0 - (inside >> 63); /* all ones when the block ends inside a string */
    st->stray |= bslash & ~inside;
    if (tail) st->tail_inside = inside;
    out->quote = quotes;
    out->bracket = brackets & ~inside;
    out->bslash = bslash;
}

static inline uint64_t prefix_xor(uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
}

/* Any platform, and buffers where a backslash stands outside strings: one byte at a time, the
 * way the parser reads. */
static void build_bytes(tp_ixblock *ix, const char *buf, size_t nblocks, size_t tail,
                        lex_state *st) {
    int inside = 0, escaped = 0;
    for (size_t i = 0; i < nblocks; i++) {
        uint64_t q = 0, br = 0, bs = 0, in = 0;
        for (unsigned k = 0; k < 64; k++) {
            unsigned char c = (unsigned char)buf[i * 64 + k];
            uint64_t bit = 1ULL << k;
            if (c == '\\') bs |= bit;
            if (inside) {
                in |= bit;
                if (escaped)
                    escaped = 0;
                else if (c == '\\')
                    escaped = 1;
                else if (c == '"')
                    q |= bit, inside = 0, in &= ~bit;
            } else if (c == '"') {
                q |= bit, inside = 1, in |= bit;
            } else if ((c | 0x20) == '{' || (c | 0x20) == '}') {
                br |= bit;
            }
        }
        ix[i] = (tp_ixblock){q, br, bs};
        if (i == tail) st->tail_inside = in;
    }
}

#if defined(__SSE2__)
/* 16 bytes: the masks of quotes, backslashes and brackets. ('[' | 0x20) == '{' and
 * (']' | 0x20) == '}', and no other byte maps to either. */
static inline void classify16(const char *p, uint64_t *q, uint64_t *bs, uint64_t *br, int shift) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i f = _mm_or_si128(v, _mm_set1_epi8(0x20));
    __m128i brackets =
        _mm_or_si128(_mm_cmpeq_epi8(f, _mm_set1_epi8('{')), _mm_cmpeq_epi8(f, _mm_set1_epi8('}')));
    *q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('"'))) << shift;
    *bs |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))) << shift;
    *br |= (uint64_t)(unsigned)_mm_movemask_epi8(brackets) << shift;
}

static void build_sse2(tp_ixblock *ix, const char *buf, size_t nblocks, size_t tail,
                       lex_state *out) {
    lex_state state = *out, *st = &state; /* a local: its fields stay in registers */
    for (size_t i = 0; i < nblocks; i++) {
        const char *p = buf + i * 64;
        uint64_t q = 0, bs = 0, br = 0;
        classify16(p, &q, &bs, &br, 0);
        classify16(p + 16, &q, &bs, &br, 16);
        classify16(p + 32, &q, &bs, &br, 32);
        classify16(p + 48, &q, &bs, &br, 48);
        q = unescaped_quotes(st, q, bs);
        finish_block(&ix[i], st, q, prefix_xor(q), br, bs, i == tail);
    }
    *out = state;
}

#define TP_HAVE_AVX2_BUILD 1
__attribute__((target("avx2"))) static inline uint64_t movemask32(__m256i v) {
    return (uint32_t)_mm256_movemask_epi8(v);
}

/* The same with AVX2, and the prefix parity as one carry-less multiplication by all ones. */
__attribute__((target("avx2,pclmul"))) static void
build_avx2(tp_ixblock *ix, const char *buf, size_t nblocks, size_t tail, lex_state *out) {
    lex_state state = *out, *st = &state; /* a local: its fields stay in registers */
    const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\'),
                  fold = _mm256_set1_epi8(0x20), open = _mm256_set1_epi8('{'),
                  close = _mm256_set1_epi8('}');
    const __m128i ones = _mm_set1_epi8(-1);
    for (size_t i = 0; i < nblocks; i++) {
        const char *p = buf + i * 64;
        __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)p);
        __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
        __m256i flo = _mm256_or_si256(lo, fold), fhi = _mm256_or_si256(hi, fold);
        uint64_t q = movemask32(_mm256_cmpeq_epi8(lo, quote)) |
                     movemask32(_mm256_cmpeq_epi8(hi, quote)) << 32;
        uint64_t bs = movemask32(_mm256_cmpeq_epi8(lo, bslash)) |
                      movemask32(_mm256_cmpeq_epi8(hi, bslash)) << 32;
        uint64_t br =
            movemask32(
                _mm256_or_si256(_mm256_cmpeq_epi8(flo, open), _mm256_cmpeq_epi8(flo, close))) |
            movemask32(_mm256_or_si256(_mm256_cmpeq_epi8(fhi, open), _mm256_cmpeq_epi8(fhi, close)))
                << 32;
        q = unescaped_quotes(st, q, bs);
        __m128i parity = _mm_clmulepi64_si128(_mm_cvtsi64_si128((long long)q), ones, 0);
        finish_block(&ix[i], st, q, (uint64_t)_mm_cvtsi128_si64(parity), br, bs, i == tail);
    }
    *out = state;
}
#endif

/* The CPU's features, as the runtime read them before main (a load and a test). */
static int use_avx2(void) {
#if defined(TP_HAVE_AVX2_BUILD)
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul");
#else
    return 0;
#endif
}

int tp_index_build(tp_ixblock *ix, const char *buf, size_t nblocks, size_t len, size_t *open) {
    lex_state st = {0, 0, 0, 0};
    size_t tail = len ? (len - 1) >> 6 : (size_t)-1;
#if defined(__SSE2__)
    if (use_avx2())
        build_avx2(ix, buf, nblocks, tail, &st);
    else
        build_sse2(ix, buf, nblocks, tail, &st);
    if (st.stray) {
        st = (lex_state){0, 0, 0, 0};
        build_bytes(ix, buf, nblocks, tail, &st);
    }
#else
    (void)use_avx2;
    build_bytes(ix, buf, nblocks, tail, &st);
#endif
    if (!len || !((st.tail_inside >> ((len - 1) & 63)) & 1)) return 0;
    /* The last quote at or before len - 1 opened the string. */
    size_t b = tail;
    uint64_t m = ix[b].quote & (~0ULL >> (63 - ((len - 1) & 63)));
    while (!m)
        m = ix[--b].quote;
    *open = (b << 6) + 63 - (size_t)__builtin_clzll(m);
    return 1;
}
