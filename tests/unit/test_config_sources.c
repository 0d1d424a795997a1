/* test_config_sources.c - the configuration: each source, their precedence, argv consumption, every
 * key's bad values with the one-line message, YAML errors with their positions, and the effective
 * configuration as JSON (checked by Python's json module). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "record/config.h"
#include "tprof.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char yaml_path[64];

/* A YAML file with this text; its path is yaml_path. */
static const char *yaml(const char *text) {
    if (yaml_path[0]) unlink(yaml_path); /* one file at a time */
    snprintf(yaml_path, sizeof(yaml_path), "/tmp/tprof_cfg_XXXXXX");
    int fd = mkstemp(yaml_path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    return yaml_path;
}

static int teardown(void **state) {
    (void)state;
    if (yaml_path[0]) unlink(yaml_path);
    yaml_path[0] = '\0';
    return 0;
}

/* Python checks a JSON text with an assertion expression over `d`; 0 when it holds. */
static int python_check(const char *json, const char *expr) {
    char path[] = "/tmp/tprof_json_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    char cmd[2048];
    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 -c 'import json,re,sys; d=json.load(open(\"%s\")); "
             "sys.exit(0 if (%s) else 1)'",
             path, expr);
    int rc = system(cmd);
    unlink(path);
    return rc;
}

static void test_defaults(void **state) {
    (void)state;
    tprof_config *c = tprof_config_new();
    char *json = tprof_config_to_json(c);
    char pid_expr[1200];
    snprintf(
        pid_expr, sizeof(pid_expr),
        "re.fullmatch(r\"\\d{8}-\\d{6}-%d\", d[\"run_id\"]) and d[\"enabled\"] is False and "
        "d[\"output_dir\"] == \"tprof_runs\" and d[\"config\"] is None and d[\"epochs\"] == [] and "
        "d[\"stages\"] == [] and d[\"gpu\"] == \"auto\" and d[\"signals\"] is True and "
        "d[\"summary\"] is True and d[\"record_shapes\"] is False and d[\"profile_memory\"] is "
        "False "
        "and d[\"with_flops\"] is True and d[\"gzip\"] is False and d[\"active\"] == 1 and "
        "d[\"wait\"] == 0 and d[\"repeat\"] == 0 and d[\"top_k\"] == 10 and len(d) == 24",
        (int)getpid());
    assert_int_equal(python_check(json, pid_expr), 0);
    free(json);
    /* Disabled by default: starting it records nothing and is not an error. */
    assert_int_equal(tprof_start(c), 0);
    assert_int_equal(tprof_is_recording(), 0);
    tprof_shutdown();
    tprof_config_free(c);
}

static void test_each_key_from_set(void **state) {
    (void)state;
    tprof_config *c = tprof_config_new();
    static const char *const kv[][2] = {
        {"enabled", "on"},
        {"output_dir", "out \"x\""},
        {"run_id", "r1"},
        {"skip_first", "3"},
        {"wait", "+4"},
        {"warmup", "5"},
        {"active", "6"},
        {"repeat", "7"},
        {"skip_first_wait", "YES"},
        {"epoch_steps", "9"},
        {"record_shapes", "1"},
        {"profile_memory", "true"},
        {"with_flops", "off"},
        {"gzip", "True"},
        {"tensorboard_names", "on"},
        {"max_events", "1000"},
        {"summary", "no"},
        {"top_k", "25"},
        {"config", "c.yaml"},
        {"signals", "0"},
        {"gpu", "off"},
        {"profiling.nsight", "1"},
        {"epochs", "[1, 5, 10]"},
        {"stages", "dataloader, 'fwd=*fwd*|forward'"},
    };
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
        if (tprof_config_set(c, kv[i][0], kv[i][1])) fail_msg("%s", tprof_config_error(c));
    }
    char *json = tprof_config_to_json(c);
    assert_int_equal(
        python_check(
            json, "d == {\"enabled\": True, \"output_dir\": \"out \\\"x\\\"\", \"run_id\": \"r1\", "
                  "\"skip_first\": 3, \"wait\": 4, \"warmup\": 5, \"active\": 6, \"repeat\": 7, "
                  "\"skip_first_wait\": True, \"epochs\": [1, 5, 10], \"epoch_steps\": 9, "
                  "\"record_shapes\": True, \"profile_memory\": True, \"with_flops\": False, "
                  "\"stages\": [\"dataloader\", \"fwd=*fwd*|forward\"], \"gzip\": True, "
                  "\"tensorboard_names\": True, \"max_events\": 1000, \"summary\": False, "
                  "\"top_k\": 25, \"config\": \"c.yaml\", \"signals\": False, \"gpu\": \"off\", "
                  "\"nsight\": True}"),
        0);
    free(json);
    tprof_config_free(c);
}

/* Every key's invalid values, each a one-line error naming key, value and source; the old
 * value stays. */
static void test_bad_values(void **state) {
    (void)state;
    static const char *const bad[][3] = {
        {"wait", "-1", "must be an integer >= 0"},
        {"skip_first", "x", "must be an integer >= 0"},
        {"warmup", "1.5", "must be an integer >= 0"},
        {"active", "0", "must be an integer >= 1"},
        {"repeat", "-2", "must be an integer >= 0"},
        {"epoch_steps", "", "must be an integer >= 0"},
        {"wait", "99999999999999999999", "must be an integer >= 0"},
        {"max_events", "10", "must be an integer from 16 to 1099511627776"},
        {"top_k", "0", "must be an integer from 1 to 100000"},
        {"enabled", "maybe", "must be true or false (also 1/0, yes/no, on/off)"},
        {"skip_first_wait", "2", "must be true or false (also 1/0, yes/no, on/off)"},
        {"record_shapes", "yes please", "must be true or false (also 1/0, yes/no, on/off)"},
        {"profile_memory", "", "must be true or false (also 1/0, yes/no, on/off)"},
        {"with_flops", "y", "must be true or false (also 1/0, yes/no, on/off)"},
        {"gzip", "2", "must be true or false (also 1/0, yes/no, on/off)"},
        {"tensorboard_names", "t", "must be true or false (also 1/0, yes/no, on/off)"},
        {"summary", "-", "must be true or false (also 1/0, yes/no, on/off)"},
        {"signals", "none", "must be true or false (also 1/0, yes/no, on/off)"},
        {"nsight", "nsys", "must be true or false (also 1/0, yes/no, on/off)"},
        {"gpu", "cuda", "must be auto, on or off"},
        {"output_dir", "", "must not be empty"},
        {"config", "", "must not be empty"},
        {"run_id", "a/b", "must be a non-empty name without '/'"},
        {"epochs", "1,x", "must be a list of integers >= 0, e.g. [1, 5, 10] or \"1,5,10\""},
        {"epochs", "[1, -5]", "must be a list of integers >= 0, e.g. [1, 5, 10] or \"1,5,10\""},
        {"epochs", "1,,2", "must be a list of integers >= 0, e.g. [1, 5, 10] or \"1,5,10\""},
        {"stages", "a,,b",
         "must be a list of stage names, each \"name\" or \"name=pattern|pattern\""},
        {"stages", "=x",
         "must be a list of stage names, each \"name\" or \"name=pattern|pattern\""},
        {"stages",
         "a=", "must be a list of stage names, each \"name\" or \"name=pattern|pattern\""},
        {"stages", "a=x||y",
         "must be a list of stage names, each \"name\" or \"name=pattern|pattern\""},
    };
    tprof_config *c = tprof_config_new();
    char *before = tprof_config_to_json(c);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char want[512];
        snprintf(want, sizeof(want),
                 "invalid value \"%s\" for profiling.%s (from tprof_config_set): %s", bad[i][1],
                 bad[i][0], bad[i][2]);
        assert_int_equal(tprof_config_set(c, bad[i][0], bad[i][1]), -1);
        assert_string_equal(tprof_config_error(c), want);
        assert_null(strchr(tprof_config_error(c), '\n'));
    }
    char *after = tprof_config_to_json(c);
    assert_string_equal(before, after);
    free(before);
    free(after);
    assert_int_equal(tprof_config_set(c, "wiat", "3"), -1);
    assert_string_equal(
        tprof_config_error(c),
        "unknown key profiling.wiat = \"3\" (from tprof_config_set); see docs/CONFIG.md");
    tprof_config_free(c);
}

static void test_env_source(void **state) {
    (void)state;
    setenv("TPROF_WAIT", "4", 1);
    setenv("TPROF_GZIP", "on", 1);
    setenv("TPROF_EPOCHS", "1,5,10", 1);
    setenv("TPROF_OUTPUT_DIR", "", 1);   /* empty: as if unset */
    setenv("TPROF_SOURCE_DIR", "/x", 1); /* not a key: ignored */
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_env(c), 0);
    assert_int_equal(c->wait, 4);
    assert_int_equal(c->gzip, 1);
    assert_int_equal(c->nepochs, 3);
    assert_int_equal(c->epochs[2], 10);
    assert_string_equal(c->output_dir, "tprof_runs");
    assert_string_equal(c->origin[TP_KEY_WAIT], "TPROF_WAIT");
    setenv("TPROF_ACTIVE", "0", 1);
    assert_int_equal(tprof_config_load_env(c), -1);
    assert_string_equal(
        tprof_config_error(c),
        "invalid value \"0\" for profiling.active (from TPROF_ACTIVE): must be an integer >= 1");
    unsetenv("TPROF_ACTIVE");
    unsetenv("TPROF_WAIT");
    unsetenv("TPROF_GZIP");
    unsetenv("TPROF_EPOCHS");
    unsetenv("TPROF_OUTPUT_DIR");
    tprof_config_free(c);
}

static void test_args_consumed(void **state) {
    (void)state;
    char *argv[] = {"prog",
                    "--profile",
                    "train.txt",
                    "--profiling.wait",
                    "3",
                    "--lr=0.1",
                    "profiling.active=2",
                    "--profiling.gzip",
                    "--profiling.record_shapes",
                    "false",
                    "--profiling.top_k=7",
                    "-v",
                    "--",
                    "--profiling.wait=9",
                    NULL};
    int argc = 14;
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_args(c, &argc, argv), 0);
    assert_int_equal(argc, 6);
    const char *want[] = {"prog", "train.txt", "--lr=0.1", "-v", "--", "--profiling.wait=9"};
    for (int i = 0; i < 6; i++)
        assert_string_equal(argv[i], want[i]);
    assert_null(argv[6]);
    assert_int_equal(c->enabled, 1);
    assert_int_equal(c->wait, 3);
    assert_int_equal(c->active, 2);
    assert_int_equal(c->gzip, 1);
    assert_int_equal(c->record_shapes, 0);
    assert_int_equal(c->top_k, 7);
    assert_string_equal(c->origin[TP_KEY_ACTIVE], "profiling.active");
    assert_string_equal(c->origin[TP_KEY_ENABLED], "--profile");
    tprof_config_free(c);
}

static void test_args_errors(void **state) {
    (void)state;
    tprof_config *c = tprof_config_new();
    char *a1[] = {"prog", "x", "--profiling.wait=-1", "y", NULL};
    int argc = 4;
    assert_int_equal(tprof_config_load_args(c, &argc, a1), -1);
    assert_string_equal(tprof_config_error(c), "invalid value \"-1\" for profiling.wait (from "
                                               "--profiling.wait): must be an integer >= 0");
    /* consumed anyway: the host's parser never sees tprof's arguments */
    assert_int_equal(argc, 3);
    assert_string_equal(a1[2], "y");
    char *a2[] = {"prog", "profiling.gpu=sometimes", NULL};
    argc = 2;
    assert_int_equal(tprof_config_load_args(c, &argc, a2), -1);
    assert_string_equal(tprof_config_error(c),
                        "invalid value \"sometimes\" for profiling.gpu (from "
                        "profiling.gpu): must be auto, on or off");
    char *a3[] = {"prog", "--profiling.wait", NULL};
    argc = 2;
    assert_int_equal(tprof_config_load_args(c, &argc, a3), -1);
    assert_string_equal(tprof_config_error(c),
                        "missing value for --profiling.wait (from the command line)");
    char *a4[] = {"prog", "--profiling.colour", "red", NULL};
    argc = 3;
    assert_int_equal(tprof_config_load_args(c, &argc, a4), -1);
    assert_string_equal(
        tprof_config_error(c),
        "unknown key profiling.colour = \"red\" (from --profiling.colour); see docs/CONFIG.md");
    /* "profiling.x" without "=" and "--profiling" alone are the program's. */
    char *a5[] = {"prog", "profiling.txt", "--profiling", NULL};
    argc = 3;
    assert_int_equal(tprof_config_load_args(c, &argc, a5), 0);
    assert_int_equal(argc, 3);
    tprof_config_free(c);
}

static void test_yaml_source(void **state) {
    (void)state;
    const char *path = yaml("model:\n"
                            "  layers: 3\n"
                            "profiling:\n"
                            "  enabled: yes\n"
                            "  warmup: 2\n"
                            "  epochs: [1, 5, 10]\n"
                            "  epoch_steps: 100\n"
                            "  stages:\n"
                            "    - dataloader\n"
                            "    - \"fwd=*forward*|*fwd*\"\n"
                            "  output_dir: \"runs\"\n"
                            "other: 1\n");
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_yaml(c, path), 0);
    assert_int_equal(c->enabled, 1);
    assert_int_equal(c->warmup, 2);
    assert_int_equal(c->nepochs, 3);
    assert_int_equal(c->epochs[1], 5);
    assert_int_equal(c->epoch_steps, 100);
    assert_int_equal(c->nstages, 2);
    assert_string_equal(c->stages[1], "fwd=*forward*|*fwd*");
    assert_string_equal(c->output_dir, "runs");
    char where[128];
    snprintf(where, sizeof(where), "%s:5:11", path);
    assert_string_equal(c->origin[TP_KEY_WARMUP], where);
    char err[512];
    assert_int_equal(tp_config_validate(c, err, sizeof(err)), 0);
    tprof_config_free(c);
    /* An empty file, and an empty profiling: mapping, are no error. */
    c = tprof_config_new();
    assert_int_equal(tprof_config_load_yaml(c, yaml("")), 0);
    assert_int_equal(tprof_config_load_yaml(c, yaml("profiling:\n")), 0);
    assert_int_equal(tprof_config_load_yaml(c, yaml("profiling: {epochs: []}\n")), 0);
    tprof_config_free(c);
}

static void yaml_error(const char *text, const char *want_after_path) {
    const char *path = yaml(text);
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_yaml(c, path), -1);
    char want[512];
    snprintf(want, sizeof(want), want_after_path, path);
    assert_string_equal(tprof_config_error(c), want);
    tprof_config_free(c);
    teardown(NULL);
}

static void test_yaml_errors(void **state) {
    (void)state;
    yaml_error("profiling:\n  enabled: true\n  wait: -3\n",
               "invalid value \"-3\" for profiling.wait (from %s:3:9): must be an integer >= 0");
    /* Syntax errors: where libyaml found them, then its own words. */
    static const char *const syntax[][2] = {{"profiling:\n  enabled: true\n\twait: 1\n", "3:1"},
                                            {"profiling:\n  a: 1\n b: 2\n", "3:2"},
                                            {"profiling:\n  wait: \"3\n", "3:1"}};
    for (int i = 0; i < 3; i++) {
        const char *path = yaml(syntax[i][0]);
        tprof_config *c = tprof_config_new();
        assert_int_equal(tprof_config_load_yaml(c, path), -1);
        char want[128];
        snprintf(want, sizeof(want), "%s:%s: invalid YAML: ", path, syntax[i][1]);
        if (strncmp(tprof_config_error(c), want, strlen(want)) != 0)
            fail_msg("%s does not start with %s", tprof_config_error(c), want);
        assert_true(strlen(tprof_config_error(c)) > strlen(want) + 5);
        tprof_config_free(c);
    }
    yaml_error("- a\n- b\n", "%s:1:1: the top level must be a mapping");
    yaml_error("profiling: 3\n", "%s:1:12: profiling: must be a mapping of keys");
    yaml_error("profiling:\n  wait: {a: 1}\n",
               "invalid value \"{...}\" for profiling.wait (from %s:2:9): must be an integer >= 0");
    yaml_error(
        "profiling:\n  wait: [1, 2]\n",
        "invalid value \"[1, 2]\" for profiling.wait (from %s:2:9): must be an integer >= 0");
    yaml_error(
        "profiling:\n  epochs: [[1], 2]\n",
        "invalid value \"[...]\" for profiling.epochs (from %s:2:11): must be a list of integers "
        ">= 0, e.g. [1, 5, 10] or \"1,5,10\"");
    yaml_error("profiling:\n  wiat: 3\n",
               "unknown key profiling.wiat = \"3\" (from %s:2:9); see docs/CONFIG.md");
    yaml_error("profiling:\n  [a]: 3\n", "%s:2:3: a key under profiling: must be a name");
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_yaml(c, "/nonexistent/tprof.yaml"), -1);
    assert_string_equal(
        tprof_config_error(c),
        "cannot read config file /nonexistent/tprof.yaml: No such file or directory");
    tprof_config_free(c);
}

/* Keys that only make sense apart. */
static void test_cross_key_errors(void **state) {
    (void)state;
    char err[512];
    tprof_config *c = tprof_config_new();
    tprof_config_set(c, "epochs", "1");
    tprof_config_set(c, "warmup", "2"); /* shared by both schedules */
    assert_int_equal(tp_config_validate(c, err, sizeof(err)), 0);
    const char *step_keys[] = {"skip_first", "wait", "active", "repeat", "skip_first_wait"};
    for (size_t i = 0; i < 5; i++) {
        tprof_config *d = tp_config_dup(c);
        tprof_config_set(d, step_keys[i], "1");
        assert_int_equal(tp_config_validate(d, err, sizeof(err)), -1);
        char want[512];
        snprintf(
            want, sizeof(want),
            "invalid configuration: profiling.epochs (from tprof_config_set) and profiling.%s "
            "(from tprof_config_set) cannot be combined: use either the step schedule or epoch "
            "windows",
            step_keys[i]);
        assert_string_equal(err, want);
        tprof_config_free(d);
    }
    tprof_config_free(c);
    c = tprof_config_new();
    setenv("TPROF_EPOCH_STEPS", "5", 1);
    tprof_config_load_env(c);
    unsetenv("TPROF_EPOCH_STEPS");
    assert_int_equal(tp_config_validate(c, err, sizeof(err)), -1);
    assert_string_equal(err,
                        "invalid configuration: profiling.epoch_steps (from TPROF_EPOCH_STEPS) "
                        "needs profiling.epochs");
    tprof_config_free(c);
}

/* defaults < YAML < environment < command line, through tprof_init. */
static void test_precedence(void **state) {
    (void)state;
    tp_log_set_quiet(1);
    const char *path = yaml("profiling:\n  enabled: true\n  wait: 2\n  warmup: 2\n  repeat: 1\n"
                            "  signals: false\n");
    setenv("TPROF_CONFIG", path, 1);
    setenv("TPROF_WARMUP", "3", 1);
    setenv("TPROF_REPEAT", "4", 1);
    char *argv[] = {"prog", "--profiling.repeat", "5", NULL};
    int argc = 3;
    cap_install();
    assert_int_equal(tprof_init(&argc, argv), 0);
    unsetenv("TPROF_CONFIG");
    unsetenv("TPROF_WARMUP");
    unsetenv("TPROF_REPEAT");
    assert_int_equal(argc, 1);
    tprof_shutdown();
    assert_int_equal(cap.started, 1);
    assert_int_equal(python_check(cap.config_json, "d[\"wait\"] == 2 and d[\"warmup\"] == 3 and "
                                                   "d[\"repeat\"] == 5 and d[\"active\"] == 1 and "
                                                   "d[\"enabled\"] is True"),
                     0);
    cap_reset();
    /* --profiling.config beats TPROF_CONFIG, and a bad file stops tprof_init. */
    setenv("TPROF_CONFIG", "/nonexistent.yaml", 1);
    char *argv2[] = {"prog", "--profiling.config", (char *)path, NULL};
    argc = 3;
    assert_int_equal(tprof_init(&argc, argv2), 0);
    tprof_shutdown();
    assert_int_equal(cap.started, 1);
    cap_reset();
    argc = 1;
    assert_int_equal(tprof_init(&argc, argv2), -1);
    assert_string_equal(tprof_last_error(),
                        "cannot read config file /nonexistent.yaml: No such file or directory");
    unsetenv("TPROF_CONFIG");
    assert_int_equal(cap.started, 0);
}

static void test_null_arguments(void **state) {
    (void)state;
    assert_int_equal(tprof_config_set(NULL, "wait", "1"), -1);
    assert_int_equal(tprof_config_load_env(NULL), -1);
    assert_int_equal(tprof_config_load_yaml(NULL, "x"), -1);
    assert_int_equal(tprof_config_load_args(NULL, NULL, NULL), -1);
    assert_null(tprof_config_to_json(NULL));
    assert_string_equal(tprof_config_error(NULL), "");
    tprof_config_free(NULL);
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_set(c, NULL, "1"), -1);
    assert_int_equal(tprof_config_set(c, "wait", NULL), -1);
    assert_int_equal(tprof_config_load_yaml(c, NULL), -1);
    assert_int_equal(tprof_config_load_args(c, NULL, NULL), 0);
    tprof_config_free(c);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_defaults, teardown),
        cmocka_unit_test_teardown(test_each_key_from_set, teardown),
        cmocka_unit_test_teardown(test_bad_values, teardown),
        cmocka_unit_test_teardown(test_env_source, teardown),
        cmocka_unit_test_teardown(test_args_consumed, teardown),
        cmocka_unit_test_teardown(test_args_errors, teardown),
        cmocka_unit_test_teardown(test_yaml_source, teardown),
        cmocka_unit_test_teardown(test_yaml_errors, teardown),
        cmocka_unit_test_teardown(test_cross_key_errors, teardown),
        cmocka_unit_test_teardown(test_precedence, teardown),
        cmocka_unit_test_teardown(test_null_arguments, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
