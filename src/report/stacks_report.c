/* stacks_report.c - call stacks rendered (analysis/stacks.h): the folded stacks of
 * `tprof analyze --folded`, the "call_stacks" key of the JSON report and the text "Call stacks"
 * section (docs/METRICS.md, "Call stacks").
 *
 * Folded stacks are Brendan Gregg's format, what flamegraph.pl and speedscope read: one line per
 * distinct stack, its frames outermost first joined by ';', a space, and its self time in whole
 * microseconds (rounded to the nearest; lines rounding to 0 are left out). Lines are sorted by
 * stack, and stacks that print alike are one line. A frame's ';' becomes ':' and its control
 * characters spaces, so a name cannot split a frame or a line. */
#include "report/stacks_report.h"

#include "analysis/stacks.h"
#include "report/format.h"

#include <stdlib.h>
#include <string.h>

/* Callers a JSON row lists, and callers a text line names. */
enum { JSON_CALLERS = 5, TEXT_CALLERS = 2 };

/* The frames of node, outermost first, into a new array of *depth entries; NULL (and depth 0)
 * when out of memory. */
static uint32_t *path_of(const tp_stacks *st, uint32_t node, size_t *depth) {
    size_t cap = tp_stacks_depth(st, node), k = 0;
    uint32_t *path = malloc((cap + 1) * sizeof(*path));
    for (uint32_t n = node; path && n != TP_STACK_NONE && k < cap; n = st->nodes[n].parent)
        path[k++] = n; /* innermost first, reversed below */
    for (size_t i = 0; i < k / 2; i++) {
        uint32_t t = path[i];
        path[i] = path[k - 1 - i];
        path[k - 1 - i] = t;
    }
    *depth = k;
    return path;
}

/* Appends node's folded stack to b: its frames, outermost first, sanitized, joined by ';'. */
static void put_folded(tp_buf *b, const tp_stacks *st, uint32_t node) {
    size_t depth;
    uint32_t *path = path_of(st, node, &depth);
    if (!path) {
        b->failed = 1;
        return;
    }
    for (size_t k = 0; k < depth; k++) {
        if (k) tp_buf_putc(b, ';');
        const char *name = tp_strtab_get(&st->names, st->nodes[path[k]].name);
        for (const unsigned char *c = (const unsigned char *)name; *c; c++)
            tp_buf_putc(b, *c == ';' ? ':' : *c < 0x20 || *c == 0x7f ? ' ' : (char)*c);
    }
    free(path);
}

/* One folded line before it is printed: its stack's text, its self time. */
typedef struct folded_line {
    size_t off;    /* of the text in the scratch buffer, while it grows */
    const char *s; /* ... and the text, once it stops moving */
    size_t len;
    int64_t ns;
} folded_line;

static int cmp_lines(const void *pa, const void *pb) {
    const folded_line *a = pa, *b = pb;
    int c = memcmp(a->s, b->s, a->len < b->len ? a->len : b->len);
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

void tp_report_folded(tp_buf *out, const tp_analysis *a) {
    const tp_stacks *st = a->stacks;
    if (!st || !st->nnodes) return;
    tp_buf text;
    tp_buf_init(&text);
    folded_line *lines = malloc(st->nnodes * sizeof(*lines));
    size_t n = 0;
    for (uint32_t i = 0; lines && i < st->nnodes; i++) {
        if (st->nodes[i].self_ns <= 0) continue;
        size_t off = text.len;
        put_folded(&text, st, i);
        lines[n++] = (folded_line){off, NULL, text.len - off, st->nodes[i].self_ns};
    }
    if (!lines || text.failed) {
        out->failed = 1;
        n = 0;
    }
    for (size_t i = 0; i < n; i++)
        lines[i].s = text.data + lines[i].off;
    if (n) qsort(lines, n, sizeof(*lines), cmp_lines);
    for (size_t i = 0, j; i < n; i = j) {
        int64_t ns = 0;
        for (j = i; j < n && cmp_lines(&lines[i], &lines[j]) == 0; j++)
            ns += lines[j].ns;
        if (ns < 500) continue; /* rounds to 0 us */
        tp_buf_put(out, lines[i].s, lines[i].len);
        tp_buf_putc(out, ' ');
        tp_buf_i64(out, (ns + 500) / 1000);
        tp_buf_putc(out, '\n');
    }
    free(lines);
    tp_buf_free(&text);
}

static double share(int64_t part, int64_t whole) {
    return whole > 0 ? 100.0 * (double)part / (double)whole : -1;
}

/* One op's or kernel's row: its callers, the most time first, and the share with a stack. */
static void json_row(tp_jw *w, const tp_stacks *st, const char *name, int64_t total_ns,
                     const uint32_t *callers, size_t n) {
    int64_t with_stack = 0;
    for (size_t i = 0; i < n; i++)
        with_stack += st->callers[callers[i]].ns;
    tp_jw_object(w, NULL);
    tp_jw_str(w, "name", name);
    tp_jw_us(w, "total_us", total_ns);
    tp_jw_double_opt(w, "python_pct", share(with_stack, total_ns));
    tp_jw_u64(w, "stacks", n);
    tp_jw_array(w, "callers");
    for (size_t i = 0; i < n && i < JSON_CALLERS; i++) {
        const tp_stack_caller *c = &st->callers[callers[i]];
        size_t depth;
        uint32_t *path = path_of(st, c->node, &depth);
        if (!path) w->b->failed = 1;
        tp_jw_object(w, NULL);
        tp_jw_array(w, "stack");
        for (size_t k = 0; path && k < depth; k++)
            tp_jw_str(w, NULL, tp_strtab_get(&st->names, st->nodes[path[k]].name));
        tp_jw_end_array(w);
        tp_jw_u64(w, "calls", c->calls);
        tp_jw_us(w, "time_us", c->ns);
        tp_jw_double_opt(w, "pct", share(c->ns, total_ns));
        tp_jw_end_object(w);
        free(path);
    }
    tp_jw_end_array(w);
    tp_jw_end_object(w);
}

/* The top ops by self time (kernel 0) or kernels by total time (1), as the tables show them:
 * row i's name and total. */
static size_t top_rows(const tp_analysis *a, const tp_report_opts *o, int kernel) {
    return tp_report_rows(o, kernel ? a->nkernels : a->nops);
}
static const char *row_name(const tp_analysis *a, int kernel, size_t i) {
    return kernel ? a->kernels[i].name : a->ops[i].name;
}
static int64_t row_total(const tp_analysis *a, int kernel, size_t i) {
    return kernel ? a->kernels[i].total_ns : a->ops[i].total_ns;
}

void tp_report_stacks_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    const tp_stacks *st = a->stacks;
    if (!st) return;
    tp_jw_object(w, "call_stacks");
    for (int kernel = 0; kernel < 2; kernel++) {
        tp_jw_array(w, kernel ? "kernels" : "ops");
        for (size_t i = 0, n; i < top_rows(a, o, kernel); i++) {
            const uint32_t *callers = tp_stacks_callers(st, row_name(a, kernel, i), kernel, &n);
            if (n) json_row(w, st, row_name(a, kernel, i), row_total(a, kernel, i), callers, n);
        }
        tp_jw_end_array(w);
    }
    tp_jw_end_object(w);
}

/* The innermost Python frame at or above node that is a source line of the program rather than
 * of torch ("file.py(41): f", its file not under torch/), or NULL. */
static const char *program_frame(const tp_stacks *st, uint32_t node) {
    for (uint32_t n = node; n != TP_STACK_NONE; n = st->nodes[n].parent) {
        const char *name = tp_strtab_get(&st->names, st->nodes[n].name);
        if (st->nodes[n].python && name[0] != '<' && strstr(name, ".py(") &&
            strncmp(name, "torch/", 6) != 0 && !strstr(name, "/torch/"))
            return name;
    }
    return NULL;
}

/* The innermost module range ("nn.Module: Linear_1", with_modules) at or above node, or NULL. */
static const char *module_frame(const tp_stacks *st, uint32_t node) {
    for (uint32_t n = node; n != TP_STACK_NONE; n = st->nodes[n].parent) {
        const char *name = tp_strtab_get(&st->names, st->nodes[n].name);
        if (strncmp(name, "nn.Module: ", 11) == 0) return name;
    }
    return NULL;
}

/* What a text line names for callers: the program's frame, and the module around the call when
 * every caller of that frame has the same; the callers of one frame are one (their stacks differ
 * inside torch, or by module). Strings are interned, so equal names are equal pointers. */
typedef struct shown {
    const char *frame, *module;
    int64_t ns;
} shown;

static int cmp_shown_names(const void *pa, const void *pb) {
    const shown *a = pa, *b = pb;
    if (a->frame != b->frame) return (uintptr_t)a->frame < (uintptr_t)b->frame ? -1 : 1;
    return (uintptr_t)a->module < (uintptr_t)b->module ? -1 : a->module != b->module;
}

static int cmp_shown_time(const void *pa, const void *pb) {
    const shown *a = pa, *b = pb;
    if (a->ns != b->ns) return a->ns > b->ns ? -1 : 1;
    int c = strcmp(a->frame ? a->frame : "", b->frame ? b->frame : "");
    return c ? c : strcmp(a->module ? a->module : "", b->module ? b->module : "");
}

/* "name: 80.0% from model.py(41): attention (nn.Module: Attn_0), 15.0% from ..." for one op or
 * kernel: its callers grouped as the line names them, most time first. */
static void text_line(tp_doc *d, const tp_stacks *st, const char *name, int64_t total_ns,
                      const uint32_t *callers, size_t n) {
    shown *g = malloc(n * sizeof(*g));
    if (!g) {
        d->text.failed = 1; /* the document's failure, rendered as the output's */
        return;
    }
    for (size_t i = 0; i < n; i++) {
        const tp_stack_caller *c = &st->callers[callers[i]];
        g[i] = (shown){program_frame(st, c->node), module_frame(st, c->node), c->ns};
    }
    qsort(g, n, sizeof(*g), cmp_shown_names);
    size_t groups = 0;
    for (size_t i = 0; i < n; i++) {
        shown *last = groups ? &g[groups - 1] : NULL;
        if (last && last->frame == g[i].frame) {
            last->ns += g[i].ns;
            if (last->module != g[i].module) last->module = NULL;
        } else {
            g[groups++] = g[i];
        }
    }
    qsort(g, groups, sizeof(*g), cmp_shown_time);
    tp_buf line;
    tp_buf_init(&line);
    for (size_t i = 0; i < groups && i < TEXT_CALLERS; i++) {
        tp_buf_printf(&line, "%s%s from %s", i ? ", " : "", tp_fmt_pct(share(g[i].ns, total_ns)).s,
                      g[i].frame ? g[i].frame : "torch");
        if (g[i].module) tp_buf_printf(&line, " (%s)", g[i].module);
    }
    if (groups > TEXT_CALLERS) tp_buf_printf(&line, " (%zu callers)", groups);
    tp_buf_putc(&line, '\0');
    if (line.failed)
        d->text.failed = 1;
    else
        tp_doc_line(d, "%s: %s", name, line.data);
    tp_buf_free(&line);
    free(g);
}

/* The text lines of the top ops and kernels that have callers into d; with d NULL, their
 * count alone. */
static size_t text_lines(tp_doc *d, const tp_analysis *a, const tp_report_opts *o) {
    size_t lines = 0;
    for (int kernel = 0; kernel < 2; kernel++) {
        for (size_t i = 0, n; i < top_rows(a, o, kernel); i++) {
            const uint32_t *callers =
                tp_stacks_callers(a->stacks, row_name(a, kernel, i), kernel, &n);
            if (n && d)
                text_line(d, a->stacks, row_name(a, kernel, i), row_total(a, kernel, i), callers,
                          n);
            lines += n != 0;
        }
    }
    return lines;
}

void tp_report_stacks_text(tp_doc *d, const tp_analysis *a, const tp_report_opts *o) {
    if (!a->stacks || !text_lines(NULL, a, o)) return;
    tp_doc_heading(d, "Call stacks (the Python frames that called the top ops and kernels)");
    text_lines(d, a, o);
}

/* The flame graph's node order: most total time first, then the older node, so that a parent
 * (whose total holds its children's) always comes before its children. */
typedef struct flame_key {
    int64_t total;
    uint32_t node;
} flame_key;

static int cmp_flame(const void *pa, const void *pb) {
    const flame_key *a = pa, *b = pb;
    if (a->total != b->total) return a->total > b->total ? -1 : 1;
    return (a->node > b->node) - (a->node < b->node);
}

void tp_report_flame_json(tp_jw *w, const tp_analysis *a, const tp_report_opts *o) {
    const tp_stacks *st = a->stacks;
    if (!st || !st->nnodes) return;
    size_t n = st->nnodes, keep = tp_report_list(o, n);
    flame_key *k = malloc(n * sizeof(*k));
    uint32_t *at = malloc(n * sizeof(*at)); /* node -> its row, UINT32_MAX when left out */
    if (!k || !at) {
        free(k), free(at);
        w->b->failed = 1;
        return;
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (flame_key){st->nodes[i].total_ns, (uint32_t)i};
    qsort(k, n, sizeof(*k), cmp_flame);
    for (size_t i = 0; i < n; i++)
        at[k[i].node] = i < keep ? (uint32_t)i : UINT32_MAX;
    tp_jw_object(w, "flame");
    tp_jw_i64(w, "total_ns", st->total_ns);
    tp_jw_u64(w, "nodes_total", n);
    tp_jw_array(w, "nodes");
    for (size_t i = 0; i < keep; i++) {
        const tp_stack_node *node = &st->nodes[k[i].node];
        tp_jw_array(w, NULL);
        tp_jw_i64(w, NULL, node->parent == TP_STACK_NONE ? -1 : (int64_t)at[node->parent]);
        tp_jw_str(w, NULL, tp_strtab_get(&st->names, node->name));
        tp_jw_i64(w, NULL, node->total_ns);
        tp_jw_i64(w, NULL, node->self_ns);
        tp_jw_i64(w, NULL, node->python);
        tp_jw_end_array(w);
    }
    tp_jw_end_array(w);
    tp_jw_end_object(w);
    free(k), free(at);
}
