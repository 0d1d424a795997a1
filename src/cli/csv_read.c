/* csv_read.c - one RFC 4180 record at a time. Strict where the RFC is (a quote inside an unquoted
 * field, text after a closing quote, an unclosed quote are errors), so a damaged file is reported
 * instead of being read as other values. */
#include "cli/csv.h"

#include "util/vec.h"

#include <stdlib.h>

void tp_csv_init(tp_csv *c, const char *data, size_t len) {
    *c = (tp_csv){.p = data, .end = data + len, .line = 1};
    tp_buf_init(&c->text);
}

void tp_csv_free(tp_csv *c) {
    tp_buf_free(&c->text);
    free(c->starts);
    c->starts = NULL;
}

static int start_field(tp_csv *c) {
    if (TP_GROW(c->starts, c->cap, c->nfields + 1)) return -1;
    c->starts[c->nfields++] = c->text.len;
    return 0;
}

/* A line break at p (CRLF or LF): its length, else 0. */
static size_t line_break(const tp_csv *c, const char *p) {
    if (p < c->end && *p == '\n') return 1;
    if (p + 1 < c->end && p[0] == '\r' && p[1] == '\n') return 2;
    return 0;
}

/* The quoted field whose opening quote is at c->p. */
static int quoted(tp_csv *c) {
    const char *p = c->p + 1;
    for (;;) {
        if (p >= c->end) return c->err = "a quoted field is not closed", -1;
        if (*p == '"') {
            if (p + 1 < c->end && p[1] == '"') {
                tp_buf_putc(&c->text, '"');
                p += 2;
                continue;
            }
            p++;
            break;
        }
        c->line += *p == '\n';
        tp_buf_putc(&c->text, *p++);
    }
    if (p < c->end && *p != ',' && !line_break(c, p))
        return c->err = "text after the closing quote of a field", -1;
    c->p = p;
    return 0;
}

static int plain(tp_csv *c) {
    const char *p = c->p;
    while (p < c->end && *p != ',' && !line_break(c, p)) {
        if (*p == '"') return c->err = "a quote inside a field that is not quoted", -1;
        p++;
    }
    tp_buf_put(&c->text, c->p, (size_t)(p - c->p));
    c->p = p;
    return 0;
}

int tp_csv_next(tp_csv *c) {
    c->text.len = 0;
    c->nfields = 0;
    c->record_line = c->line;
    if (c->p >= c->end) return 0;
    for (;;) {
        if (start_field(c)) return c->err = "out of memory", -1;
        if ((c->p < c->end && *c->p == '"' ? quoted(c) : plain(c)) < 0) return -1;
        tp_buf_putc(&c->text, '\0');
        if (c->text.failed) return c->err = "out of memory", -1;
        if (c->p < c->end && *c->p == ',') {
            c->p++;
            continue;
        }
        size_t brk = line_break(c, c->p);
        c->p += brk;
        c->line += brk != 0;
        return 1;
    }
}
