/* input.c - trace bytes from a file, standard input or memory, gzip detected by its magic
 * (see input.h). */
#include "trace/input.h"

#include "trace/gunzip.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct tp_input {
    int fd; /* -1 for memory */
    int own_fd;
    const unsigned char *mem;
    size_t mem_len;
    uint64_t raw_pos; /* bytes consumed from the file or memory; written by the gzip thread */
    uint64_t raw_size;
    unsigned char head[2]; /* bytes read from fd to look for the gzip magic, delivered first */
    size_t head_len, head_pos;
    tp_gunzip *gz; /* NULL for plain JSON */
    char err[256];
};

static ptrdiff_t raw_read(void *ctx, unsigned char *dst, size_t cap, char *err, size_t errlen) {
    tp_input *in = ctx;
    uint64_t pos = __atomic_load_n(&in->raw_pos, __ATOMIC_RELAXED);
    size_t n;
    if (in->head_pos < in->head_len) {
        n = in->head_len - in->head_pos;
        if (n > cap) n = cap;
        memcpy(dst, in->head + in->head_pos, n);
        in->head_pos += n;
        return (ptrdiff_t)n;
    }
    if (in->mem) {
        n = in->mem_len - (size_t)pos;
        if (n > cap) n = cap;
        memcpy(dst, in->mem + pos, n);
    } else {
        ssize_t r;
        do
            r = read(in->fd, dst, cap);
        while (r < 0 && errno == EINTR);
        if (r < 0) {
            snprintf(err, errlen, "read error: %s", strerror(errno));
            return -1;
        }
        n = (size_t)r;
    }
    __atomic_store_n(&in->raw_pos, pos + n, __ATOMIC_RELAXED);
    return (ptrdiff_t)n;
}

static int sniff_gzip(tp_input *in, int threaded) {
    const unsigned char *h = in->mem ? in->mem : in->head;
    size_t n = in->mem ? in->mem_len : in->head_len;
    if (n < 2 || h[0] != 0x1f || h[1] != 0x8b) return 0;
    in->gz = tp_gunzip_new(raw_read, in, threaded);
    if (!in->gz) {
        snprintf(in->err, sizeof(in->err), "out of memory");
        return -1;
    }
    return 0;
}

tp_input *tp_input_mem(const void *data, size_t len) {
    tp_input *in = calloc(1, sizeof(*in));
    if (!in) return NULL;
    in->fd = -1;
    in->mem = data ? data : (const void *)"";
    in->mem_len = data ? len : 0;
    in->raw_size = in->mem_len;
    /* Inline inflate: memory inputs are small (tests, fuzzing), a thread would cost more. */
    if (sniff_gzip(in, 0) != 0) {
        free(in);
        return NULL;
    }
    return in;
}

tp_input *tp_input_open(const char *path, char *err, size_t errlen) {
    tp_input *in = calloc(1, sizeof(*in));
    if (!in) {
        snprintf(err, errlen, "cannot open: %s", strerror(ENOMEM));
        return NULL;
    }
    in->fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
    in->own_fd = in->fd != STDIN_FILENO;
    struct stat st = {0};
    int errnum = 0;
    if (in->fd < 0 || fstat(in->fd, &st) != 0)
        errnum = errno ? errno : EIO;
    else if (S_ISDIR(st.st_mode))
        errnum = EISDIR;
    if (errnum) {
        snprintf(err, errlen, "cannot open: %s", strerror(errnum));
        tp_input_close(in);
        return NULL;
    }
    if (S_ISREG(st.st_mode)) {
        in->raw_size = (uint64_t)st.st_size;
        posix_fadvise(in->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    }
    while (in->head_len < sizeof(in->head)) {
        ptrdiff_t n =
            raw_read(in, in->head + in->head_len, sizeof(in->head) - in->head_len, err, errlen);
        if (n <= 0) {
            if (n == 0) break;
            tp_input_close(in);
            return NULL;
        }
        in->head_len += (size_t)n;
    }
    if (sniff_gzip(in, 1) != 0) {
        snprintf(err, errlen, "%s", in->err);
        tp_input_close(in);
        return NULL;
    }
    return in;
}

tp_input *tp_input_open_at(const char *path, uint64_t offset, char *err, size_t errlen) {
    tp_input *in = calloc(1, sizeof(*in));
    if (!in) {
        snprintf(err, errlen, "cannot open: %s", strerror(ENOMEM));
        return NULL;
    }
    in->own_fd = 1;
    in->fd = open(path, O_RDONLY | O_CLOEXEC);
    if (in->fd < 0 || lseek(in->fd, (off_t)offset, SEEK_SET) < 0) {
        snprintf(err, errlen, "cannot open: %s", strerror(errno));
        tp_input_close(in);
        return NULL;
    }
    posix_fadvise(in->fd, (off_t)offset, 0, POSIX_FADV_SEQUENTIAL);
    struct stat st;
    if (fstat(in->fd, &st) == 0 && S_ISREG(st.st_mode)) in->raw_size = (uint64_t)st.st_size;
    in->raw_pos = offset;
    return in;
}

uint64_t tp_input_splittable(const tp_input *in) {
    if (in->gz || (!in->mem && !in->own_fd)) return 0;
    return in->raw_size;
}

ptrdiff_t tp_input_read(tp_input *in, char *dst, size_t cap) {
    if (in->gz) return tp_gunzip_read(in->gz, dst, cap);
    return raw_read(in, (unsigned char *)dst, cap, in->err, sizeof(in->err));
}

const char *tp_input_error(const tp_input *in) {
    return in->gz && !in->err[0] ? tp_gunzip_error(in->gz) : in->err;
}

int tp_input_cut_short(const tp_input *in) {
    return in->gz && !in->err[0] && tp_gunzip_cut_short(in->gz);
}

void tp_input_progress(const tp_input *in, uint64_t *pos, uint64_t *size) {
    *pos = __atomic_load_n(&in->raw_pos, __ATOMIC_RELAXED);
    *size = in->raw_size;
}

void tp_input_close(tp_input *in) {
    if (!in) return;
    tp_gunzip_free(in->gz);
    if (in->own_fd && in->fd >= 0) close(in->fd);
    free(in);
}
