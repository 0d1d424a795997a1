/* msg.h - where the library's lines go: standard error, or the host's hook.
 *
 * Every line the library prints outside a signal handler (its warnings, the console summary, the
 * flight recorder's notes) is written here, so that a host whose "standard error" is not file
 * descriptor 2 can take them: the Python extension hands them to sys.stderr and logging
 * (python/ext/py_messages.c). A C program installs no hook and its lines go to stderr as always.
 * Signal handlers keep their own write(2) calls: a hook is not async-signal-safe. */
#ifndef TP_UTIL_MSG_H
#define TP_UTIL_MSG_H

#include <stddef.h>

typedef enum tp_msg_kind {
    TP_MSG_OUTPUT,  /* what the run produced: the summary, a flight save's note */
    TP_MSG_WARNING, /* a problem the library worked around ("tprof: ...") */
    TP_MSG_ERROR,   /* a problem the user must act on: the run goes on unprofiled */
} tp_msg_kind;

/* Takes len bytes of whole lines ending in '\n'; 0 when taken, -1 to have them written to
 * stderr instead. Called from any thread, with or without the host's locks: it must neither
 * block on the host nor call back into the library. */
typedef int (*tp_msg_hook)(tp_msg_kind kind, const char *text, size_t len);

/* Installs hook (NULL: stderr again). */
void tp_msg_set_hook(tp_msg_hook hook);
/* text (len bytes of whole lines) to the hook, or to stderr when there is none or it declines. */
void tp_msg_write(tp_msg_kind kind, const char *text, size_t len);
/* The same from a format: one line, '\n' added; cut at 1 KB. */
void tp_msg_printf(tp_msg_kind kind, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
