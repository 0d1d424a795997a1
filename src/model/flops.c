/* flops.c - the FLOP formulas of torch.profiler and of FlopCounterMode over a trace's "Input
 * Dims" and "Concrete Inputs" (see flops.h). The texts are small JSON arrays: [[6, 3, 16, 16],
 * [4, 3, 3, 3], [4], [], ...] and ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "1"]. Each formula
 * is its convention's, with its checks: where torch warns (torch.profiler) or asserts
 * (FlopCounterMode) and counts nothing, this counts 0. */
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

/* An aten op's name after "aten::" and its formula in one convention's enum (0: none). */
typedef struct aten_op {
    const char *name;
    int op;
} aten_op;

/* The formula of op `name` in table[0..n), 0 when the op is not "aten::" one of them. */
static int aten_op_of(const char *name, size_t len, const aten_op *table, size_t n) {
    if (len < 8 || memcmp(name, "aten::", 6) != 0) return 0;
    for (size_t i = 0; i < n; i++)
        if (len - 6 == strlen(table[i].name) && memcmp(name + 6, table[i].name, len - 6) == 0)
            return table[i].op;
    return 0;
}

enum op { OP_NONE, OP_CONV2D, OP_MM, OP_ADDMM, OP_BMM, OP_BADDBMM, OP_MUL, OP_ADD };
_Static_assert(OP_NONE == 0, "aten_op_of's none");

static enum op op_of(const char *name, size_t len) {
    static const aten_op ops[] = {
        {"conv2d", OP_CONV2D},   {"mm", OP_MM},   {"addmm", OP_ADDMM}, {"bmm", OP_BMM},
        {"baddbmm", OP_BADDBMM}, {"mul", OP_MUL}, {"add", OP_ADD}};
    return (enum op)aten_op_of(name, len, ops, sizeof(ops) / sizeof(ops[0]));
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

/* ---- FlopCounterMode's convention (torch/utils/flop_counter.py) ---- */

/* A boolean concrete input: "True" / "False" as Kineto and the observer write them. */
static int concrete_bool(span concrete, int i, int *out) {
    span e;
    if (!concrete.s || !element(concrete, i, &e) || e.len < 2 || e.s[0] != '"') return 0;
    span inner = {e.s + 1, e.len - 2};
    if (inner.len == 4 && memcmp(inner.s, "True", 4) == 0) return *out = 1, 1;
    if (inner.len == 5 && memcmp(inner.s, "False", 5) == 0) return *out = 0, 1;
    return 0;
}

/* A bool list concrete input ("[True, True, False]"), its first n flags into out. */
static int concrete_bools(span concrete, int i, int n, int *out) {
    span e;
    if (!concrete.s || !element(concrete, i, &e) || e.len < 2 || e.s[0] != '"') return 0;
    const char *p = e.s + 1, *end = e.s + e.len - 1;
    p = skip_ws(p, end);
    if (p >= end || *p++ != '[') return 0;
    for (int k = 0; k < n; k++) {
        p = skip_ws(p, end);
        if (end - p >= 4 && memcmp(p, "True", 4) == 0) {
            out[k] = 1;
            p += 4;
        } else if (end - p >= 5 && memcmp(p, "False", 5) == 0) {
            out[k] = 0;
            p += 5;
        } else {
            return 0;
        }
        p = skip_ws(p, end);
        if (p < end && *p == ',') p++;
    }
    return 1;
}

/* The product of x's sizes from index `from` on (a tensor's spatial sizes past N and C). */
static uint64_t product_from(const ints *x, int from) {
    uint64_t n = 1;
    for (int i = from; i < x->n; i++)
        n *= (uint64_t)x->v[i];
    return n;
}

/* flop_counter.py's conv_flop_count: 2 x batch x c_out x c_in x the product of the sizes the
 * filter slides over (conv) x the filter's own (filter), taken modulo 2^64 as gemm's terms. */
static int64_t conv_count(int64_t batch, int64_t c_out, int64_t c_in, uint64_t conv,
                          uint64_t filter) {
    return (int64_t)(2 * (uint64_t)batch * (uint64_t)c_out * (uint64_t)c_in * conv * filter);
}

/* Whether x and w are a convolution's input and weight: the same rank, 3 to MAX_DIMS, no
 * negative size. */
static int conv_shapes(const ints *x, const ints *w) {
    if (x->n != w->n || x->n < 3) return 0;
    for (int i = 0; i < x->n; i++)
        if (x->v[i] < 0 || w->v[i] < 0) return 0;
    return 1;
}

/* aten::convolution, aten::_convolution (input, weight, bias, stride, padding, dilation,
 * transposed, ...): conv_flop_count(x, w, out, transposed). The output's spatial sizes, which
 * the trace does not keep, come from stride, padding and dilation as torch computes them. */
static int64_t fcm_conv(span dims, span concrete) {
    ints x, w, stride, pad, dil;
    int transposed;
    if (!dims_of(dims, 0, &x) || !dims_of(dims, 1, &w) || !concrete_bool(concrete, 6, &transposed))
        return -1;
    if (!conv_shapes(&x, &w)) return 0;
    if (transposed)
        return conv_count(x.v[0], w.v[0], w.v[1], product_from(&x, 2), product_from(&w, 2));
    if (!concrete_of(concrete, 3, &stride) || !concrete_of(concrete, 4, &pad) ||
        !concrete_of(concrete, 5, &dil))
        return -1;
    int sp = x.n - 2;
    if (stride.n != sp || pad.n != sp || dil.n != sp) return 0;
    uint64_t out = 1;
    for (int i = 0; i < sp; i++) {
        if (stride.v[i] <= 0) return 0;
        int64_t o = (x.v[i + 2] + 2 * pad.v[i] - dil.v[i] * (w.v[i + 2] - 1) - 1) / stride.v[i] + 1;
        if (o <= 0) return 0;
        out *= (uint64_t)o;
    }
    return conv_count(x.v[0], w.v[0], w.v[1], out, product_from(&w, 2));
}

/* aten::convolution_backward (grad_output, input, weight, bias_sizes, stride, padding,
 * dilation, transposed, output_padding, groups, output_mask): flop_counter.py's
 * conv_backward_flop, the input's gradient (mask[0]) as the transposed convolution of
 * grad_output by the weight, the weight's (mask[1]) as the convolution of the input by
 * grad_output. The gradients' shapes are the input's and the weight's. */
static int64_t fcm_conv_backward(span dims, span concrete) {
    ints go, x, w;
    int transposed, mask[2];
    if (!dims_of(dims, 0, &go) || !dims_of(dims, 1, &x) || !dims_of(dims, 2, &w) ||
        !concrete_bool(concrete, 7, &transposed) || !concrete_bools(concrete, 10, 2, mask))
        return -1;
    if (!conv_shapes(&x, &w) || !conv_shapes(&go, &w)) return 0;
    uint64_t n = 0, filter = product_from(&w, 2);
    if (mask[0]) /* conv_flop_count(go, w, x, !transposed) */
        n += (uint64_t)conv_count(go.v[0], w.v[0], w.v[1],
                                  transposed ? product_from(&x, 2) : product_from(&go, 2), filter);
    if (mask[1] && transposed) /* conv_flop_count(t(go), t(x), t(w), False) */
        n += (uint64_t)conv_count(go.v[1], x.v[1], x.v[0], filter, product_from(&x, 2));
    else if (mask[1]) /* conv_flop_count(t(x), t(go), t(w), False) */
        n += (uint64_t)conv_count(x.v[1], go.v[1], go.v[0], filter, product_from(&go, 2));
    return (int64_t)n;
}

/* The shapes of attention's query, key and value (inputs q, q + 1, q + 2: [b, h, s, d] each),
 * as sdpa_flop_count checks them; 0 when they do not fit. */
static int attention_shapes(span dims, int q, ints *qs, ints *ks, ints *vs) {
    if (!dims_of(dims, q, qs) || !dims_of(dims, q + 1, ks) || !dims_of(dims, q + 2, vs)) return -1;
    if (qs->n != 4 || ks->n != 4 || vs->n != 4) return 0;
    if (qs->v[0] != ks->v[0] || qs->v[0] != vs->v[0] || ks->v[1] != vs->v[1] ||
        qs->v[3] != ks->v[3] || ks->v[2] != vs->v[2])
        return 0;
    if (ks->v[1] <= 0 || qs->v[1] < ks->v[1] || qs->v[1] % ks->v[1] != 0) return 0;
    return 1;
}

/* _scaled_dot_product_{efficient,flash,cudnn}_attention (query, key, value, ...): the two
 * batched products q k^T and scores v, 2 b h s_q s_k (d_q + d_v); their _backward
 * (grad_out, query, key, value, ...): the scores recomputed and four products for the
 * gradients, 2 b h s_q s_k (3 d_q + 2 d_v). */
static int64_t fcm_attention(span dims, int backward) {
    ints q, k, v;
    int ok = attention_shapes(dims, backward, &q, &k, &v);
    if (ok <= 0) return ok;
    uint64_t bhss = (uint64_t)q.v[0] * (uint64_t)q.v[1] * (uint64_t)q.v[2] * (uint64_t)k.v[2];
    uint64_t d = backward ? 3 * (uint64_t)q.v[3] + 2 * (uint64_t)v.v[3]
                          : (uint64_t)q.v[3] + (uint64_t)v.v[3];
    return (int64_t)(2 * bhss * d);
}

enum fcm_op {
    FCM_NONE,
    FCM_MM,       /* mm, _scaled_mm: inputs 0 and 1 */
    FCM_ADDMM,    /* addmm: inputs 1 and 2 */
    FCM_BMM,      /* bmm: inputs 0 and 1 */
    FCM_BADDBMM,  /* baddbmm: inputs 1 and 2 */
    FCM_CONV,     /* convolution, _convolution */
    FCM_CONV_BWD, /* convolution_backward */
    FCM_ATTN,     /* _scaled_dot_product_*_attention */
    FCM_ATTN_BWD  /* _scaled_dot_product_*_attention_backward */
};

_Static_assert(FCM_NONE == 0, "aten_op_of's none");

static enum fcm_op fcm_op_of(const char *name, size_t len) {
    static const aten_op ops[] = {
        {"mm", FCM_MM},
        {"_scaled_mm", FCM_MM},
        {"addmm", FCM_ADDMM},
        {"bmm", FCM_BMM},
        {"baddbmm", FCM_BADDBMM},
        {"convolution", FCM_CONV},
        {"_convolution", FCM_CONV},
        {"convolution_backward", FCM_CONV_BWD},
        {"_scaled_dot_product_efficient_attention", FCM_ATTN},
        {"_scaled_dot_product_flash_attention", FCM_ATTN},
        {"_scaled_dot_product_cudnn_attention", FCM_ATTN},
        {"_scaled_dot_product_efficient_attention_backward", FCM_ATTN_BWD},
        {"_scaled_dot_product_flash_attention_backward", FCM_ATTN_BWD},
        {"_scaled_dot_product_cudnn_attention_backward", FCM_ATTN_BWD}};
    return (enum fcm_op)aten_op_of(name, len, ops, sizeof(ops) / sizeof(ops[0]));
}

int tp_flops_fcm_counted(const char *name, size_t len) {
    return fcm_op_of(name, len) != FCM_NONE;
}

int64_t tp_flops_fcm_of(const char *name, size_t len, const char *dims_text, size_t dims_len,
                        const char *concrete_text, size_t concrete_len) {
    span dims = {dims_text, dims_len}, concrete = {concrete_text, concrete_len};
    ints a, b;
    enum fcm_op op = fcm_op_of(name, len);
    assert(op != FCM_NONE);
    int first = op == FCM_ADDMM || op == FCM_BADDBMM; /* the product's operands: 0, 1 or 1, 2 */
    switch (op) {
    case FCM_MM:
    case FCM_ADDMM:
    case FCM_BMM:
    case FCM_BADDBMM:
        if (!dims_of(dims, first, &a) || !dims_of(dims, first + 1, &b)) return -1;
        return op == FCM_MM || op == FCM_ADDMM ? gemm(&a, &b) : batched_gemm(&a, &b);
    case FCM_CONV:
        return fcm_conv(dims, concrete);
    case FCM_CONV_BWD:
        return fcm_conv_backward(dims, concrete);
    case FCM_ATTN:
    case FCM_ATTN_BWD:
        return fcm_attention(dims, op == FCM_ATTN_BWD);
    case FCM_NONE:
        break;
    }
    return -1;
}
