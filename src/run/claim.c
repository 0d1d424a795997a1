/* claim.c - taking a run directory (see claim.h): created whole with its marker, or reused when
 * its marker says tprof made it and no running process holds it; else a suffixed sibling. */
#include "run/claim.h"

#include "util/fs.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_SUFFIX = 100, TMP_RANDOM = 12 };

/* Empty: its being there is the mark (no write, so a file-size limit cannot fail it). */
#define MARKER ".tprof"

typedef enum outcome {
    TAKEN,        /* made now (or an empty folder of ours): nothing to remove */
    TAKEN_REUSED, /* an earlier tprof run's */
    OCCUPIED,     /* something is there: look at it */
    NOT_LINK,     /* a symbolic link: never followed */
    NOT_OURS,     /* no marker, or another user's */
    NOT_FREE,     /* a running process of the same rank holds it */
    FAILED        /* errno says why */
} outcome;

static char *join(const char *a, const char *sep, const char *b) {
    size_t n = strlen(a) + strlen(sep) + strlen(b) + 1;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s%s%s", a, sep, b);
    return p;
}

/* A one-rank run locks the whole marker; rank r of several byte 1 + r: the ranks of one run
 * share a directory, two runs of the same rank (or a one-rank run and any other) never do. */
static int lock_marker(int fd, int64_t rank, int64_t world_size) {
    struct flock l;
    memset(&l, 0, sizeof(l));
    l.l_type = F_WRLCK;
    l.l_whence = SEEK_SET;
    l.l_start = world_size > 1 ? 1 + rank : 0;
    l.l_len = world_size > 1 ? 1 : 0;
    int rc = fcntl(fd, F_OFD_SETLK, &l);
    if (rc != 0 && errno == EINVAL) rc = fcntl(fd, F_SETLK, &l); /* a kernel before 3.15 */
    return rc;
}

/* The marker, created (O_EXCL, never through a link); -1 with errno. */
static int new_marker(const char *dir) {
    char *path = join(dir, "/", MARKER);
    int fd = path ? open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666) : -1;
    free(path);
    return fd;
}

static void undo_fresh(const char *tmp, int fd) {
    char *path = join(tmp, "/", MARKER);
    if (fd >= 0) close(fd);
    if (path) unlink(path);
    rmdir(tmp);
    free(path);
}

/* dir made whole: a folder under a temporary name holding its marker, locked, renamed into place
 * only where nothing is, so no other process ever sees it without its marker. */
static outcome create_fresh(const char *dir, int64_t rank, int64_t world_size, int *fd) {
    char rnd[TMP_RANDOM + 1];
    tp_fs_random_name(rnd, TMP_RANDOM);
    rnd[TMP_RANDOM] = '\0';
    char *tmp = join(dir, ".tmp.", rnd);
    if (!tmp) return errno = ENOMEM, FAILED;
    outcome o = FAILED;
    if (mkdir(tmp, 0777) == 0) {
        *fd = new_marker(tmp);
        if (*fd >= 0 && lock_marker(*fd, rank, world_size) == 0) {
            int rc = renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_NOREPLACE);
            if (rc != 0 && errno == EINVAL) rc = rename(tmp, dir); /* no NOREPLACE here */
            o = rc == 0                                                     ? TAKEN
                : errno == EEXIST || errno == ENOTEMPTY || errno == ENOTDIR ? OCCUPIED
                                                                            : FAILED;
        }
        int e = errno;
        if (o != TAKEN) undo_fresh(tmp, *fd), *fd = -1;
        errno = e;
    }
    free(tmp);
    return o;
}

static int is_empty(const char *dir) {
    DIR *dh = opendir(dir);
    if (!dh) return 0;
    int n = 0;
    for (struct dirent *de; (de = readdir(dh)) && n == 0;)
        n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
    closedir(dh);
    return n == 0;
}

/* What is at dir: a folder of this user with a marker nobody holds (an earlier run), or an empty
 * one of this user (given a marker now), is taken; anything else is not. */
static outcome take_existing(const char *dir, int64_t rank, int64_t world_size, int *fd) {
    struct stat st;
    if (lstat(dir, &st) != 0) return errno == ENOENT ? OCCUPIED : FAILED; /* gone: try again */
    if (S_ISLNK(st.st_mode)) return NOT_LINK;
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid()) return NOT_OURS;
    char *path = join(dir, "/", MARKER);
    if (!path) return errno = ENOMEM, FAILED;
    int reused = 1;
    *fd = open(path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
    if (*fd < 0 && errno == ENOENT && is_empty(dir)) *fd = new_marker(dir), reused = 0;
    free(path);
    struct stat ms;
    outcome o = NOT_OURS;
    if (*fd >= 0 && fstat(*fd, &ms) == 0 && S_ISREG(ms.st_mode) && ms.st_uid == geteuid())
        o = lock_marker(*fd, rank, world_size) == 0 ? (reused ? TAKEN_REUSED : TAKEN) : NOT_FREE;
    if (o != TAKEN && o != TAKEN_REUSED && *fd >= 0) close(*fd), *fd = -1;
    return o;
}

static outcome claim_one(const char *dir, int64_t rank, int64_t world_size, int *fd) {
    outcome o = OCCUPIED;
    for (int tries = 0; o == OCCUPIED && tries < 3; tries++) { /* it may vanish meanwhile */
        o = create_fresh(dir, rank, world_size, fd);
        if (o == OCCUPIED) o = take_existing(dir, rank, world_size, fd);
    }
    return o == OCCUPIED ? NOT_OURS : o;
}

static const char *why(outcome o) {
    switch (o) {
    case NOT_LINK:
        return "is a symbolic link, not followed";
    case NOT_FREE:
        return "is in use by another process with this run_id";
    default:
        return "was not made by tprof (or is another user's): its files are left alone";
    }
}

/* One line: why <output_dir>/<run_id> was not taken and where the run goes; paths by their end,
 * so the line keeps its reason. */
static void warn_elsewhere(const char *output_dir, const char *run_id, outcome o, const char *dir) {
    char *wanted = join(output_dir, "/", run_id);
    char shown[TP_SHOWN_SIZE], shown_dir[TP_SHOWN_SIZE];
    tp_log_warn("%s %s; this run is written to %s", tp_shown_path(wanted ? wanted : run_id, shown),
                why(o), tp_shown_path(dir, shown_dir));
    free(wanted);
}

/* <output_dir>/<run_id>, or <output_dir>/<run_id>-<n> from n = 2 on; NULL when out of memory. */
static char *candidate(const char *output_dir, const char *run_id, int n) {
    char suffix[16] = "";
    if (n > 1) snprintf(suffix, sizeof(suffix), "-%d", n);
    size_t len = strlen(output_dir) + strlen(run_id) + strlen(suffix) + 2;
    char *p = malloc(len);
    if (p) snprintf(p, len, "%s/%s%s", output_dir, run_id, suffix);
    return p;
}

int tp_claim_run_dir(const char *output_dir, const char *run_id, int64_t rank, int64_t world_size,
                     tp_claim *c, char *err, size_t errlen) {
    memset(c, 0, sizeof(*c));
    c->fd = -1;
    if (tp_mkdirs(output_dir, err, errlen)) return -1;
    outcome first = TAKEN;
    for (int n = 1; n <= MAX_SUFFIX; n++) {
        char *dir = candidate(output_dir, run_id, n);
        outcome o = dir ? claim_one(dir, rank, world_size, &c->fd) : (errno = ENOMEM, FAILED);
        if (o == TAKEN || o == TAKEN_REUSED) {
            c->dir = dir;
            c->reused = o == TAKEN_REUSED;
            if (n > 1) warn_elsewhere(output_dir, run_id, first, dir);
            return 0;
        }
        if (o == FAILED) {
            const char *reason = strerror(errno);
            char shown[TP_SHOWN_SIZE];
            snprintf(err, errlen, "cannot create directory %s: %s",
                     tp_shown_path(dir ? dir : run_id, shown), reason);
            free(dir);
            return -1;
        }
        if (n == 1) first = o;
        free(dir);
    }
    char shown[TP_SHOWN_SIZE], shown_id[TP_SHOWN_SIZE];
    snprintf(err, errlen, "no run directory for run_id %s in %s: it and %d suffixed ones are taken",
             tp_shown(run_id, shown_id), tp_shown_path(output_dir, shown), MAX_SUFFIX - 1);
    return -1;
}

void tp_claim_release(tp_claim *c) {
    if (c->dir && c->fd >= 0) close(c->fd); /* the lock goes with it; a zeroed c has none */
    free(c->dir);
    c->dir = NULL;
    c->fd = -1;
    c->reused = 0;
}
