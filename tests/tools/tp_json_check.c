/* tp_json_check.c - runs tp_json_valid over texts read from standard input, separated by NUL
 * bytes, and prints one character per text: 1 valid, 0 not, ! when tp_json_valid_z (the same
 * check of a NUL-terminated text) disagrees. For tests/integration/test_chrome_jsonvalid.py,
 * which compares it with Python's json module. */
#include "util/jsonvalid.h"

#include <stdio.h>
#include <stdlib.h>

int main(void) {
    size_t cap = 1 << 20, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += got;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    if (!buf) return 2;
    buf[n] = '\0'; /* every text NUL-terminated, the last one too */
    for (size_t start = 0, i = 0; i <= n; i++) {
        if (i < n && buf[i] != '\0') continue;
        int valid = tp_json_valid(buf + start, i - start);
        putchar(valid != tp_json_valid_z(buf + start, i - start) ? '!' : valid ? '1' : '0');
        start = i + 1;
    }
    free(buf);
    return 0;
}
