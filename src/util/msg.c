/* msg.c - the one place the library writes its lines (see msg.h). */
#include "util/msg.h"

#include <stdarg.h>
#include <stdio.h>

static tp_msg_hook msg_hook; /* read and written atomically: any thread may print */

void tp_msg_set_hook(tp_msg_hook hook) {
    __atomic_store_n(&msg_hook, hook, __ATOMIC_RELEASE);
}

void tp_msg_write(tp_msg_kind kind, const char *text, size_t len) {
    tp_msg_hook hook = __atomic_load_n(&msg_hook, __ATOMIC_ACQUIRE);
    if (hook && hook(kind, text, len) == 0) return;
    fwrite(text, 1, len, stderr);
    fflush(stderr);
}

void tp_msg_printf(tp_msg_kind kind, const char *fmt, ...) {
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
    va_end(ap);
    size_t len = n < 0 ? 0 : (size_t)n < sizeof(line) - 1 ? (size_t)n : sizeof(line) - 2;
    line[len++] = '\n';
    tp_msg_write(kind, line, len);
}
