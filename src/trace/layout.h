/* layout.h - the byte layouts of the objects a trace repeats, learned while it is read.
 *
 * A writer prints every event of a kind with the same bytes between the values: `, "cat": `,
 * `,\n    "ts": `. Such a stretch (whitespace and a comma, a key, its colon) is a literal; a
 * layout is a graph of literals, each with the few that followed it. The fast path compares the
 * bytes after a value with those successors: one 32-byte comparison checks the separator, the
 * key and the colon byte for byte and tells where the next value starts and what it is for.
 *
 * A match proves the bytes equal a stretch the fast path already read and checked, so nothing
 * is learned that it would not accept again; the graph is bounded (TP_LAYOUT_NODES, a few
 * successors each, literals of TP_LIT_MAX bytes) and past its bounds the fast path finds
 * members the long way.
 *
 * A literal whose value is a string also holds the string's opening quote (`, "name": "`): its
 * match then proves a string starts there, and the value's end is the next quote bit, with no
 * look at the value's first byte and no dispatch on its type.
 *
 * Nodes 1 .. TP_LAYOUT_ROOTS - 1 are roots, where the first literal of an object (starting
 * after its '{') hangs, one root per kind of object. A literal that closes its object (ending
 * with the '}') has what == TP_LAYOUT_END. */
#ifndef TP_TRACE_LAYOUT_H
#define TP_TRACE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum {
    TP_LIT_MAX = 32, /* longer stretches are not learned */
    TP_LAYOUT_NEXT = 4,
    TP_LAYOUT_NODES = 4096,
    TP_LAYOUT_ROOTS = 8,
    TP_LAYOUT_END = 0xff, /* what of a closing literal */
};

/* What a literal means to its reader, all but its bytes. op and slot are the fast path's
 * (fast.c): how it reads the value after the literal, decided once when it learns the literal
 * rather than at every match; 0 means the literal was never learned (node 0, the roots). */
typedef struct tp_layout_meaning {
    uint8_t what;             /* what the key means to the reader, or TP_LAYOUT_END */
    uint8_t key_off, key_len; /* the key inside lit */
    uint8_t string;           /* 1: lit ends with the opening quote of its value */
    uint8_t op, slot;
} tp_layout_meaning;

typedef struct tp_layout_node {
    uint8_t lit[TP_LIT_MAX];       /* a comparison reads all 32 bytes */
    uint32_t lit_mask;             /* bit i: byte i of lit counts */
    uint16_t next[TP_LAYOUT_NEXT]; /* successors, latest first; 0 ends the list */
    uint8_t lit_len;
    tp_layout_meaning m;
    uint8_t pad[64 - TP_LIT_MAX - sizeof(uint32_t) - sizeof(uint16_t) * TP_LAYOUT_NEXT - 1 -
                sizeof(tp_layout_meaning)];
} tp_layout_node; /* 64 bytes: a node's address is a shift of its number */

/* Invariant: nodes[0 .. n) are readable and n >= TP_LAYOUT_ROOTS, so a match needs no bounds
 * test; until the first literal is learned nodes is a shared set of empty roots. Node 0 has no
 * successors: where a literal could not be learned, the rest of its object goes the long way. */
typedef struct tp_layout {
    tp_layout_node *nodes;
    uint32_t n; /* nodes in use, the roots included */
} tp_layout;

void tp_layout_init(tp_layout *ly);
void tp_layout_free(tp_layout *ly);
/* Adds p[0 .. len) with meaning m as the latest successor of node `from`: the new node, or 0
 * when the layout is full, len > TP_LIT_MAX or memory runs out (nothing is learned then).
 * m->key_off and m->key_len place the key inside the literal (0, 0 for a closing one); with
 * m->string, p[len - 1] is the opening quote of the member's value. */
uint32_t tp_layout_learn(tp_layout *ly, uint32_t from, const char *p, size_t len,
                         const tp_layout_meaning *m);

/* Where the value of a member whose literal n matched at p begins (at its quote for a string). */
static inline const char *tp_layout_value(const tp_layout_node *n, const char *p) {
    return p + n->lit_len - n->m.string;
}

/* The bytes of mask (bit i for byte i) of the first 32 at p that equal those of b (p and b
 * have 32 bytes readable): zero when they all do. Two vector comparisons. */
static inline uint32_t tp_layout_diff(const char *p, const uint8_t *b, uint32_t mask) {
#ifdef __SSE2__
    __m128i a0 = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i a1 = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
    __m128i b0 = _mm_loadu_si128((const __m128i *)(const void *)b);
    __m128i b1 = _mm_loadu_si128((const __m128i *)(const void *)(b + 16));
    uint32_t eq = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a0, b0)) |
                  (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a1, b1)) << 16;
    return ~eq & mask;
#else
    uint32_t diff = 0;
    for (unsigned i = 0; i < 32; i++)
        diff |= (uint32_t)(p[i] != (char)b[i]) << i;
    return diff & mask;
#endif
}

/* The successor of node `from` whose literal starts the bytes at p, or NULL. Successors are
 * kept latest first and one that matches moves to the front: a writer mostly repeats its last
 * layout, and the one dropped when the list is full is the one used least recently. */
static inline tp_layout_node *tp_layout_match(tp_layout *ly, uint32_t from, const char *p,
                                              uint32_t *id) {
    uint16_t *next = ly->nodes[from].next;
    for (int i = 0; i < TP_LAYOUT_NEXT && next[i]; i++) {
        tp_layout_node *n = &ly->nodes[next[i]];
        if (tp_layout_diff(p, n->lit, n->lit_mask)) continue;
        *id = next[i];
        if (i) {
            memmove(next + 1, next, (size_t)i * sizeof(*next));
            next[0] = (uint16_t)*id;
        }
        return n;
    }
    return NULL;
}

/* The mask of the first len bytes (len <= 32). */
static inline uint32_t tp_layout_mask(size_t len) {
    return len >= 32 ? ~0U : (1U << len) - 1;
}

#endif
