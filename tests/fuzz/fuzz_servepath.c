/* fuzz_servepath.c - libFuzzer target: any bytes as the path of a request to `tprof serve`
 * (src/serve/path.c, the parser of the request target and of run names).
 *
 * Whatever the input, the parser must not read or write out of bounds (the sanitizers check),
 * and what it accepts must hold the invariants the server relies on before it calls openat():
 * at most TP_SERVE_SEGMENTS_MAX names, each non-empty, not starting with '.', and free of '/',
 * '\\', NUL, control bytes and DEL. The seeds (tests/fuzz/corpus/fuzz_servepath/) are real
 * request paths and traversal attempts. */
#include "serve/path.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void check_name(const char *name) {
    size_t n = strlen(name);
    if (n == 0 || n > TP_SERVE_NAME_MAX || name[0] == '.') abort();
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) abort();
    }
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    const char *raw = (const char *)data;
    const char *why = NULL;
    tp_serve_path p;
    if (tp_serve_path_parse(raw, size, &p, &why) == 0) {
        if (p.n > TP_SERVE_SEGMENTS_MAX) abort();
        for (size_t i = 0; i < p.n; i++)
            check_name(p.seg[i]);
    } else if (!why) {
        abort();
    }
    char name[TP_SERVE_NAME_MAX + 1];
    if (tp_serve_name_decode(raw, size, name, sizeof(name), &why) == 0) check_name(name);
    return 0;
}
