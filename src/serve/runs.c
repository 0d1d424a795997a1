/* runs.c - the runs of the served directory (runs.h): its subdirectories, each read as a run
 * directory (src/run/state.c: its windows, partial flag and change key), the newest first kept.
 */
#include "serve/runs.h"

#include "run/state.h"
#include "serve/confine.h"
#include "util/vec.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int64_t ns_of(struct timespec t) {
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* A new descriptor of the folder, with its own read position: a dup() would share the root's,
 * and two threads listing at once would each read part of the entries. */
static int reopen(int root_fd) {
    return openat(root_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* Scans the open directory dfd (closed here) as a run named name (len bytes). */
static int scan_dir(int dfd, const char *name, size_t len, tp_serve_run *out) {
    tp_run_state s;
    if (tp_run_state_read(dfd, &s)) return -1;
    memset(out, 0, sizeof(*out));
    memcpy(out->name, name, len);
    out->mtime_ns = s.mtime_ns;
    out->key = s.key;
    out->windows = s.windows;
    out->partial = s.partial;
    out->has_link = s.has_link;
    return 0;
}

int tp_serve_run_scan(int root_fd, const char *name, tp_serve_run *out) {
    size_t len = strlen(name);
    if (len == 0 || len >= sizeof(out->name) || name[0] == '.') return -1;
    int dfd = tp_serve_open_dir(root_fd, name);
    return dfd < 0 ? -1 : scan_dir(dfd, name, len, out);
}

int tp_serve_is_run(int root_fd) {
    tp_serve_run self;
    int dfd = reopen(root_fd);
    return dfd >= 0 && scan_dir(dfd, "", 0, &self) == 0;
}

static int oldest_first(const void *a, const void *b) {
    const tp_serve_run *x = a, *y = b;
    if (x->mtime_ns != y->mtime_ns) return x->mtime_ns < y->mtime_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Whether a client can name the directory entry: api/data and /runs/ decode what they are
 * given with tp_serve_name_decode, and JSON carries only valid UTF-8. */
static int nameable(const char *name) {
    size_t len = strlen(name);
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)name[i];
        if (c == '\\' || c < 0x20 || c == 0x7f) return 0;
        size_t n = c < 0x80 ? 1 : tp_utf8_seq_len((const unsigned char *)name + i, len - i);
        if (n == 0) return 0;
        i += n;
    }
    return len > 0 && len <= TP_SERVE_NAME_MAX && name[0] != '.';
}

/* The newest TP_SERVE_RUNS_MAX subdirectories seen so far: a min-heap on the directory's
 * modification time, so a folder of any size costs one fstatat per entry and bounded memory. */
typedef struct newest {
    tp_serve_run *v; /* name and mtime_ns only, until scanned */
    size_t n;
    size_t dropped;
} newest;

static int older(const tp_serve_run *a, const tp_serve_run *b) {
    return oldest_first(a, b) < 0;
}

static void sift_down(newest *h, size_t i) {
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < h->n && older(&h->v[l], &h->v[m])) m = l;
        if (l + 1 < h->n && older(&h->v[l + 1], &h->v[m])) m = l + 1;
        if (m == i) return;
        tp_serve_run t = h->v[i];
        h->v[i] = h->v[m];
        h->v[m] = t;
        i = m;
    }
}

static void sift_up(newest *h, size_t i) {
    while (i && older(&h->v[i], &h->v[(i - 1) / 2])) {
        tp_serve_run t = h->v[i];
        h->v[i] = h->v[(i - 1) / 2];
        h->v[(i - 1) / 2] = t;
        i = (i - 1) / 2;
    }
}

/* Offers one subdirectory to the heap (the oldest goes when it is full). */
static void offer(newest *h, const char *name, int64_t mtime_ns) {
    tp_serve_run r = {.mtime_ns = mtime_ns};
    snprintf(r.name, sizeof(r.name), "%s", name);
    if (h->n == TP_SERVE_RUNS_MAX) {
        h->dropped++;
        if (!older(&h->v[0], &r)) return;
        h->v[0] = r;
        sift_down(h, 0);
        return;
    }
    h->v[h->n] = r;
    sift_up(h, h->n++);
}

/* The newest subdirectories of the folder into h; the names no client could ask for counted
 * in h->dropped. 0, or -1 when it cannot be read. */
static int newest_dirs(int root_fd, newest *h) {
    int dfd = reopen(root_fd);
    DIR *dh = dfd >= 0 ? fdopendir(dfd) : NULL;
    if (!dh) {
        if (dfd >= 0) close(dfd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        struct stat st;
        if (e->d_name[0] == '.') continue;
        if (fstatat(dirfd(dh), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode))
            continue;
        if (!nameable(e->d_name))
            h->dropped++;
        else
            offer(h, e->d_name, ns_of(st.st_mtim));
    }
    closedir(dh);
    return 0;
}

int tp_serve_runs_list(int root_fd, tp_serve_run **out, size_t *n, size_t *left_out) {
    *out = NULL;
    *n = *left_out = 0;
    newest h = {.v = malloc(TP_SERVE_RUNS_MAX * sizeof(*h.v))};
    if (!h.v || newest_dirs(root_fd, &h)) {
        free(h.v);
        return -1;
    }
    size_t count = 0;
    for (size_t i = 0; i < h.n; i++) {
        char name[sizeof(h.v[i].name)];
        memcpy(name, h.v[i].name, sizeof(name));
        if (tp_serve_run_scan(root_fd, name, &h.v[count]) == 0) count++;
    }
    if (count) qsort(h.v, count, sizeof(*h.v), oldest_first);
    if (!count) {
        free(h.v);
        h.v = NULL;
    }
    *out = h.v;
    *n = count;
    *left_out = h.dropped;
    return 0;
}

void tp_serve_runs_json(tp_buf *b, const tp_serve_run *runs, size_t n, size_t left_out) {
    TP_BUF_LIT(b, "{\"runs\":[");
    for (size_t i = 0; i < n; i++) {
        const tp_serve_run *r = &runs[i];
        if (i) tp_buf_putc(b, ',');
        TP_BUF_LIT(b, "{\"name\":");
        tp_buf_json_cstr(b, r->name);
        TP_BUF_LIT(b, ",\"mtime\":");
        tp_buf_double(b, (double)r->mtime_ns / 1e9);
        TP_BUF_LIT(b, ",\"windows\":");
        tp_buf_u64(b, r->windows);
        TP_BUF_LIT(b, ",\"partial\":");
        tp_buf_puts(b, r->partial ? "true" : "false");
        TP_BUF_LIT(b, ",\"analysable\":");
        tp_buf_puts(b, r->has_link ? "false" : "true");
        tp_buf_putc(b, '}');
    }
    TP_BUF_LIT(b, "],\"left_out\":");
    tp_buf_u64(b, left_out);
    tp_buf_putc(b, '}');
}
