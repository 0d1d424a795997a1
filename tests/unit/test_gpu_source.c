/* test_gpu_source.c - the CUPTI source when CUPTI cannot work: no library, a library that is not
 * CUPTI, the real libcupti without a driver (this machine), and the fake libcupti refusing to
 * subscribe or to enable; each gives exactly one warning naming the cause and leaves tprof
 * CPU-only. Also the activity kinds that are on in each schedule state.
 *
 * The source is one per process and libcupti is never unloaded, so every case runs in a child
 * process and reports back what it saw: the create result and each warning. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#ifdef TPROF_HAVE_CUPTI_HEADERS

#include "gpu/cupti.h"
#include "model/model.h"
#include "util/log.h"

#include <cupti.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct report {
    int status;      /* the child's exit status */
    int rc;          /* 0: the source recorded at its first window; -1: not (see create_only) */
    int nwarn;       /* warnings logged */
    char text[4096]; /* what the child printed: "rc=..", "warning=..", "note=.." lines */
} report;

/* Runs fn in a child with tprof's warnings kept quiet; fn prints what it observed to out. */
static void in_child(void (*fn)(FILE *out, const void *arg), const void *arg, report *r) {
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        FILE *out = fdopen(fds[1], "w");
        tp_log_set_quiet(1);
        fn(out, arg);
        for (size_t i = 0; i < tp_log_count(); i++)
            fprintf(out, "warning=%s\n", tp_log_get(i));
        fclose(out);
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t got;
    while (len < sizeof(r->text) - 1 &&
           (got = read(fds[0], r->text + len, sizeof(r->text) - 1 - len)) > 0)
        len += (size_t)got;
    r->text[len] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r->rc = 1;
    const char *p = strstr(r->text, "rc=");
    if (p) r->rc = atoi(p + 3);
    r->nwarn = 0;
    for (p = r->text; (p = strstr(p, "warning=")); p++)
        r->nwarn++;
}

static void *fake_fn(const char *name) {
    void *h = dlopen(TPROF_FAKE_CUPTI, RTLD_NOW | RTLD_NOLOAD);
    return h ? dlsym(h, name) : NULL;
}

static int fake_int(const char *name, int arg) {
    int (*fn)(int) = NULL;
    void *sym = fake_fn(name);
    memcpy(&fn, &sym, sizeof(sym));
    return fn ? fn(arg) : -1;
}

static void expect_line(const report *r, const char *line);

typedef struct create_args {
    const char *library;
    int required;
    const char *env[4]; /* NAME=VALUE */
} create_args;

static tp_source src;

/* Creates the source and starts its first window, where it claims CUPTI: 0 when it records then,
 * -1 when creating it failed or claiming CUPTI did (each says why in one warning). */
static int create_and_claim(const tp_gpu_opts *o) {
    if (tp_cupti_source_create(o, &src)) return -1;
    size_t warned = tp_log_count();
    src.on_action(src.ctx, TP_ACTION_WARMUP);
    return tp_log_count() > warned ? -1 : 0;
}

static void create_only(FILE *out, const void *arg) {
    const create_args *a = arg;
    for (int i = 0; i < 4 && a->env[i]; i++)
        putenv((char *)a->env[i]);
    unsetenv("CUDA_HOME");
    tp_gpu_opts o = {.required = a->required, .library = a->library};
    fprintf(out, "rc=%d\n", create_and_claim(&o));
}

static void expect_one_warning(const report *r, const char *const *needles) {
    assert_int_equal(r->status, 0);
    assert_int_equal(r->rc, -1);
    if (r->nwarn != 1) fail_msg("want one warning, got:\n%s", r->text);
    for (; *needles; needles++)
        if (!strstr(r->text, *needles)) fail_msg("no \"%s\" in:\n%s", *needles, r->text);
}

/* Whether this machine has the NVIDIA driver (then CUPTI may well start, and the causes below
 * are not what it would report). */
static int have_driver(void) {
    void *driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (driver) dlclose(driver);
    return driver != NULL;
}

static void expect_silence(const report *r) {
    assert_int_equal(r->status, 0);
    assert_int_equal(r->rc, -1);
    if (r->nwarn != 0) fail_msg("want no warning, got:\n%s", r->text);
}

static void test_no_library(void **state) {
    (void)state;
    report r;
    create_args a = {.library = "/nonexistent/libcupti.so", .required = 1};
    in_child(create_only, &a, &r);
    expect_one_warning(&r, (const char *[]){"gpu: on, but GPU profiling is unavailable",
                                            "cannot load /nonexistent/libcupti.so: no such file",
                                            "continuing CPU-only", NULL});
    if (have_driver()) skip();
    a.required = 0; /* auto, and no driver: nothing to profile, nothing to say */
    in_child(create_only, &a, &r);
    expect_silence(&r);
}

static void test_not_cupti(void **state) {
    (void)state;
    report r;
    create_args a = {.library = TPROF_FAKE_NVTX, .required = 1};
    in_child(create_only, &a, &r);
    expect_one_warning(&r, (const char *[]){TPROF_FAKE_NVTX, "lacks cuptiSubscribe", NULL});
}

/* The real libcupti, found by the default search, on a machine without the NVIDIA driver. */
static void test_real_library_without_driver(void **state) {
    (void)state;
    if (have_driver()) skip();
    report r;
    create_args a = {.library = NULL, .required = 1};
    in_child(create_only, &a, &r);
    expect_one_warning(
        &r, (const char *[]){"gpu: on, but GPU profiling is unavailable: CUPTI (", "libcupti.so",
                             ") cannot start: no NVIDIA driver (libcuda.so.1", NULL});
    a.required = 0; /* auto, and no driver: nothing to profile, nothing to say */
    in_child(create_only, &a, &r);
    expect_silence(&r);
}

static void test_another_subscriber(void **state) {
    (void)state;
    report r;
    create_args a = {
        .library = TPROF_FAKE_CUPTI,
        .required = 1,
        .env = {"FAKE_CUPTI_SUBSCRIBE=39", "FAKE_CUPTI_HOLDER=CUPTI for Nsight Systems"}};
    in_child(create_only, &a, &r);
    expect_one_warning(&r,
                       (const char *[]){"another profiler holds CUPTI (CUPTI for Nsight Systems)",
                                        "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED", NULL});
    a.env[1] = "FAKE_CUPTI_HOLDER=Nsight Compute"; /* as Nsight Compute 2025.3 says it */
    in_child(create_only, &a, &r);
    expect_one_warning(&r, (const char *[]){"another profiler holds CUPTI (Nsight Compute)", NULL});
    /* an older CUPTI does not say who, and a holder without a name (Nsight Systems 2025.3 on an
     * H100) comes with none: the usual suspects are named instead */
    const char *unnamed[] = {NULL, "FAKE_CUPTI_HOLDER=CUPTI for <not provided>"};
    for (size_t i = 0; i < 2; i++) {
        a.env[1] = unnamed[i];
        in_child(create_only, &a, &r);
        expect_one_warning(&r,
                           (const char *[]){"another profiler holds CUPTI (Nsight Systems, Nsight "
                                            "Compute, torch.profiler or similar)",
                                            NULL});
    }
}

/* Another tool subscribed first (sharing CUPTI or not), then tprof creates its source and starts
 * its first window. */
typedef struct beside_args {
    const char *library;
    const char *env;
    int other_shares;
} beside_args;

static void create_beside(FILE *out, const void *arg) {
    const beside_args *a = arg;
    if (a->env) putenv((char *)a->env);
    void *h = dlopen(a->library, RTLD_NOW | RTLD_LOCAL);
    int (*other)(const char *, int) = NULL;
    void *sym = h ? dlsym(h, "fake_cupti_other_subscriber") : NULL;
    memcpy(&other, &sym, sizeof(sym));
    fprintf(out, "other=%d\n", other ? other("Nsight Systems", a->other_shares) : -1);
    tp_gpu_opts o = {.required = 1, .library = a->library};
    fprintf(out, "rc=%d\n", create_and_claim(&o));
    int (*count)(void) = NULL;
    sym = h ? dlsym(h, "fake_cupti_nsubscribers") : NULL;
    memcpy(&count, &sym, sizeof(sym));
    fprintf(out, "subscribers=%d\n", count ? count() : -1);
    if (h) dlclose(h);
}

/* Another profiler that subscribes after tprof's session started (Kineto subscribes when its
 * schedule first warms up): before tprof's first window, it holds CUPTI and tprof's window says
 * so; after it, tprof holds CUPTI and the other is refused. */
static void other_arrives(FILE *out, const void *arg) {
    int before_window = *(const int *)arg;
    void *h = dlopen(TPROF_FAKE_CUPTI, RTLD_NOW | RTLD_LOCAL);
    int (*other)(const char *, int) = NULL;
    void *sym = h ? dlsym(h, "fake_cupti_other_subscriber") : NULL;
    memcpy(&other, &sym, sizeof(sym));
    tp_gpu_opts o = {.required = 1, .library = TPROF_FAKE_CUPTI};
    fprintf(out, "create=%d\n", tp_cupti_source_create(&o, &src));
    if (before_window) fprintf(out, "other=%d\n", other ? other("Kineto", 0) : -1);
    src.on_action(src.ctx, TP_ACTION_WARMUP);
    if (!before_window) fprintf(out, "other=%d\n", other ? other("Kineto", 0) : -1);
    fprintf(out, "kernel=%d\n",
            fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
    src.shutdown(src.ctx);
    if (h) dlclose(h);
}

static void test_first_to_record_holds_cupti(void **state) {
    (void)state;
    report r;
    int before_window = 1;
    in_child(other_arrives, &before_window, &r);
    expect_line(&r, "create=0\n");
    expect_line(&r, "other=0\n");
    expect_line(&r, "kernel=0\n");
    assert_int_equal(r.nwarn, 1);
    expect_line(&r, "another profiler holds CUPTI (CUPTI for Kineto)");
    before_window = 0;
    in_child(other_arrives, &before_window, &r);
    expect_line(&r, "kernel=1\n");
    if (strstr(r.text, "other=0\n")) fail_msg("the other subscriber got CUPTI too:\n%s", r.text);
    assert_int_equal(r.nwarn, 0);
}

/* cuptiSubscribe_v2 asking to share: beside a subscriber that shares too, both record, where
 * CUPTI supports it (FAKE_CUPTI_MULTI); elsewhere the single warning naming the holder. */
static void test_beside_another_subscriber(void **state) {
    (void)state;
    report r;
    beside_args a = {.library = TPROF_FAKE_CUPTI, .env = "FAKE_CUPTI_MULTI=1", .other_shares = 1};
    in_child(create_beside, &a, &r);
    assert_int_equal(r.status, 0);
    expect_line(&r, "other=0\n");
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.nwarn, 0);
    expect_line(&r, "subscribers=2\n");

    a.other_shares = 0; /* an older tool took CUPTI for itself */
    in_child(create_beside, &a, &r);
    expect_one_warning(&r, (const char *[]){"another profiler holds CUPTI (CUPTI for Nsight "
                                            "Systems): cuptiSubscribe returned "
                                            "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED",
                                            NULL});
    a.other_shares = 1; /* a CUPTI before 13.3: sharing unknown, and this one refuses the
                           longer struct: asked again with the old one, it names the holder */
    a.env = "FAKE_CUPTI_STRICT_SIZE=1";
    in_child(create_beside, &a, &r);
    expect_one_warning(&r, (const char *[]){"another profiler holds CUPTI (CUPTI for Nsight "
                                            "Systems)",
                                            NULL});
    report alone; /* alone, the same CUPTI is asked again and records */
    create_args c = {
        .library = TPROF_FAKE_CUPTI, .required = 1, .env = {"FAKE_CUPTI_STRICT_SIZE=1"}};
    in_child(create_only, &c, &alone);
    assert_int_equal(alone.rc, 0);
    assert_int_equal(alone.nwarn, 0);
}

/* A CUPTI without cuptiSubscribe_v2: cuptiSubscribe, alone it records; beside another
 * subscriber the single warning, which cannot name the holder. */
static void test_without_subscribe_v2(void **state) {
    (void)state;
    report r;
    create_args c = {.library = TPROF_FAKE_CUPTI_V1, .required = 1};
    in_child(create_only, &c, &r);
    assert_int_equal(r.rc, 0);
    assert_int_equal(r.nwarn, 0);
    beside_args a = {
        .library = TPROF_FAKE_CUPTI_V1, .env = "FAKE_CUPTI_MULTI=1", .other_shares = 1};
    in_child(create_beside, &a, &r);
    expect_one_warning(&r, (const char *[]){"another profiler holds CUPTI (Nsight Systems, Nsight "
                                            "Compute, torch.profiler or similar)",
                                            NULL});
    expect_line(&r, "subscribers=1\n");
}

static void test_subscribe_fails_without_driver(void **state) {
    (void)state;
    if (have_driver()) skip();
    report r;
    create_args a = {
        .library = TPROF_FAKE_CUPTI, .required = 1, .env = {"FAKE_CUPTI_SUBSCRIBE=999"}};
    in_child(create_only, &a, &r);
    expect_one_warning(
        &r, (const char *[]){"CUPTI (" TPROF_FAKE_CUPTI ") cannot start: no NVIDIA driver", NULL});
}

/* Creates against the fake, then walks the schedule, noting which kinds are on at each state. */
static void walk_schedule(FILE *out, const void *arg) {
    const create_args *a = arg;
    for (int i = 0; i < 4 && a->env[i]; i++)
        putenv((char *)a->env[i]);
    tp_gpu_opts o = {.required = 1, .library = TPROF_FAKE_CUPTI};
    fprintf(out, "rc=%d\n", tp_cupti_source_create(&o, &src));
    tp_source second;
    fprintf(out, "second=%d\n", tp_cupti_source_create(&o, &second));
    static const struct {
        tp_action action;
        const char *label;
    } steps[] = {{TP_ACTION_NONE, "none"},
                 {TP_ACTION_WARMUP, "warmup"},
                 {TP_ACTION_RECORD, "record"},
                 {TP_ACTION_RECORD_AND_SAVE, "save"},
                 {TP_ACTION_NONE, "after"}};
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        src.on_action(src.ctx, steps[i].action);
        fprintf(out,
                "%s: kernel=%d runtime=%d memcpy=%d memset=%d sync=%d memory=%d driver=%d "
                "launch_callbacks=%d\n",
                steps[i].label,
                fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
                fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_RUNTIME),
                fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_MEMCPY),
                fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_MEMSET),
                fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_SYNCHRONIZATION),
                fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_MEMORY2),
                fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_DRIVER),
                fake_int("fake_cupti_called_back", CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel));
    }
    tp_model m;
    tp_model_init(&m);
    tp_window_info w = {.name = "w", .start_ns = 0, .end_ns = 1000};
    src.collect(src.ctx, &m, &w);
    fprintf(out, "events=%zu\n", m.nevents);
    tp_model_free(&m);
    src.shutdown(src.ctx);
    fprintf(out, "end: kernel=%d memory=%d subscribed=%d\n",
            fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL),
            fake_int("fake_cupti_kind_enabled", CUPTI_ACTIVITY_KIND_MEMORY2),
            fake_int("fake_cupti_subscribed", 0));
}

static void expect_line(const report *r, const char *line) {
    if (!strstr(r->text, line)) fail_msg("no line \"%s\" in:\n%s", line, r->text);
}

static void test_kinds_follow_the_schedule(void **state) {
    (void)state;
    report r;
    create_args a = {0};
    in_child(walk_schedule, &a, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.rc, 0);
    expect_line(&r, "second=-1\n");
    expect_line(
        &r,
        "none: kernel=0 runtime=0 memcpy=0 memset=0 sync=0 memory=0 driver=0 launch_callbacks=0\n");
    expect_line(&r, "warmup: kernel=1 runtime=1 memcpy=1 memset=1 sync=1 memory=1 driver=0 "
                    "launch_callbacks=1\n");
    expect_line(&r, "record: kernel=1 runtime=1 memcpy=1 memset=1 sync=1 memory=1 driver=0 "
                    "launch_callbacks=1\n");
    expect_line(
        &r,
        "save: kernel=1 runtime=1 memcpy=1 memset=1 sync=1 memory=1 driver=0 launch_callbacks=1\n");
    /* driver launches come from callbacks on the launch functions, not the DRIVER kind; between
     * windows only device memory stays on, so totals see every allocation */
    expect_line(&r, "after: kernel=0 runtime=0 memcpy=0 memset=0 sync=0 memory=1 driver=0 "
                    "launch_callbacks=0\n");
    expect_line(&r, "events=0\n");
    expect_line(&r, "end: kernel=0 memory=0 subscribed=0\n");
    assert_int_equal(r.nwarn, 1);
    expect_line(&r, "warning=GPU profiling: a CUPTI source is already active in this process\n");
}

static void test_enable_refused(void **state) {
    (void)state;
    report r;
    char spec[64];
    snprintf(spec, sizeof(spec), "FAKE_CUPTI_ENABLE_FAIL=%d:39",
             CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    create_args a = {.env = {spec}};
    in_child(walk_schedule, &a, &r);
    assert_int_equal(r.status, 0);
    assert_int_equal(r.rc, 0);
    /* one warning at the first window; nothing on afterwards, nothing collected, clean end */
    expect_line(&r, "warmup: kernel=0 runtime=0 memcpy=0 memset=0 sync=0 memory=0 driver=0 "
                    "launch_callbacks=0\n");
    expect_line(&r, "save: kernel=0 runtime=0 memcpy=0 memset=0 sync=0 memory=0 driver=0 "
                    "launch_callbacks=0\n");
    expect_line(&r, "events=0\n");
    expect_line(&r, "end: kernel=0 memory=0 subscribed=0\n");
    assert_int_equal(r.nwarn, 2); /* the second create's, and: */
    expect_line(&r,
                "warning=gpu: on, but GPU profiling is unavailable: another profiler holds CUPTI: "
                "cuptiActivityEnable(CONCURRENT_KERNEL) failed with "
                "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED; continuing CPU-only\n");

    snprintf(spec, sizeof(spec), "FAKE_CUPTI_ENABLE_FAIL=%d:27",
             CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    in_child(walk_schedule, &a, &r);
    expect_line(&r, "record: kernel=1 runtime=1 memcpy=1 memset=1 sync=0 memory=1 driver=0 "
                    "launch_callbacks=1\n");
    assert_int_equal(r.nwarn, 2);
    expect_line(&r,
                "warning=GPU activity without SYNCHRONIZATION (CUPTI_ERROR_NOT_SUPPORTED): CUPTI "
                "refused them\n");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_library),
        cmocka_unit_test(test_not_cupti),
        cmocka_unit_test(test_real_library_without_driver),
        cmocka_unit_test(test_another_subscriber),
        cmocka_unit_test(test_beside_another_subscriber),
        cmocka_unit_test(test_without_subscribe_v2),
        cmocka_unit_test(test_first_to_record_holds_cupti),
        cmocka_unit_test(test_subscribe_fails_without_driver),
        cmocka_unit_test(test_kinds_follow_the_schedule),
        cmocka_unit_test(test_enable_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
int main(void) {
    return 77;
} /* built without CUDA's CUPTI headers: skipped */
#endif
