/* fuzz_config.c - libFuzzer target: any bytes through every source of the configuration.
 *
 * Each input is read as a YAML file (tprof_config_load_yaml, on an in-memory file) and as a run's
 * config.json (tp_config_load_run_stages, its stages key), then its lines serve as command-line
 * arguments (tprof_config_load_args), as "key=value" pairs for tprof_config_set, and as
 * TPROF_<KEY> environment values (tprof_config_load_env). Every call
 * must return 0, or -1 with a one-line error; the arguments left to the program must be its own,
 * in order; the effective configuration must stay valid JSON. The sanitizers check the rest. */
#include "tprof.h"

#include "config/config.h"
#include "util/jsonvalid.h"
#include "util/log.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

enum { MAX_LINES = 32, MAX_KEYS = 64 };

static char yaml_path[64];
static int yaml_fd = -1;
static char *keys[MAX_KEYS]; /* the configuration's key names, from its JSON */
static size_t nkeys;

/* The key names of the default configuration's JSON object ({"enabled": false, ...}). */
static void learn_keys(void) {
    tprof_config *cfg = tprof_config_new();
    char *json = cfg ? tprof_config_to_json(cfg) : NULL;
    for (char *p = json; p && (p = strstr(p, "\"")) && nkeys < MAX_KEYS;) {
        char *end = strchr(p + 1, '"');
        if (!end) break;
        if (end[1] == ':') keys[nkeys++] = strndup(p + 1, (size_t)(end - p - 1));
        p = end + 1;
    }
    free(json);
    tprof_config_free(cfg);
    if (!nkeys) abort();
}

static void setup(void) {
    tp_log_set_quiet(1);
    yaml_fd = memfd_create("fuzz_config.yaml", 0);
    if (yaml_fd < 0) abort();
    snprintf(yaml_path, sizeof(yaml_path), "/proc/self/fd/%d", yaml_fd);
    learn_keys();
}

/* rc is 0, or -1 with one line of error. */
static void check_rc(const tprof_config *cfg, int rc) {
    const char *err = tprof_config_error(cfg);
    if (rc != 0 && (rc != -1 || !*err || strchr(err, '\n') || strchr(err, '\r'))) abort();
}

static void check_json(const tprof_config *cfg) {
    char *json = tprof_config_to_json(cfg);
    if (json && !tp_json_valid(json, strlen(json))) abort();
    free(json);
}

static int is_tprof_arg(const char *a) {
    return strcmp(a, "--profile") == 0 || strncmp(a, "--profiling.", 12) == 0 ||
           (strncmp(a, "profiling.", 10) == 0 && strchr(a, '='));
}

/* The arguments left must be a subsequence of the originals, none of tprof's before "--". */
static void check_args(char **orig, int n, char **left, int m) {
    if (m < 1 || m > n || left[m] != NULL || left[0] != orig[0]) abort();
    int k = 1, dashes = 0;
    for (int i = 1; i < m; i++) {
        while (k < n && orig[k] != left[i])
            k++;
        if (k++ == n) abort();
        if (!dashes && is_tprof_arg(left[i])) abort();
        dashes |= strcmp(left[i], "--") == 0;
    }
}

static void through_args(tprof_config *cfg, char **lines, int n) {
    char *orig[MAX_LINES + 2], *argv[MAX_LINES + 2];
    orig[0] = argv[0] = "prog";
    for (int i = 0; i < n; i++)
        orig[i + 1] = argv[i + 1] = lines[i];
    argv[n + 1] = NULL;
    int argc = n + 1;
    check_rc(cfg, tprof_config_load_args(cfg, &argc, argv));
    check_args(orig, n + 1, argv, argc);
}

/* Each line "key=value" (or "value" for a key picked by the line's first byte) goes to
 * tprof_config_set and to the environment variable of that key. */
static void through_set_and_env(tprof_config *cfg, char **lines, int n) {
    char names[MAX_LINES][80];
    for (int i = 0; i < n; i++) {
        const char *value = lines[i], *eq = strchr(lines[i], '=');
        char key[64];
        if (eq && (size_t)(eq - lines[i]) < sizeof(key)) {
            snprintf(key, sizeof(key), "%.*s", (int)(eq - lines[i]), lines[i]);
            value = eq + 1;
        } else {
            snprintf(key, sizeof(key), "%s", keys[(unsigned char)lines[i][0] % nkeys]);
        }
        check_rc(cfg, tprof_config_set(cfg, key, value));
        snprintf(names[i], sizeof(names[i]), "TPROF_%s", key);
        for (char *p = names[i]; *p; p++)
            *p = (char)toupper((unsigned char)*p);
        if (strchr(names[i], '=') || setenv(names[i], value, 1)) names[i][0] = '\0';
    }
    check_rc(cfg, tprof_config_load_env(cfg));
    for (int i = 0; i < n; i++)
        if (names[i][0]) unsetenv(names[i]);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    if (yaml_fd < 0) setup();
    if (ftruncate(yaml_fd, 0) || pwrite(yaml_fd, data, size, 0) != (ssize_t)size) abort();
    tprof_config *cfg = tprof_config_new();
    if (!cfg) return 0;
    check_rc(cfg, tprof_config_load_yaml(cfg, yaml_path));
    check_json(cfg);
    check_rc(cfg, tp_config_load_run_stages(cfg, yaml_path)); /* as a run's config.json */
    check_json(cfg);

    char *text = strndup((const char *)data, size), *lines[MAX_LINES];
    int n = 0;
    for (char *p = text, *nl; p && n < MAX_LINES; p = nl ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        if (nl) *nl = '\0';
        lines[n++] = p;
    }
    through_args(cfg, lines, n);
    check_json(cfg);
    through_set_and_env(cfg, lines, n);
    check_json(cfg);
    char err[512];
    if (tp_config_validate(cfg, err, sizeof(err)) && strchr(err, '\n')) abort();
    free(text);
    tprof_config_free(cfg);
    return 0;
}
