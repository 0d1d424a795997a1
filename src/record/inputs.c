/* inputs.c - an op's inputs, recorded as compact bytes by torch's observer, formatted as Kineto's
 * "Input Dims", "Input type" and "Concrete Inputs" texts (the encoding is in inputs.h). Runs on
 * the writer thread (window.c), off the hot path; the texts are byte for byte those Kineto writes
 * for the same op, which tests/python/test_torch_observer.py compares op by op. */
#include "record/inputs.h"

#include "model/flops.h"

#include <math.h>
#include <stdio.h>

typedef struct reader {
    const uint8_t *p, *end;
    int bad;
} reader;

static uint64_t get_uvarint(reader *r) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t b = *r->p++;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) return v;
    }
    r->bad = 1;
    return 0;
}

static int64_t get_varint(reader *r) {
    uint64_t z = get_uvarint(r);
    return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
}

/* n raw bytes at the reader, or NULL when fewer are left. */
static const uint8_t *get_bytes(reader *r, uint64_t n) {
    if ((uint64_t)(r->end - r->p) < n) {
        r->bad = 1;
        return NULL;
    }
    const uint8_t *p = r->p;
    r->p += n;
    return p;
}

/* A count of items that each take at least a byte: no more than the bytes left. */
static uint64_t get_count(reader *r) {
    uint64_t n = get_uvarint(r);
    if (n > (uint64_t)(r->end - r->p)) r->bad = 1;
    return r->bad ? 0 : n;
}

static void put_int(tp_buf *b, int64_t v) {
    if (tp_buf_reserve(b, TP_FMT_NUM_MAX)) return;
    b->len = (size_t)(tp_fmt_i64(b->data + b->len, v) - b->data);
}

/* "[a, b, ...]" of n varints. */
static void put_ints(tp_buf *b, reader *r, uint64_t n) {
    tp_buf_putc(b, '[');
    for (uint64_t i = 0; i < n && !r->bad; i++) {
        if (i) TP_BUF_LIT(b, ", ");
        put_int(b, get_varint(r));
    }
    tp_buf_putc(b, ']');
}

/* A double as torch 2.13 prints an IValue (measured against its "Concrete Inputs"): an integral
 * value that an int64 holds as that integer and a point ("3.", "-0.0" as "0.",
 * "1000000000000000000."), any other with max_digits10 significant digits, as an ostream
 * prints it ("0.10000000000000001", "9.3e+18", "inf", "nan"). */
static void put_double(tp_buf *b, double d) {
    static const double two63 = 9223372036854775808.0; /* 2^63: past it no int64 holds d */
    char text[40];
    int c = fpclassify(d);
    if ((c == FP_NORMAL || c == FP_ZERO) && d >= -two63 && d < two63 && (double)(int64_t)d == d)
        snprintf(text, sizeof(text), "%lld.", (long long)(int64_t)d);
    else
        snprintf(text, sizeof(text), "%.17g", d);
    tp_buf_puts(b, text);
}

/* Text torch printed, as JSON string content: quotes, backslashes and control bytes escaped. */
static void put_escaped(tp_buf *b, const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '"' || s[i] == '\\') {
            tp_buf_putc(b, '\\');
            tp_buf_putc(b, (char)s[i]);
        } else if (s[i] < 0x20) {
            char hex[8];
            snprintf(hex, sizeof(hex), "\\u%04x", s[i]);
            tp_buf_puts(b, hex);
        } else {
            tp_buf_putc(b, (char)s[i]);
        }
    }
}

/* A tensor's sizes into dims; its dtype name into type (when given). */
static void put_tensor(tp_buf *dims, tp_buf *type, reader *r) {
    const char *name;
    const uint8_t *p = get_bytes(r, sizeof(name));
    if (!p) return;
    memcpy(&name, p, sizeof(name));
    uint64_t name_len = get_uvarint(r);
    if (type && name && !r->bad) tp_buf_put(type, name, (size_t)name_len);
    put_ints(dims, r, get_count(r));
}

/* One tensor of a list: TP_IN_TENSOR or TP_IN_UNDEFINED. */
static void put_list_tensor(tp_buf *dims, reader *r) {
    const uint8_t *tag = get_bytes(r, 1);
    if (!tag) return;
    if (*tag == TP_IN_TENSOR)
        put_tensor(dims, NULL, r);
    else if (*tag == TP_IN_UNDEFINED)
        TP_BUF_LIT(dims, "[]");
    else
        r->bad = 1;
}

/* One input's entries: its dims, and the contents of its type and concrete strings. */
static void put_input(tp_inputs_text *t, reader *r, int tag) {
    tp_buf *concrete = &t->concrete;
    const char *type = NULL;
    if (tag == TP_IN_TENSOR) {
        put_tensor(&t->dims, &t->types, r);
        return;
    }
    if (tag == TP_IN_TENSORS) {
        uint64_t n = get_count(r);
        tp_buf_putc(&t->dims, '[');
        for (uint64_t i = 0; i < n && !r->bad; i++) {
            if (i) TP_BUF_LIT(&t->dims, ", ");
            put_list_tensor(&t->dims, r);
        }
        tp_buf_putc(&t->dims, ']');
        TP_BUF_LIT(&t->types, "TensorList");
        return;
    }
    TP_BUF_LIT(&t->dims, "[]");
    switch (tag) {
    case TP_IN_UNDEFINED:
    case TP_IN_OTHER:
        return;
    case TP_IN_INT:
        put_int(concrete, get_varint(r));
        type = "Scalar";
        break;
    case TP_IN_FALSE:
    case TP_IN_TRUE:
        tp_buf_puts(concrete, tag == TP_IN_TRUE ? "True" : "False");
        type = "Scalar";
        break;
    case TP_IN_DOUBLE: {
        double d;
        const uint8_t *p = get_bytes(r, sizeof(d));
        if (!p) return;
        memcpy(&d, p, sizeof(d));
        put_double(concrete, d);
        type = "Scalar";
        break;
    }
    case TP_IN_INTS:
        put_ints(concrete, r, get_count(r));
        type = "ScalarList";
        break;
    case TP_IN_TEXT_SCALAR:
    case TP_IN_TEXT_LIST: {
        uint64_t n = get_uvarint(r);
        const uint8_t *s = r->bad ? NULL : get_bytes(r, n);
        if (s) put_escaped(concrete, s, (size_t)n);
        type = tag == TP_IN_TEXT_SCALAR ? "Scalar" : "ScalarList";
        break;
    }
    default:
        r->bad = 1;
        return;
    }
    tp_buf_puts(&t->types, type);
}

int tp_inputs_format(const uint8_t *bytes, size_t len, tp_inputs_text *t) {
    reader r = {bytes, bytes + len, 0};
    tp_buf *lists[3] = {&t->dims, &t->types, &t->concrete};
    for (int i = 0; i < 3; i++) {
        if (lists[i]->failed) tp_buf_free(lists[i]); /* out of memory last time: start over */
        lists[i]->len = 0;
        tp_buf_putc(lists[i], '[');
    }
    for (int n = 0; r.p < r.end && !r.bad; n++) {
        if (n) {
            for (int i = 0; i < 3; i++)
                TP_BUF_LIT(lists[i], ", ");
        }
        int tag = *r.p++;
        tp_buf_putc(&t->types, '"');
        tp_buf_putc(&t->concrete, '"');
        put_input(t, &r, tag);
        tp_buf_putc(&t->types, '"');
        tp_buf_putc(&t->concrete, '"');
    }
    int failed = r.bad;
    for (int i = 0; i < 3; i++) {
        TP_BUF_LIT(lists[i], "]");
        tp_buf_putc(lists[i], '\0');
        failed |= lists[i]->failed;
        if (!failed) lists[i]->len--; /* the NUL ends the text; it is not part of it */
    }
    return failed ? -1 : 0;
}

int64_t tp_inputs_flops(const char *op, const tp_inputs_text *t) {
    size_t len = op ? strlen(op) : 0;
    if (!len || !tp_flops_counted(op, len)) return 0;
    return tp_flops_of(op, len, t->dims.data, t->dims.len, t->concrete.data, t->concrete.len);
}

void tp_inputs_text_free(tp_inputs_text *t) {
    tp_buf_free(&t->dims);
    tp_buf_free(&t->types);
    tp_buf_free(&t->concrete);
}
