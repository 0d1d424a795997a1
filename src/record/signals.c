/* signals.c - SIGINT and SIGTERM: the open window is written as a valid (partial) trace, then
 * the handler that was there before runs, or the default action ends the process.
 *
 * The handler only does async-signal-safe things: it posts the writer thread a request and polls
 * for its answer with sem_trywait and nanosleep for profiling.flush_timeout_ms at most, so a host
 * interrupted inside tprof or inside malloc is delayed that long (plus FLUSH_GRACE_MS) at most,
 * never deadlocked. The writer writes the window's events in order until that time has passed,
 * then closes the trace there (marked truncated) and writes the run's summary files, for which
 * the grace is meant. Should it still not be done then, the handler removes the temporary files
 * it leaves, so no .tmp outlives the process. A signal that lands while its thread holds one of
 * tprof's locks is held back until the lock is released (util/lock.h), then takes the same way.
 *
 * While tprof_shutdown writes the last window and the run's files, the handlers stay: the first
 * signal then only cuts the trace being written at profiling.flush_timeout_ms from now, says so
 * in one line and returns; tprof_shutdown finishes the files, restores the host's handlers and
 * raises the signal (tp_signals_end), so the host's disposition runs, only later. A second
 * signal goes to the host's handler at once (the user insists), after removing the temporary
 * files.
 *
 * SIGUSR1 (flight_signal: true) asks the flight recorder for a save: its handler only sets a
 * flag and posts the writer (record/flight.h), then chains a handler installed before tprof's.
 * The default action of SIGUSR1 (ending the process) is not chained: asking for a save is the
 * reason the operator sent it. */
#include "record/session.h"
#include "util/fs.h"
#include "util/lock.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

enum { FLUSH_GRACE_MS = 2000 }; /* for closing the trace and the summary files */

static const int sigs[2] = {SIGINT, SIGTERM};
static int64_t flush_timeout_ms = 5000; /* set at install, read by the handler */
static struct sigaction previous[2];
static int installed[2];
static int flushing; /* the first signal flushes; later ones go straight to the previous handler */
static int deferred; /* the signal that came during tprof_shutdown, raised at its end */

static void chain(int i, int sig, siginfo_t *info, void *uctx) {
    const struct sigaction *prev = &previous[i];
    if (prev->sa_flags & SA_SIGINFO) {
        prev->sa_sigaction(sig, info, uctx);
    } else if (prev->sa_handler == SIG_DFL) {
        /* Re-raised with the default action: delivered as the handler returns (the signal is
         * blocked until then), so the process dies of the signal, as without tprof. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof(dfl));
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        raise(sig);
    } else if (prev->sa_handler != SIG_IGN) {
        prev->sa_handler(sig);
    }
}

/* The first signal during tprof_shutdown: its files are finished first. 1 when deferred. */
static int defer(int sig, int limit) {
    if (!tp_session_ending() || __atomic_exchange_n(&flushing, 1, __ATOMIC_ACQ_REL)) return 0;
    __atomic_store_n(&deferred, sig, __ATOMIC_RELEASE);
    tp_session_cut_writes(limit);
    static const char term[] = "tprof: SIGTERM during tprof_shutdown: the run's files are "
                               "finished first (the trace within profiling.flush_timeout_ms), "
                               "then the signal takes its course\n";
    static const char intr[] = "tprof: SIGINT during tprof_shutdown: the run's files are "
                               "finished first (the trace within profiling.flush_timeout_ms), "
                               "then the signal takes its course\n";
    ssize_t ignored = sig == SIGINT ? write(STDERR_FILENO, intr, sizeof(intr) - 1)
                                    : write(STDERR_FILENO, term, sizeof(term) - 1);
    (void)ignored;
    return 1;
}

static void on_signal(int sig, siginfo_t *info, void *uctx) {
    int saved_errno = errno;
    int i = sig == SIGINT ? 0 : 1;
    int limit = (int)__atomic_load_n(&flush_timeout_ms, __ATOMIC_RELAXED);
    if (defer(sig, limit)) {
        errno = saved_errno;
        return;
    }
    /* A thread holding one of tprof's locks cannot wait for the writer, which may need it: the
     * signal comes back at the lock's release (util/lock.h), so no window is lost to the moment
     * it landed (inside tprof_step, say). */
    if (tp_lock_defer_signal(sig)) {
        errno = saved_errno;
        return;
    }
    if (tp_session_ending()) tp_fs_discard_temporaries(); /* a second one: the host's way now */
    if (!__atomic_exchange_n(&flushing, 1, __ATOMIC_ACQ_REL) &&
        tp_session_signal_flush(limit, limit + FLUSH_GRACE_MS) < 0) {
        static const char msg[] = "tprof: the signal's flush did not end within "
                                  "profiling.flush_timeout_ms; its unfinished files are removed\n";
        tp_fs_discard_temporaries();
        ssize_t ignored = write(STDERR_FILENO, msg, sizeof(msg) - 1);
        (void)ignored;
    }
    chain(i, sig, info, uctx);
    errno = saved_errno;
}

void tp_signals_install(int64_t timeout_ms) {
    __atomic_store_n(&flush_timeout_ms, timeout_ms, __ATOMIC_RELAXED);
    __atomic_store_n(&flushing, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&deferred, 0, __ATOMIC_RELEASE);
    for (int i = 0; i < 2; i++) {
        struct sigaction sa, old;
        if (sigaction(sigs[i], NULL, &old) != 0) continue;
        /* A host that ignores the signal (nohup, a background job) keeps it ignored. */
        if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = on_signal;
        /* Keep the host's restart behaviour: Python, for one, wants EINTR. */
        sa.sa_flags = SA_SIGINFO | (old.sa_flags & (SA_RESTART | SA_ONSTACK));
        sigemptyset(&sa.sa_mask);
        previous[i] = old;
        if (sigaction(sigs[i], &sa, NULL) == 0) installed[i] = 1;
    }
}

void tp_signals_restore(void) {
    for (int i = 0; i < 2; i++) {
        if (!installed[i]) continue;
        installed[i] = 0;
        /* Only when ours is still in place: a handler installed after ours stays. */
        struct sigaction cur;
        if (sigaction(sigs[i], NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
            cur.sa_sigaction == on_signal)
            sigaction(sigs[i], &previous[i], NULL);
    }
}

int tp_signals_deferred(void) {
    return __atomic_load_n(&deferred, __ATOMIC_ACQUIRE);
}

void tp_signals_end(void) {
    tp_signals_restore();
    int sig = __atomic_exchange_n(&deferred, 0, __ATOMIC_ACQ_REL);
    if (sig) raise(sig); /* to the host's handler, or the default action */
}

static struct sigaction previous_usr1;
static int installed_usr1;

static void on_usr1(int sig, siginfo_t *info, void *uctx) {
    int saved_errno = errno;
    tp_flight_signal();
    if (previous_usr1.sa_flags & SA_SIGINFO)
        previous_usr1.sa_sigaction(sig, info, uctx);
    else if (previous_usr1.sa_handler != SIG_DFL && previous_usr1.sa_handler != SIG_IGN)
        previous_usr1.sa_handler(sig);
    errno = saved_errno;
}

void tp_signals_install_flight(void) {
    struct sigaction sa, old;
    if (installed_usr1 || sigaction(SIGUSR1, NULL, &old) != 0) return;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_usr1;
    sa.sa_flags = SA_SIGINFO | (old.sa_flags & (SA_RESTART | SA_ONSTACK));
    sigemptyset(&sa.sa_mask);
    previous_usr1 = old;
    if (sigaction(SIGUSR1, &sa, NULL) == 0) installed_usr1 = 1;
}

void tp_signals_restore_flight(void) {
    if (!installed_usr1) return;
    installed_usr1 = 0;
    struct sigaction cur;
    if (sigaction(SIGUSR1, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
        cur.sa_sigaction == on_usr1)
        sigaction(SIGUSR1, &previous_usr1, NULL);
}
