/* trace_view.c - the ranges the report's Trace view draws (trace_view.h): every range of the
 * models fed, kept until a bound cuts the window by time, written as columns by lane and depth. */
#include "report/trace_view.h"

#include "report/jsonw.h"
#include "report/series.h"
#include "trace/reader.h"
#include "util/jsonvalid.h"
#include "util/sort.h"
#include "util/vec.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tp_trace_view_init(tp_trace_view *v) {
    memset(v, 0, sizeof(*v));
    tp_strtab_init(&v->names);
    tp_strtab_init(&v->args);
    v->cut_ns = INT64_MAX;
}

void tp_trace_view_free(tp_trace_view *v) {
    for (size_t i = 0; i < v->nlanes; i++)
        free(v->lanes[i].label);
    free(v->lanes);
    free(v->r);
    tp_strtab_free(&v->names);
    tp_strtab_free(&v->args);
    memset(v, 0, sizeof(*v));
}

/* A new lane for track t of the model numbered `model`; UINT32_MAX when out of memory. */
static uint32_t new_lane(tp_trace_view *v, const tp_model *m, const tp_track *t, int device) {
    char label[320], base[256];
    tp_series_lane_label(m, t, device, base, sizeof(base));
    if (m->rank >= 0)
        snprintf(label, sizeof(label), "rank %lld / %s", (long long)m->rank, base);
    else
        snprintf(label, sizeof(label), "%s", base);
    char *copy = strdup(label);
    if (!copy || TP_GROW(v->lanes, v->cap_lanes, v->nlanes + 1)) {
        free(copy);
        v->failed = 1;
        return UINT32_MAX;
    }
    v->lanes[v->nlanes] = (tp_tv_lane){
        .label = copy, .model = v->nmodels, .device = device, .pid = t->pid, .tid = t->tid};
    return (uint32_t)v->nlanes++;
}

/* What one model's ranges look up once per string rather than once per range: the view's name
 * of each model name (+1; 0 not yet known or left out by the bound, which counts every range),
 * and whether each raw JSON arg parses (0 not yet known, 1 it does, 2 it does not). */
typedef struct model_seen {
    uint32_t *name;
    uint32_t *raw; /* the view's args id of each raw args text + 1, or ARGS_LEFT; 0 not yet known */
    uint8_t *json_ok;
    tp_str raw_key; /* TP_READ_RAW_ARGS in the model's strings, UINT32_MAX: no range has one */
} model_seen;

/* seen.raw of a text left out by TP_TRACE_VIEW_ARGS_MAX: it stays out (the args only grow), and
 * each range that has it is counted. */
#define ARGS_LEFT UINT32_MAX

/* Whether the raw JSON arg string id of m is valid JSON, checked once per string. */
static int json_arg_ok(model_seen *seen, const tp_model *m, tp_str id) {
    if (id < m->strings.n && seen->json_ok[id]) return seen->json_ok[id] == 1;
    int ok = tp_json_valid_z(tp_model_str(m, id), tp_strtab_len(&m->strings, id));
    if (id < m->strings.n) seen->json_ok[id] = ok ? 1 : 2;
    return ok;
}

/* An args text (h its tp_strtab_hash_of) interned in v->args while the texts fit
 * TP_TRACE_VIEW_ARGS_MAX, else none. */
static tp_str keep_args(tp_trace_view *v, const char *text, size_t len, uint32_t h) {
    if (v->args.bytes + len <= TP_TRACE_VIEW_ARGS_MAX) /* fits, new or not: one lookup */
        return tp_strtab_intern_h(&v->args, text, len, h);
    tp_str found = tp_strtab_find_h(&v->args, text, len, h);
    if (found == UINT32_MAX) v->args_left_out++;
    return found == UINT32_MAX ? TP_STR_EMPTY : found;
}

/* The event's args as one JSON object text: the whole object as the trace wrote it where the
 * reader kept it (tp_read_opts.keep_args) and it is valid JSON; else ("External id" first, as
 * Kineto writes it; a raw JSON value as written, or as a string when it is not valid JSON),
 * interned in v->args while the texts fit TP_TRACE_VIEW_ARGS_MAX; TP_STR_EMPTY when it has none or
 * they do not fit. */
static tp_str args_of(tp_trace_view *v, model_seen *seen, const tp_model *m, const tp_event *e,
                      tp_buf *text) {
    size_t n = (size_t)e->arg0 + e->nargs <= m->nargs ? e->nargs : 0;
    if (!n && !e->ext) return TP_STR_EMPTY;
    const tp_arg *raw = n && seen->raw_key != UINT32_MAX ? tp_event_arg(m, e, seen->raw_key) : NULL;
    uint32_t *known = raw && raw->v.s < m->strings.n ? &seen->raw[raw->v.s] : NULL;
    if (known && *known) { /* the model's ranges repeat their texts: each looked up once */
        v->args_left_out += *known == ARGS_LEFT;
        return *known == ARGS_LEFT ? TP_STR_EMPTY : *known - 1;
    }
    size_t raw_len = raw ? tp_strtab_len(&m->strings, raw->v.s) : 0;
    /* Past the bound a text is kept only if it is there already (so checked): not checked again */
    if (raw &&
        (v->args.bytes + raw_len > TP_TRACE_VIEW_ARGS_MAX || json_arg_ok(seen, m, raw->v.s))) {
        uint64_t left = v->args_left_out;
        tp_str id = keep_args(v, tp_model_str(m, raw->v.s), raw_len,
                              tp_strtab_hash(&m->strings, raw->v.s)); /* hashed by the reader */
        if (known && !v->args.failed) *known = v->args_left_out != left ? ARGS_LEFT : id + 1;
        return id;
    }
    text->len = 0;
    tp_buf_putc(text, '{');
    if (e->ext) {
        TP_BUF_LIT(text, "\"External id\":");
        tp_buf_u64(text, e->ext);
    }
    for (size_t i = 0, comma = e->ext != 0; i < n; i++) {
        const tp_arg *a = &m->args[e->arg0 + i];
        if (a == raw) continue; /* not valid JSON: the args the reader keeps instead */
        if (comma) tp_buf_putc(text, ',');
        comma = 1;
        tp_buf_json_cstr(text, tp_model_str(m, a->key));
        tp_buf_putc(text, ':');
        if (a->type == TP_ARG_INT)
            tp_buf_i64(text, a->v.i);
        else if (a->type == TP_ARG_DOUBLE)
            tp_buf_double(text, a->v.d);
        else if (a->type == TP_ARG_JSON && json_arg_ok(seen, m, a->v.s))
            tp_buf_put(text, tp_model_str(m, a->v.s), tp_strtab_len(&m->strings, a->v.s));
        else
            tp_buf_json_cstr(text, tp_model_str(m, a->v.s));
    }
    tp_buf_putc(text, '}');
    return text->failed
               ? TP_STR_EMPTY
               : keep_args(v, text->data, text->len, tp_strtab_hash_of(text->data, text->len));
}

/* The view's id of a model's name, cut as the page would cut it (TP_TRACE_VIEW_NAME_MAX, with
 * an ellipsis), kept while the names fit TP_TRACE_VIEW_NAMES_MAX. */
static tp_str name_of(tp_trace_view *v, model_seen *seen, const tp_model *m, tp_str id) {
    if (id < m->strings.n && seen->name[id]) return seen->name[id] - 1;
    const char *name = tp_model_str(m, id);
    size_t len = tp_strtab_len(&m->strings, id),
           keep = tp_jw_cut(name, len, TP_TRACE_VIEW_NAME_MAX);
    char cut[TP_TRACE_VIEW_NAME_MAX + 4];
    if (keep < len) {
        assert(keep + 3 <= TP_TRACE_VIEW_NAME_MAX);
        memcpy(cut, name, keep);
        static const char ellipsis[3] = {'\xe2', '\x80', '\xa6'}; /* U+2026, as the writer */
        memcpy(cut + keep, ellipsis, sizeof(ellipsis));
        name = cut;
        len = keep + 3;
    }
    tp_str found = tp_strtab_find(&v->names, name, len);
    if (found == UINT32_MAX && v->names.bytes + len > TP_TRACE_VIEW_NAMES_MAX) {
        v->names_left_out++; /* not remembered: each range so named is counted */
        return tp_strtab_intern(&v->names, TP_TRACE_VIEW_NAME_LEFT,
                                sizeof(TP_TRACE_VIEW_NAME_LEFT) - 1);
    }
    if (found == UINT32_MAX) found = tp_strtab_intern(&v->names, name, len);
    if (id < m->strings.n && found != UINT32_MAX) seen->name[id] = found + 1;
    return found;
}

/* Keeps the TP_TRACE_VIEW_EVENTS earliest ranges: the start of the first one past them becomes
 * cut_ns, and every range from it on is dropped (ties at the cut go with it). */
static void cut_by_time(tp_trace_view *v) {
    tp_keyed *k = malloc(v->n * sizeof(*k));
    tp_sort_buf spare = {0};
    if (!k) {
        v->failed = 1;
        return;
    }
    for (size_t i = 0; i < v->n; i++)
        k[i] = (tp_keyed){tp_time_key(v->r[i].start_ns), i};
    if (tp_sort_keyed(&spare, k, v->n) == 0) {
        v->cut_ns = tp_key_time(k[TP_TRACE_VIEW_EVENTS].key);
        size_t kept = 0;
        for (size_t i = 0; i < v->n; i++)
            if (v->r[i].start_ns < v->cut_ns) v->r[kept++] = v->r[i];
        v->n = kept;
    } else {
        v->failed = 1;
    }
    tp_sort_buf_free(&spare);
    free(k);
    assert(v->n <= TP_TRACE_VIEW_EVENTS);
}

void tp_trace_view_add_model(tp_trace_view *v, const tp_model *m) {
    uint32_t *lanes = calloc(m->ntracks ? 2 * m->ntracks : 1, sizeof(*lanes)); /* host, device */
    model_seen seen = {calloc(m->strings.n + 1, sizeof(uint32_t)),
                       calloc(m->strings.n + 1, sizeof(uint32_t)), calloc(m->strings.n + 1, 1),
                       tp_strtab_find(&m->strings, TP_READ_RAW_ARGS, sizeof(TP_READ_RAW_ARGS) - 1)};
    tp_buf text;
    tp_buf_init(&text);
    if (!lanes || !seen.name || !seen.raw || !seen.json_ok) {
        v->failed = 1;
        goto done;
    }
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if ((e->kind != TP_HOST_RANGE && !tp_kind_is_device(e->kind)) || e->track >= m->ntracks)
            continue;
        v->seen++;
        int64_t start = m->base_ns + e->ts;
        if (start >= v->cut_ns) continue;
        int device = e->kind != TP_HOST_RANGE;
        uint32_t *lane = &lanes[2 * e->track + (uint32_t)device]; /* lane + 1, 0 until made */
        if (!*lane) *lane = new_lane(v, m, &m->tracks[e->track], device) + 1;
        if (!*lane || TP_GROW(v->r, v->cap, v->n + 1)) { /* new_lane failed: UINT32_MAX + 1 */
            v->failed = 1;
            continue;
        }
        v->r[v->n++] = (tp_tv_range){.start_ns = start,
                                     .dur_ns = e->dur > 0 ? e->dur : 0,
                                     .corr = e->corr,
                                     .name = name_of(v, &seen, m, e->name),
                                     .args = args_of(v, &seen, m, e, &text),
                                     .lane = *lane - 1,
                                     .ext = e->ext};
        if (v->n == 2 * (size_t)TP_TRACE_VIEW_EVENTS) cut_by_time(v);
    }
    if (v->n > TP_TRACE_VIEW_EVENTS) cut_by_time(v); /* cut when twice over, and at the end */
    v->nmodels++;
done:
    tp_buf_free(&text);
    free(seen.name);
    free(seen.raw);
    free(seen.json_ok);
    free(lanes);
}

/* Lanes (pointed to) by model, host threads before GPU streams, then by pid and tid. */
static int lane_cmp(const void *x, const void *y) {
    const tp_tv_lane *a = *(const tp_tv_lane *const *)x, *b = *(const tp_tv_lane *const *)y;
    if (a->model != b->model) return a->model < b->model ? -1 : 1;
    if (a->device != b->device) return a->device - b->device;
    if (a->pid != b->pid) return a->pid < b->pid ? -1 : 1;
    if (a->tid != b->tid) return a->tid < b->tid ? -1 : 1;
    return strcmp(a->label, b->label);
}

/* Bits to write x in. */
static unsigned bit_width(uint64_t x) {
    return x ? 64u - (unsigned)__builtin_clzll(x) : 0;
}

/* order[0..n) by (lane position, start): both in one key where they fit in 64 bits (lanes are
 * few and a window's starts span far less than 2^40 ns), else a sort by each. 0, or -1. */
static int by_lane_start(const tp_trace_view *v, const uint32_t *pos, tp_keyed *order,
                         tp_sort_buf *spare) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < v->n; i++) {
        lo = v->r[i].start_ns < lo ? v->r[i].start_ns : lo;
        hi = v->r[i].start_ns > hi ? v->r[i].start_ns : hi;
    }
    unsigned bits = v->n ? bit_width((uint64_t)hi - (uint64_t)lo) : 0;
    if (bits + bit_width(v->nlanes) <= 64) {
        for (size_t i = 0; i < v->n; i++)
            order[i] = (tp_keyed){((uint64_t)pos[v->r[i].lane] << bits) |
                                      ((uint64_t)v->r[i].start_ns - (uint64_t)lo),
                                  i};
        return tp_sort_keyed(spare, order, v->n);
    }
    for (size_t i = 0; i < v->n; i++)
        order[i] = (tp_keyed){tp_time_key(v->r[i].start_ns), i};
    int rc = tp_sort_keyed(spare, order, v->n);
    for (size_t i = 0; i < v->n; i++)
        order[i].key = pos[v->r[order[i].val].lane];
    return rc | tp_sort_keyed(spare, order, v->n);
}

/* Longest first within each run of ranges of one lane that start together, else in the order
 * they came (stable): such ties are few and short, so a run is sorted by itself, by insertion
 * where short. 0, or -1. */
static int longest_first(const tp_trace_view *v, tp_keyed *order, tp_sort_buf *spare) {
    enum { SHORT_RUN = 32 };
    int rc = 0;
    for (size_t a = 0, b; a < v->n; a = b) {
        const tp_tv_range *first = &v->r[order[a].val];
        for (b = a + 1; b < v->n && v->r[order[b].val].lane == first->lane &&
                        v->r[order[b].val].start_ns == first->start_ns;
             b++)
            order[b].key = ~(uint64_t)v->r[order[b].val].dur_ns;
        order[a].key = ~(uint64_t)first->dur_ns;
        if (b - a > SHORT_RUN) {
            rc |= tp_sort_keyed(spare, order + a, b - a);
            continue;
        }
        for (size_t i = a + 1; i < b; i++) {
            tp_keyed k = order[i];
            size_t j = i;
            for (; j > a && order[j - 1].key > k.key; j--)
                order[j] = order[j - 1];
            order[j] = k;
        }
    }
    return rc;
}

/* depth[i] becomes range i's nesting depth on its lane (the ranges of the lane still open at its
 * start: a stack of their ends), order[0..n) being by (lane position, start, longest first), and
 * rows[k] 1 + the deepest depth on the lane at position k. 0, or -1. */
static int depths(const tp_trace_view *v, const uint32_t *pos, const tp_keyed *order,
                  uint32_t *depth, uint32_t *rows) {
    int64_t *ends = NULL;
    size_t nends = 0, cap_ends = 0;
    for (size_t i = 0; i < v->n; i++) {
        const tp_tv_range *r = &v->r[order[i].val];
        if (i == 0 || r->lane != v->r[order[i - 1].val].lane) nends = 0;
        while (nends && ends[nends - 1] <= r->start_ns)
            nends--;
        depth[order[i].val] = (uint32_t)nends;
        uint32_t *row = &rows[pos[r->lane]];
        *row = *row > nends ? *row : (uint32_t)nends + 1;
        if (TP_GROW(ends, cap_ends, nends + 1)) {
            free(ends);
            return -1;
        }
        ends[nends++] = r->start_ns + r->dur_ns;
    }
    free(ends);
    return 0;
}

/* order[0..n) becomes the ranges by (lane position, start, longest first), then by (lane
 * position, depth, start), each key ((lane position << 32) | depth); depth[i] is range i's
 * nesting depth on its lane. 0, or -1. */
static int order_ranges(const tp_trace_view *v, const uint32_t *pos, tp_keyed *order,
                        uint32_t *depth) {
    tp_sort_buf spare = {0};
    uint32_t *rows = calloc(v->nlanes + 1, sizeof(*rows)); /* rows of each lane, then their first */
    int rc = rows ? 0 : -1;
    if (rc == 0) rc = by_lane_start(v, pos, order, &spare) | longest_first(v, order, &spare);
    if (rc == 0) rc = depths(v, pos, order, depth, rows);
    for (size_t k = 0, first = 0; rc == 0 && k < v->nlanes; k++) {
        size_t n = rows[k];
        rows[k] = (uint32_t)first;
        first += n;
    }
    /* by row, numbered densely: one pass of the radix sort where a window has < 2048 rows */
    for (size_t i = 0; rc == 0 && i < v->n; i++)
        order[i].key = rows[pos[v->r[order[i].val].lane]] + depth[order[i].val];
    if (rc == 0) rc = tp_sort_keyed(&spare, order, v->n);
    for (size_t i = 0; rc == 0 && i < v->n; i++)
        order[i].key = ((uint64_t)pos[v->r[order[i].val].lane] << 32) | depth[order[i].val];
    free(rows);
    tp_sort_buf_free(&spare);
    return rc ? -1 : 0;
}

/* What a column is read from: the ranges in the order they are written, and t0. */
typedef struct cols {
    const tp_trace_view *v;
    const tp_keyed *order;
    int64_t t0;
} cols;

typedef int64_t (*column_fn)(const cols *c, size_t i);

/* "key": [v0, v1, ...], col(c, i) of each range i in c->order. */
static void column(tp_jw *w, const char *key, const cols *c, column_fn col) {
    enum { CHUNK = 4096 }; /* numbers formatted in place, room reserved a chunk at a time */
    tp_buf *b = w->b;
    tp_jw_key(w, key);
    tp_buf_putc(b, '[');
    for (size_t i = 0; i < c->v->n;) {
        size_t end = c->v->n - i > CHUNK ? i + CHUNK : c->v->n;
        if (tp_buf_reserve(b, (end - i) * (TP_FMT_NUM_MAX + 1))) return;
        char *p = b->data + b->len;
        for (; i < end; i++) {
            if (i) *p++ = ',';
            p = tp_fmt_i64(p, col(c, i));
        }
        b->len = (size_t)(p - b->data);
    }
    tp_buf_putc(b, ']');
    tp_jw_end_raw(w);
}

static const tp_tv_range *at(const cols *c, size_t i) {
    return &c->v->r[c->order[i].val];
}
/* Start in ns: from the previous range of the row, or from t0 for a row's first. */
static int64_t col_start(const cols *c, size_t i) {
    int first = i == 0 || c->order[i].key != c->order[i - 1].key;
    return at(c, i)->start_ns - (first ? c->t0 : at(c, i - 1)->start_ns);
}
static int64_t col_dur(const cols *c, size_t i) {
    return at(c, i)->dur_ns;
}
static int64_t col_name(const cols *c, size_t i) {
    return at(c, i)->name;
}
static int64_t col_args(const cols *c, size_t i) {
    return at(c, i)->args;
}
static int64_t col_corr(const cols *c, size_t i) { /* ids past INT64_MAX link nothing */
    return at(c, i)->corr <= (uint64_t)INT64_MAX ? (int64_t)at(c, i)->corr : 0;
}
static int64_t col_ext(const cols *c, size_t i) {
    return at(c, i)->ext;
}

/* The strings of t, by id, as a JSON array named key. */
static void strings(tp_jw *w, const char *key, const tp_strtab *t) {
    tp_jw_array(w, key);
    for (uint32_t i = 0; i < t->n; i++)
        tp_jw_str(w, NULL, tp_strtab_get(t, i));
    tp_jw_end_array(w);
}

/* "args_json": the args texts as the JSON objects they are (null for id 0, none), each copied
 * as it is: no escaping, and the page parses them with the rest of the data. Each is valid JSON
 * in UTF-8 already: a trace's text passed tp_json_valid_z (which checks the UTF-8 of its
 * strings: JSON has other bytes nowhere else), and args_of wrote the others from checked or
 * escaped parts. Not cut: each is bounded by TP_TRACE_VIEW_ARGS_MAX, and a cut object would
 * not parse. */
static void args_json(tp_jw *w, const tp_strtab *t) {
    tp_jw_array(w, "args_json");
    for (uint32_t i = 0; i < t->n; i++) {
        size_t len = tp_strtab_len(t, i);
        if (!len) {
            tp_jw_null(w, NULL);
            continue;
        }
        assert(tp_json_valid_z(tp_strtab_get(t, i), len));
        tp_jw_key(w, NULL);
        tp_buf_put(w->b, tp_strtab_get(t, i), len);
    }
    tp_jw_end_array(w);
}

/* "lanes": [{"name", "group" (its model), "gpu"}] in position order, and "rows": [lane, depth,
 * first range] of each row. */
static void lanes_and_rows(tp_jw *w, const tp_trace_view *v, const tp_tv_lane **by_pos,
                           const tp_keyed *order) {
    tp_jw_array(w, "lanes");
    for (size_t k = 0; k < v->nlanes; k++) {
        const tp_tv_lane *l = by_pos[k];
        tp_jw_object(w, NULL);
        tp_jw_str(w, "name", l->label);
        tp_jw_u64(w, "group", l->model);
        tp_jw_bool(w, "gpu", l->device);
        tp_jw_end_object(w);
    }
    tp_jw_end_array(w);
    tp_jw_array(w, "rows");
    for (size_t i = 0; i < v->n; i++) {
        if (i && order[i].key == order[i - 1].key) continue;
        tp_jw_array(w, NULL);
        tp_jw_u64(w, NULL, order[i].key >> 32);
        tp_jw_u64(w, NULL, order[i].key & UINT32_MAX);
        tp_jw_u64(w, NULL, i);
        tp_jw_end_array(w);
    }
    tp_jw_end_array(w);
}

void tp_trace_view_json(tp_buf *out, const tp_trace_view *v) {
    tp_jw w;
    tp_jw_init(&w, out);
    w.max_str = TP_TRACE_VIEW_NAME_MAX;
    /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
    const tp_tv_lane **by_pos = malloc((v->nlanes ? v->nlanes : 1) * sizeof(*by_pos));
    uint32_t *pos = malloc((v->nlanes ? v->nlanes : 1) * sizeof(*pos)); /* lane -> position */
    tp_keyed *order = malloc((v->n ? v->n : 1) * sizeof(*order));
    uint32_t *depth = malloc((v->n ? v->n : 1) * sizeof(*depth));
    if (!by_pos || !pos || !order || !depth) {
        out->failed = 1;
        goto done;
    }
    for (size_t i = 0; i < v->nlanes; i++)
        by_pos[i] = &v->lanes[i];
    if (v->nlanes) /* NOLINTNEXTLINE(bugprone-sizeof-expression): an array of pointers */
        qsort(by_pos, v->nlanes, sizeof(*by_pos), lane_cmp);
    for (size_t k = 0; k < v->nlanes; k++)
        pos[by_pos[k] - v->lanes] = (uint32_t)k;
    if (order_ranges(v, pos, order, depth)) {
        out->failed = 1;
        goto done;
    }
    int64_t t0 = v->n ? INT64_MAX : 0, t1 = v->n ? INT64_MIN : 0;
    for (size_t i = 0; i < v->n; i++) {
        if (v->r[i].start_ns < t0) t0 = v->r[i].start_ns;
        if (v->r[i].start_ns + v->r[i].dur_ns > t1) t1 = v->r[i].start_ns + v->r[i].dur_ns;
    }
    cols c = {v, order, t0};
    tp_jw_object(&w, NULL);
    tp_jw_us(&w, "t0_us", t0);
    tp_jw_i64(&w, "span_ns", t1 - t0);
    tp_jw_u64(&w, "ranges", v->n);
    tp_jw_u64(&w, "ranges_total", v->seen);
    if (v->cut_ns != INT64_MAX) tp_jw_us(&w, "cut_us", v->cut_ns);
    tp_jw_u64(&w, "args_left_out", v->args_left_out);
    tp_jw_u64(&w, "names_left_out", v->names_left_out);
    tp_jw_bool(&w, "partial", v->failed || v->names.failed || v->args.failed);
    lanes_and_rows(&w, v, by_pos, order);
    strings(&w, "names", &v->names);
    args_json(&w, &v->args);
    column(&w, "start", &c, col_start);
    column(&w, "dur", &c, col_dur);
    column(&w, "name", &c, col_name);
    column(&w, "args", &c, col_args);
    column(&w, "corr", &c, col_corr);
    column(&w, "ext", &c, col_ext);
    tp_jw_end_object(&w);
done:
    free(by_pos);
    free(pos);
    free(order);
    free(depth);
}
