/* cache.c - the report data of each run, computed once per change of the run (cache.h).
 *
 * Invariants: `lock` guards the entry table and `total`; a blob's reference count counts the
 * table (while it holds it) and each caller; `compute` lets one analysis run at a time, which
 * bounds the memory analyses take however many clients ask, and lets a thread that waited find
 * the result another one just computed. */
#include "serve/cache.h"

#include "run/html_data.h"
#include "util/buf.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_ENTRIES 64

typedef struct held {
    tp_serve_blob blob; /* first: a tp_serve_blob * is a held * */
    atomic_size_t refs;
} held;

typedef struct entry {
    char *name;
    held *h;
    uint64_t last_used; /* the cache's clock when last returned */
} entry;

struct tp_serve_cache {
    pthread_mutex_t lock, compute;
    entry entries[CACHE_ENTRIES];
    size_t n, total, max_bytes;
    uint64_t max_memory;
    uint64_t clock;
};

tp_serve_cache *tp_serve_cache_new(size_t max_bytes, uint64_t max_memory) {
    tp_serve_cache *c = calloc(1, sizeof(*c));
    if (!c) return NULL;
    pthread_mutex_init(&c->lock, NULL);
    pthread_mutex_init(&c->compute, NULL);
    c->max_bytes = max_bytes;
    c->max_memory = max_memory;
    return c;
}

void tp_serve_blob_release(tp_serve_blob *b) {
    if (!b) return;
    held *h = (held *)b;
    if (atomic_fetch_sub(&h->refs, 1) == 1) {
        free(h->blob.data);
        free(h);
    }
}

static void drop_entry(tp_serve_cache *c, size_t i) {
    assert(i < c->n);
    c->total -= c->entries[i].h->blob.len;
    tp_serve_blob_release(&c->entries[i].h->blob);
    free(c->entries[i].name);
    c->entries[i] = c->entries[--c->n];
}

void tp_serve_cache_free(tp_serve_cache *c) {
    if (!c) return;
    while (c->n)
        drop_entry(c, c->n - 1);
    pthread_mutex_destroy(&c->lock);
    pthread_mutex_destroy(&c->compute);
    free(c);
}

static size_t find(const tp_serve_cache *c, const char *name) {
    for (size_t i = 0; i < c->n; i++)
        if (strcmp(c->entries[i].name, name) == 0) return i;
    return c->n;
}

/* The cached blob for name and key with a reference for the caller, or NULL. */
static tp_serve_blob *lookup(tp_serve_cache *c, const char *name, uint64_t key) {
    pthread_mutex_lock(&c->lock);
    size_t i = find(c, name);
    held *h = i < c->n && c->entries[i].h->blob.key == key ? c->entries[i].h : NULL;
    if (h) {
        atomic_fetch_add(&h->refs, 1);
        c->entries[i].last_used = ++c->clock;
    }
    pthread_mutex_unlock(&c->lock);
    return h ? &h->blob : NULL;
}

/* The report data of paths (two: compared) or their Trace view, or its error as
 * {"error": "..."}; NULL when memory ran out. */
static held *compute(const char *const *paths, size_t npaths, tp_serve_what what, uint64_t key,
                     uint64_t max_memory) {
    held *h = calloc(1, sizeof(*h));
    if (!h) return NULL;
    tp_buf out;
    tp_buf_init(&out);
    char line[1024] = "", err[512];
    int rc = what == TP_SERVE_TRACE
                 ? tp_html_trace(&out, paths, npaths, max_memory, line, sizeof(line))
                 : tp_html_data(&out, paths, npaths, npaths == 2, max_memory, line, sizeof(line));
    h->blob.ok = rc == 0 && !out.failed;
    if (!h->blob.ok) {
        /* the line on stderr too, as the command prints its errors; the answer's is shorter */
        if (line[0]) fprintf(stderr, "tprof: %s\n", line);
        snprintf(err, sizeof(err), "%.*s", (int)sizeof(err) - 1, line); /* cut on purpose */
        out.len = 0;
        out.failed = 0;
        TP_BUF_LIT(&out, "{\"error\":");
        tp_buf_json_cstr(&out, err[0] ? err : "out of memory");
        tp_buf_putc(&out, '}');
    }
    tp_buf_putc(&out, '\0');
    if (out.failed) {
        tp_buf_free(&out);
        free(h);
        return NULL;
    }
    h->blob.key = key;
    h->blob.data = out.data;
    h->blob.len = out.len - 1;
    atomic_init(&h->refs, 1); /* the caller's */
    return h;
}

/* Puts h in the table for name (replacing an older one), evicting the least recently used
 * entries past the bounds. */
static void insert(tp_serve_cache *c, const char *name, held *h) {
    char *copy = strdup(name);
    if (!copy) return; /* not cached; still returned to the caller */
    pthread_mutex_lock(&c->lock);
    size_t i = find(c, name);
    if (i < c->n) drop_entry(c, i);
    while (c->n == CACHE_ENTRIES || (c->n && c->total + h->blob.len > c->max_bytes)) {
        size_t oldest = 0;
        for (size_t k = 1; k < c->n; k++)
            if (c->entries[k].last_used < c->entries[oldest].last_used) oldest = k;
        drop_entry(c, oldest);
    }
    atomic_fetch_add(&h->refs, 1); /* the table's */
    c->entries[c->n++] = (entry){copy, h, ++c->clock};
    c->total += h->blob.len;
    pthread_mutex_unlock(&c->lock);
}

tp_serve_blob *tp_serve_cache_get(tp_serve_cache *c, const char *name, const char *const *paths,
                                  size_t npaths, tp_serve_what what, uint64_t key) {
    tp_serve_blob *b = lookup(c, name, key);
    if (b) return b;
    pthread_mutex_lock(&c->compute);
    b = lookup(c, name, key); /* computed while this thread waited */
    if (!b) {
        held *h = compute(paths, npaths, what, key, c->max_memory);
        if (h) insert(c, name, h);
        b = h ? &h->blob : NULL;
    }
    pthread_mutex_unlock(&c->compute);
    return b;
}
