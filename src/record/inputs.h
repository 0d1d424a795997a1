/* inputs.h - an op's inputs as compact bytes on the hot path, turned into Kineto's "Input Dims",
 * "Input type" and "Concrete Inputs" texts (and torch's FLOPs) on the writer thread.
 *
 * torch's C++ op observer (python/observer/observer.cpp) sees every op's inputs as IValues.
 * Printing them as JSON text at once cost more than torch.profiler's whole callback, which keeps
 * the same metadata compact and formats it after the profile: so does tprof. The observer
 * encodes the inputs into the bytes below (plain C, so that the C++ observer includes this file
 * too), tp_op_inputs copies them into the thread's record buffer (one TP_REC_INPUTS record, then
 * the bytes in raw records), and the window converter formats them with tp_inputs_format and
 * counts FLOPs from the same texts the trace reader reads (model/flops.h).
 *
 * The bytes: one entry per input, a tag byte and its operands. Counts and lengths are LEB128
 * varints, values zigzag varints (LEB128 of (v << 1) ^ (v >> 63)): sizes and small scalars take
 * one byte.
 *   TP_IN_TENSOR      dtype name (8-byte pointer into c10's static type names, stable for the
 *                     process, not NUL-terminated), its length, ndim, sizes
 *   TP_IN_UNDEFINED   an undefined tensor: no operands
 *   TP_IN_TENSORS     count, then count entries, each TP_IN_TENSOR or TP_IN_UNDEFINED
 *   TP_IN_INT         value
 *   TP_IN_FALSE, TP_IN_TRUE
 *   TP_IN_DOUBLE      the double's 8 bytes
 *   TP_IN_INTS        count, values
 *   TP_IN_TEXT_SCALAR, TP_IN_TEXT_LIST
 *                     a scalar or a list of scalars torch printed (complex, symbolic, double and
 *                     bool lists: rare): length, the text's bytes
 *   TP_IN_OTHER       anything else (None, a string, a device...): no operands
 * Each becomes, in the three lists: TP_IN_TENSOR its sizes, its dtype name, ""; TP_IN_UNDEFINED
 * [], "", ""; TP_IN_TENSORS the list of its tensors' sizes, "TensorList", ""; the scalars [],
 * "Scalar" and the value as torch prints an IValue ("1", "True", "0.5", "1."); the lists [],
 * "ScalarList", "[1, 2]"; TP_IN_OTHER [], "", "". */
#ifndef TP_RECORD_INPUTS_H
#define TP_RECORD_INPUTS_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/buf.h"

enum tp_in_tag {
    TP_IN_TENSOR = 1,
    TP_IN_UNDEFINED,
    TP_IN_TENSORS,
    TP_IN_INT,
    TP_IN_FALSE,
    TP_IN_TRUE,
    TP_IN_DOUBLE,
    TP_IN_INTS,
    TP_IN_TEXT_SCALAR,
    TP_IN_TEXT_LIST,
    TP_IN_OTHER,
};

/* torch's traces keep a list input only up to this many items: a longer tensor list has "[]"
 * for its sizes (still "TensorList"), a longer scalar list is written as neither type nor value
 * (measured on torch 2.13's traces). The observer encodes them so: a TP_IN_TENSORS of count 0,
 * a TP_IN_OTHER. */
#define TP_IN_LIST_MAX 30

/* What the converter makes of an op's inputs (tp_op_inputs' flags). */
#define TP_INPUTS_SHAPES 1 /* "Input Dims", "Input type" and "Concrete Inputs" */
#define TP_INPUTS_FLOPS  2 /* the op's FLOPs by torch's formula, where it has one */

/* Bytes one varint may take. */
#define TP_IN_VARINT_MAX 10

/* A count or a length (plain LEB128), and a value (zigzag first, so that small negative values
 * take a byte too). */
static inline uint8_t *tp_in_put_count(uint8_t *p, uint64_t n) {
    while (n >= 0x80) {
        *p++ = (uint8_t)(n | 0x80);
        n >>= 7;
    }
    *p++ = (uint8_t)n;
    return p;
}
static inline uint8_t *tp_in_put_varint(uint8_t *p, int64_t v) {
    return tp_in_put_count(p, ((uint64_t)v << 1) ^ (0 - (uint64_t)(v < 0))); /* zigzag */
}

static inline uint8_t *tp_in_put_ptr(uint8_t *p, const void *ptr) {
    memcpy(p, &ptr, sizeof(ptr));
    return p + sizeof(ptr);
}

/* Records the calling thread's innermost kept range's inputs: bytes[0..len) as above, copied.
 * op is the range's name (for FLOPs). Inputs too large for the record buffer (over
 * TP_INPUTS_MAX_BYTES) are formatted at once instead, to the same texts. Call only right after
 * tp_op_begin kept the op. */
#define TP_INPUTS_MAX_BYTES 16384
void tp_op_inputs(const char *op, const void *bytes, size_t len, int flags);

/* The three texts of an op's inputs, as Kineto writes them (JSON arrays, NUL-terminated). */
typedef struct tp_inputs_text {
    tp_buf dims, types, concrete;
} tp_inputs_text;

/* Formats bytes[0..len) into t (its buffers reused from call to call: zero it before the first
 * and free it with tp_inputs_text_free). Returns 0, or -1 for bytes that are not a whole encoding
 * or when out of memory. */
int tp_inputs_format(const uint8_t *bytes, size_t len, tp_inputs_text *t);
void tp_inputs_text_free(tp_inputs_text *t);
/* The FLOPs of op `op` with those inputs by torch's formula (model/flops.h, the trace reader's
 * too); 0 when torch counts none for it, -1 when the texts lack what the formula reads. */
int64_t tp_inputs_flops(const char *op, const tp_inputs_text *t);

#endif
