/* layout.c - the layout graph's nodes and how it learns (see layout.h). */
#include "trace/layout.h"

#include <assert.h>
#include <stdlib.h>

_Static_assert(sizeof(tp_layout_node) == 64, "a node is 64 bytes");

/* The roots of a layout that learned nothing yet (never written: learning replaces them). */
static tp_layout_node no_nodes[TP_LAYOUT_ROOTS];

void tp_layout_init(tp_layout *ly) {
    ly->nodes = no_nodes;
    ly->n = TP_LAYOUT_ROOTS;
}

void tp_layout_free(tp_layout *ly) {
    if (ly->nodes != no_nodes) free(ly->nodes);
    tp_layout_init(ly);
}

uint32_t tp_layout_learn(tp_layout *ly, uint32_t from, const char *p, size_t len,
                         const tp_layout_meaning *m) {
    if (len == 0 || len > TP_LIT_MAX) return 0;
    assert(!m->string || p[len - 1] == '"');
    assert(m->op != 0 && m->key_off + m->key_len <= len);
    if (ly->nodes == no_nodes) {
        /* All at once (256 KB): nodes never move while the fast path holds one. */
        tp_layout_node *nodes = calloc(TP_LAYOUT_NODES, sizeof(*nodes));
        if (!nodes) return 0;
        ly->nodes = nodes;
    }
    if (ly->n == TP_LAYOUT_NODES || from == 0 || from >= ly->n) return 0;
    uint32_t id = ly->n++;
    tp_layout_node *n = &ly->nodes[id];
    memcpy(n->lit, p, len);
    n->lit_len = (uint8_t)len;
    n->lit_mask = tp_layout_mask(len);
    n->m = *m;
    uint16_t *next = ly->nodes[from].next;
    memmove(next + 1, next, (TP_LAYOUT_NEXT - 1) * sizeof(*next));
    next[0] = (uint16_t)id;
    return id;
}
