/* flops.c - torch.profiler's FLOP formulas over a trace's "Input Dims" and "Concrete Inputs"
 * (see flops.h). The texts are small JSON arrays: [[6, 3, 16, 16], [4, 3, 3, 3], [4], [], ...]
 * and ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]. Each formula is torch's, with its checks:
 * where torch warns and counts 0, so does this. */
#include "model/flops.h"

#include <assert.h>
#include <string.h>

enum { MAX_DIMS = 8 };

/* An int list: a tensor's sizes, or a stride / padding / dilation. */
typedef struct ints {
    int n;
    int64_t v[MAX_DIMS];
} ints;

typedef struct span {
    const char *s;
    size_t len;
} span;

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

/* The end of the value at p: past a string, a balanced array or object, or a scalar; NULL when
 * the text ends first. */
static const char *value_end(const char *p, const char *end) {
    int depth = 0;
    for (; p < end; p++) {
        char c = *p;
        if (c == '"') {
            for (p++; p < end && *p != '"'; p++)
                if (*p == '\\') p++;
            if (p >= end) return NULL;
            if (depth == 0) return p + 1;
        } else if (c == '[' || c == '{') {
            depth++;
        } else if (c == ']' || c == '}') {
            if (depth == 0) return p; /* the enclosing array's end */
            if (--depth == 0) return p + 1;
        } else if (depth == 0 && c == ',') {
            return p;
        }
    }
    return NULL;
}

/* Element i of the JSON array text; 0 when there is none. */
static int element(span arr, int i, span *out) {
    const char *p = skip_ws(arr.s, arr.s + arr.len), *end = arr.s + arr.len;
    if (p >= end || *p != '[') return 0;
    p++;
    for (int k = 0;; k++) {
        p = skip_ws(p, end);
        if (p >= end || *p == ']') return 0;
        const char *e = value_end(p, end);
        if (!e || e == p) return 0;
        if (k == i) {
            *out = (span){p, (size_t)(e - p)};
            return 1;
        }
        p = skip_ws(e, end);
        if (p >= end || *p != ',') return 0;
        p++;
    }
}

/* An integer at *p (optional minus, digits) of magnitude below 2^31, so that the formulas'
 * intermediate terms fit in 64 bits; 0 when there is none or it is larger (sizes that large are
 * not real, and the text may be anything). */
static int parse_int(const char **p, const char *end, int64_t *out) {
    const char *q = *p;
    int neg = q < end && *q == '-';
    q += neg;
    if (q >= end || *q < '0' || *q > '9') return 0;
    int64_t v = 0;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        v = v * 10 + (*q - '0');
        if (v > INT32_MAX) return 0;
    }
    *out = neg ? -v : v;
    *p = q;
    return 1;
}

/* A flat list of integers "[a, b, ...]" (at most MAX_DIMS), the whole of s; 0 otherwise. */
static int parse_ints(span s, ints *out) {
    const char *p = skip_ws(s.s, s.s + s.len), *end = s.s + s.len;
    out->n = 0;
    if (p >= end || *p != '[') return 0;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') return skip_ws(p + 1, end) == end;
    for (;;) {
        if (out->n == MAX_DIMS || !parse_int(&p, end, &out->v[out->n])) return 0;
        out->n++;
        p = skip_ws(p, end);
        if (p < end && *p == ']') return skip_ws(p + 1, end) == end;
        if (p >= end || *p != ',') return 0;
        p = skip_ws(p + 1, end);
    }
}

/* Input i's sizes from "Input Dims". */
static int dims_of(span dims, int i, ints *out) {
    span e;
    return element(dims, i, &e) && parse_ints(e, out);
}

/* Concrete input i, a JSON string holding an int list ("[2, 2]") or an int ("1"), unquoted. */
static int concrete_of(span concrete, int i, ints *out) {
    span e;
    if (!concrete.s || !element(concrete, i, &e) || e.len < 2 || e.s[0] != '"') return 0;
    span inner = {e.s + 1, e.len - 2};
    if (memchr(inner.s, '\\', inner.len)) return 0;
    if (inner.len && inner.s[0] == '[') return parse_ints(inner, out);
    const char *p = inner.s;
    out->n = 1;
    return parse_int(&p, inner.s + inner.len, &out->v[0]) && p == inner.s + inner.len;
}

static uint64_t product(const ints *x) {
    uint64_t n = 1;
    for (int i = 0; i < x->n; i++)
        n *= (uint64_t)x->v[i];
    return n;
}

/* aten::mm, aten::addmm: 2 x mat1's elements / the shared dimension x mat2's elements. */
static int64_t gemm(const ints *m1, const ints *m2) {
    if (m1->n != 2 || m2->n != 2 || m1->v[1] != m2->v[0]) return 0;
    if (m1->v[1] == 0) return 0;
    return (int64_t)(2 * (product(m1) / (uint64_t)m1->v[1]) * product(m2));
}

/* aten::bmm, aten::baddbmm: as gemm, per batch. */
static int64_t batched_gemm(const ints *m1, const ints *m2) {
    if (m1->n != 3 || m2->n != 3 || m1->v[0] != m2->v[0] || m1->v[2] != m2->v[1]) return 0;
    if (m1->v[0] == 0 || m1->v[2] == 0) return 0;
    return (int64_t)(2 * (product(m1) / (uint64_t)m1->v[2] / (uint64_t)m1->v[0]) * product(m2));
}

/* aten::conv2d(input, weight, bias, stride, padding, dilation, groups):
 * 2 x N x OH x OW x KH x KW x C_in x C_out / groups. */
static int64_t conv2d(span dims, span concrete) {
    ints in, w, stride, pad, dil, groups;
    if (!dims_of(dims, 0, &in) || !dims_of(dims, 1, &w)) return -1;
    if (!concrete_of(concrete, 3, &stride) || !concrete_of(concrete, 4, &pad) ||
        !concrete_of(concrete, 5, &dil) || !concrete_of(concrete, 6, &groups) || groups.n != 1)
        return -1;
    if (in.n != 4 || w.n != 4) return 0;
    for (int i = 0; i < 4; i++)
        if (in.v[i] < 0 || w.v[i] < 0) return 0; /* no tensor has such sizes */
    if (pad.n != 2 || stride.n != 2 || dil.n != 2) return 0;
    if (stride.v[0] == 0 || stride.v[1] == 0 || groups.v[0] == 0) return 0;
    /* Every value is below 2^31 (parse_int): oh and ow fit; the product is taken modulo 2^64 as
     * unsigned, never overflowing a signed type, and is exact for any real model. */
    int64_t oh = (in.v[2] + 2 * pad.v[0] - dil.v[0] * (w.v[2] - 1) - 1) / stride.v[0] + 1;
    int64_t ow = (in.v[3] + 2 * pad.v[1] - dil.v[1] * (w.v[3] - 1) - 1) / stride.v[1] + 1;
    if (oh <= 0 || ow <= 0 || groups.v[0] < 0) return 0;
    uint64_t n = 2 * (uint64_t)in.v[0] * (uint64_t)oh * (uint64_t)ow * (uint64_t)w.v[2] *
                 (uint64_t)w.v[3] * (uint64_t)in.v[1] * (uint64_t)w.v[0];
    return (int64_t)(n / (uint64_t)groups.v[0]);
}

enum op { OP_NONE, OP_CONV2D, OP_MM, OP_ADDMM, OP_BMM, OP_BADDBMM, OP_MUL, OP_ADD };

static enum op op_of(const char *name, size_t len) {
    static const struct {
        const char *name;
        enum op op;
    } ops[] = {{"conv2d", OP_CONV2D},   {"mm", OP_MM},   {"addmm", OP_ADDMM}, {"bmm", OP_BMM},
               {"baddbmm", OP_BADDBMM}, {"mul", OP_MUL}, {"add", OP_ADD}};
    if (len < 8 || memcmp(name, "aten::", 6) != 0) return OP_NONE;
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
        if (len - 6 == strlen(ops[i].name) && memcmp(name + 6, ops[i].name, len - 6) == 0)
            return ops[i].op;
    return OP_NONE;
}

int tp_flops_counted(const char *name, size_t len) {
    return op_of(name, len) != OP_NONE;
}

int64_t tp_flops_of(const char *name, size_t len, const char *dims_text, size_t dims_len,
                    const char *concrete_text, size_t concrete_len) {
    span dims = {dims_text, dims_len}, concrete = {concrete_text, concrete_len};
    ints a, b;
    enum op op = op_of(name, len);
    assert(op != OP_NONE);
    switch (op) {
    case OP_CONV2D:
        return conv2d(dims, concrete);
    case OP_MM:
    case OP_BMM:
        if (!dims_of(dims, 0, &a) || !dims_of(dims, 1, &b)) return -1;
        return op == OP_MM ? gemm(&a, &b) : batched_gemm(&a, &b);
    case OP_ADDMM:
    case OP_BADDBMM:
        if (!dims_of(dims, 1, &a) || !dims_of(dims, 2, &b)) return -1;
        return op == OP_ADDMM ? gemm(&a, &b) : batched_gemm(&a, &b);
    case OP_MUL:
    case OP_ADD: /* torch counts the first input's elements */
        return dims_of(dims, 0, &a) ? (int64_t)product(&a) : -1;
    case OP_NONE:
        break;
    }
    return -1;
}
