/* fs.h - files that appear whole or not at all.
 *
 * Every artifact tprof writes goes to "<path>.tmp.<random>" first and is renamed over <path>
 * only after the last byte was written and closed without error, so a reader never sees half a
 * file and a failed write (full disk, unwritable directory, a file-size limit) leaves nothing
 * behind. The temporary name is unpredictable and created with O_EXCL|O_NOFOLLOW, so a symlink
 * or file planted in a shared folder is never written through; a symlink at <path> itself is
 * replaced, never followed (the CLI resolves an -o link first: cli/output.c). A regular file of
 * this user at <path> keeps its mode. Errors come back as one line
 * naming the path and the system's reason.
 *
 * During each call that may write (tp_ofile_write, commit, abort), SIGXFSZ is blocked in the
 * calling thread: under RLIMIT_FSIZE a write then fails with EFBIG (reported like ENOSPC) instead
 * of killing the host, and a SIGXFSZ those writes raised is discarded before the thread's mask is
 * restored. Per call, so a file may be written and committed by different threads (one at a
 * time): the run's top-level trace is written by the writer thread window by window and
 * committed by the thread ending the run. */
#ifndef TP_UTIL_FS_H
#define TP_UTIL_FS_H

#include <stddef.h>

typedef struct tp_ofile tp_ofile;

/* Creates path and its missing parents, like mkdir -p. 0, or -1 with err filled. */
int tp_mkdirs(const char *path, char *err, size_t errlen);
/* Opens a temporary file that will become `path`; gzip != 0 compresses the stream. */
tp_ofile *tp_ofile_open(const char *path, int gzip, char *err, size_t errlen);
/* 0, or -1 once any write failed (later writes are ignored, commit then fails). */
int tp_ofile_write(tp_ofile *f, const void *data, size_t len);
/* The name f will be renamed to, changed before commit (a streamed trace, named when it ends); it
 * must be in the same folder. 0, or -1 when out of memory (the name is then unchanged). */
int tp_ofile_rename_to(tp_ofile *f, const char *path);
/* A file valid at every step of its writing (a streamed trace, docs/CONFIG.md's `stream`): data
 * (len bytes) is written in one write(2) at the current position, its last `tail` bytes
 * provisional: the next write starts where they start, overwriting them, and commit cuts the
 * file where the last write ended, so the provisional tail never outlives what replaced it.
 * Not for a gzip tp_ofile (the caller compresses). 0, or -1 once any write failed. */
int tp_ofile_write_provisional(tp_ofile *f, const void *data, size_t len, size_t tail);
/* Renames the temporary file to `path` (same folder) before commit, so that a file valid while
 * it is written (tp_ofile_write_provisional) is found under that name if the process dies: a
 * signal handler's tp_fs_discard_temporaries leaves it; abort removes it; commit renames it to
 * the final name. 0, or -1 (the file keeps its temporary name). */
int tp_ofile_publish(tp_ofile *f, const char *path);
/* Closes and renames into place; on any error removes the temporary file. Frees f. */
int tp_ofile_commit(tp_ofile *f, char *err, size_t errlen);
/* Closes and removes the temporary file. Frees f. */
void tp_ofile_abort(tp_ofile *f);
/* Async-signal-safe: removes the temporary files of every tp_ofile open now (a signal handler
 * about to let the process die calls it, so no ".tmp." file outlives it). */
void tp_fs_discard_temporaries(void);
/* n (at most 12) random file-name characters [A-Za-z0-9], not NUL-terminated: from the kernel,
 * or, where getrandom fails, from the clock and the address space (O_EXCL still keeps a guessed
 * name from being used against us). */
void tp_fs_random_name(char *out, size_t n);
/* The whole of data as the file `path`, through tp_ofile. */
int tp_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);

#endif
