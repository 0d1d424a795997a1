/* fs.c - temporary-name-then-rename file writing and mkdir -p (see fs.h). */
#include "util/fs.h"

#include "util/log.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

enum {
    TMP_SLOTS = 8,   /* temporary files remembered for tp_fs_discard_temporaries */
    TMP_TRIES = 100, /* names tried before giving up (each clash is another process's file) */
    TMP_RANDOM = 12, /* random characters in a temporary name */
    TMP_SUFFIX = 5 + TMP_RANDOM + 1, /* ".tmp." + the random part + NUL */
};

struct tp_ofile {
    FILE *plain;
    gzFile gz;
    int error;  /* errno of the first failure, or -1 for a zlib error without errno */
    char *path; /* final name */
    char *tmp;  /* temporary name */
    int slot;   /* its entry in temporaries[], or -1 */
    off_t size; /* bytes on disk, past the position after a provisional tail (else 0) */
};

/* The temporary files open now, for a signal handler to remove (tp_fs_discard_temporaries).
 * A slot is claimed with a compare-and-swap on `used` and filled before `ready` is set. */
static struct {
    int used, ready;
    char path[4096];
} temporaries[TMP_SLOTS];

static int remember_temporary(const char *tmp) {
    size_t n = strlen(tmp);
    if (n >= sizeof(temporaries[0].path)) return -1;
    for (int i = 0; i < TMP_SLOTS; i++) {
        int expected = 0;
        if (!__atomic_compare_exchange_n(&temporaries[i].used, &expected, 1, 0, __ATOMIC_ACQ_REL,
                                         __ATOMIC_RELAXED))
            continue;
        memcpy(temporaries[i].path, tmp, n + 1);
        __atomic_store_n(&temporaries[i].ready, 1, __ATOMIC_RELEASE);
        return i;
    }
    return -1;
}

static void forget_temporary(int slot) {
    if (slot < 0) return;
    __atomic_store_n(&temporaries[slot].ready, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&temporaries[slot].used, 0, __ATOMIC_RELEASE);
}

void tp_fs_discard_temporaries(void) {
    for (int i = 0; i < TMP_SLOTS; i++)
        if (__atomic_load_n(&temporaries[i].ready, __ATOMIC_ACQUIRE)) unlink(temporaries[i].path);
}

/* The path's end only, so that the line keeps its reason however long the path. */
static void set_err(char *err, size_t errlen, const char *what, const char *path, int errnum) {
    if (!err || !errlen) return;
    char shown[TP_SHOWN_SIZE];
    snprintf(err, errlen, "cannot %s %s: %s", what, tp_shown_path(path, shown),
             errnum > 0 ? strerror(errnum) : "compression failed");
}

int tp_mkdirs(const char *path, char *err, size_t errlen) {
    size_t n = strlen(path);
    char *p = malloc(n + 1);
    if (!p) {
        set_err(err, errlen, "create directory", path, ENOMEM);
        return -1;
    }
    memcpy(p, path, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != '\0') continue;
        char saved = p[i];
        p[i] = '\0';
        struct stat st;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            set_err(err, errlen, "create directory", p, errno);
            free(p);
            return -1;
        }
        if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
            set_err(err, errlen, "create directory", p, ENOTDIR);
            free(p);
            return -1;
        }
        p[i] = saved;
    }
    free(p);
    return 0;
}

/* A file-size limit (RLIMIT_FSIZE) makes write() raise SIGXFSZ, whose default action kills the
 * host. Blocked, the write fails with EFBIG instead, handled like ENOSPC. It is blocked around
 * each call that may write (see fs.h), in the calling thread: the thread's mask to restore, and
 * whether the signal was already pending before (then it is not ours). */
typedef struct xfsz_guard {
    sigset_t saved_mask;
    int was_pending;
} xfsz_guard;

static void block_xfsz(xfsz_guard *g) {
    sigset_t xfsz, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &g->saved_mask);
    g->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ);
}

/* Restores the mask, first discarding a SIGXFSZ our writes raised (unblocked, it would be
 * delivered at once). */
static void unblock_xfsz(const xfsz_guard *g) {
    sigset_t xfsz, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    if (!g->was_pending && sigpending(&pending) == 0 && sigismember(&pending, SIGXFSZ)) {
        struct timespec now = {0, 0};
        while (sigtimedwait(&xfsz, NULL, &now) == SIGXFSZ) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &g->saved_mask, NULL);
}

/* After provisional writes (size set): the file ends where the last write did, a provisional tail
 * longer than what replaced it cut. */
static void cut_provisional(tp_ofile *f) {
    if (!f->size || f->error) return;
    off_t end = fflush(f->plain) == 0 ? ftello(f->plain) : -1;
    if (end < 0 || (end < f->size && ftruncate(fileno(f->plain), end) != 0))
        f->error = errno ? errno : EIO;
}

/* Flushes and closes the streams, with SIGXFSZ blocked; 0, or -1 with f->error set. */
static int close_streams(tp_ofile *f) {
    xfsz_guard g;
    block_xfsz(&g);
    cut_provisional(f);
    if (f->gz) {
        errno = 0;
        int rc = gzclose(f->gz);
        if (rc != Z_OK && !f->error) f->error = rc == Z_ERRNO && errno ? errno : -1;
    }
    if (fflush(f->plain) != 0 && !f->error) f->error = errno ? errno : EIO;
    if (fclose(f->plain) != 0 && !f->error) f->error = errno ? errno : EIO;
    unblock_xfsz(&g);
    return f->error ? -1 : 0;
}

static void ofile_free(tp_ofile *f) {
    forget_temporary(f->slot);
    free(f->tmp);
    free(f->path);
    free(f);
}

void tp_fs_random_name(char *out, size_t n) {
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    unsigned char bytes[TMP_RANDOM];
    if (getrandom(bytes, sizeof(bytes), GRND_NONBLOCK) != (ssize_t)sizeof(bytes)) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        uint64_t x = (uint64_t)t.tv_nsec ^ ((uint64_t)t.tv_sec << 30) ^ (uintptr_t)&t ^
                     ((uint64_t)getpid() << 17);
        for (size_t i = 0; i < sizeof(bytes); i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            bytes[i] = (unsigned char)x;
        }
    }
    for (size_t i = 0; i < n && i < sizeof(bytes); i++)
        out[i] = alphabet[bytes[i] % (sizeof(alphabet) - 1)];
}

/* The file being replaced keeps its permissions (a report made 0600 stays 0600) when it is a
 * regular file of this user; a link or another user's file lends none. */
static void keep_mode(int fd, const char *path) {
    struct stat st;
    if (lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid())
        (void)fchmod(fd, st.st_mode & 07777); /* a failure leaves fopen's mode: no harm */
}

/* Creates "<path>.tmp.<random>" that did not exist: O_EXCL and O_NOFOLLOW, so a name planted in
 * a shared folder (a symlink, a file) is never opened; mode 0666 less the umask, as fopen, or
 * that of the file it replaces. */
static FILE *create_temporary(char *tmp, const char *path) {
    size_t base = strlen(path);
    memcpy(tmp, path, base);
    memcpy(tmp + base, ".tmp.", 5);
    for (int i = 0; i < TMP_TRIES; i++) {
        tp_fs_random_name(tmp + base + 5, TMP_RANDOM);
        tmp[base + 5 + TMP_RANDOM] = '\0';
        int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) continue;
        if (fd < 0) return NULL;
        keep_mode(fd, path);
        FILE *fp = fdopen(fd, "wb");
        if (!fp) {
            int e = errno;
            close(fd);
            unlink(tmp);
            errno = e;
        }
        return fp;
    }
    errno = EEXIST;
    return NULL;
}

tp_ofile *tp_ofile_open(const char *path, int gzip, char *err, size_t errlen) {
    tp_ofile *f = calloc(1, sizeof(*f));
    if (f) f->slot = -1;
    if (f) f->tmp = malloc(strlen(path) + TMP_SUFFIX);
    if (f) f->path = strdup(path);
    if (!f || !f->tmp || !f->path) {
        set_err(err, errlen, "write", path, ENOMEM);
        if (f) ofile_free(f);
        return NULL;
    }
    f->plain = create_temporary(f->tmp, path);
    if (f->plain) f->slot = remember_temporary(f->tmp);
    if (f->plain && gzip) {
        /* Level 1: traces compress about 10x at it, and writing must not stall a run. */
        f->gz = gzdopen(dup(fileno(f->plain)), "wb1");
        if (!f->gz) {
            fclose(f->plain);
            f->plain = NULL;
            unlink(f->tmp);
            errno = ENOMEM;
        }
    }
    if (!f->plain) {
        set_err(err, errlen, "write", path, errno);
        ofile_free(f);
        return NULL;
    }
    return f;
}

int tp_ofile_write(tp_ofile *f, const void *data, size_t len) {
    if (f->error) return -1;
    if (len == 0) return 0;
    xfsz_guard g;
    block_xfsz(&g);
    if (f->gz) {
        if (gzwrite(f->gz, data, (unsigned)len) != (int)len) {
            int zerr;
            gzerror(f->gz, &zerr);
            f->error = zerr == Z_ERRNO && errno ? errno : -1;
        }
    } else if (fwrite(data, 1, len, f->plain) != len) {
        f->error = errno ? errno : EIO;
    }
    unblock_xfsz(&g);
    return f->error ? -1 : 0;
}

/* write(2) of the whole buffer (a short write goes on, EINTR retried). */
static int write_all(int fd, const char *p, size_t len) {
    while (len) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return -1;
        p += n, len -= (size_t)n;
    }
    return 0;
}

int tp_ofile_write_provisional(tp_ofile *f, const void *data, size_t len, size_t tail) {
    assert(!f->gz && tail <= len);
    if (f->error) return -1;
    xfsz_guard g;
    block_xfsz(&g);
    int fd = fileno(f->plain);
    off_t at = fflush(f->plain) == 0 ? ftello(f->plain) : -1;
    /* One write: the file is torn only if the process dies inside this call. */
    if (at < 0 || write_all(fd, data, len) != 0) {
        f->error = errno ? errno : EIO;
    } else {
        off_t end = at + (off_t)len;
        if (f->size > end && ftruncate(fd, end) != 0) f->error = errno; /* a shorter tail */
        f->size = end;
        if (!f->error && fseeko(f->plain, end - (off_t)tail, SEEK_SET) != 0) f->error = errno;
    }
    unblock_xfsz(&g);
    return f->error ? -1 : 0;
}

int tp_ofile_publish(tp_ofile *f, const char *path) {
    char *p = strdup(path);
    if (!p || rename(f->tmp, p) != 0) {
        free(p);
        return -1;
    }
    free(f->tmp);
    f->tmp = p;
    forget_temporary(f->slot); /* a valid file now: left to be found if the process dies */
    f->slot = -1;
    return 0;
}

int tp_ofile_rename_to(tp_ofile *f, const char *path) {
    char *p = strdup(path);
    if (!p) return -1;
    free(f->path);
    f->path = p;
    return 0;
}

int tp_ofile_commit(tp_ofile *f, char *err, size_t errlen) {
    close_streams(f);
    if (!f->error && rename(f->tmp, f->path) != 0) f->error = errno;
    if (f->error) {
        set_err(err, errlen, "write", f->path, f->error);
        unlink(f->tmp);
        ofile_free(f);
        return -1;
    }
    ofile_free(f);
    return 0;
}

void tp_ofile_abort(tp_ofile *f) {
    close_streams(f);
    unlink(f->tmp);
    ofile_free(f);
}

int tp_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    tp_ofile *f = tp_ofile_open(path, 0, err, errlen);
    if (!f) return -1;
    tp_ofile_write(f, data, len);
    return tp_ofile_commit(f, err, errlen);
}
