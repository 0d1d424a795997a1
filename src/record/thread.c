/* thread.c - the registry of recording threads, their chunks and the max_events budget.
 *
 * A thread registers on its first record and stays registered for its lifetime, across
 * sessions, so that the hot path never checks whether its memory still exists. When it exits,
 * it is freed as soon as the writer has written every window it recorded into. */
#include "record/record.h"

#include "util/lock.h"
#include "util/log.h"
#include "util/vec.h"

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t threads_lock = PTHREAD_MUTEX_INITIALIZER;
static tp_thread *threads;     /* the registry, under threads_lock */
static pthread_key_t exit_key; /* its destructor marks a thread exited */
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static uint32_t done_gen; /* the last window the writer finished (release/acquire) */
static int64_t budget;    /* records that may still be taken into chunks */

void tp_budget_reset(int64_t records) {
    TP_STORE_RLX(&budget, records);
}

int tp_budget_left(uint32_t want) {
    return TP_LOAD_RLX(&budget) >= (int64_t)want;
}

/* Up to want records of budget, or none when fewer than min are left. */
static uint32_t budget_take(uint32_t want, uint32_t min) {
    int64_t avail = TP_LOAD_RLX(&budget);
    int64_t take;
    do {
        if (avail <= 0 || avail < (int64_t)min) return 0;
        take = avail < want ? avail : want;
    } while (!__atomic_compare_exchange_n(&budget, &avail, avail - take, 1, __ATOMIC_RELAXED,
                                          __ATOMIC_RELAXED));
    return (uint32_t)take;
}

static void budget_return(tp_chunk *c) {
    uint32_t r = __atomic_exchange_n(&c->reserved, 0, __ATOMIC_RELAXED);
    if (r) __atomic_fetch_add(&budget, (int64_t)r, __ATOMIC_RELAXED);
}

/* Frees the exited threads whose chunks all belong to written windows. threads_lock held. */
static void reap_locked(void) {
    uint32_t done = TP_LOAD_ACQ(&done_gen);
    tp_thread **pp = &threads;
    while (*pp) {
        tp_thread *thr = *pp;
        int busy = !TP_LOAD_ACQ(&thr->exited);
        for (tp_chunk *c = TP_LOAD_ACQ(&thr->chunks); c && !busy; c = c->next)
            busy = TP_LOAD_RLX(&c->gen) > done;
        if (busy) {
            pp = &thr->next;
            continue;
        }
        *pp = thr->next;
        tp_chunk *c = thr->chunks;
        while (c) {
            tp_chunk *next = c->next;
            free(c);
            c = next;
        }
        tp_strtab_free(&thr->strings);
        free(thr);
    }
}

/* The thread exits: its TLS (which points at thr) dies with it; thr outlives it until the
 * windows it recorded into are written. */
static void thread_exit(void *arg) {
    tp_thread *thr = arg;
    memset(&tp_tls_cur, 0, sizeof(tp_tls_cur)); /* a later tprof call here registers anew */
    TP_STORE_REL(&thr->exited, 1);
    tp_lock(&threads_lock);
    reap_locked();
    tp_unlock(&threads_lock);
}

static void make_key(void) {
    if (pthread_key_create(&exit_key, thread_exit) != 0) exit_key = (pthread_key_t)-1;
}

tp_thread *tp_thread_register(void) {
    pthread_once(&key_once, make_key);
    tp_thread *thr = calloc(1, sizeof(*thr));
    if (!thr) return NULL;
    tp_strtab_init(&thr->strings);
    thr->tid = (int64_t)gettid();
    char name[64] = "";
    if (pthread_getname_np(pthread_self(), name, sizeof(name)) == 0 && name[0])
        thr->name =
            tp_strtab_get(&thr->strings, tp_strtab_intern(&thr->strings, name, strlen(name)));
    if (exit_key != (pthread_key_t)-1) pthread_setspecific(exit_key, thr);
    tp_lock(&threads_lock);
    thr->next = threads;
    threads = thr;
    tp_unlock(&threads_lock);
    return thr;
}

void tp_thread_new_session(tp_thread *thr) {
    char name[64] = "";
    if (thr->name) snprintf(name, sizeof(name), "%s", thr->name);
    tp_strtab_free(&thr->strings);
    tp_strtab_init(&thr->strings);
    memset(thr->recent, 0, sizeof(thr->recent)); /* their copies were freed */
    const char *copy = NULL;
    if (name[0])
        copy = tp_strtab_get(&thr->strings, tp_strtab_intern(&thr->strings, name, strlen(name)));
    TP_STORE_REL(&thr->name, copy);
}

tp_chunk *tp_chunk_take(tp_thread *thr, tp_chunk *current, uint32_t gen, uint32_t want,
                        uint32_t min) {
    /* A reusable chunk, looked for from where the last search stopped, so that a thread
     * going through its chunks one after the other finds each in one step. */
    assert(thr == tp_tls_cur.thr); /* record.h, 1: only the owner takes its chunks */
    uint32_t done = TP_LOAD_ACQ(&done_gen);
    tp_chunk *c = NULL;
    for (int pass = 0; pass < 2 && !c; pass++) {
        tp_chunk *from = pass ? thr->chunks : thr->cursor, *to = pass ? thr->cursor : NULL;
        for (c = from; c != to; c = c->next)
            if (c != current && (TP_LOAD_RLX(&c->gen) <= done || TP_LOAD_ACQ(&c->streamed))) break;
        if (c == to) c = NULL;
    }
    if (c) budget_return(c); /* a late chunk the writer never saw still holds budget */
    uint32_t got = budget_take(want, min);
    /* Nothing is published without the budget asked for: a chunk taken and left unused would be
     * its owner's newest, and a streaming writer would take the one still written for sealed. */
    if (min && got < min) return NULL;
    if (c) thr->cursor = c->next;
    int fresh = !c;
    if (fresh && !(c = malloc(sizeof(*c)))) {
        __atomic_fetch_add(&budget, (int64_t)got, __ATOMIC_RELAXED);
        return NULL;
    }
    TP_STORE_RLX(&c->count, 0);
    TP_STORE_RLX(&c->dropped, 0);
    TP_STORE_RLX(&c->too_deep, 0);
    TP_STORE_RLX(&c->streamed, 0);
    TP_STORE_RLX(&c->reserved, got);
    TP_STORE_REL(&c->seq, thr->next_seq++); /* invariant 8: after the resets */
    TP_STORE_REL(&c->gen, gen);
    if (fresh) {
        c->next = thr->chunks;
        TP_STORE_REL(&thr->chunks, c);
    }
    return c;
}

static int chunk_seq_cmp(const void *a, const void *b) {
    uint64_t x = TP_LOAD_RLX(&(*(tp_chunk *const *)a)->seq);
    uint64_t y = TP_LOAD_RLX(&(*(tp_chunk *const *)b)->seq);
    return x < y ? -1 : x > y;
}

static int in_gens(const tp_chunk *c, uint32_t lo, uint32_t hi) {
    uint32_t g = TP_LOAD_ACQ(&c->gen);
    return g >= lo && g <= hi;
}

int tp_collect_chunks(uint32_t lo, uint32_t hi, tp_chunk_visit fn, void *ctx) {
    /* Threads are gathered under the lock and visited outside it, so that registering threads
     * never wait for the conversion. A gathered thread cannot be freed meanwhile: it has chunks
     * of lo .. hi, and those are above done_gen until the window is done. */
    size_t nthr = 0, cap = 0, nchunks = 0;
    tp_thread **list = NULL;
    int rc = 0;
    tp_lock(&threads_lock);
    for (tp_thread *thr = threads; thr; thr = thr->next) {
        size_t mine = 0;
        for (tp_chunk *c = TP_LOAD_ACQ(&thr->chunks); c; c = c->next)
            mine += in_gens(c, lo, hi);
        if (!mine) continue;
        nchunks = mine > nchunks ? mine : nchunks;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        if (TP_GROW(list, cap, nthr + 1)) {
            rc = -1;
            break;
        }
        list[nthr++] = thr;
    }
    tp_unlock(&threads_lock);
    tp_chunk **chunks = NULL;
    size_t cap_chunks = 0;
    if (TP_GROW(chunks, cap_chunks, nchunks)) rc = -1; /* NOLINT(bugprone-sizeof-expression) */
    for (size_t i = 0; i < nthr && chunks; i++) {
        size_t n = 0;
        for (tp_chunk *c = TP_LOAD_ACQ(&list[i]->chunks); c && n < nchunks; c = c->next)
            if (in_gens(c, lo, hi)) chunks[n++] = c;
        qsort(chunks, n, sizeof(*chunks), chunk_seq_cmp); /* NOLINT(bugprone-sizeof-expression) */
        fn(ctx, list[i], chunks, n);
    }
    free(chunks);
    free(list);
    return rc;
}

typedef struct chunk_list {
    tp_chunk **v;
    size_t n, cap;
} chunk_list;

/* A thread's chunks of gen not read yet, in seq order, into l; 0, or -1 when out of memory. The
 * seqs are read before any count (invariant 8). */
static int unread_chunks(tp_thread *thr, uint32_t gen, chunk_list *l) {
    if (thr->stream_gen != gen) {
        thr->stream_gen = gen;
        thr->stream_next = 0;
    }
    l->n = 0;
    for (tp_chunk *c = TP_LOAD_ACQ(&thr->chunks); c; c = c->next) {
        if (TP_LOAD_ACQ(&c->gen) != gen || TP_LOAD_ACQ(&c->seq) < thr->stream_next) continue;
        if (TP_GROW(l->v, l->cap, l->n + 1)) return -1; /* NOLINT(bugprone-sizeof-expression) */
        l->v[l->n++] = c;
    }
    if (l->n > 1)
        qsort(l->v, l->n, sizeof(*l->v), chunk_seq_cmp); /* NOLINT(bugprone-sizeof-expression) */
    return 0;
}

int tp_stream_chunks(uint32_t gen, int all, tp_chunk_visit fn, void *ctx) {
    size_t nthr = 0, cap = 0;
    tp_thread **list = NULL;
    chunk_list l = {0};
    int rc = 0;
    tp_lock(&threads_lock); /* as tp_collect_chunks: gathered, visited outside it */
    for (tp_thread *thr = threads; thr; thr = thr->next) {
        int mine = 0;
        for (tp_chunk *c = TP_LOAD_ACQ(&thr->chunks); c && !mine; c = c->next)
            mine = TP_LOAD_ACQ(&c->gen) == gen;
        /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        if (mine && TP_GROW(list, cap, nthr + 1)) {
            rc = -1;
            break;
        }
        if (mine) list[nthr++] = thr;
    }
    tp_unlock(&threads_lock);
    for (size_t i = 0; i < nthr && rc == 0; i++) {
        tp_thread *thr = list[i];
        if (unread_chunks(thr, gen, &l)) {
            rc = -1;
            break;
        }
        if (l.n == 0 && !all) continue; /* (its chunks were reused meanwhile) */
        size_t n = all ? l.n : l.n - 1; /* the newest: its owner may still write it */
        if (!all && n > TP_STREAM_BATCH) n = TP_STREAM_BATCH;
        assert(n == 0 || TP_LOAD_RLX(&l.v[0]->seq) >= thr->stream_next); /* read once */
        fn(ctx, thr, l.v, n);
        if (n > 0) thr->stream_next = TP_LOAD_RLX(&l.v[n - 1]->seq) + 1;
        for (size_t k = 0; k < n && !all; k++) {
            budget_return(l.v[k]);
            TP_STORE_REL(&l.v[k]->streamed, 1); /* after every read of it */
        }
    }
    free(l.v);
    free(list);
    return rc;
}

void tp_window_done(uint32_t gen) {
    tp_lock(&threads_lock);
    for (tp_thread *thr = threads; thr; thr = thr->next)
        for (tp_chunk *c = TP_LOAD_ACQ(&thr->chunks); c; c = c->next)
            if (TP_LOAD_ACQ(&c->gen) == gen) budget_return(c);
    TP_STORE_REL(&done_gen, gen);
    reap_locked();
    tp_unlock(&threads_lock);
}

void tp_gens_release(uint32_t upto) {
    tp_lock(&threads_lock);
    if (upto > TP_LOAD_RLX(&done_gen)) {
        for (tp_thread *thr = threads; thr; thr = thr->next)
            for (tp_chunk *c = TP_LOAD_ACQ(&thr->chunks); c; c = c->next)
                if (TP_LOAD_ACQ(&c->gen) <= upto) budget_return(c);
        TP_STORE_REL(&done_gen, upto);
        reap_locked();
    }
    tp_unlock(&threads_lock);
}

pthread_mutex_t *tp_threads_mutex(void) {
    return &threads_lock;
}

void tp_threads_session_end(void) {
    tp_lock(&threads_lock);
    for (tp_thread *thr = threads; thr; thr = thr->next)
        for (tp_chunk *c = TP_LOAD_ACQ(&thr->chunks); c; c = c->next)
            __atomic_store_n(&c->reserved, 0, __ATOMIC_RELAXED);
    reap_locked();
    tp_unlock(&threads_lock);
}
