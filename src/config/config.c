/* config.c - the key table generated from keys.h, the configuration's life cycle, and setting a
 * key from text.
 *
 * Every source goes through tp_config_set_value, so a key parses and fails the same way wherever
 * it comes from, with one message: invalid value "<v>" for profiling.<key> (from <source>):
 * <rule>. Echoed values are capped (tp_shown), so a 50 MB value gives a short line. */
#include "config/table.h"

#include "util/buf.h"
#include "util/vec.h"

#include <assert.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define TP_CONFIG_ROW(ID, name, type, min, max, deflt)                                             \
    {#name, type, offsetof(struct tprof_config, name), min, max, deflt},
const tp_keydef tp_config_keys[TP_NKEYS] = {TP_CONFIG_KEYS(TP_CONFIG_ROW)};
#undef TP_CONFIG_ROW

/* Room for the longest list of names and its NULL. */
static const char *const choices[][4] = TP_CONFIG_CHOICES;

typedef struct tp_alias {
    const char *name;
    int key;
} tp_alias;

#define TP_CONFIG_ALIAS_ROW(alias, ID) {#alias, TP_KEY_##ID},
static const tp_alias aliases[] = {TP_CONFIG_ALIASES(TP_CONFIG_ALIAS_ROW)};
#undef TP_CONFIG_ALIAS_ROW

static void *field(tprof_config *cfg, const tp_keydef *k) {
    return (char *)cfg + k->off;
}
static const void *cfield(const tprof_config *cfg, const tp_keydef *k) {
    return (const char *)cfg + k->off;
}
static int is_text(const tp_keydef *k) {
    return k->type == TP_T_STR || k->type == TP_T_NAME;
}

static int same_name(const char *a, const char *name, size_t len) {
    return strlen(a) == len && memcmp(a, name, len) == 0;
}

const tp_keydef *tp_config_find_key(const char *name, size_t len) {
    for (size_t i = 0; i < TP_NKEYS; i++)
        if (same_name(tp_config_keys[i].name, name, len)) return &tp_config_keys[i];
    for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
        if (same_name(aliases[i].name, name, len)) return &tp_config_keys[aliases[i].key];
    return NULL;
}

const char *tp_config_key_name(const char *key, size_t len, int *is_bool) {
    const tp_keydef *k = tp_config_find_key(key, len);
    if (k && is_bool) *is_bool = k->type == TP_T_BOOL;
    return k ? k->name : NULL;
}

const char *tp_config_origin(const tprof_config *cfg, const char *key, size_t len) {
    const tp_keydef *k = tp_config_find_key(key, len);
    return k ? cfg->origin[k - tp_config_keys] : NULL;
}

void tp_config_one_line(char *msg, size_t size) {
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

/* The default run_id: YYYYmmdd-HHMMSS-<pid>, local time. */
static char *default_run_id(void) {
    char run_id[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    size_t n = strftime(run_id, sizeof(run_id), "%Y%m%d-%H%M%S", &tm);
    snprintf(run_id + n, sizeof(run_id) - n, "-%ld", (long)getpid());
    return strdup(run_id);
}

tprof_config *tprof_config_new(void) {
    tprof_config *cfg = calloc(1, sizeof(*cfg));
    if (!cfg) return NULL;
    int ok = (cfg->run_id = default_run_id()) != NULL;
    /* The defaults parse like any value; they are no source, so no key keeps an origin. */
    for (size_t i = 0; i < TP_NKEYS && ok; i++) {
        const tp_keydef *k = &tp_config_keys[i];
        ok = !k->deflt || tp_config_set_value(cfg, k, k->name, k->deflt, "the default") == 0;
        free(cfg->origin[i]);
        cfg->origin[i] = NULL;
    }
    if (!ok) {
        tprof_config_free(cfg);
        return NULL;
    }
    return cfg;
}

void tprof_config_free(tprof_config *cfg) {
    if (!cfg) return;
    for (size_t i = 0; i < TP_NKEYS; i++) {
        if (is_text(&tp_config_keys[i])) free(*(char **)field(cfg, &tp_config_keys[i]));
        free(cfg->origin[i]);
    }
    free(cfg->epochs);
    tp_free_strings(cfg->stages, cfg->nstages);
    free(cfg);
}

const char *tprof_config_error(const tprof_config *cfg) {
    return cfg ? cfg->err : "";
}

static const char *rule(const tp_keydef *k, char *buf, size_t n) {
    switch (k->type) {
    case TP_T_BOOL:
        return "must be true or false (also 1/0, yes/no, on/off)";
    case TP_T_GPU:
        return "must be auto, on or off";
    case TP_T_CHOICE: {
        size_t o = (size_t)snprintf(buf, n, "must be one of");
        for (int i = 0; choices[k->min][i] && o < n; i++)
            o += (size_t)snprintf(buf + o, n - o, "%s %s", i ? "," : "", choices[k->min][i]);
        return buf;
    }
    case TP_T_DOUBLE:
        return "must be a decimal number >= 0";
    case TP_T_STR:
        return "must not be empty";
    case TP_T_NAME:
        snprintf(buf, n,
                 "must be one plain path component of at most %d bytes: not empty, \".\" or "
                 "\"..\", without '/' or control characters",
                 TP_NAME_MAX);
        return buf;
    case TP_T_STRS:
        return "must be a list of stage names, each \"name\" or \"name=pattern|pattern\"";
    case TP_T_INTS:
        snprintf(buf, n, "must be a list of integers >= %lld, e.g. [1, 5, 10] or \"1,5,10\"",
                 (long long)k->min);
        return buf;
    case TP_T_INT:
        break;
    }
    if (k->max == TP_MAX_COUNT)
        snprintf(buf, n, "must be an integer >= %lld", (long long)k->min);
    else
        snprintf(buf, n, "must be an integer from %lld to %lld", (long long)k->min,
                 (long long)k->max);
    return buf;
}

static int bad_value(tprof_config *cfg, const tp_keydef *k, const char *given, const char *value,
                     const char *source) {
    char buf[160], shown[TP_SHOWN_SIZE], from[TP_SHOWN_SIZE];
    return TP_CONFIG_FAIL(cfg, "invalid value \"%s\" for profiling.%s (from %s): %s",
                          tp_shown(value, shown), given, tp_shown(source, from),
                          rule(k, buf, sizeof(buf)));
}

static int set_origin(tprof_config *cfg, const tp_keydef *k, const char *source) {
    char shown[TP_SHOWN_SIZE]; /* origins are echoed by the rules between keys */
    char *copy = strdup(tp_shown(source, shown));
    if (!copy) return TP_CONFIG_FAIL(cfg, "out of memory");
    free(cfg->origin[k - tp_config_keys]);
    cfg->origin[k - tp_config_keys] = copy;
    return 0;
}

static int set_ints(tprof_config *cfg, const tp_keydef *k, const char *const *items, size_t n) {
    int64_t *v = n ? malloc(n * sizeof(*v)) : NULL;
    if (n && !v) return -1;
    for (size_t i = 0; i < n; i++) {
        if (tp_parse_int(items[i], &v[i]) || v[i] < k->min || v[i] > k->max) {
            free(v);
            return 1;
        }
    }
    free(cfg->epochs);
    cfg->epochs = v;
    cfg->nepochs = n;
    return 0;
}

static int set_strings(tprof_config *cfg, const char *const *items, size_t n) {
    char **v = n ? calloc(n, sizeof(*v)) : NULL;
    if (n && !v) return -1;
    for (size_t i = 0; i < n; i++) {
        int bad = !tp_valid_stage(items[i]);
        if (bad || !(v[i] = strdup(items[i]))) {
            tp_free_strings(v, n);
            return bad ? 1 : -1;
        }
    }
    tp_free_strings(cfg->stages, cfg->nstages);
    cfg->stages = v;
    cfg->nstages = n;
    return 0;
}

/* A list key from its items; shown is the whole value for messages. */
static int set_list(tprof_config *cfg, const tp_keydef *k, const char *given,
                    const char *const *items, size_t n, const char *shown, const char *source) {
    /* One key of each list type: epochs and stages. */
    assert(k - tp_config_keys == (k->type == TP_T_INTS ? TP_KEY_EPOCHS : TP_KEY_STAGES));
    int rc = k->type == TP_T_INTS ? set_ints(cfg, k, items, n) : set_strings(cfg, items, n);
    if (rc < 0) return TP_CONFIG_FAIL(cfg, "out of memory");
    if (rc > 0) return bad_value(cfg, k, given, shown, source);
    return set_origin(cfg, k, source);
}

static int set_list_text(tprof_config *cfg, const tp_keydef *k, const char *given,
                         const char *value, const char *source) {
    char *copy = strdup(value);
    size_t cap = 1;
    for (const char *p = value; *p; p++)
        cap += *p == ',';
    const char **items = malloc(cap * sizeof(*items));
    int rc = copy && items
                 ? set_list(cfg, k, given, items, tp_split_list(copy, items), value, source)
                 : TP_CONFIG_FAIL(cfg, "out of memory");
    free(items);
    free(copy);
    return rc;
}

int tp_config_set_value(tprof_config *cfg, const tp_keydef *k, const char *given, const char *value,
                        const char *source) {
    void *f = field(cfg, k);
    int bad = 0;
    switch (k->type) {
    case TP_T_BOOL:
        bad = tp_parse_bool(value, (int *)f);
        break;
    case TP_T_INT: {
        int64_t v;
        bad = tp_parse_int(value, &v) || v < k->min || v > k->max;
        if (!bad) *(int64_t *)f = v;
        break;
    }
    case TP_T_DOUBLE:
        bad = tp_parse_decimal(value, (double *)f);
        break;
    case TP_T_GPU:
        bad = tp_parse_gpu_mode(value, (int *)f);
        break;
    case TP_T_CHOICE:
        bad = 1;
        for (int i = 0; bad && choices[k->min][i]; i++)
            if (strcasecmp(value, choices[k->min][i]) == 0) *(int *)f = i, bad = 0;
        break;
    case TP_T_STR:
    case TP_T_NAME: {
        bad = k->type == TP_T_NAME ? !tp_plain_name(value) : !*value;
        char *copy = bad ? NULL : strdup(value);
        if (!bad && !copy) return TP_CONFIG_FAIL(cfg, "out of memory");
        if (!bad) free(*(char **)f), *(char **)f = copy;
        break;
    }
    case TP_T_INTS:
    case TP_T_STRS:
        return set_list_text(cfg, k, given, value, source);
    }
    if (bad) return bad_value(cfg, k, given, value, source);
    return set_origin(cfg, k, source);
}

static int unknown_key(tprof_config *cfg, const char *key, size_t len, const char *value,
                       const char *source) {
    char name[TP_SHOWN_MAX + 1], shown[TP_SHOWN_SIZE], from[TP_SHOWN_SIZE];
    int cut = len > TP_SHOWN_MAX;
    snprintf(name, sizeof(name), "%.*s", (int)(cut ? TP_SHOWN_MAX : len), key);
    return TP_CONFIG_FAIL(cfg, "unknown key profiling.%s%s = \"%s\" (from %s); see docs/CONFIG.md",
                          name, cut ? "..." : "", tp_shown(value, shown), tp_shown(source, from));
}

/* The name as the source wrote it, for messages (the key table's name when it is too long to
 * be a key anyway). */
static const char *given_name(const tp_keydef *k, const char *key, size_t len, char *buf,
                              size_t size) {
    if (len >= size) return k->name;
    memcpy(buf, key, len);
    buf[len] = '\0';
    return buf;
}

int tp_config_apply(tprof_config *cfg, const char *key, size_t len, const char *value,
                    const char *source) {
    const tp_keydef *k = tp_config_find_key(key, len);
    if (!k) return unknown_key(cfg, key, len, value ? value : "", source);
    char given[64];
    return tp_config_set_value(cfg, k, given_name(k, key, len, given, sizeof(given)),
                               value ? value : "", source);
}

int tp_config_reject(tprof_config *cfg, const char *key, size_t len, const char *shown,
                     const char *source) {
    const tp_keydef *k = tp_config_find_key(key, len);
    char given[64];
    return k ? bad_value(cfg, k, given_name(k, key, len, given, sizeof(given)), shown, source)
             : unknown_key(cfg, key, len, shown, source);
}

int tp_config_apply_list(tprof_config *cfg, const char *key, size_t len, const char *const *items,
                         size_t n, const char *source) {
    tp_buf shown;
    tp_buf_init(&shown);
    tp_buf_putc(&shown, '[');
    for (size_t i = 0; i < n && shown.len <= TP_SHOWN_MAX; i++) {
        if (i) TP_BUF_LIT(&shown, ", ");
        tp_buf_puts(&shown, items[i]);
    }
    tp_buf_putc(&shown, ']');
    tp_buf_putc(&shown, '\0');
    const char *text = shown.failed ? "[...]" : shown.data;
    const tp_keydef *k = tp_config_find_key(key, len);
    char given[64];
    int rc = k && (k->type == TP_T_INTS || k->type == TP_T_STRS)
                 ? set_list(cfg, k, given_name(k, key, len, given, sizeof(given)), items, n, text,
                            source)
                 : tp_config_reject(cfg, key, len, text, source);
    tp_buf_free(&shown);
    return rc;
}

int tprof_config_set(tprof_config *cfg, const char *key, const char *value) {
    if (!cfg) return -1;
    cfg->err[0] = '\0'; /* the error of this call, "" when it succeeds (tprof.h) */
    if (!key) return TP_CONFIG_FAIL(cfg, "tprof_config_set: no key");
    if (strncmp(key, "profiling.", 10) == 0) key += 10;
    return tp_config_apply(cfg, key, strlen(key), value, "tprof_config_set");
}

int tp_config_load_sources(tprof_config *cfg, int *argc, char **argv) {
    /* Every source runs, so that tprof's arguments leave argv even when one source fails; the
     * first error is the one kept. */
    if (!cfg) return -1;
    cfg->err[0] = '\0';
    const char *path = tp_config_find_path(argc ? *argc : 0, argv);
    char err[sizeof(cfg->err)] = "";
    if (path && tprof_config_load_yaml(cfg, path)) memcpy(err, cfg->err, sizeof(err));
    if (tprof_config_load_env(cfg) && !err[0]) memcpy(err, cfg->err, sizeof(err));
    if (tprof_config_load_args(cfg, argc, argv) && !err[0]) memcpy(err, cfg->err, sizeof(err));
    if (!err[0]) return 0;
    memcpy(cfg->err, err, sizeof(err));
    return -1;
}

tprof_config *tp_config_dup(const tprof_config *cfg) {
    tprof_config *d = calloc(1, sizeof(*d));
    if (!d) return NULL;
    *d = *cfg;
    d->epochs = NULL;
    d->stages = NULL;
    d->nepochs = d->nstages = 0;
    memset(d->origin, 0, sizeof(d->origin));
    for (size_t i = 0; i < TP_NKEYS; i++)
        if (is_text(&tp_config_keys[i])) *(char **)field(d, &tp_config_keys[i]) = NULL;
    int ok = 1;
    for (size_t i = 0; i < TP_NKEYS && ok; i++) {
        const tp_keydef *k = &tp_config_keys[i];
        if (is_text(k) && *(char *const *)cfield(cfg, k))
            ok = (*(char **)field(d, k) = strdup(*(char *const *)cfield(cfg, k))) != NULL;
        if (ok && cfg->origin[i]) ok = (d->origin[i] = strdup(cfg->origin[i])) != NULL;
    }
    if (ok && cfg->nepochs && (d->epochs = malloc(cfg->nepochs * sizeof(*d->epochs)))) {
        memcpy(d->epochs, cfg->epochs, cfg->nepochs * sizeof(*d->epochs));
        d->nepochs = cfg->nepochs;
    }
    ok = ok && d->nepochs == cfg->nepochs &&
         set_strings(d, (const char *const *)cfg->stages, cfg->nstages) == 0;
    if (!ok) {
        tprof_config_free(d);
        return NULL;
    }
    return d;
}

static void json_value(tp_buf *b, const tprof_config *cfg, const tp_keydef *k) {
    const void *f = cfield(cfg, k);
    switch (k->type) {
    case TP_T_BOOL:
        tp_buf_puts(b, *(const int *)f ? "true" : "false");
        break;
    case TP_T_INT:
        tp_buf_i64(b, *(const int64_t *)f);
        break;
    case TP_T_DOUBLE:
        tp_buf_double(b, *(const double *)f);
        break;
    case TP_T_GPU:
        tp_buf_puts(b, (const char *[]){"\"auto\"", "\"on\"", "\"off\""}[*(const int *)f]);
        break;
    case TP_T_CHOICE:
        tp_buf_json_cstr(b, choices[k->min][*(const int *)f]);
        break;
    case TP_T_STR:
    case TP_T_NAME:
        if (*(char *const *)f)
            tp_buf_json_cstr(b, *(char *const *)f);
        else
            TP_BUF_LIT(b, "null");
        break;
    case TP_T_INTS:
    case TP_T_STRS: {
        size_t n = k->type == TP_T_INTS ? cfg->nepochs : cfg->nstages;
        tp_buf_putc(b, '[');
        for (size_t j = 0; j < n; j++) {
            if (j) TP_BUF_LIT(b, ", ");
            if (k->type == TP_T_INTS)
                tp_buf_i64(b, cfg->epochs[j]);
            else
                tp_buf_json_cstr(b, cfg->stages[j]);
        }
        tp_buf_putc(b, ']');
        break;
    }
    }
}

char *tprof_config_to_json(const tprof_config *cfg) {
    if (!cfg) return NULL;
    tp_buf b;
    tp_buf_init(&b);
    tp_buf_putc(&b, '{');
    for (size_t i = 0; i < TP_NKEYS; i++) {
        if (i) TP_BUF_LIT(&b, ", ");
        tp_buf_json_cstr(&b, tp_config_keys[i].name);
        TP_BUF_LIT(&b, ": ");
        json_value(&b, cfg, &tp_config_keys[i]);
    }
    tp_buf_putc(&b, '}');
    tp_buf_putc(&b, '\0');
    if (b.failed) {
        tp_buf_free(&b);
        return NULL;
    }
    return b.data;
}
