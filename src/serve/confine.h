/* confine.h - opening what a request names, never outside the served directory.
 *
 * The served directory is opened once (its fd is the root); every name of a request is then
 * opened with openat() from the previous one with O_NOFOLLOW, so a symbolic link anywhere on
 * the way (a run directory, a file) is refused rather than followed out of it, and ".." never
 * reaches here (serve/path.c refuses it). Only regular files and directories are opened. */
#ifndef TP_SERVE_CONFINE_H
#define TP_SERVE_CONFINE_H

#include <stddef.h>
#include <sys/stat.h>

/* The regular file at the names seg[0..n) (n >= 1) below root_fd, opened read-only, its stat
 * in *st. The fd, or -1 with errno set (ENOENT, ELOOP for a link, EISDIR/EACCES otherwise). */
int tp_serve_open_file(int root_fd, const char *const *seg, size_t n, struct stat *st);

/* The directory `name` right below root_fd, not through a link. The fd, or -1 with errno. */
int tp_serve_open_dir(int root_fd, const char *name);

#endif
