/* html.c - the HTML report's page and the report data of an analysis (html.h).
 *
 * The page is the embedded template (html_assets.h) with its markers replaced: {{STYLE}},
 * {{CHARTJS}} and {{APP}} by the embedded files, {{DATA}} by the report data in a
 * <script type="application/json"> element (nothing for the live dashboard). Inside that element
 * every '<' of the JSON is written \u003c, so no string of a trace can close the element. */
#include "report/html.h"

#include "report/html_assets.h"
#include "report/jsonw.h"
#include "report/report.h"
#include "report/stacks_report.h"

#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TP_DATA_OPEN "<script id=\"tprof-data\" type=\"application/json\">"

/* out[from..len) with each '<' as \u003c ('<' occurs in JSON only inside strings), in place:
 * counted first, then the text moved back from its end, so nothing is copied twice. */
static void escape_lt_from(tp_buf *out, size_t from) {
    size_t n = 0;
    for (const char *p = out->data + from, *end = out->data + out->len;
         (p = memchr(p, '<', (size_t)(end - p))); p++)
        n++;
    if (n == 0 || tp_buf_reserve(out, 5 * n)) return;
    char *base = out->data + from, *src = out->data + out->len, *dst = src + 5 * n;
    out->len += 5 * n;
    while (n) {
        char *lt = memrchr(base, '<', (size_t)(src - base)); /* one of the n counted */
        assert(lt);
        size_t run = (size_t)(src - lt - 1);
        dst -= run;
        memmove(dst, lt + 1, run);
        static const char escaped[6] = {'\\', 'u', '0', '0', '3', 'c'};
        dst -= sizeof(escaped);
        memcpy(dst, escaped, sizeof(escaped));
        src = lt;
        n--;
    }
    assert(dst == src);
}

/* Appends the template from t up to its {{DATA}} marker (or its end), the other markers
 * replaced; returns where the template goes on after that marker (NULL at its end). */
static const char *put_template(tp_buf *out, const char *t) {
    const char *end = (const char *)tp_asset_page + tp_asset_page_len;
    while (t < end) {
        const char *open = strstr(t, "{{"); /* the asset ends with a NUL */
        const char *close = open ? strstr(open + 2, "}}") : NULL;
        if (!open || !close || close > end) break;
        tp_buf_put(out, t, (size_t)(open - t));
        const char *name = open + 2;
        size_t n = (size_t)(close - name);
        t = close + 2;
#define IS(lit) (n == sizeof(lit) - 1 && memcmp(name, lit, n) == 0)
        if (IS("DATA")) return t;
        if (IS("STYLE")) {
            tp_buf_put(out, tp_asset_style, tp_asset_style_len);
        } else if (IS("CHARTJS")) {
            tp_buf_put(out, tp_asset_chartjs, tp_asset_chartjs_len);
        } else if (IS("APP")) {
            tp_buf_put(out, tp_asset_app, tp_asset_app_len);
        } else { /* not a marker of ours: kept as written */
            TP_BUF_LIT(out, "{{");
            tp_buf_put(out, name, n);
            TP_BUF_LIT(out, "}}");
        }
#undef IS
    }
    tp_buf_put(out, t, (size_t)(end - t));
    return NULL;
}

size_t tp_html_page_open(tp_buf *out) {
    /* The assets at once: their growth by doubling copied them over and over. */
    tp_buf_reserve(out, tp_asset_page_len + tp_asset_style_len + tp_asset_chartjs_len +
                            tp_asset_app_len + 256);
    put_template(out, (const char *)tp_asset_page);
    TP_BUF_LIT(out, TP_DATA_OPEN);
    return out->len;
}

int tp_html_page_close(tp_buf *out, size_t data_start) {
    assert(data_start <= out->len);
    escape_lt_from(out, data_start);
    TP_BUF_LIT(out, "</script>");
    const char *t = strstr((const char *)tp_asset_page, "{{DATA}}");
    if (t) put_template(out, t + 8);
    return out->failed ? -1 : 0;
}

int tp_html_page(tp_buf *out) {
    const char *t = put_template(out, (const char *)tp_asset_page); /* no data element */
    if (t) put_template(out, t);
    return out->failed ? -1 : 0;
}

typedef struct artifact {
    char *name;
    long long bytes;
} artifact;

static int by_name(const void *x, const void *y) {
    return strcmp(((const artifact *)x)->name, ((const artifact *)y)->name);
}

/* The regular, not hidden files directly inside dir, by name, with their sizes: the first `max`
 * of them, and "artifacts_total" (a run directory of 10,000 ranks holds 40,000 files). */
static void artifacts(tp_jw *w, const char *dir, size_t max) {
    tp_jw_array(w, "artifacts");
    DIR *d = opendir(dir);
    artifact *v = NULL;
    size_t n = 0, cap = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        struct stat st;
        if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
            !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            artifact *grown = realloc(v, ncap * sizeof(*v));
            if (!grown) break;
            v = grown;
            cap = ncap;
        }
        v[n].name = strdup(e->d_name);
        if (!v[n].name) break;
        v[n++].bytes = (long long)st.st_size;
    }
    if (d) closedir(d);
    if (n) qsort(v, n, sizeof(*v), by_name);
    for (size_t i = 0; i < n; i++) {
        if (i < max) {
            tp_jw_object(w, NULL);
            tp_jw_str(w, "name", v[i].name);
            tp_jw_i64(w, "bytes", v[i].bytes);
            tp_jw_end_object(w);
        }
        free(v[i].name);
    }
    free(v);
    tp_jw_end_array(w);
    tp_jw_u64(w, "artifacts_total", n);
}

/* A JSON document rendered into its own buffer, placed as the member `key`. */
static void raw_member(tp_jw *w, const char *key, const tp_buf *doc) {
    tp_jw_raw(w, key, doc->data, doc->len);
}

/* The bounds the report data is rendered under, tightest last (docs/REPORT.md, "Size and time"):
 * rows per table, bytes per string (tp_jw_cut), rows of the lists that grow with the input. The
 * first keeps every real input whole but for its longest lists; the next ones are for data that
 * would still pass TP_HTML_DATA_MAX (hundreds of distinct names of megabytes each). */
static const struct bounds {
    size_t top, name, list;
} bounds[] = {
    {TP_HTML_TOP_ROWS, TP_HTML_NAME_MAX, TP_HTML_LIST_MAX}, {100, 256, 200}, {20, 64, 50}};

/* The bytes out[from..) take in the page, where each '<' becomes \u003c. */
static size_t page_bytes(const tp_buf *out, size_t from) {
    size_t n = out->len - from;
    for (const char *p = out->data + from, *end = out->data + out->len;
         (p = memchr(p, '<', (size_t)(end - p))); p++)
        n += 5;
    return n;
}

/* Renders the report data under bounds b; returns the bytes its "trace" member takes in the
 * page, which the bounds leave out (trace_view.h bounds it). */
static size_t data_of(tp_buf *out, const tp_analysis *a, const tp_html_extras *x,
                      const struct bounds *b) {
    size_t trace_bytes = 0;
    tp_report_opts o = {.top_k = b->top, .max_str = b->name, .max_list = b->list};
    tp_buf doc;
    tp_buf_init(&doc);
    tp_jw w;
    tp_jw_init(&w, out);
    w.max_str = b->name;
    tp_jw_object(&w, NULL);
    tp_jw_i64(&w, "report_version", 1);
    tp_jw_str(&w, "title",
              x->title                          ? x->title
              : a->input_path && *a->input_path ? a->input_path
                                                : "tprof");
    tp_jw_u64(&w, "top_rows", b->top);
    tp_jw_u64(&w, "name_max", b->name);
    tp_jw_u64(&w, "list_max", b->list);
    tp_jw_key(&w, "analysis"); /* the analysis rendered in place, not copied */
    tp_report_json(out, a, &o);
    tp_jw_end_raw(&w);
    if (x->series) {
        tp_jw_key(&w, "series");
        tp_series_json(out, x->series, b->name);
        tp_jw_end_raw(&w);
    }
    tp_report_flame_json(&w, a, &o);
    if (x->run_dir) {
        tp_jw_str(&w, "artifacts_href", x->artifacts_href ? x->artifacts_href : "");
        artifacts(&w, x->run_dir, b->list);
    }
    if (x->compare && x->other) {
        doc.len = 0;
        tp_report_json(&doc, x->other, &o);
        raw_member(&w, "analysis_b", &doc);
        if (x->series_b) {
            tp_jw_key(&w, "series_b");
            tp_series_json(out, x->series_b, b->name);
            tp_jw_end_raw(&w);
        }
        doc.len = 0;
        tp_report_compare_json(&doc, x->compare, &o);
        raw_member(&w, "compare", &doc);
    }
    if (x->trace) {
        tp_jw_key(&w, "trace");
        size_t from = out->len;
        tp_trace_view_json(out, x->trace);
        tp_jw_end_raw(&w);
        trace_bytes = page_bytes(out, from);
    }
    tp_jw_end_object(&w);
    tp_buf_putc(out, '\n');
    if (doc.failed) out->failed = 1;
    tp_buf_free(&doc);
    return trace_bytes;
}

void tp_html_data_of(tp_buf *out, const tp_analysis *a, const tp_html_extras *x) {
    tp_html_extras none = {0};
    if (!x) x = &none;
    size_t start = out->len, last = sizeof(bounds) / sizeof(bounds[0]) - 1;
    for (size_t i = 0;; i++) {
        size_t trace_bytes = data_of(out, a, x, &bounds[i]);
        if (out->failed || i == last || page_bytes(out, start) - trace_bytes <= TP_HTML_DATA_MAX)
            return;
        out->len = start; /* rendered again, under tighter bounds */
    }
}
