/* log.h - how tprof reports problems: one "tprof: <what>" line per distinct message, on stderr
 * or where the host's hook takes it (util/msg.h).
 *
 * Messages are also kept (up to a bound) so that summary.json can list them and
 * tprof_last_error() can return the latest. Safe from any thread; not from signal handlers. */
#ifndef TP_UTIL_LOG_H
#define TP_UTIL_LOG_H

#include <stddef.h>

/* Prints "tprof: " + prefix + message once per distinct message and records it. */
void tp_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The same for a problem the user must act on (the run goes on unprofiled): a host may show it
 * more loudly (the Python extension: a warning of Python's warnings module). */
void tp_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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

/* The most of a value, key or path a message echoes; longer ones end with "...", so that a line
 * keeps its reason (it is cut at 512 bytes). */
#define TP_SHOWN_MAX 80
/* s as a message may echo it: at most TP_SHOWN_MAX bytes (cut at a UTF-8 boundary) and "..."
 * when cut. buf needs TP_SHOWN_MAX + 4 bytes; returns s itself when it fits. */
#define TP_SHOWN_SIZE (TP_SHOWN_MAX + 4)
const char *tp_shown(const char *s, char *buf);
/* The same for a path, keeping its end (the file's name): "..." + the last TP_SHOWN_MAX bytes. */
const char *tp_shown_path(const char *s, char *buf);

/* The spelling of a file name in a message of the tprof command or of what it reads: the name
 * itself, or, when it holds a control byte, DEL, '"' or '\\', the name as a JSON string (cut to
 * ~1 KB with "..."), so that it stays on its line and reads back exactly. The result lives until
 * the fourth call after this one (messages name up to two files); one thread at a time. */
const char *tp_log_name(const char *path);

#endif
