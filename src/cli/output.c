/* output.c - where a verb's report goes (standard output or -o FILE) and how small files are read
 * whole. A report file is replaced atomically, so a failed run never leaves half a report where a
 * CI job or a dashboard looks. */
#include "cli/cli.h"

#include "util/fs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

/* Writes to an open stream; 0, or -1 with errno set. */
static int put_stream(FILE *f, const tp_buf *out) {
    if (out->len && fwrite(out->data, 1, out->len, f) != out->len) return -1;
    return fflush(f);
}

int tp_cli_write(const char *path, const tp_buf *out) {
    if (out->failed) return tp_cli_error("out of memory while writing the report");
    if (!path || strcmp(path, "-") == 0) {
        if (put_stream(stdout, out))
            return tp_cli_error("<stdout>: cannot write: %s", strerror(errno));
        return TP_EXIT_OK;
    }
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
