/* path.h - request paths and names from a client, checked and decoded before any file is named.
 *
 * The server gets the request target undecoded (its own unescaping is switched off), so this
 * is the one place where percent-escapes are read: a name that decodes to "..", ".", a hidden
 * name, or one holding '/', '\\', NUL or a control byte is refused here, however it was spelt
 * ("%2e%2e", "%2f", "%00", "..%5c"). What passes is a list of plain names, each safe to hand
 * to openat() as one component below the served directory. */
#ifndef TP_SERVE_PATH_H
#define TP_SERVE_PATH_H

#include <stddef.h>

#define TP_SERVE_PATH_MAX     1024 /* bytes of a request path, undecoded */
#define TP_SERVE_SEGMENTS_MAX 8    /* names in a request path */
#define TP_SERVE_NAME_MAX     255  /* bytes of one decoded name (NAME_MAX) */

typedef struct tp_serve_path {
    size_t n;                               /* names; 0 for "/" */
    const char *seg[TP_SERVE_SEGMENTS_MAX]; /* each NUL-terminated, inside buf */
    char buf[TP_SERVE_PATH_MAX + 1];
} tp_serve_path;

/* Splits the undecoded path raw[0..len) ("/runs/a%20b/x.json") into decoded names. It must
 * start with '/', have no empty name ("//", a trailing '/' except "/" itself) and every name
 * must pass tp_serve_name_decode. 0, or -1 with *why set to a static reason. */
int tp_serve_path_parse(const char *raw, size_t len, tp_serve_path *out, const char **why);

/* Decodes one undecoded name raw[0..len) (a path segment or a query value) into out (cap bytes,
 * NUL-terminated). Refuses: empty, a leading '.', bad or truncated escapes, a decoded '/',
 * '\\', NUL, control byte or DEL, more than TP_SERVE_NAME_MAX bytes or cap - 1. 0, or -1 with
 * *why set. */
int tp_serve_name_decode(const char *raw, size_t len, char *out, size_t cap, const char **why);

#endif
