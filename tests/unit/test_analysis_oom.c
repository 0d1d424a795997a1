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

static tp_event *add(tp_model *m, tp_kind kind, int64_t tid, const char *name, int64_t ts,
                     int64_t dur, uint64_t corr) {
    uint32_t track = tp_model_track(m, kind == TP_HOST_RANGE ? 1 : 0, 0, tid, 0);
    tp_event *e = tp_model_add_event(m);
    e->kind = (uint8_t)kind;
    e->track = track;
    e->name = tp_model_intern_cstr(m, name);
    e->cat = tp_model_intern_cstr(m, kind == TP_HOST_RANGE ? "cpu_op" : "kernel");
    e->ts = ts;
    e->dur = dur;
    e->corr = corr;
    if (tp_step_number(name) >= 0) e->flags = TP_EVF_STEP;
    return e;
}

/* A model touching every pass: steps, stages, nested ops, launches, kernels, memory, flops. */
static void build(tp_model *m) {
    tp_model_init(m);
    for (int s = 0; s < 3; s++) {
        int64_t t = s * 10000;
        char name[32];
        snprintf(name, sizeof(name), "ProfilerStep#%d", s);
        add(m, TP_HOST_RANGE, 1, name, t, 9000, 0);
        add(m, TP_HOST_RANGE, 1, "dataloader", t, 1000, 0);
        add(m, TP_HOST_RANGE, 1, "forward", t + 1000, 5000, 0);
        tp_model_arg_int(m, add(m, TP_HOST_RANGE, 1, "aten::mm", t + 1100, 3000, 0), "flops", 99);
        add(m, TP_HOST_RANGE, 1, "cudaLaunchKernel", t + 1200, 10, (uint64_t)s + 1);
        add(m, TP_KERNEL, 7, "gemm", t + 1300, 500, (uint64_t)s + 1);
        tp_event *mem = add(m, TP_MEMORY, 1, "[memory]", t + 50, 0, 0);
        tp_model_arg_int(m, mem, "Device Type", 1);
        tp_model_arg_int(m, mem, "Device Id", 0);
        tp_model_arg_int(m, mem, "Total Allocated", 1000 + s);
    }
    /* an unsorted thread, so the sort's own allocations run too */
    add(m, TP_HOST_RANGE, 2, "late", 5000, 10, 0);
    add(m, TP_HOST_RANGE, 2, "early", 100, 10, 0);
}

typedef void (*render_fn)(tp_buf *, const tp_analysis *, const tp_report_opts *);

/* One full run; returns whether everything succeeded. */
static int run_everything(const tp_model *m) {
    static const render_fn renderers[] = {tp_report_text, tp_report_markdown, tp_report_json,
                                          tp_report_csv};
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
