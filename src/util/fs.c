/* fs.c - temporary-name-then-rename file writing and mkdir -p (see fs.h). */
#include "util/fs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

struct tp_ofile {
    FILE *plain;
    gzFile gz;
    int error;  /* errno of the first failure, or -1 for a zlib error without errno */
    char *path; /* final name */
    char *tmp;  /* temporary name */
};

static void set_err(char *err, size_t errlen, const char *what, const char *path, int errnum) {
    if (!err || !errlen) return;
    snprintf(err, errlen, "cannot %s %s: %s", what, path,
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

static void ofile_free(tp_ofile *f) {
    free(f->tmp);
    free(f->path);
    free(f);
}

tp_ofile *tp_ofile_open(const char *path, int gzip, char *err, size_t errlen) {
    tp_ofile *f = calloc(1, sizeof(*f));
    size_t tmplen = strlen(path) + 32;
    if (f) f->tmp = malloc(tmplen);
    if (f) f->path = strdup(path);
    if (!f || !f->tmp || !f->path) {
        set_err(err, errlen, "write", path, ENOMEM);
        if (f) ofile_free(f);
        return NULL;
    }
    snprintf(f->tmp, tmplen, "%s.tmp.%ld", path, (long)getpid());
    f->plain = fopen(f->tmp, "wb");
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
    if (f->gz) {
        if (gzwrite(f->gz, data, (unsigned)len) != (int)len) {
            int zerr;
            gzerror(f->gz, &zerr);
            f->error = zerr == Z_ERRNO && errno ? errno : -1;
        }
    } else if (fwrite(data, 1, len, f->plain) != len) {
        f->error = errno ? errno : EIO;
    }
    return f->error ? -1 : 0;
}

int tp_ofile_commit(tp_ofile *f, char *err, size_t errlen) {
    if (f->gz) {
        errno = 0;
        int rc = gzclose(f->gz);
        if (rc != Z_OK && !f->error) f->error = rc == Z_ERRNO && errno ? errno : -1;
    }
    if (fflush(f->plain) != 0 && !f->error) f->error = errno ? errno : EIO;
    if (fclose(f->plain) != 0 && !f->error) f->error = errno ? errno : EIO;
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
    if (f->gz) gzclose(f->gz);
    fclose(f->plain);
    unlink(f->tmp);
    ofile_free(f);
}

int tp_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen) {
    tp_ofile *f = tp_ofile_open(path, 0, err, errlen);
    if (!f) return -1;
    tp_ofile_write(f, data, len);
    return tp_ofile_commit(f, err, errlen);
}
