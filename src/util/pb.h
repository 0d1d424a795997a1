/* pb.h - the protocol buffers wire format, by hand: the few primitives a writer and a reader of
 * one known message set need (varints, 64-bit fixed values, length-delimited fields, nesting).
 *
 * Writing appends to a tp_buf. A nested message is opened with one length byte reserved and
 * closed once its size is known, moving the body up when the length takes more bytes, so
 * lengths are always minimal (the output is the canonical encoding a protobuf library writes).
 * Reading walks a byte range field by field without copying; a malformed field (truncated,
 * varint over 10 bytes, length past the end, wire types 3/4/6/7) stops the walk with an error,
 * never reads outside the range. */
#ifndef TP_UTIL_PB_H
#define TP_UTIL_PB_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

enum tp_pb_wire { TP_PB_VARINT = 0, TP_PB_I64 = 1, TP_PB_LEN = 2, TP_PB_I32 = 5 };

void tp_pb_varint(tp_buf *b, uint64_t v);
static inline void tp_pb_tag(tp_buf *b, uint32_t field, enum tp_pb_wire wire) {
    tp_pb_varint(b, (uint64_t)field << 3 | (uint64_t)wire);
}
/* uint32/uint64/int64/int32/bool/enum fields (an int64 is its two's complement). */
static inline void tp_pb_uint(tp_buf *b, uint32_t field, uint64_t v) {
    tp_pb_tag(b, field, TP_PB_VARINT);
    tp_pb_varint(b, v);
}
/* double and fixed64 fields. */
void tp_pb_fixed64(tp_buf *b, uint32_t field, uint64_t v);
void tp_pb_double(tp_buf *b, uint32_t field, double v);
/* string and bytes fields. */
void tp_pb_bytes(tp_buf *b, uint32_t field, const void *p, size_t n);
/* A nested message: open returns the offset its body starts at, close fixes its length. */
size_t tp_pb_open(tp_buf *b, uint32_t field);
void tp_pb_close(tp_buf *b, size_t body);

/* A reader's position in one message. */
typedef struct tp_pb_in {
    const uint8_t *p, *end;
    int bad; /* a malformed field was met: the walk has stopped */
} tp_pb_in;

/* One field as read: its number and wire type, and the value (a varint or fixed64 in u; a
 * length-delimited field's bytes in data/len; a fixed32 in u). */
typedef struct tp_pb_field {
    uint32_t num;
    enum tp_pb_wire wire;
    uint64_t u;
    const uint8_t *data;
    size_t len;
} tp_pb_field;

static inline tp_pb_in tp_pb_in_of(const void *p, size_t n) {
    return (tp_pb_in){(const uint8_t *)p, (const uint8_t *)p + n, 0};
}
/* The next field: 1, or 0 at the end of the message or on a malformed field (in->bad). */
int tp_pb_next(tp_pb_in *in, tp_pb_field *f);
/* A length-delimited field's bytes as a message to walk. */
static inline tp_pb_in tp_pb_sub(const tp_pb_field *f) {
    return tp_pb_in_of(f->data, f->len);
}
static inline double tp_pb_as_double(const tp_pb_field *f) {
    double d;
    memcpy(&d, &f->u, sizeof(d));
    return d;
}

#endif
