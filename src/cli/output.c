/* output.c - where a verb's report goes (standard output or -o FILE) and how small files are read
 * whole. A report file is replaced atomically, so a failed run never leaves half a report where a
 * CI job or a dashboard looks. */
#include "cli/cli.h"

#include "util/fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Writes to an open stream; 0, or -1 with errno set. */
static int put_stream(FILE *f, const tp_buf *out) {
    if (out->len && fwrite(out->data, 1, out->len, f) != out->len) return -1;
    return fflush(f);
}

char *tp_cli_output_target(const char *path) {
    struct stat st;
    int link = lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
    char *target = link ? realpath(path, NULL) : strdup(path);
    if (!target && !link)
        tp_cli_error("out of memory");
    else if (!target)
        tp_cli_error("%s: a symbolic link to %s, which cannot be written: %s", path,
                     errno == ENOENT ? "a missing file" : "a file", strerror(errno));
    return target;
}

/* path, a file (not a link): a regular one replaced whole, anything else written directly. */
static int write_file(const char *path, const tp_buf *out) {
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a device or a pipe: a temporary file beside it cannot be renamed over it */
        FILE *f = fopen(path, "wb");
        int rc = f ? put_stream(f, out) : -1;
        int saved = errno;
        if (f && fclose(f) && !rc) rc = -1, saved = errno;
        if (rc) return tp_cli_error("%s: cannot write: %s", path, strerror(saved));
        return TP_EXIT_OK;
    }
    char err[1024];
    if (tp_write_file(path, out->data, out->len, err, sizeof(err))) return tp_cli_error("%s", err);
    return TP_EXIT_OK;
}

int tp_cli_write(const char *path, const tp_buf *out) {
    if (out->failed) return tp_cli_error("out of memory while writing the report");
    if (!path || strcmp(path, "-") == 0) {
        if (put_stream(stdout, out))
            return tp_cli_error("<stdout>: cannot write: %s", strerror(errno));
        return TP_EXIT_OK;
    }
    char *target = tp_cli_output_target(path);
    int rc = target ? write_file(target, out) : TP_EXIT_ERROR;
    free(target);
    return rc;
}

/* The folder that would hold path (its dirname), stat'ed. */
static int stat_parent(const char *path, struct stat *st) {
    const char *slash = strrchr(path, '/');
    if (!slash) return stat(".", st);
    if (slash == path) return stat("/", st);
    char dir[4096];
    size_t n = (size_t)(slash - path);
    if (n >= sizeof(dir)) return -1;
    memcpy(dir, path, n);
    dir[n] = '\0';
    return stat(dir, st);
}

int tp_cli_check_output(const char *output, char *const *inputs, size_t n) {
    if (!output || strcmp(output, "-") == 0) return TP_EXIT_OK;
    struct stat out, parent, in;
    int exists = stat(output, &out) == 0 && S_ISREG(out.st_mode);
    int has_parent = stat_parent(output, &parent) == 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(inputs[i], "-") == 0 || stat(inputs[i], &in) != 0) continue;
        if (exists && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
            return tp_cli_error("%s: the output is also an input: choose another -o FILE", output);
        /* a report written into a run directory would be read as a trace of it next time */
        if (S_ISDIR(in.st_mode) && has_parent && in.st_dev == parent.st_dev &&
            in.st_ino == parent.st_ino)
            return tp_cli_error("%s: the output would go into the input run directory %s: "
                                "choose another -o FILE",
                                output, inputs[i]);
    }
    return TP_EXIT_OK;
}

int tp_cli_read_file(const char *path, tp_buf *out, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        return -1;
    }
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
        tp_buf_put(out, chunk, n);
    int bad = ferror(f), saved = errno;
    fclose(f);
    tp_buf_putc(out, '\0');
    if (bad || out->failed) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(bad ? saved : ENOMEM));
        return -1;
    }
    out->len--; /* the NUL terminates but does not count */
    return 0;
}
