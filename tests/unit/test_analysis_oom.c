/* test_analysis_oom.c - every allocation of the analysis and the renderers may fail: the run
 * goes on, nothing crashes or leaks, and the failure is reported (add_model returns -1, or the
 * analysis or output buffer is marked failed).
 *
 * malloc, calloc, realloc and free are replaced here (ELF interposition, so the library's calls
 * land here too) by versions that fail from the Nth call on and count the blocks alive; the test
 * tries every N and checks that no block outlives a run. Sanitizer builds have their own
 * allocator and skip the test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "analysis/compare.h"
#include "report/report.h"

#include "test_analysis_build.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__SANITIZE_ADDRESS__)
#define TP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TP_SANITIZED 1
#endif
#endif

#ifndef TP_SANITIZED
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);

static long budget = -1; /* allocations left before they fail; -1: never fail */
static long calls;
static long alive; /* blocks allocated and not yet freed */

static int fail_now(void) {
    calls++;
    if (budget < 0) return 0;
    return budget-- == 0 || budget < 0;
}

static void *counted(void *p) {
    alive += p != NULL;
    return p;
}

/* Exported (the build hides symbols by default) so that libc's own calls, strdup's for one,
 * come here too. */
#define EXPORTED __attribute__((visibility("default")))

EXPORTED void *malloc(size_t n) {
    return fail_now() ? NULL : counted(__libc_malloc(n));
}
EXPORTED void *calloc(size_t n, size_t m) {
    return fail_now() ? NULL : counted(__libc_calloc(n, m));
}
EXPORTED void *realloc(void *p, size_t n) {
    if (fail_now()) return NULL;
    return p ? __libc_realloc(p, n) : counted(__libc_realloc(p, n));
}
EXPORTED void free(void *p) {
    alive -= p != NULL;
    __libc_free(p);
}

/* A model touching every pass: steps, stages, nested ops, launches, kernels, memory, flops,
 * Python frames (call stacks), module ranges (tprof's paths) and a backward node on another
 * thread joined to one. */
static void build(tp_model *m) {
    tp_model_init(m);
    for (int s = 0; s < 3; s++) {
        int64_t t = (int64_t)s * 10000;
        char name[32];
        snprintf(name, sizeof(name), "ProfilerStep#%d", s);
        tb_add(m, TP_HOST_RANGE, 1, 1, name, NULL, t, 9000);
        tb_add(m, TP_HOST_RANGE, 1, 1, "dataloader", NULL, t, 1000);
        tb_add(m, TP_HOST_RANGE, 1, 1, "train.py(7): step", "python_function", t + 900, 5200);
        tb_add(m, TP_HOST_RANGE, 1, 1, "forward", NULL, t + 1000, 5000);
        tb_add(m, TP_HOST_RANGE, 1, 1, "Net", "user_annotation", t + 1050, 4000);
        tb_add(m, TP_HOST_RANGE, 1, 1, "Net.fc", "user_annotation", t + 1080, 3500);
        tp_event *mm = tb_add(m, TP_HOST_RANGE, 1, 1, "aten::mm", NULL, t + 1100, 3000);
        tp_model_arg_int(m, mm, "flops", 99);
        tp_model_arg_int(m, mm, "Sequence number", s);
        tp_event *back = tb_add(m, TP_HOST_RANGE, 1, 3, "MmBackward0", NULL, t + 7000, 500);
        tp_model_arg_int(m, back, "Sequence number", s);
        tp_model_arg_int(m, back, "Fwd thread id", 1);
        tb_add(m, TP_HOST_RANGE, 1, 3, "cudaLaunchKernel", NULL, t + 7100, 10)->corr =
            (uint64_t)s + 100;
        tb_add(m, TP_KERNEL, 0, 7, "gemm_bwd", NULL, t + 7200, 200)->corr = (uint64_t)s + 100;
        tb_add(m, TP_HOST_RANGE, 1, 1, "cudaLaunchKernel", NULL, t + 1200, 10)->corr =
            (uint64_t)s + 1;
        tb_add(m, TP_KERNEL, 0, 7, "gemm", NULL, t + 1300, 500)->corr = (uint64_t)s + 1;
        tp_event *mem = tb_add(m, TP_MEMORY, 1, 1, "[memory]", NULL, t + 50, 0);
        tp_model_arg_int(m, mem, "Device Type", 1);
        tp_model_arg_int(m, mem, "Device Id", 0);
        tp_model_arg_int(m, mem, "Total Allocated", 1000 + s);
    }
    /* an unsorted thread, so the sort's own allocations run too */
    tb_add(m, TP_HOST_RANGE, 1, 2, "late", NULL, 5000, 10);
    tb_add(m, TP_HOST_RANGE, 1, 2, "early", NULL, 100, 10);
}

typedef void (*render_fn)(tp_buf *, const tp_analysis *, const tp_report_opts *);

static void folded(tp_buf *b, const tp_analysis *a, const tp_report_opts *o) {
    (void)o;
    tp_report_folded(b, a);
}

/* One full run; returns whether everything succeeded. */
static int run_everything(const tp_model *m) {
    static const render_fn renderers[] = {tp_report_text, tp_report_markdown, tp_report_json,
                                          tp_report_csv, folded};
    tp_analysis *a = tp_analysis_new(NULL);
    if (!a) return 0;
    int ok = tp_analysis_add_model(a, m, "trace.json") == 0;
    tp_analysis_add_warning(a, "a warning");
    tp_analysis_finish(a);
    ok = ok && !a->failed;
    for (size_t i = 0; i < sizeof(renderers) / sizeof(renderers[0]); i++) {
        tp_buf b;
        tp_buf_init(&b);
        renderers[i](&b, a, NULL);
        ok = ok && !b.failed;
        tp_buf_free(&b);
    }
    tp_compare *c = tp_compare_new(a, a);
    if (c) {
        tp_buf b;
        tp_buf_init(&b);
        tp_report_compare_text(&b, c, NULL);
        ok = ok && !b.failed;
        tp_buf_free(&b);
    }
    ok = ok && c;
    tp_compare_free(c);
    tp_analysis_free(a);
    return ok;
}

#endif /* TP_SANITIZED */

static void test_every_allocation_may_fail(void **state) {
    (void)state;
#ifdef TP_SANITIZED
    skip();
#else
    tp_model m;
    build(&m);
    calls = 0;
    assert_true(run_everything(&m));
    long total = calls;
    assert_true(total > 50);
    for (long n = 0; n < total; n++) {
        long before = alive;
        budget = n;
        int ok = run_everything(&m);
        budget = -1;
        /* a failure somewhere must not pass unnoticed, nor leave memory behind */
        assert_false(ok);
        if (alive != before) fail_msg("allocation %ld failing leaks %ld blocks", n, alive - before);
    }
    tp_model_free(&m);
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_allocation_may_fail),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
