/* doc.c - building a tp_doc and laying it out as text or Markdown (see doc.h). */
#include "report/doc.h"

#include "util/vec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The text kinds come first: they index the layouts' prefix and suffix arrays. */
enum { BLOCK_TITLE, BLOCK_HEADING, BLOCK_LINE, BLOCK_TABLE };

enum {
    TEXT_NAME_WIDTH = 60,      /* a terminal line keeps room for the numbers */
    MARKDOWN_NAME_WIDTH = 120, /* Markdown tables wrap, so they can afford more */
    TEXT_LINE_WIDTH = 100,     /* text lines wrap at a space past this many bytes */
};

struct tp_doc_block {
    int kind;
    size_t first; /* index of its first string in strs */
    size_t nstrs; /* strings so far: 1, or for a table its header and cells */
    size_t ncols;
    unsigned flags[TP_DOC_MAX_COLS];
};

void tp_doc_init(tp_doc *d) {
    *d = (tp_doc){0};
    tp_buf_init(&d->text);
}

void tp_doc_free(tp_doc *d) {
    tp_buf_free(&d->text);
    free(d->strs);
    free(d->blocks);
    *d = (tp_doc){0};
}

static const char *str_at(const tp_doc *d, size_t i) {
    return d->text.failed ? "" : d->text.data + d->strs[i];
}

/* Starts the next string at the end of the text; 0, or -1 when out of memory. */
static int begin_string(tp_doc *d) {
    if (d->text.failed || TP_GROW(d->strs, d->cap_strs, d->nstrs + 1)) {
        d->text.failed = 1;
        return -1;
    }
    d->strs[d->nstrs++] = d->text.len;
    return 0;
}

/* Formats into the text's free space of `room` bytes; returns the length the string needs. */
static size_t format_into(tp_doc *d, size_t room, const char *fmt, va_list ap) {
    if (tp_buf_reserve(&d->text, room)) return 0;
    int n = vsnprintf(d->text.data + d->text.len, room, fmt, ap);
    return n > 0 ? (size_t)n : 0;
}

/* Ends the string begun last, of length n. Control characters (a newline inside an op name)
 * would break the layout: they become spaces. */
static void end_string(tp_doc *d, size_t n) {
    if (d->text.failed) return;
    for (size_t i = d->text.len; i < d->text.len + n; i++)
        if ((unsigned char)d->text.data[i] < 0x20) d->text.data[i] = ' ';
    d->text.len += n;
    tp_buf_putc(&d->text, '\0');
}

/* Appends the formatted string as the next string of d. A macro because C cannot pass "..." on:
 * the arguments are formatted into 256 bytes and, when longer, again at their size. */
#define TP_DOC_FORMAT(d, fmt)                                                                      \
    do {                                                                                           \
        va_list ap_;                                                                               \
        if (begin_string(d)) break;                                                                \
        va_start(ap_, fmt);                                                                        \
        size_t n_ = format_into(d, 256, fmt, ap_);                                                 \
        va_end(ap_);                                                                               \
        if (n_ >= 256) {                                                                           \
            va_start(ap_, fmt);                                                                    \
            n_ = format_into(d, n_ + 1, fmt, ap_);                                                 \
            va_end(ap_);                                                                           \
        }                                                                                          \
        end_string(d, n_);                                                                         \
    } while (0)

static struct tp_doc_block *add_block(tp_doc *d, int kind) {
    if (TP_GROW(d->blocks, d->cap_blocks, d->nblocks + 1)) {
        d->text.failed = 1;
        return NULL;
    }
    struct tp_doc_block *b = &d->blocks[d->nblocks++];
    *b = (struct tp_doc_block){.kind = kind, .first = d->nstrs, .nstrs = 1};
    return b;
}

#define TP_DOC_TEXT_FN(fn, kind)                                                                   \
    void fn(tp_doc *d, const char *fmt, ...) {                                                     \
        if (add_block(d, kind)) TP_DOC_FORMAT(d, fmt);                                             \
    }
TP_DOC_TEXT_FN(tp_doc_title, BLOCK_TITLE)
TP_DOC_TEXT_FN(tp_doc_heading, BLOCK_HEADING)
TP_DOC_TEXT_FN(tp_doc_line, BLOCK_LINE)

void tp_doc_table(tp_doc *d, size_t ncols, const char *const *header, const unsigned *flags) {
    if (ncols > TP_DOC_MAX_COLS) ncols = TP_DOC_MAX_COLS;
    struct tp_doc_block *b = add_block(d, BLOCK_TABLE);
    if (!b) return;
    b->ncols = ncols;
    b->nstrs = ncols;
    for (size_t c = 0; c < ncols; c++) {
        b->flags[c] = flags[c];
        if (begin_string(d) == 0) {
            tp_buf_puts(&d->text, header[c]);
            tp_buf_putc(&d->text, '\0');
        }
    }
}

void tp_doc_cell(tp_doc *d, const char *fmt, ...) {
    if (!d->nblocks || d->blocks[d->nblocks - 1].kind != BLOCK_TABLE) return;
    d->blocks[d->nblocks - 1].nstrs++;
    TP_DOC_FORMAT(d, fmt);
}

/* ---- layout ---------------------------------------------------------------------------------- */

/* Display width: UTF-8 characters (continuation bytes do not count). */
static size_t width_of(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

/* Byte length of the first `chars` characters of s. */
static size_t bytes_of(const char *s, size_t chars) {
    size_t i = 0;
    for (; s[i] && chars; chars--) {
        i++;
        while (((unsigned char)s[i] & 0xc0) == 0x80)
            i++;
    }
    return i;
}

/* s shortened to at most `max` characters by cutting its middle: C++ kernel names keep the
 * function (front) and the end of their argument list. Returns the display width written. */
static size_t put_short(tp_buf *out, const char *s, size_t max) {
    size_t w = width_of(s);
    if (!max || w <= max || max < 8) {
        tp_buf_puts(out, s);
        return w;
    }
    size_t tail = (max - 3) / 3, head = max - 3 - tail;
    tp_buf_put(out, s, bytes_of(s, head));
    TP_BUF_LIT(out, "...");
    const char *t = s + bytes_of(s, w - tail);
    tp_buf_puts(out, t);
    return max;
}

static void pad(tp_buf *out, size_t n) {
    while (n--)
        tp_buf_putc(out, ' ');
}

static void render_table_text(const tp_doc *d, const struct tp_doc_block *b, tp_buf *out,
                              size_t name_width) {
    size_t widths[TP_DOC_MAX_COLS] = {0};
    size_t nrows = b->nstrs / b->ncols;
    for (size_t i = 0; i < nrows * b->ncols; i++) {
        size_t c = i % b->ncols, w = width_of(str_at(d, b->first + i));
        if ((b->flags[c] & TP_COL_NAME) && name_width && w > name_width) w = name_width;
        if (w > widths[c]) widths[c] = w;
    }
    for (size_t r = 0; r < nrows; r++) {
        size_t line_start = out->len;
        TP_BUF_LIT(out, "  ");
        for (size_t c = 0; c < b->ncols; c++) {
            const char *s = str_at(d, b->first + r * b->ncols + c);
            if (c) TP_BUF_LIT(out, "  ");
            if (b->flags[c] & TP_COL_RIGHT) {
                pad(out, widths[c] - width_of(s));
                tp_buf_puts(out, s);
            } else {
                size_t w = put_short(out, s, (b->flags[c] & TP_COL_NAME) ? name_width : 0);
                pad(out, widths[c] - w);
            }
        }
        while (out->len > line_start && out->data[out->len - 1] == ' ')
            out->len--;
        tp_buf_putc(out, '\n');
    }
}

/* A Markdown table cell: pipes escaped, line breaks flattened. */
static void put_md_cell(tp_buf *out, const char *s, size_t max) {
    tp_buf tmp;
    tp_buf_init(&tmp);
    put_short(&tmp, s, max);
    for (size_t i = 0; i < tmp.len; i++) {
        char c = tmp.data[i];
        if (c == '|')
            TP_BUF_LIT(out, "\\|");
        else
            tp_buf_putc(out, c == '\n' || c == '\r' ? ' ' : c);
    }
    if (tmp.failed) out->failed = 1;
    tp_buf_free(&tmp);
}

static void render_table_md(const tp_doc *d, const struct tp_doc_block *b, tp_buf *out,
                            size_t name_width) {
    size_t nrows = b->nstrs / b->ncols;
    for (size_t r = 0; r < nrows; r++) {
        for (size_t c = 0; c < b->ncols; c++) {
            if (b->flags[c] & TP_COL_TEXT_ONLY) continue;
            TP_BUF_LIT(out, "| ");
            put_md_cell(out, str_at(d, b->first + r * b->ncols + c),
                        (b->flags[c] & TP_COL_NAME) ? name_width : 0);
            tp_buf_putc(out, ' ');
        }
        TP_BUF_LIT(out, "|\n");
        if (r == 0) {
            for (size_t c = 0; c < b->ncols; c++)
                if (!(b->flags[c] & TP_COL_TEXT_ONLY))
                    tp_buf_puts(out, (b->flags[c] & TP_COL_RIGHT) ? "|---:" : "|---");
            TP_BUF_LIT(out, "|\n");
        }
    }
    tp_buf_putc(out, '\n');
}

/* s with its lines wrapped at the last space before TEXT_LINE_WIDTH bytes, continuation lines
 * indented under the first (a word longer than the width stays whole). */
static void put_wrapped(tp_buf *out, const char *s) {
    size_t len = strlen(s);
    while (len > TEXT_LINE_WIDTH) {
        size_t cut = TEXT_LINE_WIDTH;
        while (cut > 0 && s[cut] != ' ')
            cut--;
        if (cut == 0) break;
        tp_buf_put(out, s, cut);
        tp_buf_puts(out, "\n    ");
        s += cut + 1;
        len -= cut + 1;
    }
    tp_buf_puts(out, s);
}

/* How each block kind is written in one style: text blocks between a prefix and a suffix
 * (indexed by BLOCK_TITLE, BLOCK_HEADING, BLOCK_LINE), tables by a function. */
typedef struct layout {
    const char *before[3], *after[3];
    void (*table)(const tp_doc *d, const struct tp_doc_block *b, tp_buf *out, size_t name_width);
    size_t name_width;
    int list_gap; /* a list (lines) needs a blank line before what follows it */
} layout;

static const layout layouts[] = {
    [TP_DOC_TEXT] = {{"", "\n", "  "}, {"\n", "\n", "\n"}, render_table_text, TEXT_NAME_WIDTH, 0},
    [TP_DOC_MARKDOWN] =
        {{"# ", "## ", "- "}, {"\n\n", "\n\n", "\n"}, render_table_md, MARKDOWN_NAME_WIDTH, 1},
};

void tp_doc_render(const tp_doc *d, tp_buf *out, tp_doc_style style) {
    const layout *l = &layouts[style == TP_DOC_MARKDOWN ? TP_DOC_MARKDOWN : TP_DOC_TEXT];
    int prev = BLOCK_TITLE;
    for (size_t i = 0; i < d->nblocks; i++) {
        const struct tp_doc_block *b = &d->blocks[i];
        if (l->list_gap && prev == BLOCK_LINE && b->kind != BLOCK_LINE) tp_buf_putc(out, '\n');
        if (b->kind == BLOCK_TABLE) {
            l->table(d, b, out, l->name_width);
        } else {
            tp_buf_puts(out, l->before[b->kind]);
            if (style != TP_DOC_MARKDOWN && b->kind == BLOCK_LINE)
                put_wrapped(out, str_at(d, b->first));
            else
                tp_buf_puts(out, str_at(d, b->first));
            tp_buf_puts(out, l->after[b->kind]);
        }
        prev = b->kind;
    }
    if (d->text.failed) out->failed = 1;
}

void tp_doc_write(tp_buf *out, tp_doc_style style, tp_doc_builder build, const void *arg) {
    tp_doc d;
    tp_doc_init(&d);
    build(&d, arg);
    tp_doc_render(&d, out, style);
    tp_doc_free(&d);
}
