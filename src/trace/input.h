/* input.h - the bytes of a trace: a file, standard input or memory, plain or gzip.
 *
 * gzip is recognised by its magic bytes, never by the file's name. Files are read with read()
 * into the caller's buffer, not mapped: a mapping would count the whole file in the process's
 * resident memory. */
#ifndef TP_TRACE_INPUT_H
#define TP_TRACE_INPUT_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_input tp_input;

/* path "-" is standard input (left open at the end). NULL with err = "cannot open: <reason>". */
tp_input *tp_input_open(const char *path, char *err, size_t errlen);
/* data must stay valid until tp_input_close. NULL when out of memory. */
tp_input *tp_input_mem(const void *data, size_t len);
/* The plain bytes of a file from offset on (a part of the parallel reader: no gzip, no
 * standard input). NULL with err = "cannot open: <reason>". */
tp_input *tp_input_open_at(const char *path, uint64_t offset, char *err, size_t errlen);
/* The size of a plain JSON input that can be split (a regular file or memory, not gzip), else
 * 0. */
uint64_t tp_input_splittable(const tp_input *in);
/* Up to cap bytes of JSON (decompressed) into dst: the count, 0 at the end, -1 on error. */
ptrdiff_t tp_input_read(tp_input *in, char *dst, size_t cap);
/* The error after a -1, one phrase ("read error: ...", "truncated gzip data", ...). */
const char *tp_input_error(const tp_input *in);
/* After a -1: whether the input is gzip cut inside a member, the bytes before the cut returned
 * (a `.partial` trace whose writer was killed mid-write). */
int tp_input_cut_short(const tp_input *in);
/* Progress through the underlying file: bytes consumed and its size (0 when unknown). */
void tp_input_progress(const tp_input *in, uint64_t *pos, uint64_t *size);
void tp_input_close(tp_input *in);

#endif
