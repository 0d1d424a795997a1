/* names.h - rows found by name: the index behind the op and kernel tables and compare.
 *
 * Rows of an analysis outlive the models they came from, so they are keyed by the name string
 * itself. The index stores pointers to names owned by the rows (it copies nothing); a row's name
 * must stay put while indexed. Values are row indices; re-put them after reordering rows. */
#ifndef TP_ANALYSIS_NAMES_H
#define TP_ANALYSIS_NAMES_H

#include "util/hashtab.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_name_index {
    tp_hashtab tab; /* name -> entry + 1 */
    struct tp_name_entry *entries;
    size_t n, cap;
} tp_name_index;

/* Maps name to value (replacing an existing value). 0, or -1 when out of memory. */
int tp_name_index_put(tp_name_index *ix, const char *name, uint32_t value);
/* The value of name, or UINT32_MAX. */
uint32_t tp_name_index_get(const tp_name_index *ix, const char *name);
/* Forgets every name, keeping the memory. */
void tp_name_index_clear(tp_name_index *ix);
void tp_name_index_free(tp_name_index *ix);

#endif
