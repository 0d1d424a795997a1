/* jsonw.c - the comma and nesting bookkeeping of tp_jw (see jsonw.h). */
#include "report/jsonw.h"

#include "tprof.h"

void tp_jw_init(tp_jw *w, tp_buf *b) {
    *w = (tp_jw){.b = b};
}

/* What byte s[i] and the character it starts cost in a page: its bytes after JSON's escapes
 * (a control byte \u00XX, '"' and '\\' two) and the page's (\u003c for '<'); a byte that is no
 * valid UTF-8 becomes U+FFFD. *len is the character's length. */
static size_t page_cost(const unsigned char *s, size_t n, size_t *len) {
    unsigned char c = s[0];
    *len = 1;
    if (c < 0x80) return c == '<' || !(c >= 0x20 && c < 0x7f) ? 6 : c == '"' || c == '\\' ? 2 : 1;
    size_t k = tp_utf8_seq_len(s, n);
    if (!k) return 3;
    *len = k;
    return k;
}

size_t tp_jw_cut(const char *str, size_t n, size_t max) {
    if (!max || n <= max / 6) return n; /* no character costs more than 6 bytes */
    const unsigned char *s = (const unsigned char *)str;
    size_t cost = 0, i = 0, fit = 0; /* fit: the prefix that leaves room for the ellipsis */
    while (i < n) {
        size_t len, c = page_cost(s + i, n - i, &len);
        if (cost + c > max) return fit;
        cost += c;
        i += len;
        if (cost + 3 <= max) fit = i;
    }
    return n;
}

/* s[0..n) as a JSON string, cut to the writer's max_str with an ellipsis. */
static void put_str(tp_jw *w, const char *s, size_t n) {
    size_t keep = tp_jw_cut(s, n, w->max_str);
    tp_buf_json_str(w->b, s, keep);
    if (keep == n || w->b->failed) return;
    w->b->len--; /* the closing quote, put back after the ellipsis */
    TP_BUF_LIT(w->b, "\xe2\x80\xa6\"");
}

/* Starts a value: the comma before it and its key. Keys are mostly the writers' own literals,
 * copied as they are under one reservation; a key from input (a stage's name) that holds a byte
 * to escape is written as a JSON string instead. */
static void begin_value(tp_jw *w, const char *key) {
    int comma = w->has_members[w->depth];
    w->has_members[w->depth] = 1;
    size_t n = key ? strlen(key) : 0;
    if (tp_buf_reserve(w->b, n + 6)) return;
    if (tp_jw_cut(key, n, w->max_str) < n) { /* cut as the strings naming it are */
        if (comma) TP_BUF_LIT(w->b, ", ");
        put_str(w, key, n);
        TP_BUF_LIT(w->b, ": ");
        return;
    }
    char *p = w->b->data + w->b->len;
    if (comma) {
        *p++ = ',';
        *p++ = ' ';
    }
    if (key) {
        *p++ = '"';
        for (size_t i = 0; i < n; i++) {
            unsigned char c = (unsigned char)key[i];
            if (!tp_json_plain_byte(c)) {
                w->b->len += comma ? 2 : 0; /* keeps the comma, drops the copy */
                tp_buf_json_str(w->b, key, n);
                TP_BUF_LIT(w->b, ": ");
                return;
            }
            *p++ = (char)c;
        }
        *p++ = '"';
        *p++ = ':';
        *p++ = ' ';
    }
    w->b->len = (size_t)(p - w->b->data);
}

static void open_scope(tp_jw *w, const char *key, char c) {
    begin_value(w, key);
    tp_buf_putc(w->b, c);
    /* The renderers nest a few levels; beyond TP_JW_MAX_DEPTH commas would go astray. */
    if (w->depth + 1 < TP_JW_MAX_DEPTH) w->depth++;
    w->has_members[w->depth] = 0;
}

void tp_jw_object(tp_jw *w, const char *key) {
    open_scope(w, key, '{');
}
void tp_jw_array(tp_jw *w, const char *key) {
    open_scope(w, key, '[');
}

static void close_scope(tp_jw *w, char c) {
    tp_buf_putc(w->b, c);
    if (w->depth > 0) w->depth--;
}

void tp_jw_end_object(tp_jw *w) {
    close_scope(w, '}');
}
void tp_jw_end_array(tp_jw *w) {
    close_scope(w, ']');
}

void tp_jw_str(tp_jw *w, const char *key, const char *s) {
    begin_value(w, key);
    if (!w->max_str)
        tp_buf_json_cstr(w->b, s);
    else
        put_str(w, s ? s : "", s ? strlen(s) : 0);
}

/* The length of json[0..len) without its trailing spaces and newlines. */
static size_t trimmed(const char *json, size_t len) {
    while (len && (json[len - 1] == '\n' || json[len - 1] == ' '))
        len--;
    return len;
}

void tp_jw_raw(tp_jw *w, const char *key, const char *json, size_t len) {
    begin_value(w, key);
    tp_buf_put(w->b, json, trimmed(json, len));
}

void tp_jw_key(tp_jw *w, const char *key) {
    begin_value(w, key);
}

void tp_jw_end_raw(tp_jw *w) {
    w->b->len = trimmed(w->b->data, w->b->len);
}

void tp_jw_i64(tp_jw *w, const char *key, int64_t v) {
    begin_value(w, key);
    tp_buf_i64(w->b, v);
}

void tp_jw_u64(tp_jw *w, const char *key, uint64_t v) {
    begin_value(w, key);
    tp_buf_u64(w->b, v);
}

void tp_jw_us(tp_jw *w, const char *key, int64_t ns) {
    begin_value(w, key);
    tp_buf_us(w->b, ns);
}

void tp_jw_double(tp_jw *w, const char *key, double v) {
    begin_value(w, key);
    tp_buf_double(w->b, v);
}

void tp_jw_null(tp_jw *w, const char *key) {
    begin_value(w, key);
    TP_BUF_LIT(w->b, "null");
}

void tp_jw_bool(tp_jw *w, const char *key, int v) {
    begin_value(w, key);
    if (v)
        TP_BUF_LIT(w->b, "true");
    else
        TP_BUF_LIT(w->b, "false");
}

/* Writes null for a figure that does not apply; 1 when it did. */
static int null_if(tp_jw *w, const char *key, int not_applicable) {
    if (not_applicable) tp_jw_null(w, key);
    return not_applicable;
}

void tp_jw_us_opt(tp_jw *w, const char *key, int64_t ns) {
    if (!null_if(w, key, ns < 0)) tp_jw_us(w, key, ns);
}

void tp_jw_double_opt(tp_jw *w, const char *key, double v) {
    if (!null_if(w, key, v < 0)) tp_jw_double(w, key, v);
}

void tp_jw_begin_report(tp_jw *w, tp_buf *b) {
    tp_jw_init(w, b);
    tp_jw_object(w, NULL);
    tp_jw_str(w, "tprof_version", TPROF_VERSION);
}

void tp_jw_end_report(tp_jw *w, const char *extra_members) {
    if (extra_members && *extra_members) {
        /* written verbatim: "\"run\": {...}" */
        if (w->has_members[w->depth]) TP_BUF_LIT(w->b, ", ");
        tp_buf_puts(w->b, extra_members);
    }
    tp_jw_end_object(w);
    tp_buf_putc(w->b, '\n');
}
