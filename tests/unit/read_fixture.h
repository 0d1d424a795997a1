/* read_fixture.h - a fixture's whole text, gzip or plain (gzread reads both), for the reader
 * tests that cut or re-read real traces (test_trace_reader_fast.c, test_trace_reader_split.c). */
#ifndef TP_READ_FIXTURE_H
#define TP_READ_FIXTURE_H

#include "util/buf.h"

#include <zlib.h>

/* The file's bytes, malloc'ed (the caller frees), length in *len; NULL when it cannot be opened. */
static inline char *read_fixture(const char *path, size_t *len) {
    gzFile f = gzopen(path, "rb");
    if (!f) return NULL;
    tp_buf b;
    tp_buf_init(&b);
    char chunk[1 << 16];
    int n;
    while ((n = gzread(f, chunk, sizeof(chunk))) > 0)
        tp_buf_put(&b, chunk, (size_t)n);
    gzclose(f);
    *len = b.len;
    return b.data;
}

#endif
