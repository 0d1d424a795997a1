/* gunzip.h - gzip decompression for the trace reader, on a second thread when asked.
 *
 * Decompressing a large trace costs about as much as parsing it, so the two run on two cores:
 * a producer thread inflates into a ring of blocks while the reader parses the previous ones.
 * Concatenated gzip members are read as one stream (as zcat does); bytes after the last member
 * that do not start another member are ignored. */
#ifndef TP_TRACE_GUNZIP_H
#define TP_TRACE_GUNZIP_H

#include <stddef.h>

/* Where compressed bytes come from: up to cap bytes into dst; the count, 0 at the end, -1 on
 * error with a message in err (errlen bytes). */
typedef ptrdiff_t (*tp_raw_read)(void *ctx, unsigned char *dst, size_t cap, char *err,
                                 size_t errlen);

typedef struct tp_gunzip tp_gunzip;

/* threaded: decompress ahead on a thread (it falls back to inline when none can start). NULL
 * when out of memory. */
tp_gunzip *tp_gunzip_new(tp_raw_read raw, void *ctx, int threaded);
/* Up to cap decompressed bytes into dst: the count, 0 at the end, -1 on error. */
ptrdiff_t tp_gunzip_read(tp_gunzip *g, char *dst, size_t cap);
/* The error after a -1 ("truncated gzip data", "corrupt gzip data: ...", ...). */
const char *tp_gunzip_error(const tp_gunzip *g);
/* After a -1: whether the data ended inside a member ("truncated gzip data": a file still being
 * written, or its writer killed mid-write), every byte inflated before the cut returned first. */
int tp_gunzip_cut_short(const tp_gunzip *g);
/* Stops the thread and frees g. */
void tp_gunzip_free(tp_gunzip *g);

#endif
