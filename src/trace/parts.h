/* parts.h - the parallel reader: a plain JSON trace read by several threads (parts.c). */
#ifndef TP_TRACE_PARTS_H
#define TP_TRACE_PARTS_H

#include "model/model.h"
#include "trace/input.h"
#include "trace/reader.h"

#include <stddef.h>

/* Where the parts read their bytes: a file (path) or memory (mem, of the input's size). */
typedef struct tp_split_src {
    const char *path;
    const void *mem;
    size_t cap; /* each part's first buffer size */
} tp_split_src;

enum { TP_PARTS_DECLINED = 1 };

/* Reads the input in (opened on src) with o's threads: 0, or -1 with err set as
 * tp_trace_read_file says; TP_PARTS_DECLINED, the model untouched and in unread, when the
 * input is not for several threads (one thread asked or available, gzip, standard input,
 * too small, no boundary found). */
int tp_parts_read(const tp_split_src *src, tp_input *in, const char *name, tp_model *m,
                  const tp_read_opts *o, char *err, size_t errlen);

#endif
