/* lock.c - tprof's mutexes, counted per thread so that a signal handler knows when it must not
 * wait (lock.h). The compiler fences keep the count's stores on their side of the mutex calls: a
 * handler runs on the same thread, so no hardware fence is needed. */
#include "util/lock.h"

#include <assert.h>
#include <signal.h>

/* initial-exec, as the recorder's own thread state (record/record.c): no __tls_get_addr call on
 * each access from a shared object (which would double an uncontended lock's cost), and none that
 * could allocate inside a signal handler. */
static __thread struct {
    volatile sig_atomic_t held;     /* tprof mutexes this thread holds */
    volatile sig_atomic_t deferred; /* a signal noted meanwhile, or 0 */
} me __attribute__((tls_model("initial-exec")));

void tp_lock(pthread_mutex_t *m) {
    me.held = me.held + 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    pthread_mutex_lock(m);
}

void tp_unlock(pthread_mutex_t *m) {
    assert(me.held > 0);
    pthread_mutex_unlock(m);
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    me.held = me.held - 1;
    __atomic_signal_fence(__ATOMIC_SEQ_CST);
    int sig = me.deferred;
    if (me.held || !sig) return;
    me.deferred = 0;
    raise(sig); /* delivered before raise returns: the thread took it once, so it is unblocked */
}

int tp_lock_defer_signal(int sig) {
    if (!me.held) return 0;
    me.deferred = sig;
    return 1;
}
