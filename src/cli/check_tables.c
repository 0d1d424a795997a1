/* check_tables.c - the run's derived artifacts against a fresh analysis of its traces: the steps
 * of stage_times.json, every row of op_stats.csv, summary.json's step count and top ops.
 *
 * Times in op_stats.csv are compared exactly: the CSV holds decimal microseconds written from
 * integer nanoseconds (tp_buf_us), parsed back here without floating point. JSON numbers go
 * through jansson's double, exact for durations below 2^53 ns / 1000 (about 104 days). Names in
 * messages are JSON string literals, so a name holding a line break still gives one line. */
#include "cli/check.h"

#include "cli/csv.h"
#include "cli/cli.h"
#include "model/strtab.h"
#include "report/columns.h"
#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

/* s as a JSON string literal in b (reset first); the text stays valid until b changes. */
static const char *show(tp_buf *b, const char *s) {
    b->len = 0;
    tp_buf_json_cstr(b, s);
    tp_buf_putc(b, '\0');
    return b->failed ? "\"?\"" : b->data;
}

/* Integer nanoseconds as exact decimal microseconds. */
typedef struct us_text {
    char s[TP_FMT_NUM_MAX + 1];
} us_text;

static us_text us(int64_t ns) {
    us_text t = {{0}};
    *tp_fmt_us(t.s, ns) = '\0';
    return t;
}

/* ---- stage_times.json ---- */

typedef struct step_key {
    int64_t number, dur_ns;
} step_key;

static int by_number(const void *x, const void *y) {
    const step_key *a = x, *b = y;
    if (a->number != b->number) return a->number < b->number ? -1 : 1;
    return (a->dur_ns > b->dur_ns) - (a->dur_ns < b->dur_ns);
}

/* The steps of the file; NULL (reported) when the list is malformed; *n of them. */
static step_key *file_steps(tp_checker *c, const char *path, const json_t *doc, size_t *n) {
    const json_t *list = json_object_get(doc, "steps"), *v;
    if (!json_is_array(list)) {
        tp_check_problem(c, path, "no steps list");
        return NULL;
    }
    step_key *keys = malloc((json_array_size(list) + 1) * sizeof(*keys));
    size_t i;
    *n = 0;
    json_array_foreach(list, i, v) {
        const json_t *num = json_object_get(v, tp_col_number);
        if (!keys) break;
        if (!json_is_integer(num) ||
            tp_check_json_us(json_object_get(v, tp_col_dur), &keys[*n].dur_ns)) {
            tp_check_problem(c, path, "steps[%zu] has no integer number and dur_us", i);
            continue;
        }
        keys[(*n)++].number = json_integer_value(num);
    }
    if (!keys) tp_check_problem(c, path, "out of memory");
    return keys;
}

void tp_check_steps(tp_checker *c, const char *path, const json_t *doc, const tp_analysis *a) {
    size_t nf = 0, nt = a->nsteps;
    step_key *f = file_steps(c, path, doc, &nf), *t = malloc((nt + 1) * sizeof(*t));
    if (f && t) {
        for (size_t i = 0; i < nt; i++)
            t[i] = (step_key){a->steps[i].number, a->steps[i].dur_ns};
        qsort(f, nf, sizeof(*f), by_number);
        qsort(t, nt, sizeof(*t), by_number);
        size_t i = 0, k = 0;
        while (i < nf || k < nt) {
            if (k == nt || (i < nf && f[i].number < t[k].number)) {
                tp_check_problem(c, path, "step %lld is not in the traces",
                                 (long long)f[i++].number);
            } else if (i == nf || t[k].number < f[i].number) {
                tp_check_problem(c, path, "step %lld of the traces is missing",
                                 (long long)t[k++].number);
            } else {
                if (f[i].dur_ns != t[k].dur_ns)
                    tp_check_problem(c, path, "step %lld: dur_us %s, the traces say %s",
                                     (long long)f[i].number, us(f[i].dur_ns).s, us(t[k].dur_ns).s);
                i++, k++;
            }
        }
    } else if (f) {
        tp_check_problem(c, path, "out of memory");
    }
    free(f);
    free(t);
}

/* One row of stage_times.json's stages against the analysis' row r. */
static void check_stage(tp_checker *c, const char *path, size_t i, const json_t *v,
                        const tp_stage_row *r) {
    const json_t *name = json_object_get(v, tp_col_stage),
                 *count = json_object_get(v, tp_col_count);
    int64_t total_ns;
    tp_buf b;
    tp_buf_init(&b);
    if (!json_is_string(name) || !json_is_integer(count) ||
        tp_check_json_us(json_object_get(v, tp_col_total), &total_ns)) {
        tp_check_problem(c, path, "stages[%zu] has no stage name, integer count and total_us", i);
    } else if (strcmp(json_string_value(name), r->name) != 0) {
        tp_check_problem(c, path, "stages[%zu] is %s, the run's stages (its config.json) say %s", i,
                         show(&b, json_string_value(name)), r->name);
    } else if ((uint64_t)json_integer_value(count) != r->count || total_ns != r->total_ns) {
        tp_check_problem(c, path, "stage %s: count %lld, total_us %s; the traces say %llu, %s",
                         show(&b, r->name), (long long)json_integer_value(count), us(total_ns).s,
                         (unsigned long long)r->count, us(r->total_ns).s);
    }
    tp_buf_free(&b);
}

void tp_check_stages(tp_checker *c, const char *path, const json_t *doc, const tp_analysis *a) {
    const json_t *list = json_object_get(doc, "stages");
    if (!json_is_array(list)) {
        tp_check_problem(c, path, "no stages list");
    } else if (json_array_size(list) != a->nstages) {
        tp_check_problem(c, path, "%zu stages; the run's stages (its config.json) are %zu",
                         json_array_size(list), a->nstages);
    } else {
        for (size_t i = 0; i < a->nstages; i++)
            check_stage(c, path, i, json_array_get(list, i), &a->stages[i]);
    }
}

/* ---- op_stats.csv ---- */

/* Decimal microseconds ("-12.345") as nanoseconds, exactly; digits past the third decimal must
 * be zeros. 0, or -1 when s is not such a number. */
static int parse_us(const char *s, int64_t *ns) {
    int neg = *s == '-';
    s += neg;
    if (*s < '0' || *s > '9') return -1;
    int64_t v = 0;
    for (; *s >= '0' && *s <= '9'; s++) {
        if (v > INT64_MAX / 10000) return -1;
        v = v * 10 + (*s - '0');
    }
    v *= 1000;
    if (*s == '.') {
        int64_t scale = 100;
        if (*++s < '0' || *s > '9') return -1;
        for (; *s >= '0' && *s <= '9'; s++, scale /= 10)
            if (scale)
                v += (*s - '0') * scale;
            else if (*s != '0')
                return -1;
    }
    if (*s) return -1;
    *ns = neg ? -v : v;
    return 0;
}

static int parse_count(const char *s, uint64_t *out) {
    uint64_t v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10) return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

enum { COL_NAME, COL_CALLS, COL_TOTAL, COL_SELF, COL_MIN, COL_MAX, NCOLS };
static const char *const col_names[NCOLS] = {tp_col_name, tp_col_calls, tp_col_total,
                                             tp_col_self, tp_col_min,   tp_col_max};

/* The ops of a, findable by name: id of the name in names -> op index + 1. */
typedef struct op_index {
    tp_strtab names;
    size_t *op_of;
    size_t cap;
    unsigned char *seen; /* per op: a row was found */
} op_index;

static int index_ops(op_index *x, const tp_analysis *a) {
    tp_strtab_init(&x->names);
    x->op_of = NULL;
    x->cap = 0;
    x->seen = calloc(a->nops + 1, 1);
    for (size_t i = 0; x->seen && i < a->nops; i++) {
        tp_str id = tp_strtab_intern(&x->names, a->ops[i].name, strlen(a->ops[i].name));
        size_t old = x->cap;
        if (x->names.failed || TP_GROW(x->op_of, x->cap, (size_t)id + 1)) return -1;
        memset(x->op_of + old, 0, (x->cap - old) * sizeof(*x->op_of));
        x->op_of[id] = i + 1;
    }
    return x->seen ? 0 : -1;
}

static const tp_op_row *find_op(const op_index *x, const tp_analysis *a, const char *name) {
    tp_str id = tp_strtab_find(&x->names, name, strlen(name));
    return id < x->cap && x->op_of[id] ? &a->ops[x->op_of[id] - 1] : NULL;
}

/* Appends "what V (the traces: W)" to diff when V != W. */
static void diff_us(tp_buf *diff, const char *what, int64_t file_ns, int64_t trace_ns) {
    if (file_ns != trace_ns)
        tp_buf_printf(diff, "%s%s %s (the traces: %s)", diff->len ? ", " : "", what, us(file_ns).s,
                      us(trace_ns).s);
}

/* One data row against its op. cols maps each column to its field. */
static void check_row(tp_checker *c, const char *path, const tp_csv *csv, const size_t *cols,
                      const tp_analysis *a, op_index *x, tp_buf *tmp) {
    size_t line = csv->record_line;
    const char *name = tp_csv_field(csv, cols[COL_NAME]);
    const tp_op_row *op = find_op(x, a, name);
    if (!op) {
        tp_check_problem(c, path, "line %zu: op %s is not in the traces", line, show(tmp, name));
        return;
    }
    if (x->seen[op - a->ops]++) {
        tp_check_problem(c, path, "line %zu: a second row for op %s", line, show(tmp, name));
        return;
    }
    uint64_t calls;
    int64_t v[NCOLS];
    const int64_t want[NCOLS] = {0, 0, op->total_ns, op->self_ns, op->min_ns, op->max_ns};
    tp_buf diff;
    tp_buf_init(&diff);
    if (parse_count(tp_csv_field(csv, cols[COL_CALLS]), &calls))
        tp_buf_printf(&diff, "calls is not a count");
    else if (calls != op->calls)
        tp_buf_printf(&diff, "calls %llu (the traces: %llu)", (unsigned long long)calls,
                      (unsigned long long)op->calls);
    for (int k = COL_TOTAL; k < NCOLS; k++) {
        if (parse_us(tp_csv_field(csv, cols[k]), &v[k]))
            tp_buf_printf(&diff, "%s%s is not a time in microseconds", diff.len ? ", " : "",
                          col_names[k]);
        else
            diff_us(&diff, col_names[k], v[k], want[k]);
    }
    tp_buf_putc(&diff, '\0');
    if (diff.len > 1)
        tp_check_problem(c, path, "line %zu: op %s: %s", line, show(tmp, name),
                         diff.failed ? "differs" : diff.data);
    tp_buf_free(&diff);
}

/* The header's column of each needed field; 0, or -1 (reported) when one is missing. */
static int find_columns(tp_checker *c, const char *path, const tp_csv *csv, size_t *cols) {
    for (int k = 0; k < NCOLS; k++) {
        size_t i = 0;
        while (i < csv->nfields && strcmp(tp_csv_field(csv, i), col_names[k]) != 0)
            i++;
        if (i == csv->nfields) {
            tp_check_problem(c, path, "line 1: the header has no %s column", col_names[k]);
            return -1;
        }
        cols[k] = i;
    }
    return 0;
}

static void check_rows(tp_checker *c, const char *path, tp_csv *csv, const tp_analysis *a,
                       op_index *x) {
    size_t cols[NCOLS], ncols = csv->nfields;
    tp_buf tmp;
    tp_buf_init(&tmp);
    if (find_columns(c, path, csv, cols)) return;
    int r;
    while ((r = tp_csv_next(csv)) > 0) {
        if (csv->nfields != ncols)
            tp_check_problem(c, path, "line %zu: %zu fields, the header has %zu", csv->record_line,
                             csv->nfields, ncols);
        else
            check_row(c, path, csv, cols, a, x, &tmp);
    }
    if (r < 0) tp_check_problem(c, path, "line %zu: invalid CSV: %s", csv->record_line, csv->err);
    for (size_t i = 0; r == 0 && i < a->nops; i++)
        if (!x->seen[i])
            tp_check_problem(c, path, "op %s of the traces (%llu calls) has no row",
                             show(&tmp, a->ops[i].name), (unsigned long long)a->ops[i].calls);
    tp_buf_free(&tmp);
}

void tp_check_op_stats(tp_checker *c, const char *path, const tp_analysis *a) {
    tp_buf text;
    tp_buf_init(&text);
    char err[1024];
    if (tp_cli_read_file(path, &text, err, sizeof(err))) {
        tp_check_problem(c, path, "%s", err + strlen(path) + 2);
        tp_buf_free(&text);
        return;
    }
    tp_csv csv;
    tp_csv_init(&csv, text.data, text.len);
    op_index x;
    int r = tp_csv_next(&csv);
    if (r <= 0)
        tp_check_problem(c, path, "line %zu: %s", csv.record_line,
                         r < 0 ? csv.err : "empty: no header");
    else if (index_ops(&x, a))
        tp_check_problem(c, path, "out of memory");
    else
        check_rows(c, path, &csv, a, &x);
    if (r > 0) {
        tp_strtab_free(&x.names);
        free(x.op_of);
        free(x.seen);
    }
    tp_csv_free(&csv);
    tp_buf_free(&text);
}

/* ---- summary.json ---- */

static void check_top_op(tp_checker *c, const char *path, size_t i, const json_t *row,
                         const tp_op_row *op, tp_buf *tmp) {
    const json_t *calls = json_object_get(row, tp_col_calls);
    int64_t total, self;
    tp_buf diff;
    tp_buf_init(&diff);
    if (!json_is_integer(calls))
        tp_buf_printf(&diff, "calls missing");
    else if ((uint64_t)json_integer_value(calls) != op->calls)
        tp_buf_printf(&diff, "calls %lld (the traces: %llu)", (long long)json_integer_value(calls),
                      (unsigned long long)op->calls);
    if (tp_check_json_us(json_object_get(row, tp_col_total), &total))
        tp_buf_printf(&diff, "%s%s missing", diff.len ? ", " : "", tp_col_total);
    else
        diff_us(&diff, tp_col_total, total, op->total_ns);
    if (tp_check_json_us(json_object_get(row, tp_col_self), &self))
        tp_buf_printf(&diff, "%s%s missing", diff.len ? ", " : "", tp_col_self);
    else
        diff_us(&diff, tp_col_self, self, op->self_ns);
    tp_buf_putc(&diff, '\0');
    if (diff.len > 1)
        tp_check_problem(c, path, "top_cpu_ops[%zu] %s: %s", i, show(tmp, op->name),
                         diff.failed ? "differs" : diff.data);
    tp_buf_free(&diff);
}

void tp_check_summary(tp_checker *c, const char *path, const json_t *doc, const tp_analysis *a) {
    const json_t *count = json_object_get(json_object_get(doc, "steps"), "count");
    if (!json_is_integer(count))
        tp_check_problem(c, path, "no steps.count");
    else if ((size_t)json_integer_value(count) != a->nsteps)
        tp_check_problem(c, path, "steps.count %lld, the traces have %zu steps",
                         (long long)json_integer_value(count), a->nsteps);
    const json_t *ops = json_object_get(doc, "top_cpu_ops"), *row;
    if (!json_is_array(ops)) {
        tp_check_problem(c, path, "no top_cpu_ops list");
        return;
    }
    tp_buf tmp, tmp2;
    tp_buf_init(&tmp);
    tp_buf_init(&tmp2);
    size_t i;
    json_array_foreach(ops, i, row) {
        const char *name = json_string_value(json_object_get(row, tp_col_name));
        if (!name)
            tp_check_problem(c, path, "top_cpu_ops[%zu] has no name", i);
        else if (i >= a->nops)
            tp_check_problem(c, path, "top_cpu_ops[%zu] %s: the traces have only %zu ops", i,
                             show(&tmp, name), a->nops);
        else if (strcmp(name, a->ops[i].name) != 0)
            tp_check_problem(c, path,
                             "top_cpu_ops[%zu] is %s, the traces' op %zu by self time "
                             "is %s",
                             i, show(&tmp, name), i + 1, show(&tmp2, a->ops[i].name));
        else
            check_top_op(c, path, i, row, &a->ops[i], &tmp);
    }
    tp_buf_free(&tmp);
    tp_buf_free(&tmp2);
}
