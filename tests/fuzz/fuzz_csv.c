/* fuzz_csv.c - libFuzzer target: any bytes through the RFC 4180 reader of `tprof check`
 * (src/cli/csv_read.c).
 *
 * Every call of tp_csv_next must return 1, 0 or -1 (then with a reason and a line); the lines
 * never go back; each field is NUL-terminated inside the record's text. And the reading is
 * exact: the records read, written again as RFC 4180 (every field quoted, quotes doubled, CRLF),
 * read back as the same records. The sanitizers check the rest. */
#include "cli/csv.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

enum { MAX_RECORDS = 4096 };

/* Appends the record in c to out as quoted fields. */
static void put_record(tp_buf *out, const tp_csv *c) {
    for (size_t i = 0; i < c->nfields; i++) {
        if (i) tp_buf_putc(out, ',');
        tp_buf_putc(out, '"');
        for (const char *s = tp_csv_field(c, i); *s; s++) {
            if (*s == '"') tp_buf_putc(out, '"');
            tp_buf_putc(out, *s);
        }
        tp_buf_putc(out, '"');
    }
    tp_buf_put(out, "\r\n", 2);
}

/* Reads all of data; the records, re-encoded, into out (when not NULL). 0 at a clean end, -1 at
 * an error. */
static int read_all(const char *data, size_t size, tp_buf *out, tp_buf *fields) {
    tp_csv c;
    tp_csv_init(&c, data, size);
    size_t last_line = 0;
    int rc;
    for (size_t n = 0; n < MAX_RECORDS && (rc = tp_csv_next(&c)) == 1; n++) {
        if (c.record_line < last_line || c.line < c.record_line || c.nfields == 0) abort();
        last_line = c.record_line;
        for (size_t i = 0; i < c.nfields; i++) {
            if (c.starts[i] >= c.text.len + 1) abort();
            const char *f = tp_csv_field(&c, i);
            tp_buf_put(fields, f, strlen(f) + 1);
        }
        tp_buf_putc(fields, '\n');
        if (out) put_record(out, &c);
    }
    if (rc < 0 && (!c.err || !*c.err)) abort();
    tp_csv_free(&c);
    return rc < 0 ? -1 : 0;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size) {
    tp_buf again, first, second;
    tp_buf_init(&again);
    tp_buf_init(&first);
    tp_buf_init(&second);
    if (read_all((const char *)data, size, &again, &first) == 0 && !again.failed) {
        if (read_all(again.data ? again.data : "", again.len, NULL, &second) != 0) abort();
        if (first.len != second.len || (first.len && memcmp(first.data, second.data, first.len)))
            abort();
    }
    tp_buf_free(&again);
    tp_buf_free(&first);
    tp_buf_free(&second);
    return 0;
}
