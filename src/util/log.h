/* log.h - how tprof reports problems: one "tprof: <what>" line on stderr per distinct message.
 *
 * Messages are also kept (up to a bound) so that summary.json can list them and
 * tprof_last_error() can return the latest. Safe from any thread; not from signal handlers. */
#ifndef TP_UTIL_LOG_H
#define TP_UTIL_LOG_H

#include <stddef.h>

/* Prints "tprof: " + prefix + message once per distinct message and records it. */
void tp_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Text put after "tprof: " on every line, e.g. "[rank 3] "; "" by default. Copied. */
void tp_log_set_prefix(const char *prefix);
/* 1 to stop printing (messages are still recorded), 0 to print again. */
void tp_log_set_quiet(int quiet);
/* The latest message, "" if none. The pointer stays valid until the next tp_log_reset. */
const char *tp_log_last(void);
size_t tp_log_count(void);
const char *tp_log_get(size_t i);
/* Forgets every message (a new session starts). */
void tp_log_reset(void);
/* Copies src into dst (cap bytes, NUL-terminated, cut to fit) with each control byte and DEL
 * written as a JSON escape ("\\n", "\\u001b"): text from outside (a file name) in a printed
 * line never breaks it in two, so it cannot forge a second "tprof: ..." line. */
void tp_log_escape(char *dst, size_t cap, const char *src);

#endif
