/* confine.c - opening what a request names, never outside the served directory (confine.h). */
#include "serve/confine.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

int tp_serve_open_dir(int root_fd, const char *name) {
    return openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

int tp_serve_open_file(int root_fd, const char *const *seg, size_t n, struct stat *st) {
    assert(n >= 1);
    int dir = root_fd;
    for (size_t i = 0; i + 1 < n; i++) {
        int next = tp_serve_open_dir(dir, seg[i]);
        if (dir != root_fd) close(dir);
        if (next < 0) return -1;
        dir = next;
    }
    /* O_NONBLOCK: a FIFO planted in the directory must not hang the open (it is then refused
     * as not regular); a regular file ignores the flag. */
    int fd = openat(dir, seg[n - 1], O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    int saved = errno;
    if (dir != root_fd) close(dir);
    errno = saved;
    if (fd < 0) return -1;
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        close(fd);
        errno = S_ISDIR(st->st_mode) ? EISDIR : EACCES;
        return -1;
    }
    return fd;
}
