/* layout.h - the byte layouts of the objects a trace repeats, learned while it is read.
 *
 * A writer prints every event of a kind with the same bytes between the values: `, "cat": `,
 * `,\n    "ts": `. Such a stretch (whitespace and a comma, a key, its colon) is a literal; a
 * layout is a graph of literals, each with the few that followed it, and it remembers the last
 * value each literal introduced. The fast path compares the bytes after a value with those
 * successors: one 16-byte comparison checks the separator, the key and the colon byte for byte
 * and tells where the next value starts and what it is for. Values often repeat (pid, tid,
 * category), and one more comparison then reads the value too.
 *
 * Nodes 1 .. TP_LAYOUT_ROOTS - 1 are roots, where the first literal of an object (starting
 * after its '{') hangs, one root per kind of object. A literal that closes its object (ending
 * with the '}') has what == TP_LAYOUT_END. */
#ifndef TP_LAYOUT_H
#define TP_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    TP_LIT_MAX = 16, /* longer stretches are not learned */
    TP_LAYOUT_NEXT = 4,
    TP_LAYOUT_NODES = 4096,
    TP_LAYOUT_ROOTS = 8,
    TP_LAYOUT_END = 0xff, /* what of a closing literal */
};

typedef struct tp_layout_node {
    uint8_t lit[TP_LIT_MAX];
    uint8_t lit_len;
    uint8_t what;             /* what the key means to the reader, or TP_LAYOUT_END */
    uint8_t key_off, key_len; /* the key inside lit */
    uint8_t val_len;          /* 0, or the bytes of the last value (a string with its quotes) */
    uint8_t val[TP_LIT_MAX];
    uint16_t next[TP_LAYOUT_NEXT]; /* successors, latest first; 0 ends the list */
} tp_layout_node;

typedef struct tp_layout {
    tp_layout_node *nodes;
    uint32_t n; /* nodes in use, the roots included */
} tp_layout;

void tp_layout_init(tp_layout *ly);
void tp_layout_free(tp_layout *ly);
/* Adds p[0 .. len) with its meaning as the latest successor of node `from`: the new node, or
 * 0 when the layout is full, len > TP_LIT_MAX or memory runs out (nothing is learned then).
 * key_off and key_len place the key inside the literal (0, 0 for a closing one). */
uint32_t tp_layout_learn(tp_layout *ly, uint32_t from, const char *p, size_t len, int what,
                         size_t key_off, size_t key_len);

/* Whether the TP_LIT_MAX bytes at p start with the len bytes of lit (p has TP_LIT_MAX bytes
 * readable). */
static inline int tp_layout_same(const char *p, const uint8_t *lit, unsigned len) {
    uint64_t a[2], b[2];
    memcpy(a, p, sizeof(a));
    memcpy(b, lit, sizeof(b));
    uint64_t lo = len >= 8 ? ~0ULL : (1ULL << (len * 8)) - 1;
    uint64_t hi = len >= 16 ? ~0ULL : len <= 8 ? 0 : (1ULL << ((len - 8) * 8)) - 1;
    return (((a[0] ^ b[0]) & lo) | ((a[1] ^ b[1]) & hi)) == 0;
}

/* The successor of node `from` whose literal starts the bytes at p, or 0. */
static inline uint32_t tp_layout_match(const tp_layout *ly, uint32_t from, const char *p) {
    if (from >= ly->n) return 0; /* nothing learned yet */
    const uint16_t *next = ly->nodes[from].next;
    for (int i = 0; i < TP_LAYOUT_NEXT && next[i]; i++) {
        const tp_layout_node *n = &ly->nodes[next[i]];
        if (tp_layout_same(p, n->lit, n->lit_len)) return next[i];
    }
    return 0;
}

#endif
