/* gunzip.c - zlib's inflate behind tp_gunzip, inline or on a producer thread (see gunzip.h). */
#include "trace/gunzip.h"

#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* Four 1 MB blocks keep the producer a few milliseconds ahead without holding much memory. */
enum { TP_GZ_IN = 256 * 1024, TP_GZ_BLOCK = 1 << 20, TP_GZ_NBLOCKS = 4 };

struct tp_gunzip {
    /* The decompressor: used by the producer thread only (or inline). */
    z_stream zs;
    tp_raw_read raw;
    void *ctx;
    unsigned char *in;
    int raw_eof;
    int member_end; /* a member ended; another may follow */
    int done;       /* 1 at the end of the data, -1 after an error (err says which) */
    int cut_short;  /* that error: the data ended inside a member */
    char err[256];
    /* The ring: blocks[head .. head + count) hold data, the consumer is pos bytes into head.
     * Guarded by lock; the producer fills the slot after the last full one outside it. */
    int threaded;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t filled, drained;
    char *blocks[TP_GZ_NBLOCKS];
    size_t lens[TP_GZ_NBLOCKS];
    size_t head, count, pos;
    int finished; /* the producer stopped: after the ring empties, done tells why */
    int stop;     /* the consumer is closing */
};

static void fail(tp_gunzip *g, const char *what, const char *detail) {
    snprintf(g->err, sizeof(g->err), "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    g->done = -1;
}

/* The next member, or the end when what follows is no gzip header (ignored, as zcat does). */
static int next_member(tp_gunzip *g) {
    if (g->zs.avail_in == 0 || g->zs.next_in[0] != 0x1f) {
        g->done = 1;
        return 0;
    }
    inflateReset(&g->zs);
    g->member_end = 0;
    return 1;
}

/* The bytes inflated into dst. An error ends the data where it struck: the bytes before it are
 * returned first and the next call returns -1, so the reader names the offset reached. */
static ptrdiff_t inflate_some(tp_gunzip *g, char *dst, size_t cap) {
    if (g->done) return g->done > 0 ? 0 : -1;
    g->zs.next_out = (Bytef *)dst;
    g->zs.avail_out = cap > UINT_MAX ? UINT_MAX : (uInt)cap;
    uInt want = g->zs.avail_out;
    while (g->zs.avail_out > 0 && !g->done) {
        if (g->zs.avail_in == 0 && !g->raw_eof) {
            ptrdiff_t n = g->raw(g->ctx, g->in, TP_GZ_IN, g->err, sizeof(g->err));
            if (n < 0) {
                g->done = -1;
                break;
            }
            g->raw_eof = n == 0;
            g->zs.next_in = g->in;
            g->zs.avail_in = (uInt)n;
        }
        if (g->member_end) {
            if (!next_member(g)) break;
            continue;
        }
        int rc = inflate(&g->zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END)
            g->member_end = 1;
        else if (rc == Z_BUF_ERROR && g->raw_eof) {
            fail(g, "truncated gzip data", NULL);
            g->cut_short = 1;
        } else if (rc == Z_MEM_ERROR)
            fail(g, "out of memory", NULL);
        else if (rc != Z_OK && rc != Z_BUF_ERROR)
            fail(g, "corrupt gzip data", g->zs.msg ? g->zs.msg : "invalid stream");
    }
    size_t got = want - g->zs.avail_out;
    return got || g->done >= 0 ? (ptrdiff_t)got : -1;
}

static void *producer(void *arg) {
    tp_gunzip *g = arg;
    for (;;) {
        pthread_mutex_lock(&g->lock);
        while (g->count == TP_GZ_NBLOCKS && !g->stop)
            pthread_cond_wait(&g->drained, &g->lock);
        size_t slot = (g->head + g->count) % TP_GZ_NBLOCKS;
        int stop = g->stop;
        pthread_mutex_unlock(&g->lock);
        if (stop) return NULL;
        size_t len = 0;
        ptrdiff_t n = 1;
        while (len < TP_GZ_BLOCK &&
               (n = inflate_some(g, g->blocks[slot] + len, TP_GZ_BLOCK - len)) > 0)
            len += (size_t)n;
        pthread_mutex_lock(&g->lock);
        g->lens[slot] = len;
        g->count += len > 0;
        g->finished = n <= 0;
        pthread_cond_signal(&g->filled);
        pthread_mutex_unlock(&g->lock);
        if (n <= 0) return NULL;
    }
}

static int start_thread(tp_gunzip *g) {
    for (int i = 0; i < TP_GZ_NBLOCKS; i++)
        if (!(g->blocks[i] = malloc(TP_GZ_BLOCK))) return -1;
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->filled, NULL);
    pthread_cond_init(&g->drained, NULL);
    if (pthread_create(&g->thread, NULL, producer, g) != 0) {
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->filled);
        pthread_cond_destroy(&g->drained);
        return -1;
    }
    g->threaded = 1;
    return 0;
}

tp_gunzip *tp_gunzip_new(tp_raw_read raw, void *ctx, int threaded) {
    tp_gunzip *g = calloc(1, sizeof(*g));
    if (!g) return NULL;
    g->raw = raw;
    g->ctx = ctx;
    g->in = malloc(TP_GZ_IN);
    /* 16 + MAX_WBITS: a gzip wrapper, the largest window. */
    if (!g->in || inflateInit2(&g->zs, 16 + MAX_WBITS) != Z_OK) {
        free(g->in);
        free(g);
        return NULL;
    }
    /* Without a thread (none can start, or none wanted) inflate runs inside tp_gunzip_read. */
    if (threaded && start_thread(g) != 0)
        for (int i = 0; i < TP_GZ_NBLOCKS; i++) {
            free(g->blocks[i]);
            g->blocks[i] = NULL;
        }
    return g;
}

ptrdiff_t tp_gunzip_read(tp_gunzip *g, char *dst, size_t cap) {
    if (!g->threaded) return inflate_some(g, dst, cap);
    pthread_mutex_lock(&g->lock);
    while (g->count == 0 && !g->finished)
        pthread_cond_wait(&g->filled, &g->lock);
    if (g->count == 0) {
        pthread_mutex_unlock(&g->lock);
        return g->done > 0 ? 0 : -1;
    }
    size_t slot = g->head, pos = g->pos;
    size_t n = g->lens[slot] - pos;
    pthread_mutex_unlock(&g->lock);
    if (n > cap) n = cap;
    memcpy(dst, g->blocks[slot] + pos, n);
    pthread_mutex_lock(&g->lock);
    g->pos += n;
    if (g->pos == g->lens[slot]) {
        g->head = (g->head + 1) % TP_GZ_NBLOCKS;
        g->count--;
        g->pos = 0;
        pthread_cond_signal(&g->drained);
    }
    pthread_mutex_unlock(&g->lock);
    return (ptrdiff_t)n;
}

const char *tp_gunzip_error(const tp_gunzip *g) {
    return g->err;
}

int tp_gunzip_cut_short(const tp_gunzip *g) {
    return g->done < 0 && g->cut_short;
}

void tp_gunzip_free(tp_gunzip *g) {
    if (!g) return;
    if (g->threaded) {
        pthread_mutex_lock(&g->lock);
        g->stop = 1;
        pthread_cond_signal(&g->drained);
        pthread_mutex_unlock(&g->lock);
        pthread_join(g->thread, NULL);
        pthread_mutex_destroy(&g->lock);
        pthread_cond_destroy(&g->filled);
        pthread_cond_destroy(&g->drained);
    }
    for (int i = 0; i < TP_GZ_NBLOCKS; i++)
        free(g->blocks[i]);
    inflateEnd(&g->zs);
    free(g->in);
    free(g);
}
