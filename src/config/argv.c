/* argv.c - the command-line source: --profile, --profiler on, --profiling.<key> <value>,
 * --profiling.<key>=<value> and Hydra's profiling.<key>=<value> and
 * callbacks.profiler.<key>=<value> (docs/CONFIG.md, "The command line").
 *
 * Every tprof argument leaves argv, valid or not, so that the host's own parser never sees it;
 * arguments after "--" are the host's. A boolean key may stand alone as a flag; when the next
 * argument is a boolean (True/False as Python scripts write it) it is the flag's value. */
#include "config/table.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One command-line argument that belongs to tprof: its key and value, and how many argv slots
 * it takes (1 or 2); 0 when the argument is the program's own. */
typedef struct tp_cli_arg {
    const char *key;
    size_t keylen;
    const char *value;
    int slots;
    size_t prefix; /* bytes before the key (--profiling., callbacks.profiler.); 0: --profile(r) */
} tp_cli_arg;

/* --profile and --profiler switch profiling on; a boolean after either (--profiler on, as a
 * use case writes it) or after '=' is the value. --profiler with any other value is the
 * program's own option (Lightning scripts have a --profiler simple): it stays in argv. */
static int enable_arg(int argc, char **argv, int i, tp_cli_arg *out) {
    const char *a = argv[i], *eq = strchr(a, '=');
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    int b, profiler = len == 10 && memcmp(a, "--profiler", 10) == 0;
    if (!profiler && !(len == 9 && memcmp(a, "--profile", 9) == 0)) return 0;
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    *out = (tp_cli_arg){"enabled", 7, "true", 1, 0};
    if (eq)
        out->value = eq + 1;
    else if (next && tp_parse_bool(next, &b) == 0) /* 0: a boolean */
        out->value = next, out->slots = 2;
    return !profiler || eq || out->slots == 2;
}

/* The prefix of a tprof argument in Hydra's key=value form: profiling.<key>=<value>, or
 * callbacks.profiler.<key>=<value> (with Hydra's + or ++), the use cases' callback group, for a
 * key tprof knows (its other keys, _target_ and the like, are the program's); 0 when none. */
static size_t hydra_prefix(const char *a) {
    static const char group[] = "callbacks.profiler.";
    if (strncmp(a, "profiling.", 10) == 0) return 10;
    size_t plus = strspn(a, "+");
    if (plus > 2 || strncmp(a + plus, group, sizeof(group) - 1) != 0) return 0;
    const char *key = a + plus + sizeof(group) - 1, *eq = strchr(key, '=');
    if (!eq || !tp_config_find_key(key, (size_t)(eq - key))) return 0;
    return plus + sizeof(group) - 1;
}

static int cli_arg(int argc, char **argv, int i, tp_cli_arg *out) {
    const char *a = argv[i];
    if (enable_arg(argc, argv, i, out)) return 1;
    int dashed = strncmp(a, "--profiling.", 12) == 0;
    size_t prefix = dashed ? 12 : hydra_prefix(a);
    if (!prefix || (!dashed && !strchr(a, '='))) return 0;
    out->key = a + prefix;
    out->prefix = prefix;
    const char *eq = strchr(out->key, '=');
    out->slots = 1;
    if (eq) {
        out->keylen = (size_t)(eq - out->key);
        out->value = eq + 1;
        return 1;
    }
    out->keylen = strlen(out->key);
    /* --profiling.<bool key> alone is a flag; otherwise the next argument is the value. */
    const tp_keydef *k = tp_config_find_key(out->key, out->keylen);
    int b;
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (k && k->type == TP_T_BOOL && (!next || tp_parse_bool(next, &b))) {
        out->value = "true";
        return 1;
    }
    out->value = next;
    out->slots = next ? 2 : 1;
    return 1;
}

/* The source named in messages: the option without its value (--profiling.wait,
 * profiling.wait), its key capped as values are. */
static void source_name(const char *arg, const tp_cli_arg *a, char *out, size_t size) {
    if (!a->prefix) { /* --profile, --profiler: the option without its value */
        snprintf(out, size, "%.*s", (int)strcspn(arg, "="), arg);
        return;
    }
    size_t keylen = a->keylen > TP_SHOWN_MAX ? TP_SHOWN_MAX : a->keylen;
    snprintf(out, size, "%.*s%s", (int)(a->prefix + keylen), arg, keylen < a->keylen ? "..." : "");
}

int tprof_config_load_args(tprof_config *cfg, int *argc, char **argv) {
    if (!cfg) return -1;
    cfg->err[0] = '\0'; /* the error of this call, "" when it succeeds (tprof.h) */
    if (!argc || !argv || *argc <= 1) return 0;
    int n = *argc, rc = 0;
    /* The arguments are tprof's whether or not their values are valid: they leave argv either
     * way, so that the host's own parser never sees them. The first error is kept. */
    for (int i = 1; i < n && rc == 0; i++) {
        tp_cli_arg arg;
        if (strcmp(argv[i], "--") == 0) break;
        if (!cli_arg(n, argv, i, &arg)) continue;
        char source[160];
        source_name(argv[i], &arg, source, sizeof(source));
        if (!arg.value)
            rc = TP_CONFIG_FAIL(cfg, "missing value for %s (from the command line)", source);
        else
            rc = tp_config_apply(cfg, arg.key, arg.keylen, arg.value, source);
        i += arg.slots - 1;
    }
    int out = 1, i = 1;
    while (i < n) {
        tp_cli_arg arg;
        if (strcmp(argv[i], "--") == 0) break;
        if (cli_arg(n, argv, i, &arg)) {
            i += arg.slots;
            continue;
        }
        argv[out++] = argv[i++];
    }
    while (i < n)
        argv[out++] = argv[i++];
    argv[out] = NULL;
    *argc = out;
    return rc;
}

const char *tp_config_find_path(int argc, char **argv) {
    const char *path = NULL;
    for (int i = 1; argv && i < argc; i++) {
        tp_cli_arg arg;
        if (strcmp(argv[i], "--") == 0) break;
        if (!cli_arg(argc, argv, i, &arg)) continue;
        if (arg.keylen == 6 && memcmp(arg.key, "config", 6) == 0 && arg.value) path = arg.value;
        i += arg.slots - 1;
    }
    if (path) return path;
    path = getenv("TPROF_CONFIG");
    return path && *path ? path : NULL;
}
