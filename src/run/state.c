/* state.c - a run directory's state and change key (state.h).
 *
 * The change key folds, for each run file, its name, size, modification and change times into
 * one order-independent sum, plus the directory's own times: tprof writes every artifact under
 * a temporary name and renames it into place, so a new window changes the directory and adds a
 * name; a file rewritten in place changes its own times. Reading costs one fstatat per file,
 * which is what lets the dashboard poll every second without analysing anything again. An
 * unfinished trace (a streamed window's .partial, rewritten every few milliseconds while it
 * records) counts by its name alone: the window shows as it was when first read, and again when
 * it ends and is renamed, rather than the dashboard reading the growing file on every poll.
 *
 * A run directory with a tprof/ folder (a real directory, opened without following a link, as
 * rundir.c lists it) is read there: its top level then holds only the traces for other tools,
 * which copy the windows of tprof/. */
#include "run/state.h"

#include "run/runfiles.h"
#include "util/hash.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int64_t ns_of(struct timespec t) {
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static uint64_t entry_key(const char *name, const struct stat *st) {
    uint64_t parts[4] = {tp_hash_bytes(name, strlen(name)), (uint64_t)st->st_size,
                         (uint64_t)ns_of(st->st_mtim), (uint64_t)ns_of(st->st_ctim)};
    return tp_hash_bytes(parts, sizeof(parts));
}

/* Folds one directory entry into the state; returns 1 when it is a run file. */
static int add_entry(int dfd, const char *name, tp_run_state *r) {
    int64_t rank;
    int kind = tp_run_file_kind(name, &rank);
    if (kind < 0) return 0;
    struct stat st;
    if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) return 0; /* removed meanwhile */
    if (S_ISLNK(st.st_mode)) r->has_link = 1;
    if (!S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) return 0;
    r->key += tp_run_is_partial(name) ? tp_hash_bytes(name, strlen(name)) : entry_key(name, &st);
    if (ns_of(st.st_mtim) > r->mtime_ns) r->mtime_ns = ns_of(st.st_mtim);
    if (kind == TP_RUN_TRACE) r->windows++;
    if (kind == TP_RUN_SUMMARY) r->partial = 0;
    return 1;
}

int tp_run_state_read(int dfd, tp_run_state *out) {
    struct stat st;
    int sub = openat(dfd, TP_RUN_FILES_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub >= 0) {
        close(dfd);
        dfd = sub;
    }
    DIR *dh = fstat(dfd, &st) == 0 ? fdopendir(dfd) : NULL;
    if (!dh) {
        close(dfd);
        return -1;
    }
    *out = (tp_run_state){.partial = 1, .mtime_ns = ns_of(st.st_mtim)};
    out->key = tp_hash_mix((uint64_t)ns_of(st.st_mtim) ^ (uint64_t)ns_of(st.st_ctim));
    size_t files = 0;
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        if (e->d_name[0] == '.') continue; /* ".", "..", hidden files: none is a run file */
        files += (size_t)add_entry(dfd, e->d_name, out);
    }
    closedir(dh); /* closes dfd */
    return files > 0 ? 0 : -1;
}
