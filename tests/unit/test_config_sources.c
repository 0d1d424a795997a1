/* test_config_sources.c - the configuration: each source, their precedence, argv consumption, every
 * key's bad values with the one-line message, YAML errors with their positions, and the effective
 * configuration as JSON (checked by Python's json module). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_record_capture.h"

#include "config/config.h"
#include "tprof.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
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
        "d[\"stages\"] == [] and d[\"gpu\"] == \"auto\" and d[\"cuda_graphs\"] == \"node\" and "
        "d[\"signals\"] is True and "
        "d[\"summary\"] is True and d[\"record_shapes\"] is False and d[\"profile_memory\"] is "
        "False "
        "and d[\"with_flops\"] is True and d[\"gzip\"] is False and d[\"active\"] == 1 and "
        "d[\"wait\"] == 0 and d[\"repeat\"] == 0 and d[\"top_k\"] == 10 and "
        "d[\"flush_timeout_ms\"] == 5000 and d[\"with_stack\"] is False and "
        "d[\"with_modules\"] is True and d[\"peak_tflops\"] == 0 and "
        "d[\"nsight_output\"] is None and d[\"schedule_every_n_steps\"] == 0 and "
        "d[\"html_report\"] is True and d[\"flight_recorder\"] is False and d[\"flight_steps\"] == "
        "20 and "
        "d[\"slow_step_factor\"] == 3.0 and d[\"flight_warmup_steps\"] == 50 and "
        "d[\"flight_cooldown_steps\"] == 100 and d[\"flight_max_saves\"] == 10 and "
        "d[\"flight_signal\"] is False and d[\"clock\"] == \"auto\" and d[\"trace_format\"] == "
        "\"json\" and d[\"stream\"] is False and d[\"record_ops\"] == \"auto\" and len(d) == 43",
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
        {"with_stack", "on"},
        {"gzip", "True"},
        {"tensorboard_names", "on"},
        {"max_events", "1000"},
        {"stream", "on"},
        {"summary", "no"},
        {"top_k", "25"},
        {"html_report", "off"},
        {"config", "c.yaml"},
        {"signals", "0"},
        {"gpu", "off"},
        {"cuda_graphs", "Graph"},
        {"profiling.nsight", "1"},
        {"flush_timeout_ms", "250"},
        {"epochs", "[1, 5, 10]"},
        {"stages", "dataloader, 'fwd=*fwd*|forward'"},
        {"flush_timeout_ms", "250"},
        {"with_stack", "True"},
        {"with_modules", "False"},
        {"record_ops", "OFF"},
        {"peak_tflops", "989.5"},
        {"nsight_output", "prof.nsys-rep"},
        {"clock", "Monotonic"},
        {"trace_format", "Perfetto"},
        {"schedule_every_n_steps", "20"},
        {"flight_recorder", "on"},
        {"flight_steps", "5"},
        {"slow_step_factor", "2.5"},
        {"flight_warmup_steps", "7"},
        {"flight_cooldown_steps", "8"},
        {"flight_max_saves", "2"},
        {"flight_signal", "yes"},
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
                  "\"stages\": [\"dataloader\", \"fwd=*fwd*|forward\"], "
                  "\"gzip\": True, "
                  "\"tensorboard_names\": True, \"max_events\": 1000, \"stream\": True, "
                  "\"summary\": False, "
                  "\"top_k\": 25, \"html_report\": False, \"config\": \"c.yaml\", \"signals\": "
                  "False, \"gpu\": \"off\", \"cuda_graphs\": \"graph\", "
                  "\"nsight\": True, \"flush_timeout_ms\": 250, \"with_stack\": True, "
                  "\"with_modules\": False, \"record_ops\": \"off\", \"peak_tflops\": 989.5, "
                  "\"nsight_output\": \"prof.nsys-rep\", \"clock\": \"monotonic\", "
                  "\"trace_format\": \"perfetto\", "
                  "\"schedule_every_n_steps\": 20, "
                  "\"flight_recorder\": True, \"flight_steps\": 5, \"slow_step_factor\": 2.5, "
                  "\"flight_warmup_steps\": 7, \"flight_cooldown_steps\": 8, "
                  "\"flight_max_saves\": 2, \"flight_signal\": True}"),
        0);
    free(json);
    tprof_config_free(c);
}

#define RUN_ID_RULE                                                                                \
    "must be one plain path component of at most 200 bytes: not empty, \".\" or \"..\", without "  \
    "'/' or control characters"

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
        {"cuda_graphs", "nodes", "must be one of node, graph"},
        {"clock", "rdtsc", "must be one of auto, tsc, monotonic"},
        {"clock", "", "must be one of auto, tsc, monotonic"},
        {"trace_format", "protobuf", "must be one of json, perfetto"},
        {"output_dir", "", "must not be empty"},
        {"config", "", "must not be empty"},
        {"run_id", "a/b", RUN_ID_RULE},
        {"run_id", ".", RUN_ID_RULE},
        {"run_id", "..", RUN_ID_RULE},
        {"run_id", "", RUN_ID_RULE},
        {"flush_timeout_ms", "0", "must be an integer from 1 to 3600000"},
        {"with_stack", "sometimes", "must be true or false (also 1/0, yes/no, on/off)"},
        {"with_modules", "2", "must be true or false (also 1/0, yes/no, on/off)"},
        {"peak_tflops", "-1", "must be a decimal number >= 0"},
        {"peak_tflops", "nan", "must be a decimal number >= 0"},
        {"peak_tflops", "1e999", "must be a decimal number >= 0"},
        {"nsight_output", "", "must not be empty"},
        {"schedule_every_n_steps", "-5", "must be an integer >= 0"},
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
    setenv("TPROF_OUTPUT_DIR", "", 1);  /* empty: as if unset */
    setenv("TPROF_NOT_A_KEY", "/x", 1); /* not a key: ignored */
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
    unsetenv("TPROF_NOT_A_KEY");
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
    /* Anchored plain values may be used under profiling: (the host's file shares its numbers). */
    assert_int_equal(
        tprof_config_load_yaml(c, yaml("steps: &n 4\nother: &m 2\nother2: &m 3\n"
                                       "profiling:\n  active: *n\n  epochs: [*m, 7]\n")),
        0);
    assert_int_equal(c->active, 4);
    assert_int_equal(c->nepochs, 2);
    assert_int_equal(c->epochs[0], 3);
    tprof_config_free(c);
}

/* A run's config.json, as tprof_config_to_json writes it: only its stages key is read, whatever
 * else it holds (keys of another tprof version, values of any type). */
static void test_run_config_stages(void **state) {
    (void)state;
    tprof_config *w = tprof_config_new();
    assert_int_equal(tprof_config_set(w, "stages", "data=*load*, fwd"), 0);
    assert_int_equal(tprof_config_set(w, "warmup", "3"), 0);
    char *json = tprof_config_to_json(w);
    tprof_config *c = tprof_config_new();
    assert_int_equal(tp_config_load_run_stages(c, yaml(json)), 0);
    assert_int_equal(c->nstages, 2);
    assert_string_equal(c->stages[0], "data=*load*");
    assert_string_equal(c->stages[1], "fwd");
    assert_int_equal(c->warmup, 0); /* the other keys are not taken */
    free(json);
    tprof_config_free(w);
    /* Unknown keys and nested values beside it; a file without the key changes nothing. */
    assert_int_equal(
        tp_config_load_run_stages(c, yaml("{\"colour\": {\"x\": [1]}, \"stages\": [\"a\"], "
                                          "\"profiling\": {\"stages\": [\"b\"]}}")),
        0);
    assert_int_equal(c->nstages, 1);
    assert_string_equal(c->stages[0], "a");
    assert_int_equal(tp_config_load_run_stages(c, yaml("{\"active\": 1}")), 0);
    assert_int_equal(c->nstages, 1);
    /* A stage that does not parse, and a cut file: the file, line and column. */
    char want[256];
    const char *path = yaml("{\"stages\":\n  [\"a=\"]}");
    assert_int_equal(tp_config_load_run_stages(c, path), -1);
    snprintf(want, sizeof(want), "invalid value \"[a=]\" for profiling.stages (from %s:2:3)", path);
    assert_memory_equal(tprof_config_error(c), want, strlen(want));
    path = yaml("{\"stages\": [\"a\",");
    assert_int_equal(tp_config_load_run_stages(c, path), -1);
    snprintf(want, sizeof(want), "%s:", path);
    assert_memory_equal(tprof_config_error(c), want, strlen(want));
    assert_non_null(strstr(tprof_config_error(c), "invalid YAML"));
    assert_int_equal(c->nstages, 1); /* a file taken whole or not at all */
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
    yaml_error("a: &l [1]\nprofiling:\n  epochs: *l\n",
               "%s:3:11: an alias under profiling: must name a plain value anchored before it "
               "(&name value)");
    yaml_error("profiling:\n  wait: *nowhere\n",
               "%s:2:9: an alias under profiling: must name a plain value anchored before it "
               "(&name value)");
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

/* ---- the key list (keys.h) against docs/CONFIG.md ---- */

#define TP_TEST_KEY_NAME(ID, name, type, min, max, deflt) #name,
#define TP_TEST_ALIAS_NAME(alias, ID)                     #alias,
static const char *const listed[] = {TP_CONFIG_KEYS(TP_TEST_KEY_NAME)
                                         TP_CONFIG_ALIASES(TP_TEST_ALIAS_NAME)};
#define NLISTED (sizeof(listed) / sizeof(listed[0]))

static char *read_docs(void) {
    const char *src = getenv("TPROF_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof(path), "%s/docs/CONFIG.md", src ? src : ".");
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot read %s", path);
    static char text[1 << 17];
    size_t n = fread(text, 1, sizeof(text) - 1, f);
    fclose(f);
    assert_true(n < sizeof(text) - 1);
    text[n] = '\0';
    return text;
}

/* Every key and alias of keys.h has its row in docs/CONFIG.md ("| `key` |"), and every row of
 * the docs' key and alias tables names a key or alias of keys.h. */
static void test_docs_list_every_key(void **state) {
    (void)state;
    const char *docs = read_docs();
    for (size_t i = 0; i < NLISTED; i++) /* an alias never shadows a key or another alias */
        for (size_t j = i + 1; j < NLISTED; j++)
            if (strcmp(listed[i], listed[j]) == 0) fail_msg("%s is listed twice", listed[i]);
    for (size_t i = 0; i < NLISTED; i++) {
        char row[96];
        snprintf(row, sizeof(row), "\n| `%s` |", listed[i]);
        if (!strstr(docs, row)) fail_msg("key %s is not documented in docs/CONFIG.md", listed[i]);
    }
    size_t rows = 0;
    for (const char *p = strstr(docs, "\n| `"); p; p = strstr(p + 1, "\n| `")) {
        const char *name = p + 4, *end = strchr(name, '`');
        assert_non_null(end);
        int found = 0;
        for (size_t i = 0; i < NLISTED && !found; i++)
            found = strlen(listed[i]) == (size_t)(end - name) &&
                    memcmp(listed[i], name, (size_t)(end - name)) == 0;
        if (!found) fail_msg("docs/CONFIG.md documents %.*s, not a key", (int)(end - name), name);
        rows++;
    }
    assert_int_equal(rows, NLISTED);
}

/* ---- the use cases' configurations, verbatim (issue 11) ---- */

/* Hydra's overrides: profiling.<key>=<value> with its *_steps names. */
static void test_hydra_overrides(void **state) {
    (void)state;
    char *argv[] = {"train.py",
                    "profiling.enabled=true",
                    "profiling.output_dir=/tmp/prof",
                    "profiling.wait_steps=1",
                    "profiling.warmup_steps=2",
                    "profiling.active_steps=3",
                    "profiling.repeat_cycles=4",
                    "profiling.schedule_every_n_steps=10",
                    "trainer.max_epochs=3",
                    NULL};
    int argc = 9;
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_args(c, &argc, argv), 0);
    assert_int_equal(argc, 2);
    assert_string_equal(argv[1], "trainer.max_epochs=3");
    assert_int_equal(c->enabled, 1);
    assert_string_equal(c->output_dir, "/tmp/prof");
    assert_int_equal(c->warmup, 2);
    assert_int_equal(c->active, 3);
    assert_int_equal(c->repeat, 4);
    assert_string_equal(c->origin[TP_KEY_WAIT], "profiling.wait_steps");
    char err[512];
    tp_schedule s;
    /* wait 1 + warmup 2 + active 3 is not a cycle of 10: no error (issue 23), the closest
     * schedule, which keeps the cycle, warmup and active, and one line naming it */
    assert_int_equal(tp_config_validate(c, err, sizeof(err)), 0);
    assert_int_equal(tp_config_cycle_note(c, err, sizeof(err)), 1);
    assert_string_equal(err, "profiling.schedule_every_n_steps = 10 (from "
                             "profiling.schedule_every_n_steps) cannot hold wait 1 + warmup 2 + "
                             "active 3 (from profiling.wait_steps, profiling.warmup_steps, "
                             "profiling.active_steps): profiling the closest schedule, a cycle of "
                             "10 steps with wait 5, warmup 2, active 3");
    tp_config_schedule(c, &s);
    assert_int_equal(s.mode, TP_SCHED_STEPS);
    assert_int_equal(s.wait, 5);
    assert_int_equal(s.warmup, 2);
    assert_int_equal(s.active, 3);
    tprof_config_free(c);
    /* Without wait, the cycle of N steps gives it: wait = N - warmup - active. */
    char *argv2[] = {"train.py", "profiling.warmup_steps=2", "profiling.active_steps=3",
                     "profiling.schedule_every_n_steps=10", NULL};
    argc = 4;
    c = tprof_config_new();
    assert_int_equal(tprof_config_load_args(c, &argc, argv2), 0);
    assert_int_equal(tp_config_validate(c, err, sizeof(err)), 0);
    assert_int_equal(tp_config_cycle_note(c, err, sizeof(err)), 0);
    tp_config_schedule(c, &s);
    assert_int_equal(s.mode, TP_SCHED_STEPS);
    assert_int_equal(s.wait, 5);
    assert_int_equal(s.warmup + s.active + s.wait, 10);
    /* warmup 2 + active 3 do not fit in 4: warmup kept, active the rest, wait 0 */
    assert_int_equal(tprof_config_set(c, "schedule_every_n_steps", "4"), 0);
    assert_int_equal(tp_config_validate(c, err, sizeof(err)), 0);
    assert_int_equal(tp_config_cycle_note(c, err, sizeof(err)), 1);
    tp_config_schedule(c, &s);
    assert_int_equal(s.wait, 0);
    assert_int_equal(s.warmup, 2);
    assert_int_equal(s.active, 2);
    /* a cycle of 1: one active step, nothing else */
    assert_int_equal(tprof_config_set(c, "schedule_every_n_steps", "1"), 0);
    tp_config_schedule(c, &s);
    assert_int_equal(s.wait + s.warmup, 0);
    assert_int_equal(s.active, 1);
    tprof_config_free(c);
}

/* schedule_every_n_steps=50 with wait_steps=1 alone, exactly as the use case writes it (issue
 * 23): active is the rest of the cycle, with no note; with wait too long, the closest. */
static void test_cycle_with_wait_only(void **state) {
    (void)state;
    char *argv[] = {"train.py", "profiling.schedule_every_n_steps=50", "profiling.wait_steps=1",
                    NULL};
    int argc = 3;
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_args(c, &argc, argv), 0);
    char note[512];
    tp_schedule s;
    assert_int_equal(tp_config_validate(c, note, sizeof(note)), 0);
    assert_int_equal(tp_config_cycle_note(c, note, sizeof(note)), 0);
    tp_config_schedule(c, &s);
    assert_int_equal(s.mode, TP_SCHED_STEPS);
    assert_int_equal(s.wait, 1);
    assert_int_equal(s.warmup, 0);
    assert_int_equal(s.active, 49);
    /* schedule_every_n_steps 50, wait 1, warmup 1: active 48, every 50 steps */
    assert_int_equal(tprof_config_set(c, "warmup", "1"), 0);
    tp_config_schedule(c, &s);
    assert_int_equal(s.active, 48);
    assert_int_equal(tp_schedule_action(&s, 0), TP_ACTION_NONE);
    assert_int_equal(tp_schedule_action(&s, 1), TP_ACTION_WARMUP);
    assert_int_equal(tp_schedule_action(&s, 49), TP_ACTION_RECORD_AND_SAVE);
    assert_int_equal(tp_schedule_action(&s, 50), TP_ACTION_NONE);
    /* wait 60 leaves no step to record in 50: the closest keeps the cycle, one active step */
    assert_int_equal(tprof_config_set(c, "wait", "60"), 0);
    assert_int_equal(tp_config_cycle_note(c, note, sizeof(note)), 1);
    assert_non_null(strstr(note, "a cycle of 50 steps with wait 48, warmup 1, active 1"));
    tprof_config_free(c);
}

/* --profiler on (another use case's flag), --profile off, --profiler=off; --profiler with a
 * value of the program's own stays in argv (issue 23). */
static void test_profiler_flag(void **state) {
    (void)state;
    char *argv[] = {"train.py", "--profiler", "on", "--epochs", "3", NULL};
    int argc = 5;
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_args(c, &argc, argv), 0);
    assert_int_equal(c->enabled, 1);
    assert_string_equal(c->origin[TP_KEY_ENABLED], "--profiler");
    assert_int_equal(argc, 3);
    assert_string_equal(argv[1], "--epochs");
    char *argv2[] = {"train.py", "--profiler=off", "--profiler", "simple", NULL};
    argc = 4;
    assert_int_equal(tprof_config_load_args(c, &argc, argv2), 0);
    assert_int_equal(c->enabled, 0);
    assert_int_equal(argc, 3); /* --profiler simple: the program's own option */
    assert_string_equal(argv2[1], "--profiler");
    assert_string_equal(argv2[2], "simple");
    char *argv3[] = {"train.py", "--profile", "off", "--profile", "data", NULL};
    argc = 5;
    assert_int_equal(tprof_config_load_args(c, &argc, argv3), 0);
    assert_int_equal(c->enabled, 1); /* the last wins: --profile alone, "data" the program's */
    assert_int_equal(argc, 2);
    assert_string_equal(argv3[1], "data");
    char *argv4[] = {"train.py", "--profiler=maybe", NULL};
    argc = 2;
    assert_int_equal(tprof_config_load_args(c, &argc, argv4), -1);
    assert_string_equal(tprof_config_error(c),
                        "invalid value \"maybe\" for profiling.enabled (from --profiler): must be "
                        "true or false (also 1/0, yes/no, on/off)");
    tprof_config_free(c);
}

/* callbacks.profiler.<key>=<value>: the use case's Hydra override of its callback group,
 * without instantiate (issue 23); the group's keys tprof does not know stay the program's. */
static void test_callbacks_profiler_overrides(void **state) {
    (void)state;
    char *argv[] = {"train.py",
                    "callbacks.profiler.enabled=true",
                    "+callbacks.profiler.profile_epochs=[1,3]",
                    "++callbacks.profiler.log_top_k_ops=5",
                    "callbacks.profiler._target_=tprof.torch.Callback",
                    "callbacks.profiler.activities=[cpu]",
                    "callbacks.other.enabled=true",
                    "+++callbacks.profiler.enabled=false",
                    NULL};
    int argc = 8;
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_args(c, &argc, argv), 0);
    assert_int_equal(c->enabled, 1);
    assert_int_equal(c->nepochs, 2);
    assert_int_equal(c->epochs[1], 3);
    assert_int_equal(c->top_k, 5);
    assert_string_equal(c->origin[TP_KEY_TOP_K], "++callbacks.profiler.log_top_k_ops");
    assert_int_equal(argc, 5);
    assert_string_equal(argv[1], "callbacks.profiler._target_=tprof.torch.Callback");
    assert_string_equal(argv[2], "callbacks.profiler.activities=[cpu]");
    assert_string_equal(argv[3], "callbacks.other.enabled=true");
    assert_string_equal(argv[4], "+++callbacks.profiler.enabled=false");
    char *bad[] = {"train.py", "callbacks.profiler.wait=-1", NULL};
    argc = 2;
    assert_int_equal(tprof_config_load_args(c, &argc, bad), -1);
    assert_non_null(strstr(tprof_config_error(c), "(from callbacks.profiler.wait)"));
    tprof_config_free(c);
}

/* --profiling.with_stack False: a separate value, written as Python writes booleans. */
static void test_python_style_booleans(void **state) {
    (void)state;
    char *argv[] = {"train.py", "--profiling.with_stack", "False", "--profiling.enabled",
                    "True",     "--profiling.gzip",       "data",  NULL};
    int argc = 7;
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_set(c, "with_stack", "true"), 0);
    assert_int_equal(tprof_config_load_args(c, &argc, argv), 0);
    assert_int_equal(c->with_stack, 0);
    assert_int_equal(c->enabled, 1);
    assert_int_equal(c->gzip, 1); /* a flag: "data" is the program's */
    assert_int_equal(argc, 2);
    assert_string_equal(argv[1], "data");
    tprof_config_free(c);
}

/* A profiling: section without enabled turns profiling on; enabled: false still wins. */
static void test_yaml_section_enables(void **state) {
    (void)state;
    const char *path = yaml("trainer: {max_epochs: 3}\n"
                            "profiling:\n"
                            "  wait: 1\n"
                            "  warmup: 1\n"
                            "  active: 3\n"
                            "  repeat: 2\n"
                            "  record_shapes: true\n"
                            "  profile_memory: true\n"
                            "  with_stack: true\n");
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_yaml(c, path), 0);
    assert_int_equal(c->enabled, 1);
    assert_int_equal(c->with_stack, 1);
    assert_int_equal(c->repeat, 2);
    char where[128];
    snprintf(where, sizeof(where), "%s:3:3 (a profiling: section without enabled)", path);
    assert_string_equal(c->origin[TP_KEY_ENABLED], where);
    tprof_config_free(c);
    c = tprof_config_new();
    assert_int_equal(
        tprof_config_load_yaml(c, yaml("profiling:\n  with_stack: true\n  enabled: false\n")), 0);
    assert_int_equal(c->enabled, 0);
    tprof_config_free(c);
    /* A file without the section, or with an empty one, leaves profiling as it was. */
    c = tprof_config_new();
    assert_int_equal(tprof_config_load_yaml(c, yaml("model: {layers: 2}\n")), 0);
    assert_int_equal(tprof_config_load_yaml(c, yaml("profiling:\n")), 0);
    assert_int_equal(c->enabled, 0);
    tprof_config_free(c);
}

/* The decorator's keys, nsight_enabled as an alias of nsight. */
static void test_decorator_keys(void **state) {
    (void)state;
    static const char *const kv[][2] = {
        {"skip_first", "1"},      {"wait", "1"},         {"warmup", "1"},
        {"active", "2"},          {"repeat", "1"},       {"with_stack", "True"},
        {"with_flops", "True"},   {"with_modules", "0"}, {"nsight_enabled", "True"},
        {"nsight_output", "run1"}};
    tprof_config *c = tprof_config_new();
    for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++)
        if (tprof_config_set(c, kv[i][0], kv[i][1])) fail_msg("%s", tprof_config_error(c));
    assert_int_equal(c->nsight, 1);
    assert_string_equal(c->nsight_output, "run1");
    assert_int_equal(c->with_modules, 0);
    assert_string_equal(c->origin[TP_KEY_NSIGHT], "tprof_config_set");
    /* An alias's errors name it as written. */
    assert_int_equal(tprof_config_set(c, "nsight_enabled", "maybe"), -1);
    assert_string_equal(tprof_config_error(c),
                        "invalid value \"maybe\" for profiling.nsight_enabled (from "
                        "tprof_config_set): must be true or false (also 1/0, yes/no, on/off)");
    /* Aliases are not environment variables: TPROF_<KEY> names keys only. */
    setenv("TPROF_WAIT_STEPS", "7", 1);
    assert_int_equal(tprof_config_load_env(c), 0);
    assert_int_equal(c->wait, 1);
    unsetenv("TPROF_WAIT_STEPS");
    tprof_config_free(c);
}

/* Keys given while profiling is off: one line says nothing will be recorded, and why. */
static void test_idle_note(void **state) {
    (void)state;
    tprof_config *c = tprof_config_new();
    char note[512];
    assert_int_equal(tp_config_idle_note(c, note, sizeof(note)), 0);
    char *argv[] = {"prog", "--profiling.wait", "2", "--profiling.with_stack", NULL};
    int argc = 4;
    assert_int_equal(tprof_config_load_args(c, &argc, argv), 0);
    assert_int_equal(tp_config_idle_note(c, note, sizeof(note)), 1);
    assert_string_equal(note, "profiling is off (profiling.enabled is not set: add --profile, "
                              "profiling.enabled=true or TPROF_ENABLED=1): profiling.wait (from "
                              "--profiling.wait) and 1 other key given, nothing will be recorded");
    setenv("TPROF_ENABLED", "0", 1);
    assert_int_equal(tprof_config_load_env(c), 0);
    unsetenv("TPROF_ENABLED");
    assert_int_equal(tp_config_idle_note(c, note, sizeof(note)), 1);
    assert_non_null(strstr(note, "(profiling.enabled is false, from TPROF_ENABLED)"));
    /* tprof_start says it once, and records nothing. */
    tp_log_reset();
    tp_log_set_quiet(1);
    assert_int_equal(tprof_start(c), 0);
    assert_int_equal(tprof_is_recording(), 0);
    tprof_shutdown();
    tp_log_set_quiet(0);
    assert_string_equal(tp_log_last(), note);
    assert_int_equal(tprof_config_set(c, "enabled", "1"), 0);
    assert_int_equal(tp_config_idle_note(c, note, sizeof(note)), 0);
    tprof_config_free(c);
}

/* ---- hostile values (issue 10) ---- */

/* run_id is one plain path component in every source. */
static void test_run_id_every_source(void **state) {
    (void)state;
    static const char *const bad[] = {".", "..", "a/b", "../x", "/abs", "a\tb", "a\x7f"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        tprof_config *c = tprof_config_new();
        char *before = strdup(c->run_id);
        assert_int_equal(tprof_config_set(c, "run_id", bad[i]), -1);
        assert_non_null(strstr(tprof_config_error(c), "must be one plain path component"));
        setenv("TPROF_RUN_ID", bad[i], 1);
        assert_int_equal(tprof_config_load_env(c), -1);
        assert_non_null(strstr(tprof_config_error(c), "(from TPROF_RUN_ID)"));
        unsetenv("TPROF_RUN_ID");
        char arg[64];
        snprintf(arg, sizeof(arg), "--profiling.run_id=%s", bad[i]);
        char *argv[] = {"prog", arg, NULL};
        int argc = 2;
        assert_int_equal(tprof_config_load_args(c, &argc, argv), -1);
        char text[96];
        snprintf(text, sizeof(text), "profiling:\n  run_id: \"%s\"\n",
                 bad[i][0] == '\t' || strchr(bad[i], '\t') ? "a\\tb"
                 : strchr(bad[i], 0x7f)                    ? "a\\x7f"
                                                           : bad[i]);
        assert_int_equal(tprof_config_load_yaml(c, yaml(text)), -1);
        assert_non_null(strstr(tprof_config_error(c), "must be one plain path component"));
        assert_null(strchr(tprof_config_error(c), '\t'));
        assert_string_equal(c->run_id, before);
        free(before);
        tprof_config_free(c);
    }
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_set(c, "run_id", "...x.."), 0); /* dots in a name are fine */
    tprof_config_free(c);
}

/* Whatever a source gives, a message echoes at most 80 characters of a value or key. */
static void test_echo_capped(void **state) {
    (void)state;
    size_t n = 1 << 20;
    char *huge = malloc(n + 16);
    assert_non_null(huge);
    memset(huge, 'x', n);
    huge[n] = '\0';
    tprof_config *c = tprof_config_new();
    char want[256];
    snprintf(want, sizeof(want), "invalid value \"%.80s...\" for profiling.wait", huge);
    assert_int_equal(tprof_config_set(c, "wait", huge), -1);
    assert_memory_equal(tprof_config_error(c), want, strlen(want));
    assert_true(strlen(tprof_config_error(c)) < 200);
    assert_int_equal(tprof_config_set(c, "run_id", huge), -1); /* over 200 bytes: no file name */
    assert_true(strlen(tprof_config_error(c)) < 300);
    huge[200] = '\0';
    assert_int_equal(tprof_config_set(c, "run_id", huge), 0);
    huge[200] = 'x';
    huge[5] = '/';
    assert_int_equal(tprof_config_set(c, "run_id", huge), -1);
    assert_true(strlen(tprof_config_error(c)) < 300);
    assert_int_equal(tprof_config_set(c, huge, "1"), -1); /* an unknown key that long */
    assert_true(strlen(tprof_config_error(c)) < 200);
    assert_non_null(strstr(tprof_config_error(c), "... = \"1\""));
    /* UTF-8 is cut between characters: 79 ASCII bytes, then 2-byte characters. */
    memset(huge, 'a', 79);
    for (size_t i = 79; i + 2 < 200; i += 2)
        huge[i] = (char)0xc3, huge[i + 1] = (char)0xa9;
    huge[199] = '\0';
    assert_int_equal(tprof_config_set(c, "top_k", huge), -1);
    assert_non_null(strstr(tprof_config_error(c), "aaa...\" for profiling.top_k"));
    char *argv[] = {"prog", huge, NULL};
    memcpy(huge, "--profiling.", 12);
    int argc = 2;
    assert_int_equal(tprof_config_load_args(c, &argc, argv), -1);
    assert_true(strlen(tprof_config_error(c)) < 300);
    free(huge);
    tprof_config_free(c);
}

/* TPROF_CONFIG naming a directory, a FIFO or a device: one clear line, never a wait. */
static void test_config_not_regular(void **state) {
    (void)state;
    tprof_config *c = tprof_config_new();
    assert_int_equal(tprof_config_load_yaml(c, "/tmp"), -1);
    assert_string_equal(tprof_config_error(c), "cannot read config file /tmp: is a directory");
    char fifo[] = "/tmp/tprof_fifo_XXXXXX";
    assert_non_null(mkdtemp(fifo));
    char path[64];
    snprintf(path, sizeof(path), "%s/f", fifo);
    assert_int_equal(mkfifo(path, 0600), 0);
    assert_int_equal(tprof_config_load_yaml(c, path), -1); /* no writer: would block forever */
    char want[128];
    snprintf(want, sizeof(want), "cannot read config file %s: is not a regular file", path);
    assert_string_equal(tprof_config_error(c), want);
    unlink(path);
    rmdir(fifo);
    assert_int_equal(tprof_config_load_yaml(c, "/dev/zero"), -1);
    assert_string_equal(tprof_config_error(c),
                        "cannot read config file /dev/zero: is not a regular file");
    /* A path too long to echo keeps its end. */
    char longpath[300];
    memset(longpath, 'd', sizeof(longpath));
    memcpy(longpath + 250, "/train.yaml", 12);
    assert_int_equal(tprof_config_load_yaml(c, longpath), -1);
    assert_memory_equal(tprof_config_error(c), "cannot read config file ...", 27);
    assert_non_null(strstr(tprof_config_error(c), "dd/train.yaml: "));
    tprof_config_free(c);
}

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Nesting deeper than 256 anywhere in the file stops the reading at once; 256 is read. */
static void test_yaml_depth(void **state) {
    (void)state;
    size_t depth = 100000;
    char *text = malloc(2 * depth + 64);
    assert_non_null(text);
    strcpy(text, "profiling: {wait: 1}\nother: ");
    size_t o = strlen(text);
    memset(text + o, '[', depth);
    memset(text + o + depth, ']', depth);
    strcpy(text + o + 2 * depth, "\n");
    const char *path = yaml(text);
    tprof_config *c = tprof_config_new();
    double t0 = now_s();
    assert_int_equal(tprof_config_load_yaml(c, path), -1);
    double took = now_s() - t0;
    char want[128];
    snprintf(want, sizeof(want), "%s:2:263: nested deeper than 256 levels", path);
    assert_memory_equal(tprof_config_error(c), want, strlen(want));
    assert_int_equal(c->wait, 0); /* nothing taken from a file that fails */
    /* a generous bound: the 19 s of a document tree would fail it by far */
    if (took > 2.0) fail_msg("100,000 levels took %.3f s", took);
    /* 256 levels (profiling: counts as one) are read. */
    strcpy(text, "profiling: {wait: 1}\nother: ");
    memset(text + o, '[', 255);
    memset(text + o + 255, ']', 255);
    strcpy(text + o + 510, "\n");
    assert_int_equal(tprof_config_load_yaml(c, yaml(text)), 0);
    assert_int_equal(c->wait, 1);
    free(text);
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
        cmocka_unit_test_teardown(test_docs_list_every_key, teardown),
        cmocka_unit_test_teardown(test_hydra_overrides, teardown),
        cmocka_unit_test_teardown(test_python_style_booleans, teardown),
        cmocka_unit_test_teardown(test_yaml_section_enables, teardown),
        cmocka_unit_test_teardown(test_decorator_keys, teardown),
        cmocka_unit_test_teardown(test_idle_note, teardown),
        cmocka_unit_test_teardown(test_run_id_every_source, teardown),
        cmocka_unit_test_teardown(test_echo_capped, teardown),
        cmocka_unit_test_teardown(test_run_config_stages, teardown),
        cmocka_unit_test_teardown(test_config_not_regular, teardown),
        cmocka_unit_test_teardown(test_yaml_depth, teardown),
        cmocka_unit_test_teardown(test_cycle_with_wait_only, teardown),
        cmocka_unit_test_teardown(test_profiler_flag, teardown),
        cmocka_unit_test_teardown(test_callbacks_profiler_overrides, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
