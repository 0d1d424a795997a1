/* pb.c - the protocol buffers wire format (see pb.h). Little-endian hosts only, as protobuf's
 * fixed-width values are little-endian (asserted at compile time). */
#include "util/pb.h"

#include <assert.h>
#include <string.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "fixed64 fields are copied as is");

void tp_pb_varint(tp_buf *b, uint64_t v) {
    if (tp_buf_reserve(b, 10)) return;
    uint8_t *p = (uint8_t *)b->data + b->len;
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    b->len += n;
}

void tp_pb_fixed64(tp_buf *b, uint32_t field, uint64_t v) {
    tp_pb_tag(b, field, TP_PB_I64);
    tp_buf_put(b, &v, sizeof(v));
}

void tp_pb_double(tp_buf *b, uint32_t field, double v) {
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    tp_pb_fixed64(b, field, u);
}

void tp_pb_bytes(tp_buf *b, uint32_t field, const void *p, size_t n) {
    tp_pb_tag(b, field, TP_PB_LEN);
    tp_pb_varint(b, n);
    tp_buf_put(b, p, n);
}

size_t tp_pb_open(tp_buf *b, uint32_t field) {
    tp_pb_tag(b, field, TP_PB_LEN);
    tp_buf_putc(b, 0); /* the length, one byte until close knows better */
    return b->len;
}

void tp_pb_close(tp_buf *b, size_t body) {
    if (b->failed) return;
    assert(body >= 1 && body <= b->len);
    size_t len = b->len - body, extra = 0;
    for (size_t v = len >> 7; v; v >>= 7)
        extra++;
    if (extra) {
        if (tp_buf_reserve(b, extra)) return;
        memmove(b->data + body + extra, b->data + body, len);
        b->len += extra;
    }
    uint8_t *p = (uint8_t *)b->data + body - 1;
    size_t v = len;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p = (uint8_t)v;
}
