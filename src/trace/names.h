/* names.h - event names and categories interned through a cache in front of the model's table.
 *
 * A trace repeats a few hundred names across millions of events, and a kernel's name runs to
 * hundreds of bytes: hashing each one costs more than comparing it with the name it was last
 * time. The cache is direct-mapped by the length and the first and last eight bytes; a hit is
 * confirmed byte for byte, so it only saves work and never changes an id (nor the search for a
 * raw NUL, which only names without one skip). */
#ifndef TP_TRACE_NAMES_H
#define TP_TRACE_NAMES_H

#include "model/model.h"

#include <stddef.h>
#include <stdint.h>

enum { TP_NAMES_SLOTS = 512, TP_NAMES_HEAD = 16 };

typedef struct tp_name_slot {
    uint8_t head[TP_NAMES_HEAD]; /* the first bytes, zeros after the end */
    const char *s;               /* the interned copy (whole) */
    uint32_t len;
    tp_str id;
} tp_name_slot;

typedef struct tp_names {
    tp_name_slot *slots; /* NULL until the first name; then TP_NAMES_SLOTS */
} tp_names;

void tp_names_init(tp_names *nc);
void tp_names_free(tp_names *nc);
/* The id of s[0 .. len) in m's table. s must have 16 bytes readable past its start (the
 * scanner's padding guarantees it for strings inside its buffer). A raw NUL in s sets *nul_at
 * to the first one when it is NULL; names with one are not cached, so a hit needs no check. */
tp_str tp_names_intern(tp_names *nc, tp_model *m, const char *s, size_t len, const char **nul_at);

#endif
