/* parse.c - the text of configuration values (parse.h).
 *
 * One rule per kind of value, whatever the source: a boolean written in a YAML file, an
 * environment variable or a command line (where Python users write True/False) reads the same. */
#include "config/parse.h"

#include "config/config.h" /* enum tp_gpu_mode */

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

int tp_parse_bool(const char *s, int *out) {
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no",
                                                                                "off"};
    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0) return *out = 1, 0;
        if (strcasecmp(s, no[i]) == 0) return *out = 0, 0;
    }
    return -1;
}

int tp_parse_decimal(const char *s, double *out) {
    /* strtod alone would take " 1", "0x1p3", "inf" and "nan": only plain decimals pass. */
    for (const char *p = s; *p; p++)
        if (!isdigit((unsigned char)*p) && !strchr(".eE+-", *p)) return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !isfinite(v) || v < 0) return -1;
    *out = v;
    return 0;
}

int tp_parse_gpu_mode(const char *s, int *mode) {
    static const char *const modes[] = {
        [TP_GPU_AUTO] = "auto", [TP_GPU_ON] = "on", [TP_GPU_OFF] = "off"};
    for (int i = 0; i < 3; i++)
        if (strcasecmp(s, modes[i]) == 0) return *mode = i, 0;
    int b;
    if (tp_parse_bool(s, &b)) return -1;
    *mode = b ? TP_GPU_ON : TP_GPU_OFF;
    return 0;
}

int tp_plain_name(const char *s) {
    if (!*s || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return 0;
    if (strnlen(s, TP_NAME_MAX + 1) > TP_NAME_MAX) return 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p == '/' || *p < 0x20 || *p == 0x7f) return 0;
    return 1;
}

int tp_valid_stage(const char *s) {
    const char *eq = strchr(s, '=');
    if (!*s || eq == s) return 0;
    if (!eq) return 1;
    /* name=pattern|pattern: no empty pattern */
    for (const char *p = eq + 1;; p++) {
        if ((*p == '|' || *p == '\0') && (p[-1] == '|' || p[-1] == '=')) return 0;
        if (!*p) return 1;
    }
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

size_t tp_split_list(char *text, const char **items) {
    char *s = trim(text);
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
    return n;
}
