/* writer.c - the writer thread's queue and loop (see writer.h). */
#include "record/writer.h"

#include "record/record.h"
#include "util/lock.h"

#include <errno.h>
#include <signal.h>
#include <time.h>

static tp_window *pop(tp_writer *wr, int *stop) {
    tp_lock(&wr->lock);
    tp_window *w = wr->head;
    if (w && !(wr->head = w->next)) wr->tail = NULL;
    *stop = wr->stop;
    tp_unlock(&wr->lock);
    return w;
}

/* Until woken or TP_POLL_MS passed. */
static void wait_poll(tp_writer *wr) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until); /* sem_timedwait's clock */
    until.tv_nsec += TP_POLL_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    while (sem_timedwait(&wr->wake, &until) != 0 && errno == EINTR) {
    }
}

static void *writer_main(void *arg) {
    tp_writer *wr = arg;
    int polling = 0;
    for (;;) {
        if (polling)
            wait_poll(wr);
        else
            while (sem_wait(&wr->wake) != 0 && errno == EINTR) {
            }
        polling = wr->poll && wr->poll(wr->ctx);
        int flush = __atomic_exchange_n(&wr->flush_req, 0, __ATOMIC_ACQ_REL);
        if (flush) wr->flush(wr->ctx);
        if (__atomic_exchange_n(&wr->flight_req, 0, __ATOMIC_ACQ_REL) && wr->flight)
            wr->flight(wr->ctx);
        int stop;
        tp_window *w;
        while ((w = pop(wr, &stop)))
            wr->write(wr->ctx, w);
        if (flush) {
            if (wr->after_flush) wr->after_flush(wr->ctx);
            TP_STORE_REL(&wr->deadline_ns, 0);
            sem_post(&wr->flushed);
        }
        if (stop) return NULL;
    }
}

int tp_writer_start(tp_writer *wr) {
    wr->head = wr->tail = NULL;
    wr->stop = wr->flush_req = wr->flight_req = 0;
    wr->deadline_ns = 0;
    if (sem_init(&wr->wake, 0, 0) || sem_init(&wr->flushed, 0, 0)) return -1;
    pthread_mutex_init(&wr->lock, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&wr->thread, NULL, writer_main, wr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        errno = rc;
        sem_destroy(&wr->wake);
        sem_destroy(&wr->flushed);
        pthread_mutex_destroy(&wr->lock);
        return -1;
    }
    TP_STORE_REL(&wr->running, 1);
    return 0;
}

void tp_writer_push(tp_writer *wr, tp_window *w) {
    w->next = NULL;
    tp_lock(&wr->lock);
    if (wr->tail)
        wr->tail->next = w;
    else
        wr->head = w;
    wr->tail = w;
    tp_unlock(&wr->lock);
    sem_post(&wr->wake);
}

int tp_writer_queued(tp_writer *wr) {
    tp_lock(&wr->lock);
    int queued = wr->head != NULL;
    tp_unlock(&wr->lock);
    return queued;
}

void tp_writer_poke(tp_writer *wr) {
    sem_post(&wr->wake);
}

void tp_writer_wake_flight(tp_writer *wr) {
    if (!TP_LOAD_ACQ(&wr->running)) return;
    TP_STORE_REL(&wr->flight_req, 1);
    sem_post(&wr->wake); /* async-signal-safe */
}

void tp_writer_stop(tp_writer *wr) {
    TP_STORE_REL(&wr->running, 0);
    tp_lock(&wr->lock);
    wr->stop = 1;
    tp_unlock(&wr->lock);
    sem_post(&wr->wake);
    pthread_join(wr->thread, NULL);
    sem_destroy(&wr->wake);
    sem_destroy(&wr->flushed);
    pthread_mutex_destroy(&wr->lock);
}

void tp_writer_set_deadline(tp_writer *wr, int deadline_ms) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* async-signal-safe */
    int64_t now_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
    TP_STORE_REL(&wr->deadline_ns, now_ns + (int64_t)deadline_ms * 1000000);
}

int tp_writer_flush_from_signal(tp_writer *wr, int deadline_ms, int timeout_ms) {
    if (!TP_LOAD_ACQ(&wr->running)) return 1;
    tp_writer_set_deadline(wr, deadline_ms);
    TP_STORE_REL(&wr->flush_req, 1);
    sem_post(&wr->wake);
    struct timespec ms = {0, 1000000};
    for (int waited = 0; waited < timeout_ms; waited++) {
        if (sem_trywait(&wr->flushed) == 0) return 0;
        nanosleep(&ms, NULL);
    }
    return -1;
}
