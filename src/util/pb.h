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
#include <string.h>

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
    uint64_t u;
    const uint8_t *data;
    size_t len;
    /* Not next to num: a test of both (f.num == 5 && f.wire == 2) would be compiled to one
     * 8-byte load of the two 4-byte stores, which waits for them to reach the cache. */
    enum tp_pb_wire wire;
} tp_pb_field;

static inline tp_pb_in tp_pb_in_of(const void *p, size_t n) {
    return (tp_pb_in){(const uint8_t *)p, (const uint8_t *)p + n, 0};
}
/* A varint at in->p; 0, or -1 when it runs past the end or over 10 bytes. */
__attribute__((always_inline)) static inline int tp_pb_read_varint(tp_pb_in *in, uint64_t *v) {
    if (in->p < in->end && *in->p < 0x80) { /* most keys and values: one byte */
        *v = *in->p++;
        return 0;
    }
    uint64_t r = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (in->p >= in->end) return -1;
        uint8_t c = *in->p++;
        r |= (uint64_t)(c & 0x7f) << (shift < 64 ? shift : 0);
        if (!(c & 0x80)) {
            *v = r;
            return 0;
        }
    }
    return -1;
}

static inline int tp_pb_fail(tp_pb_in *in) {
    in->bad = 1;
    in->p = in->end;
    return 0;
}

/* The next field: 1, or 0 at the end of the message or on a malformed field (in->bad). Inline:
 * a reader calls it for every field of every packet, and a call per field was half the read. */
__attribute__((always_inline)) static inline int tp_pb_next(tp_pb_in *in, tp_pb_field *f) {
    if (in->bad || in->p >= in->end) return 0;
    uint64_t key;
    if (tp_pb_read_varint(in, &key) || key >> 3 == 0 || key >> 3 > UINT32_MAX)
        return tp_pb_fail(in);
    f->num = (uint32_t)(key >> 3);
    f->wire = (enum tp_pb_wire)(key & 7);
    f->data = NULL;
    f->len = 0;
    f->u = 0;
    uint64_t u64;
    uint32_t u32;
    switch (key & 7) {
    case TP_PB_VARINT:
        return tp_pb_read_varint(in, &f->u) ? tp_pb_fail(in) : 1;
    case TP_PB_I64:
        if ((size_t)(in->end - in->p) < 8) return tp_pb_fail(in);
        memcpy(&u64, in->p, 8); /* sizes known here: a memcpy of variable size would keep f in
                                   memory, and every field read after it would wait on it */
        f->u = u64;
        in->p += 8;
        return 1;
    case TP_PB_I32:
        if ((size_t)(in->end - in->p) < 4) return tp_pb_fail(in);
        memcpy(&u32, in->p, 4);
        f->u = u32;
        in->p += 4;
        return 1;
    case TP_PB_LEN:
        if (tp_pb_read_varint(in, &f->u) || f->u > (size_t)(in->end - in->p)) return tp_pb_fail(in);
        f->data = in->p;
        f->len = (size_t)f->u;
        in->p += f->len;
        return 1;
    default:
        return tp_pb_fail(in);
    }
}
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
