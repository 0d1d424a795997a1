/* strtab.h - interned strings: each distinct string stored once and named by a small id.
 *
 * A trace repeats a few thousand names across millions of events, so events hold 4-byte ids
 * and equal ids mean equal strings. Id 0 is always "". Strings are NUL-terminated and never
 * move, so a pointer from tp_strtab_get stays valid until tp_strtab_free. */
#ifndef TP_MODEL_STRTAB_H
#define TP_MODEL_STRTAB_H

#include "util/hashtab.h"

#include <stddef.h>
#include <stdint.h>

typedef uint32_t tp_str;
#define TP_STR_EMPTY ((tp_str)0)

typedef struct tp_strtab {
    struct tp_strent *ents; /* id -> string */
    uint32_t n, cap;
    tp_hashtab index; /* string -> id + 1, the hash tp_hash_bytes' low 32 bits */
    struct tp_arena_block *arena;
    size_t bytes; /* string bytes held, for memory accounting */
    int failed;   /* an allocation failed: some strings became "" */
} tp_strtab;

struct tp_strent {
    const char *s;
    uint32_t len;
    uint32_t hash; /* tp_strtab_hash_of(s, len): another table interns s without hashing it */
};

void tp_strtab_init(tp_strtab *t);
void tp_strtab_free(tp_strtab *t);
/* The id of s[0..len), added if new. Returns TP_STR_EMPTY (and sets failed) when out of memory. */
tp_str tp_strtab_intern(tp_strtab *t, const char *s, size_t len);
/* The id of s[0..len) if present, else UINT32_MAX. */
tp_str tp_strtab_find(const tp_strtab *t, const char *s, size_t len);
/* The hash the table keys s[0..len) by; and the two calls above with it known already (h must
 * be tp_strtab_hash_of(s, len), e.g. tp_strtab_hash of the string in another table: a string
 * interned in two tables is hashed once). */
uint32_t tp_strtab_hash_of(const char *s, size_t len);
tp_str tp_strtab_intern_h(tp_strtab *t, const char *s, size_t len, uint32_t h);
tp_str tp_strtab_find_h(const tp_strtab *t, const char *s, size_t len, uint32_t h);

static inline const char *tp_strtab_get(const tp_strtab *t, tp_str id) {
    return id < t->n ? t->ents[id].s : "";
}
static inline size_t tp_strtab_len(const tp_strtab *t, tp_str id) {
    return id < t->n ? t->ents[id].len : 0;
}
static inline uint32_t tp_strtab_hash(const tp_strtab *t, tp_str id) {
    return id < t->n ? t->ents[id].hash : tp_strtab_hash_of("", 0); /* as tp_strtab_get */
}
/* String id of table `from`, interned in t with the hash `from` keeps of it. */
static inline tp_str tp_strtab_intern_from(tp_strtab *t, const tp_strtab *from, tp_str id) {
    return tp_strtab_intern_h(t, tp_strtab_get(from, id), tp_strtab_len(from, id),
                              tp_strtab_hash(from, id));
}

#endif
