/* config.c - the configuration keys, their parsing, and the environment and command-line sources.
 *
 * Every source goes through tp_config_apply, so a key parses and fails the same way wherever it
 * comes from, with one message: invalid value "<v>" for profiling.<key> (from <source>): <rule>. */
#include "record/config.h"

#include "util/buf.h"
#include "util/vec.h"

#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

enum tp_key_type { T_BOOL, T_INT, T_STR, T_INTS, T_STRS, T_GPU };

typedef struct tp_keydef {
    const char *name;
    enum tp_key_type type;
    size_t off;
    int64_t min, max; /* T_INT and the items of T_INTS */
} tp_keydef;

#define TP_MAX_COUNT INT64_C(1000000000)
#define FIELD(f)     offsetof(struct tprof_config, f)

/* In enum tp_config_key order. */
static const tp_keydef keys[TP_NKEYS] = {
    {"enabled", T_BOOL, FIELD(enabled), 0, 0},
    {"output_dir", T_STR, FIELD(output_dir), 0, 0},
    {"run_id", T_STR, FIELD(run_id), 0, 0},
    {"skip_first", T_INT, FIELD(skip_first), 0, TP_MAX_COUNT},
    {"wait", T_INT, FIELD(wait), 0, TP_MAX_COUNT},
    {"warmup", T_INT, FIELD(warmup), 0, TP_MAX_COUNT},
    {"active", T_INT, FIELD(active), 1, TP_MAX_COUNT},
    {"repeat", T_INT, FIELD(repeat), 0, TP_MAX_COUNT},
    {"skip_first_wait", T_BOOL, FIELD(skip_first_wait), 0, 0},
    {"epochs", T_INTS, FIELD(epochs), 0, TP_MAX_COUNT},
    {"epoch_steps", T_INT, FIELD(epoch_steps), 0, TP_MAX_COUNT},
    {"record_shapes", T_BOOL, FIELD(record_shapes), 0, 0},
    {"profile_memory", T_BOOL, FIELD(profile_memory), 0, 0},
    {"with_flops", T_BOOL, FIELD(with_flops), 0, 0},
    {"stages", T_STRS, FIELD(stages), 0, 0},
    {"gzip", T_BOOL, FIELD(gzip), 0, 0},
    {"tensorboard_names", T_BOOL, FIELD(tensorboard_names), 0, 0},
    {"max_events", T_INT, FIELD(max_events), 16, INT64_C(1) << 40},
    {"summary", T_BOOL, FIELD(summary), 0, 0},
    {"top_k", T_INT, FIELD(top_k), 1, 100000},
    {"config", T_STR, FIELD(config), 0, 0},
    {"signals", T_BOOL, FIELD(signals), 0, 0},
    {"gpu", T_GPU, FIELD(gpu), 0, 0},
    {"nsight", T_BOOL, FIELD(nsight), 0, 0},
    {"flush_timeout_ms", T_INT, FIELD(flush_timeout_ms), 10, INT64_C(3600000)},
};

static void *field(tprof_config *cfg, const tp_keydef *k) {
    return (char *)cfg + k->off;
}
static const void *cfield(const tprof_config *cfg, const tp_keydef *k) {
    return (const char *)cfg + k->off;
}

static const tp_keydef *find_key(const char *name, size_t len) {
    for (size_t i = 0; i < TP_NKEYS; i++)
        if (strlen(keys[i].name) == len && memcmp(keys[i].name, name, len) == 0) return &keys[i];
    return NULL;
}

tprof_config *tprof_config_new(void) {
    tprof_config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg) return NULL;
    char run_id[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    size_t n = strftime(run_id, sizeof(run_id), "%Y%m%d-%H%M%S", &tm);
    snprintf(run_id + n, sizeof(run_id) - n, "-%ld", (long)getpid());
    cfg->output_dir = strdup("tprof_runs");
    cfg->run_id = strdup(run_id);
    cfg->active = 1;
    cfg->with_flops = 1;
    cfg->max_events = INT64_C(4) << 20;
    cfg->summary = 1;
    cfg->top_k = 10;
    cfg->signals = 1;
    cfg->flush_timeout_ms = 5000;
    if (!cfg->output_dir || !cfg->run_id) {
        tprof_config_free(cfg);
        return NULL;
    }
    return cfg;
}

void tprof_config_free(tprof_config *cfg) {
    if (!cfg) return;
    free(cfg->output_dir);
    free(cfg->run_id);
    free(cfg->config);
    free(cfg->epochs);
    tp_free_strings(cfg->stages, cfg->nstages);
    for (size_t i = 0; i < TP_NKEYS; i++)
        free(cfg->origin[i]);
    free(cfg);
}

const char *tprof_config_error(const tprof_config *cfg) {
    return cfg ? cfg->err : "";
}

/* Keeps a message on one line: control characters that came with a value, key or argument quoted
 * in it become \n, \r, \t or \xHH (the end is cut to fit size). */
static void one_line(char *msg, size_t size) {
    char copy[sizeof(((tprof_config *)0)->err)];
    snprintf(copy, sizeof(copy), "%s", msg);
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)copy; *p && o + 5 < size; p++) {
        const char *esc = *p == '\n' ? "\\n" : *p == '\r' ? "\\r" : *p == '\t' ? "\\t" : NULL;
        if (*p >= 0x20 && *p != 0x7f)
            msg[o++] = (char)*p;
        else if (esc)
            o += (size_t)snprintf(msg + o, size - o, "%s", esc);
        else
            o += (size_t)snprintf(msg + o, size - o, "\\x%02x", *p);
    }
    msg[o] = '\0';
}

/* cfg->err = the message, on one line; the value -1. (A macro: no va_list for the analyzers to
 * doubt.) */
#define FAIL(cfg, ...)                                                                             \
    (snprintf((cfg)->err, sizeof((cfg)->err), __VA_ARGS__),                                        \
     one_line((cfg)->err, sizeof((cfg)->err)), -1)

int tp_parse_int(const char *s, int64_t *out) {
    const char *p = s;
    if (*p == '-' || *p == '+') p++;
    if (!isdigit((unsigned char)*p)) return -1;
    while (isdigit((unsigned char)*p))
        p++;
    if (*p) return -1;
    errno = 0;
    long long v = strtoll(s, NULL, 10);
    if (errno) return -1;
    *out = v;
    return 0;
}

static int parse_bool(const char *s, int *out) {
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no",
                                                                                "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = 1, 0;
        if (strcasecmp(s, no[i]) == 0) return *out = 0, 0;
    }
    return -1;
}

static const char *rule(const tp_keydef *k, char *buf, size_t n) {
    switch (k->type) {
    case T_BOOL:
        return "must be true or false (also 1/0, yes/no, on/off)";
    case T_GPU:
        return "must be auto, on or off";
    case T_STR:
        return k - keys == TP_KEY_RUN_ID ? "must be a non-empty name without '/'"
                                         : "must not be empty";
    case T_STRS:
        return "must be a list of stage names, each \"name\" or \"name=pattern|pattern\"";
    case T_INTS:
        snprintf(buf, n, "must be a list of integers >= %lld, e.g. [1, 5, 10] or \"1,5,10\"",
                 (long long)k->min);
        return buf;
    case T_INT:
        break;
    }
    if (k->max == TP_MAX_COUNT)
        snprintf(buf, n, "must be an integer >= %lld", (long long)k->min);
    else
        snprintf(buf, n, "must be an integer from %lld to %lld", (long long)k->min,
                 (long long)k->max);
    return buf;
}

static int bad_value(tprof_config *cfg, const tp_keydef *k, const char *value, const char *source) {
    char buf[128];
    return FAIL(cfg, "invalid value \"%s\" for profiling.%s (from %s): %s", value, k->name, source,
                rule(k, buf, sizeof(buf)));
}

static int set_origin(tprof_config *cfg, const tp_keydef *k, const char *source) {
    char *copy = strdup(source);
    if (!copy) return FAIL(cfg, "out of memory");
    free(cfg->origin[k - keys]);
    cfg->origin[k - keys] = copy;
    return 0;
}

static int valid_stage(const char *s) {
    const char *eq = strchr(s, '=');
    if (!*s || eq == s) return 0;
    if (!eq) return 1;
    /* name=pattern|pattern: no empty pattern */
    for (const char *p = eq + 1;; p++) {
        if ((*p == '|' || *p == '\0') && (p[-1] == '|' || p[-1] == '=')) return 0;
        if (!*p) return 1;
    }
}

static int set_list(tprof_config *cfg, const tp_keydef *k, const char *const *items, size_t n,
                    const char *shown, const char *source) {
    if (k->type == T_INTS) {
        int64_t *v = n ? malloc(n * sizeof(*v)) : NULL;
        if (n && !v) return FAIL(cfg, "out of memory");
        for (size_t i = 0; i < n; i++) {
            if (tp_parse_int(items[i], &v[i]) || v[i] < k->min || v[i] > k->max) {
                free(v);
                return bad_value(cfg, k, shown, source);
            }
        }
        free(cfg->epochs);
        cfg->epochs = v;
        cfg->nepochs = n;
        return set_origin(cfg, k, source);
    }
    char **v = n ? calloc(n, sizeof(*v)) : NULL;
    if (n && !v) return FAIL(cfg, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (!valid_stage(items[i])) {
            tp_free_strings(v, n);
            return bad_value(cfg, k, shown, source);
        }
        if (!(v[i] = strdup(items[i]))) {
            tp_free_strings(v, n);
            return FAIL(cfg, "out of memory");
        }
    }
    tp_free_strings(cfg->stages, cfg->nstages);
    cfg->stages = v;
    cfg->nstages = n;
    return set_origin(cfg, k, source);
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

/* "1,5,10", "[1, 5, 10]", "a, 'b'": the items, trimmed and unquoted. */
static int set_list_text(tprof_config *cfg, const tp_keydef *k, const char *value,
                         const char *source) {
    char *copy = strdup(value);
    size_t cap = 1;
    for (const char *p = value; *p; p++)
        cap += *p == ',';
    const char **items = malloc(cap * sizeof(*items));
    if (!copy || !items) {
        free(copy);
        free(items);
        return FAIL(cfg, "out of memory");
    }
    char *s = trim(copy);
    size_t len = strlen(s), n = 0;
    if (len >= 2 && s[0] == '[' && s[len - 1] == ']') {
        s[len - 1] = '\0';
        s = trim(s + 1);
    }
    for (char *item = s; *s;) {
        char *comma = strchr(item, ',');
        if (comma) *comma = '\0';
        char *t = trim(item);
        size_t tl = strlen(t);
        if (tl >= 2 && (t[0] == '"' || t[0] == '\'') && t[tl - 1] == t[0]) {
            t[tl - 1] = '\0';
            t++;
        }
        items[n++] = t;
        if (!comma) break;
        item = comma + 1;
    }
    int rc = set_list(cfg, k, items, n, value, source);
    free(items);
    free(copy);
    return rc;
}

static int set_scalar(tprof_config *cfg, const tp_keydef *k, const char *value,
                      const char *source) {
    void *f = field(cfg, k);
    switch (k->type) {
    case T_BOOL:
        if (parse_bool(value, (int *)f)) return bad_value(cfg, k, value, source);
        break;
    case T_INT: {
        int64_t v;
        if (tp_parse_int(value, &v) || v < k->min || v > k->max)
            return bad_value(cfg, k, value, source);
        *(int64_t *)f = v;
        break;
    }
    case T_GPU: {
        static const char *const modes[] = {"auto", "on", "off"};
        int m = -1, b;
        for (int i = 0; i < 3; i++)
            if (strcasecmp(value, modes[i]) == 0) m = i;
        if (m < 0 && parse_bool(value, &b) == 0) m = b ? TP_GPU_ON : TP_GPU_OFF;
        if (m < 0) return bad_value(cfg, k, value, source);
        *(int *)f = m;
        break;
    }
    case T_STR: {
        if (!*value || (k - keys == TP_KEY_RUN_ID && strchr(value, '/')))
            return bad_value(cfg, k, value, source);
        char *copy = strdup(value);
        if (!copy) return FAIL(cfg, "out of memory");
        free(*(char **)f);
        *(char **)f = copy;
        break;
    }
    case T_INTS:
    case T_STRS:
        return set_list_text(cfg, k, value, source);
    }
    return set_origin(cfg, k, source);
}

static int unknown_key(tprof_config *cfg, const char *key, size_t len, const char *value,
                       const char *source) {
    return FAIL(cfg, "unknown key profiling.%.*s = \"%s\" (from %s); see docs/CONFIG.md", (int)len,
                key, value, source);
}

int tp_config_apply(tprof_config *cfg, const char *key, size_t len, const char *value,
                    const char *source) {
    const tp_keydef *k = find_key(key, len);
    if (!k) return unknown_key(cfg, key, len, value, source);
    return set_scalar(cfg, k, value ? value : "", source);
}

int tp_config_reject(tprof_config *cfg, const char *key, size_t len, const char *shown,
                     const char *source) {
    const tp_keydef *k = find_key(key, len);
    return k ? bad_value(cfg, k, shown, source) : unknown_key(cfg, key, len, shown, source);
}

int tp_config_apply_list(tprof_config *cfg, const char *key, size_t len, const char *const *items,
                         size_t n, const char *source) {
    tp_buf shown;
    tp_buf_init(&shown);
    tp_buf_putc(&shown, '[');
    for (size_t i = 0; i < n; i++) {
        if (i) TP_BUF_LIT(&shown, ", ");
        tp_buf_puts(&shown, items[i]);
    }
    tp_buf_putc(&shown, ']');
    tp_buf_putc(&shown, '\0');
    const char *text = shown.failed ? "[...]" : shown.data;
    const tp_keydef *k = find_key(key, len);
    int rc = k && (k->type == T_INTS || k->type == T_STRS)
                 ? set_list(cfg, k, items, n, text, source)
                 : tp_config_reject(cfg, key, len, text, source);
    tp_buf_free(&shown);
    return rc;
}

int tprof_config_set(tprof_config *cfg, const char *key, const char *value) {
    if (!cfg) return -1;
    if (!key) return FAIL(cfg, "tprof_config_set: no key");
    if (strncmp(key, "profiling.", 10) == 0) key += 10;
    return tp_config_apply(cfg, key, strlen(key), value, "tprof_config_set");
}

int tprof_config_load_env(tprof_config *cfg) {
    if (!cfg) return -1;
    for (size_t i = 0; i < TP_NKEYS; i++) {
        char name[64] = "TPROF_";
        for (size_t j = 0; keys[i].name[j] && j + 7 < sizeof(name); j++)
            name[6 + j] = (char)toupper((unsigned char)keys[i].name[j]);
        const char *v = getenv(name);
        /* An empty variable counts as unset, as shells make them easily. */
        if (v && *v && set_scalar(cfg, &keys[i], v, name)) return -1;
    }
    return 0;
}

/* One command-line argument that belongs to tprof: its key and value, and how many argv slots
 * it takes (1 or 2); 0 when the argument is the program's own. */
typedef struct tp_cli_arg {
    const char *key;
    size_t keylen;
    const char *value;
    int slots;
} tp_cli_arg;

static int cli_arg(int argc, char **argv, int i, tp_cli_arg *out) {
    const char *a = argv[i];
    if (strcmp(a, "--profile") == 0) {
        *out = (tp_cli_arg){"enabled", 7, "true", 1};
        return 1;
    }
    int dashed = strncmp(a, "--profiling.", 12) == 0;
    if (!dashed && (strncmp(a, "profiling.", 10) != 0 || !strchr(a, '='))) return 0;
    out->key = a + (dashed ? 12 : 10);
    const char *eq = strchr(out->key, '=');
    out->slots = 1;
    if (eq) {
        out->keylen = (size_t)(eq - out->key);
        out->value = eq + 1;
        return 1;
    }
    out->keylen = strlen(out->key);
    /* --profiling.<bool key> alone is a flag; otherwise the next argument is the value. */
    const tp_keydef *k = find_key(out->key, out->keylen);
    int b;
    const char *next = i + 1 < argc ? argv[i + 1] : NULL;
    if (k && k->type == T_BOOL && (!next || parse_bool(next, &b))) {
        out->value = "true";
        return 1;
    }
    out->value = next;
    out->slots = next ? 2 : 1;
    return 1;
}

int tprof_config_load_args(tprof_config *cfg, int *argc, char **argv) {
    if (!cfg) return -1;
    if (!argc || !argv || *argc <= 1) return 0;
    int n = *argc, rc = 0;
    /* The arguments are tprof's whether or not their values are valid: they leave argv either
     * way, so that the host's own parser never sees them. The first error is kept. */
    for (int i = 1; i < n && rc == 0; i++) {
        tp_cli_arg arg;
        if (strcmp(argv[i], "--") == 0) break;
        if (!cli_arg(n, argv, i, &arg)) continue;
        /* The source is the option without its value: --profiling.wait, profiling.wait. */
        char source[160];
        int in_arg = arg.key > argv[i] && arg.key < argv[i] + strlen(argv[i]);
        int srclen = in_arg ? (int)(arg.key + arg.keylen - argv[i]) : (int)strlen(argv[i]);
        snprintf(source, sizeof(source), "%.*s", srclen, argv[i]);
        if (!arg.value)
            rc = FAIL(cfg, "missing value for %s (from the command line)", source);
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

int tp_config_load_sources(tprof_config *cfg, int *argc, char **argv) {
    /* Every source runs, so that tprof's arguments leave argv even when one source fails; the
     * first error is the one kept. */
    if (!cfg) return -1;
    const char *path = tp_config_find_path(argc ? *argc : 0, argv);
    char err[sizeof(cfg->err)] = "";
    if (path && tprof_config_load_yaml(cfg, path)) memcpy(err, cfg->err, sizeof(err));
    if (tprof_config_load_env(cfg) && !err[0]) memcpy(err, cfg->err, sizeof(err));
    if (tprof_config_load_args(cfg, argc, argv) && !err[0]) memcpy(err, cfg->err, sizeof(err));
    if (!err[0]) return 0;
    memcpy(cfg->err, err, sizeof(err));
    return -1;
}

static const char *origin(const tprof_config *cfg, int key) {
    return cfg->origin[key] ? cfg->origin[key] : "the default";
}

int tp_config_validate(const tprof_config *cfg, char *err, size_t errlen) {
    static const int step_keys[] = {TP_KEY_SKIP_FIRST, TP_KEY_WAIT, TP_KEY_ACTIVE, TP_KEY_REPEAT,
                                    TP_KEY_SKIP_FIRST_WAIT};
    if (cfg->nepochs) {
        for (size_t i = 0; i < sizeof(step_keys) / sizeof(step_keys[0]); i++) {
            int k = step_keys[i];
            if (!cfg->origin[k]) continue;
            snprintf(err, errlen,
                     "invalid configuration: profiling.epochs (from %s) and profiling.%s (from %s) "
                     "cannot be combined: use either the step schedule or epoch windows",
                     origin(cfg, TP_KEY_EPOCHS), keys[k].name, origin(cfg, k));
            one_line(err, errlen);
            return -1;
        }
    } else if (cfg->origin[TP_KEY_EPOCH_STEPS]) {
        snprintf(err, errlen,
                 "invalid configuration: profiling.epoch_steps (from %s) needs profiling.epochs",
                 origin(cfg, TP_KEY_EPOCH_STEPS));
        one_line(err, errlen);
        return -1;
    }
    return 0;
}

void tp_config_schedule(const tprof_config *cfg, tp_schedule *s) {
    static const int step_keys[] = {TP_KEY_SKIP_FIRST, TP_KEY_WAIT,   TP_KEY_WARMUP,
                                    TP_KEY_ACTIVE,     TP_KEY_REPEAT, TP_KEY_SKIP_FIRST_WAIT};
    *s = (tp_schedule){.mode = TP_SCHED_ALL,
                       .skip_first = cfg->skip_first,
                       .wait = cfg->wait,
                       .warmup = cfg->warmup,
                       .active = cfg->active,
                       .repeat = cfg->repeat,
                       .skip_first_wait = cfg->skip_first_wait,
                       .epochs = cfg->epochs,
                       .nepochs = cfg->nepochs,
                       .epoch_steps = cfg->epoch_steps};
    for (size_t i = 0; i < sizeof(step_keys) / sizeof(step_keys[0]); i++)
        if (cfg->origin[step_keys[i]]) s->mode = TP_SCHED_STEPS;
    if (cfg->nepochs) s->mode = TP_SCHED_EPOCHS;
}

tprof_config *tp_config_dup(const tprof_config *cfg) {
    tprof_config *d = calloc(1, sizeof(*d));
    if (!d) return NULL;
    *d = *cfg;
    d->output_dir = d->run_id = d->config = NULL;
    d->epochs = NULL;
    d->stages = NULL;
    d->nepochs = d->nstages = 0;
    memset(d->origin, 0, sizeof(d->origin));
    int ok = 1;
    for (size_t i = 0; i < TP_NKEYS && ok; i++) {
        const tp_keydef *k = &keys[i];
        if (k->type == T_STR && *(char *const *)cfield(cfg, k))
            ok = (*(char **)field(d, k) = strdup(*(char *const *)cfield(cfg, k))) != NULL;
        if (ok && cfg->origin[i]) ok = (d->origin[i] = strdup(cfg->origin[i])) != NULL;
    }
    if (ok && cfg->nepochs && (d->epochs = malloc(cfg->nepochs * sizeof(*d->epochs)))) {
        memcpy(d->epochs, cfg->epochs, cfg->nepochs * sizeof(*d->epochs));
        d->nepochs = cfg->nepochs;
    }
    ok = ok && d->nepochs == cfg->nepochs;
    if (ok && cfg->nstages && (d->stages = calloc(cfg->nstages, sizeof(*d->stages)))) {
        d->nstages = cfg->nstages;
        for (size_t i = 0; i < cfg->nstages && ok; i++)
            ok = (d->stages[i] = strdup(cfg->stages[i])) != NULL;
    }
    ok = ok && d->nstages == cfg->nstages;
    if (!ok) {
        tprof_config_free(d);
        return NULL;
    }
    return d;
}

char *tprof_config_to_json(const tprof_config *cfg) {
    if (!cfg) return NULL;
    tp_buf b;
    tp_buf_init(&b);
    tp_buf_putc(&b, '{');
    for (size_t i = 0; i < TP_NKEYS; i++) {
        const tp_keydef *k = &keys[i];
        const void *f = cfield(cfg, k);
        if (i) TP_BUF_LIT(&b, ", ");
        tp_buf_json_cstr(&b, k->name);
        TP_BUF_LIT(&b, ": ");
        switch (k->type) {
        case T_BOOL:
            tp_buf_puts(&b, *(const int *)f ? "true" : "false");
            break;
        case T_INT:
            tp_buf_i64(&b, *(const int64_t *)f);
            break;
        case T_GPU:
            tp_buf_puts(&b, (const char *[]){"\"auto\"", "\"on\"", "\"off\""}[*(const int *)f]);
            break;
        case T_STR:
            if (*(char *const *)f)
                tp_buf_json_cstr(&b, *(char *const *)f);
            else
                TP_BUF_LIT(&b, "null");
            break;
        case T_INTS:
        case T_STRS: {
            size_t n = k->type == T_INTS ? cfg->nepochs : cfg->nstages;
            tp_buf_putc(&b, '[');
            for (size_t j = 0; j < n; j++) {
                if (j) TP_BUF_LIT(&b, ", ");
                if (k->type == T_INTS)
                    tp_buf_i64(&b, cfg->epochs[j]);
                else
                    tp_buf_json_cstr(&b, cfg->stages[j]);
            }
            tp_buf_putc(&b, ']');
            break;
        }
        }
    }
    tp_buf_putc(&b, '}');
    tp_buf_putc(&b, '\0');
    if (b.failed) {
        tp_buf_free(&b);
        return NULL;
    }
    return b.data;
}
