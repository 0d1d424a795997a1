/* lock.c - tprof's mutexes, counted per thread so that a signal handler knows when it must not
 * wait (lock.h). The compiler fences keep the count's stores on their side of the mutex calls: a
 * handler runs on the same thread, so no hardware fence is needed. */
#include "util/lock.h"

#include <assert.h>
#include <signal.h>

static __thread volatile sig_atomic_t held;     /* tprof mutexes this thread holds */
static __thread volatile sig_atomic_t deferred; /* a signal noted meanwhile, or 0 */

void tp_lock(pthread_mutex_t *m) {
    held = held + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pthread_mutex_lock(m);
}

void tp_unlock(pthread_mutex_t *m) {
    assert(held > 0);
    pthread_mutex_unlock(m);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    held = held - 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int sig = deferred;
    if (held || !sig) return;
    deferred = 0;
    raise(sig); /* delivered before raise returns: the thread took it once, so it is unblocked */
}

int tp_lock_defer_signal(int sig) {
    if (!held) return 0;
    deferred = sig;
    return 1;
}
