/* csv.h - reading CSV text as RFC 4180 defines it: fields separated by commas, records by CRLF
 * (a bare LF is accepted too), a field in double quotes may hold commas, line breaks and quotes
 * written twice. tprof's own CSV files are written that way (src/report/csv.c). */
#ifndef TP_CLI_CSV_H
#define TP_CLI_CSV_H

#include "util/buf.h"

#include <stddef.h>

typedef struct tp_csv {
    const char *p, *end;
    size_t line;        /* line of the next record (1-based) */
    size_t record_line; /* line where the record just read began */
    tp_buf text;        /* the record's fields, unquoted, each NUL-terminated */
    size_t *starts;     /* offset of each field in text */
    size_t nfields, cap;
    const char *err; /* why the last tp_csv_next failed */
} tp_csv;

void tp_csv_init(tp_csv *c, const char *data, size_t len);
void tp_csv_free(tp_csv *c);
/* Reads the next record: 1 (its fields in tp_csv_field), 0 at the end of the data, -1 when the
 * text is not valid CSV (c->err says why, c->record_line where). */
int tp_csv_next(tp_csv *c);
static inline const char *tp_csv_field(const tp_csv *c, size_t i) {
    return c->text.data + c->starts[i];
}

#endif
