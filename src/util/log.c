/* log.c - the warning list behind tp_log_warn (see log.h). */
#include "util/log.h"

#include "util/buf.h"
#include "util/lock.h"
#include "util/msg.h"

#include <assert.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TP_LOG_MAX = 256, TP_LOG_LINE = 512 };

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_msgs[TP_LOG_MAX];
static size_t log_n;
static char log_prefix[64];
static int log_quiet;
static char log_latest[TP_LOG_LINE];

/* The spelling of byte c in an escaped line into out (7 bytes of room); its length. */
static size_t escape_byte(unsigned char c, char *out) {
    static const char hex[] = "0123456789abcdef";
    if (c >= 0x20 && c != 0x7f) {
        out[0] = (char)c;
        return 1;
    }
    out[0] = '\\';
    if (c == '\n' || c == '\t' || c == '\r') {
        out[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        return 2;
    }
    out[1] = 'u';
    out[2] = out[3] = '0';
    out[4] = hex[c >> 4];
    out[5] = hex[c & 15];
    return 6;
}

void tp_log_escape(char *dst, size_t cap, const char *src) {
    if (!cap) return;
    size_t n = 0;
    for (const unsigned char *s = (const unsigned char *)src; *s; s++) {
        char esc[7];
        size_t len = escape_byte(*s, esc);
        if (n + len >= cap) break;
        memcpy(dst + n, esc, len);
        n += len;
    }
    dst[n] = '\0';
}

/* Records raw (escaped) and prints it as kind, once per distinct message. The line is written
 * after the lock is released: a host's hook (util/msg.h) may take its time. */
static void log_line(tp_msg_kind kind, const char *raw) {
    char line[TP_LOG_LINE];
    tp_log_escape(line, sizeof(line), raw);

    char out[TP_LOG_LINE + sizeof(log_prefix) + 16];
    int print = 0;
    tp_lock(&log_lock);
    int seen = 0;
    for (size_t i = 0; i < log_n && !seen; i++)
        seen = strcmp(log_msgs[i], line) == 0;
    if (!seen) {
        snprintf(log_latest, sizeof(log_latest), "%s", line);
        char *copy = log_n < TP_LOG_MAX ? strdup(line) : NULL;
        if (copy) log_msgs[log_n++] = copy;
        print = !log_quiet;
        if (print) snprintf(out, sizeof(out), "tprof: %s%s", log_prefix, line);
    }
    tp_unlock(&log_lock);
    if (print) tp_msg_printf(kind, "%s", out);
}

/* log_line of the formatted message. */
__attribute__((format(printf, 2, 0))) static void log_vline(tp_msg_kind kind, const char *fmt,
                                                            va_list ap) {
    char raw[TP_LOG_LINE];
    vsnprintf(raw, sizeof(raw), fmt, ap);
    log_line(kind, raw);
}

void tp_log_warn(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_vline(TP_MSG_WARNING, fmt, ap);
    va_end(ap);
}

void tp_log_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    log_vline(TP_MSG_ERROR, fmt, ap);
    va_end(ap);
}

void tp_log_set_prefix(const char *prefix) {
    tp_lock(&log_lock);
    snprintf(log_prefix, sizeof(log_prefix), "%s", prefix ? prefix : "");
    tp_unlock(&log_lock);
}

void tp_log_set_quiet(int quiet) {
    tp_lock(&log_lock);
    log_quiet = quiet;
    tp_unlock(&log_lock);
}

const char *tp_log_last(void) {
    return log_latest;
}

size_t tp_log_count(void) {
    tp_lock(&log_lock);
    size_t n = log_n;
    tp_unlock(&log_lock);
    return n;
}

const char *tp_log_get(size_t i) {
    tp_lock(&log_lock);
    const char *m = i < log_n ? log_msgs[i] : NULL;
    tp_unlock(&log_lock);
    return m;
}

void tp_log_reset(void) {
    tp_lock(&log_lock);
    for (size_t i = 0; i < log_n; i++)
        free(log_msgs[i]);
    log_n = 0;
    log_latest[0] = '\0';
    tp_unlock(&log_lock);
}

const char *tp_shown(const char *s, char *buf) {
    if (strnlen(s, TP_SHOWN_MAX + 1) <= TP_SHOWN_MAX) return s;
    size_t n = TP_SHOWN_MAX;
    while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80) /* not inside a UTF-8 character */
        n--;
    memcpy(buf, s, n);
    memcpy(buf + n, "...", 4);
    assert(n + 4 <= TP_SHOWN_SIZE);
    return buf;
}

const char *tp_shown_path(const char *s, char *buf) {
    size_t len = strlen(s);
    if (len <= TP_SHOWN_MAX) return s;
    const char *tail = s + len - TP_SHOWN_MAX;
    while (((unsigned char)*tail & 0xc0) == 0x80)
        tail++;
    assert(3 + strlen(tail) + 1 <= TP_SHOWN_SIZE);
    snprintf(buf, TP_SHOWN_SIZE, "...%s", tail);
    return buf;
}

/* Whether a name is printed as it is: no control byte, DEL, quote or backslash. */
static int plain_name(const char *s) {
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c < 0x20 || c == 0x7f || c == '"' || c == '\\') return 0;
    }
    return 1;
}

const char *tp_log_name(const char *path) {
    static char ring[4][1024];
    static unsigned next;
    if (plain_name(path)) return path;
    char *slot = ring[next++ % 4];
    tp_buf b;
    tp_buf_init(&b);
    tp_buf_json_cstr(&b, path);
    if (b.failed) {
        strcpy(slot, "\"?\"");
    } else if (b.len < sizeof(ring[0])) {
        memcpy(slot, b.data, b.len);
        slot[b.len] = '\0';
    } else { /* cut, closed again: "...\"" */
        memcpy(slot, b.data, sizeof(ring[0]) - 5);
        strcpy(slot + sizeof(ring[0]) - 5, "...\"");
    }
    tp_buf_free(&b);
    return slot;
}
