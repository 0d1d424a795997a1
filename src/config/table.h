/* table.h - what the files of src/config share: the key table generated from keys.h, setting a
 * key from text, and the one-line error.
 *
 * Internal to src/config: the rest of the library uses config.h. */
#ifndef TP_CONFIG_TABLE_H
#define TP_CONFIG_TABLE_H

#include "config/config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tp_keydef {
    const char *name;
    enum tp_key_type type;
    size_t off;        /* of its field in struct tprof_config */
    int64_t min, max;  /* TP_T_INT and the items of TP_T_INTS */
    const char *deflt; /* the built-in value as text; NULL: none */
} tp_keydef;

/* In enum tp_config_key order. */
extern const tp_keydef tp_config_keys[TP_NKEYS];

/* The key named name (len bytes) or one of its aliases; NULL when none. */
const tp_keydef *tp_config_find_key(const char *name, size_t len);
/* Sets k from text; given is the name as the source wrote it (an alias, perhaps), for messages.
 * 0, or -1 with cfg->err set. */
int tp_config_set_value(tprof_config *cfg, const tp_keydef *k, const char *given, const char *value,
                        const char *source);
/* Keeps a message on one line: control characters become \n, \r, \t or \xHH. */
void tp_config_one_line(char *msg, size_t size);

/* cfg->err = the message, on one line; the value -1. (A macro: no va_list for the analyzers to
 * doubt.) */
#define TP_CONFIG_FAIL(cfg, ...)                                                                   \
    (snprintf((cfg)->err, sizeof((cfg)->err), __VA_ARGS__),                                        \
     tp_config_one_line((cfg)->err, sizeof((cfg)->err)), -1)

#endif
