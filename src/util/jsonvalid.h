/* jsonvalid.h - checks that text is one well-formed JSON value before it is embedded verbatim.
 *
 * Raw JSON reaches the writers from users (tprof_shapes, the configuration): one malformed string
 * copied into a trace would make the whole file unreadable, so writers check it first. */
#ifndef TP_UTIL_JSONVALID_H
#define TP_UTIL_JSONVALID_H

#include <stddef.h>

/* Nesting deeper than this is rejected (the check uses a fixed stack, never recursion). */
#define TP_JSON_MAX_DEPTH 128

/* 1 when s[0..n) is exactly one JSON value (RFC 8259, whitespace around it allowed) whose
 * strings are valid UTF-8 without raw control bytes (DEL included: Perfetto rejects it);
 * else 0. */
int tp_json_valid(const char *s, size_t n);
/* The same of a text followed by a NUL (s[n] == '\0', as interned strings are): faster, the NUL
 * standing for the end. */
int tp_json_valid_z(const char *s, size_t n);

#endif
