/* lock.h - tprof's mutexes, counted per thread for its signal handlers.
 *
 * SIGINT/SIGTERM's handler (record/signals.c) waits for the writer thread to flush the window,
 * and the writer takes tprof's locks. A handler that interrupted a thread holding one of them
 * would wait for that very thread. So every mutex that a host thread and the writer share is
 * taken through tp_lock, which counts the locks the calling thread holds; the handler asks
 * tp_lock_defer_signal first, which, while the count is not zero, notes the signal and says so;
 * the thread's last tp_unlock then raises the signal again, where it holds nothing of tprof's.
 *
 * Invariant: a thread's count is above zero whenever it holds such a mutex. It rises before the
 * mutex is taken and falls after it is released, so a handler never sees zero on a thread
 * holding one (it may see one on a thread that is only about to take it or has just let it go:
 * the signal then waits a few instructions more). The count and the noted signal are the
 * thread's own, read and written only by it and its handlers. */
#ifndef TP_UTIL_LOCK_H
#define TP_UTIL_LOCK_H

#include <pthread.h>

void tp_lock(pthread_mutex_t *m);
/* Releases m; the last lock the thread held raises again a signal noted meanwhile. */
void tp_unlock(pthread_mutex_t *m);
/* Async-signal-safe, in a handler for sig: 1 when the calling thread holds a tprof lock (sig is
 * noted and raised again at its last tp_unlock), 0 when it holds none. */
int tp_lock_defer_signal(int sig);

#endif
