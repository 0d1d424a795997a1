/* path.c - request paths and names from a client, checked and decoded (path.h).
 *
 * Decoding and checking happen in one pass over each name, so no later step ever sees a name
 * that was decoded but not checked, or decoded twice ("%252e" decodes once, to "%2e", a plain
 * name). */
#include "serve/path.h"

#include <assert.h>
#include <string.h>

static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A decoded byte that may never be part of a name. */
static int forbidden_byte(unsigned char c) {
    return c == '/' || c == '\\' || c < 0x20 || c == 0x7f;
}

static int refuse(const char **why, const char *reason) {
    *why = reason;
    return -1;
}

int tp_serve_name_decode(const char *raw, size_t len, char *out, size_t cap, const char **why) {
    assert(cap > 0);
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)raw[i];
        if (c == '%') {
            int hi = i + 2 < len ? hex_value(raw[i + 1]) : -1;
            int lo = hi >= 0 ? hex_value(raw[i + 2]) : -1;
            if (hi < 0 || lo < 0) return refuse(why, "bad percent-escape");
            c = (unsigned char)(hi * 16 + lo);
            i += 2;
        }
        if (forbidden_byte(c)) return refuse(why, "forbidden character in a name");
        if (n + 1 >= cap || n >= TP_SERVE_NAME_MAX) return refuse(why, "name too long");
        out[n++] = (char)c;
    }
    out[n] = '\0';
    if (n == 0) return refuse(why, "empty name");
    if (out[0] == '.') return refuse(why, "name starts with '.'");
    return 0;
}

int tp_serve_path_parse(const char *raw, size_t len, tp_serve_path *out, const char **why) {
    out->n = 0;
    if (len == 0 || raw[0] != '/') return refuse(why, "path does not start with '/'");
    if (len > TP_SERVE_PATH_MAX) return refuse(why, "path too long");
    if (len == 1) return 0;
    char *dst = out->buf;
    size_t room = sizeof(out->buf);
    size_t start = 1;
    while (start <= len) {
        const char *slash = memchr(raw + start, '/', len - start);
        size_t end = slash ? (size_t)(slash - raw) : len;
        if (out->n == TP_SERVE_SEGMENTS_MAX) return refuse(why, "too many path segments");
        if (tp_serve_name_decode(raw + start, end - start, dst, room, why)) return -1;
        size_t used = strlen(dst) + 1;
        assert(used <= room); /* decoding never lengthens: the buffer holds the whole path */
        out->seg[out->n++] = dst;
        dst += used;
        room -= used;
        start = end + 1;
        if (!slash) break;
    }
    return 0;
}
