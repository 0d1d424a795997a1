/* test_record_inputs.c - an op's inputs as torch's observer records them (record/inputs.h): the
 * bytes formatted as Kineto's "Input Dims", "Input type" and "Concrete Inputs", with the doubles
 * printed as torch 2.13 prints them in its traces (the expected texts below are torch.profiler's
 * own for the same values), bad bytes refused, and the whole path through a session: the texts as
 * args of the op's range and its FLOPs by torch's formula, from the buffer and from the at-once
 * path of inputs too large for it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "record/inputs.h"
#include "record/record.h"
#include "tprof.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

static int setup(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    return 0;
}

typedef struct bytes {
    uint8_t b[1 << 16];
    uint8_t *p;
} bytes;

static void put_tensor(bytes *e, const char *dtype, int ndim, const int64_t *sizes) {
    *e->p++ = TP_IN_TENSOR;
    e->p = tp_in_put_ptr(e->p, dtype);
    e->p = tp_in_put_count(e->p, strlen(dtype));
    e->p = tp_in_put_count(e->p, (uint64_t)ndim);
    for (int i = 0; i < ndim; i++)
        e->p = tp_in_put_varint(e->p, sizes[i]);
}

static void put_double(bytes *e, double d) {
    *e->p++ = TP_IN_DOUBLE;
    memcpy(e->p, &d, sizeof(d));
    e->p += sizeof(d);
}

static void put_text(bytes *e, int tag, const char *s) {
    *e->p++ = (uint8_t)tag;
    e->p = tp_in_put_count(e->p, strlen(s));
    memcpy(e->p, s, strlen(s));
    e->p += strlen(s);
}

/* "float" as c10 gives it: a name inside a longer text, not NUL-terminated. */
static const char type_names[] = "floatlong int";

static void test_every_kind(void **state) {
    (void)state;
    static bytes e;
    e.p = e.b;
    put_tensor(&e, "c10::Half", 2, (const int64_t[]){2, 300});
    *e.p++ = TP_IN_UNDEFINED;
    *e.p++ = TP_IN_TENSORS;
    e.p = tp_in_put_count(e.p, 3);
    *e.p++ = TP_IN_TENSOR;
    e.p = tp_in_put_ptr(e.p, type_names);
    e.p = tp_in_put_count(e.p, 5);
    e.p = tp_in_put_count(e.p, 0);
    *e.p++ = TP_IN_UNDEFINED;
    put_tensor(&e, "double", 1, (const int64_t[]){7});
    *e.p++ = TP_IN_INT;
    e.p = tp_in_put_varint(e.p, -9223372036854775807 - 1);
    *e.p++ = TP_IN_TRUE;
    *e.p++ = TP_IN_FALSE;
    *e.p++ = TP_IN_INTS;
    e.p = tp_in_put_count(e.p, 3);
    e.p = tp_in_put_varint(e.p, 1);
    e.p = tp_in_put_varint(e.p, -1);
    e.p = tp_in_put_varint(e.p, 300);
    put_text(&e, TP_IN_TEXT_SCALAR, "0.+2.j");
    put_text(&e, TP_IN_TEXT_LIST, "[\"a\\\n]");
    *e.p++ = TP_IN_OTHER;
    tp_inputs_text t = {0};
    assert_int_equal(tp_inputs_format(e.b, (size_t)(e.p - e.b), &t), 0);
    assert_string_equal(t.dims.data, "[[2, 300], [], [[], [], [7]], [], [], [], [], [], [], []]");
    assert_int_equal(t.dims.len, strlen(t.dims.data));
    assert_string_equal(t.types.data, "[\"c10::Half\", \"\", \"TensorList\", \"Scalar\", "
                                      "\"Scalar\", \"Scalar\", \"ScalarList\", \"Scalar\", "
                                      "\"ScalarList\", \"\"]");
    assert_string_equal(t.concrete.data, "[\"\", \"\", \"\", \"-9223372036854775808\", \"True\", "
                                         "\"False\", \"[1, -1, 300]\", \"0.+2.j\", "
                                         "\"[\\\"a\\\\\\u000a]\", \"\"]");
    tp_inputs_text_free(&t);
}

/* torch.profiler's "Concrete Inputs" for torch.add(x, x, alpha=v), torch 2.13. */
static void test_doubles_as_torch(void **state) {
    (void)state;
    static const struct {
        double v;
        const char *text;
    } cases[] = {
        {0.1, "0.10000000000000001"},
        {1e-5, "1.0000000000000001e-05"},
        {3.0, "3."},
        {-0.0, "0."},
        {-7.0, "-7."},
        {1e10, "10000000000."},
        {1e18, "1000000000000000000."},
        {-0x1p63, "-9223372036854775808."},
        {0x1p63, "9.2233720368547758e+18"},
        {9.3e18, "9.3e+18"},
        {10000000000.5, "10000000000.5"},
        {1e-300, "1e-300"},
        {5e-324, "4.9406564584124654e-324"},
        {1.0 / 0.0, "inf"},
        {-1.0 / 0.0, "-inf"},
    };
    tp_inputs_text t = {0};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        static bytes e;
        e.p = e.b;
        put_double(&e, cases[i].v);
        char want[64];
        snprintf(want, sizeof(want), "[\"%s\"]", cases[i].text);
        assert_int_equal(tp_inputs_format(e.b, (size_t)(e.p - e.b), &t), 0);
        assert_string_equal(t.concrete.data, want);
        assert_string_equal(t.types.data, "[\"Scalar\"]");
        assert_string_equal(t.dims.data, "[[]]");
    }
    tp_inputs_text_free(&t);
}

static void test_bad_bytes(void **state) {
    (void)state;
    static bytes e;
    e.p = e.b;
    put_tensor(&e, "float", 2, (const int64_t[]){2, 3});
    tp_inputs_text t = {0};
    size_t whole = (size_t)(e.p - e.b);
    for (size_t cut = 1; cut < whole; cut++) /* every truncation is refused */
        assert_int_equal(tp_inputs_format(e.b, cut, &t), -1);
    assert_int_equal(tp_inputs_format(e.b, whole, &t), 0);
    assert_string_equal(t.dims.data, "[[2, 3]]");
    uint8_t unknown[] = {0x7f};
    assert_int_equal(tp_inputs_format(unknown, 1, &t), -1);
    uint8_t count_past_end[] = {TP_IN_INTS, 100, 2};
    assert_int_equal(tp_inputs_format(count_past_end, sizeof(count_past_end), &t), -1);
    tp_inputs_text_free(&t);
}

/* aten::mm of [m, k] x [k, n]: 2 m k n FLOPs (torch's formula); after them,
 * a tensor list of n_list tensors makes the bytes as large as wanted. */
static size_t mm_inputs(bytes *e, int64_t m, int64_t k, int64_t n, int n_list) {
    e->p = e->b;
    put_tensor(e, "float", 2, (const int64_t[]){m, k});
    put_tensor(e, "float", 2, (const int64_t[]){k, n});
    if (n_list) {
        *e->p++ = TP_IN_TENSORS;
        e->p = tp_in_put_count(e->p, (uint64_t)n_list);
        for (int i = 0; i < n_list; i++)
            put_tensor(e, "float", 1, (const int64_t[]){1000});
    }
    return (size_t)(e->p - e->b);
}

static void test_through_a_session(void **state) {
    (void)state;
    static const char *const kv[] = {"record_shapes", "true", "with_flops", "true", NULL};
    static bytes small, big;
    size_t small_len = mm_inputs(&small, 4, 5, 6, 0);
    size_t big_len = mm_inputs(&big, 2, 3, 4, 2000);
    assert_true(big_len > TP_INPUTS_MAX_BYTES); /* formatted at once */
    assert_int_equal(start_with(kv), 0);
    assert_true(tp_op_begin("aten::mm", 7, 1) & 1);
    tp_op_inputs("aten::mm", small.b, small_len, TP_INPUTS_SHAPES | TP_INPUTS_FLOPS);
    tprof_end();
    assert_true(tp_op_begin("aten::mm", -1, 0) & 1);
    tp_op_inputs("aten::mm", big.b, big_len, TP_INPUTS_SHAPES | TP_INPUTS_FLOPS);
    tprof_end();
    assert_true(tp_op_begin("aten::bmm", -1, 0) & 1);
    tp_op_inputs("aten::bmm", small.b, small_len, TP_INPUTS_FLOPS); /* no shapes: no texts */
    tprof_end();
    tprof_shutdown();
    assert_int_equal(cap.n, 1);
    tp_model *m = cap.models[0];
    int seen = 0;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *ev = &m->events[i];
        if (strcmp(ev_name(m, ev), "aten::mm") == 0) {
            const tp_arg *seq = arg_of(m, ev, "Sequence number");
            const tp_arg *dims = arg_of(m, ev, "Input Dims");
            assert_non_null(dims);
            assert_int_equal(dims->type, TP_ARG_JSON);
            assert_int_equal(arg_of(m, ev, "Input type")->type, TP_ARG_JSON);
            assert_int_equal(arg_of(m, ev, "Concrete Inputs")->type, TP_ARG_JSON);
            if (seq) {
                assert_int_equal(seq->v.i, 7);
                assert_string_equal(tp_model_str(m, dims->v.s), "[[4, 5], [5, 6]]");
                assert_string_equal(tp_model_str(m, arg_of(m, ev, "Input type")->v.s),
                                    "[\"float\", \"float\"]");
                assert_string_equal(tp_model_str(m, arg_of(m, ev, "Concrete Inputs")->v.s),
                                    "[\"\", \"\"]");
                assert_int_equal(arg_of(m, ev, "flops")->v.i, 2 * 4 * 5 * 6);
            } else {
                const char *text = tp_model_str(m, dims->v.s);
                static const char head[] = "[[2, 3], [3, 4], [[1000], [1000], ";
                assert_memory_equal(text, head, sizeof(head) - 1);
                /* the two sizes, then "[", 2000 "[1000]" and their 1999 ", ", "]]" */
                assert_int_equal(strlen(text), 17 + 1 + 2000 * 6 + 1999 * 2 + 2);
                assert_int_equal(arg_of(m, ev, "flops")->v.i, 2 * 2 * 3 * 4);
            }
            seen++;
        } else if (strcmp(ev_name(m, ev), "aten::bmm") == 0) {
            assert_null(arg_of(m, ev, "Input Dims"));
            assert_null(arg_of(m, ev, "Input type"));
            assert_null(arg_of(m, ev, "flops")); /* bmm wants 3-d inputs: torch counts none */
            seen++;
        }
    }
    assert_int_equal(seen, 3);
    cap_reset();
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_kind),
        cmocka_unit_test(test_doubles_as_torch),
        cmocka_unit_test(test_bad_bytes),
        cmocka_unit_test(test_through_a_session),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
