/* test_record_version.c - tprof_version: the library's release, the same as the header's it was
 * built with, and exported by libtprof.so (what a program compiled against another header
 * calls to find out which library it runs). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tprof.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

static void test_version_is_the_headers(void **state) {
    (void)state;
    assert_string_equal(tprof_version(), TPROF_VERSION);
    char numbers[32];
    snprintf(numbers, sizeof(numbers), "%d.%d.%d", TPROF_VERSION_MAJOR, TPROF_VERSION_MINOR,
             TPROF_VERSION_PATCH);
    assert_string_equal(tprof_version(), numbers);
    assert_ptr_equal(tprof_version(), tprof_version()); /* a static string, never freed */
}

static void test_shared_library_exports_it(void **state) {
    (void)state;
    const char *build = getenv("TPROF_BUILD_DIR");
    if (!build) skip();
    char path[4096];
    snprintf(path, sizeof(path), "%s/lib/libtprof.so", build);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(lib);
    const char *(*version)(void) = NULL;
    *(void **)&version = dlsym(lib, "tprof_version");
    assert_non_null(version);
    assert_string_equal(version(), TPROF_VERSION);
    dlclose(lib);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version_is_the_headers),
        cmocka_unit_test(test_shared_library_exports_it),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
