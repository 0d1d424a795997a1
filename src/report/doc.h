/* doc.h - a report as a list of blocks (title, headings, lines, tables), rendered either as
 * aligned plain text or as Markdown, so the two formats can never disagree on content.
 *
 * Cells are formatted once, as strings; the renderers only lay them out. Text output aligns
 * columns by display width (UTF-8 characters) and shortens NAME columns in the middle. */
#ifndef TP_REPORT_DOC_H
#define TP_REPORT_DOC_H

#include "util/buf.h"

#include <stddef.h>

enum {
    TP_DOC_MAX_COLS = 12,
};

typedef enum tp_col_flag {
    TP_COL_RIGHT = 1u << 0,     /* numbers: right-aligned */
    TP_COL_NAME = 1u << 1,      /* long names: shortened to the renderer's name width */
    TP_COL_TEXT_ONLY = 1u << 2, /* decoration (bars): left out of Markdown */
} tp_col_flag;

typedef struct tp_doc {
    tp_buf text;  /* every string, NUL-terminated */
    size_t *strs; /* offsets into text */
    size_t nstrs, cap_strs;
    struct tp_doc_block *blocks;
    size_t nblocks, cap_blocks;
} tp_doc;

void tp_doc_init(tp_doc *d);
void tp_doc_free(tp_doc *d);
void tp_doc_title(tp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tp_doc_heading(tp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tp_doc_line(tp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Starts a table; the header and flags arrays hold ncols (<= TP_DOC_MAX_COLS) entries. */
void tp_doc_table(tp_doc *d, size_t ncols, const char *const *header, const unsigned *flags);
/* The next cell of the current table, row by row. */
void tp_doc_cell(tp_doc *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum tp_doc_style {
    TP_DOC_TEXT,     /* aligned columns, NAME cells at most 60 characters */
    TP_DOC_MARKDOWN, /* headings, pipe tables (NAME cells at most 120 characters), bullets */
} tp_doc_style;

void tp_doc_render(const tp_doc *d, tp_buf *out, tp_doc_style style);

/* The whole life of a document: build(d, arg) fills it, then it is rendered into out. */
typedef void (*tp_doc_builder)(tp_doc *d, const void *arg);
void tp_doc_write(tp_buf *out, tp_doc_style style, tp_doc_builder build, const void *arg);

#endif
