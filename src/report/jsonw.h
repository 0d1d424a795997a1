/* jsonw.h - a JSON writer over tp_buf that places commas and keys, for the report renderers.
 *
 * Each value call takes the member's key (NULL inside arrays). Numbers come from tp_buf's exact
 * formatting: durations as microseconds with nanosecond precision (tp_buf_us). Figures that do
 * not apply are negative in an analysis and written as null (the *_opt calls). */
#ifndef TP_REPORT_JSONW_H
#define TP_REPORT_JSONW_H

#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

enum { TP_JW_MAX_DEPTH = 32 };

typedef struct tp_jw {
    tp_buf *b;
    size_t max_str; /* 0, or the bytes a string or key may take in an HTML page (tp_jw_cut) */
    int depth;
    unsigned char has_members[TP_JW_MAX_DEPTH]; /* a comma is due before the next value */
} tp_jw;

void tp_jw_init(tp_jw *w, tp_buf *b);
/* The bytes of s[0..n) a writer with max_str = max keeps: all of them when the string, as the
 * HTML report writes it (JSON escapes, and each '<' as \u003c), takes at most max bytes; else
 * the longest prefix, cut between characters, that takes at most max - 3 bytes, to which the
 * writer adds an ellipsis (U+2026, 3 bytes). So no string of a page takes more than max bytes,
 * whatever the input holds. */
size_t tp_jw_cut(const char *s, size_t n, size_t max);
/* A report document: tp_jw_init, then "{" and "tprof_version". */
void tp_jw_begin_report(tp_jw *w, tp_buf *b);
/* Ends a report document: the caller's extra members (or NULL), "}" and a newline. */
void tp_jw_end_report(tp_jw *w, const char *extra_members);
void tp_jw_object(tp_jw *w, const char *key); /* opens { */
void tp_jw_array(tp_jw *w, const char *key);  /* opens [ */
void tp_jw_end_object(tp_jw *w);
void tp_jw_end_array(tp_jw *w);
void tp_jw_str(tp_jw *w, const char *key, const char *s);
void tp_jw_i64(tp_jw *w, const char *key, int64_t v);
void tp_jw_u64(tp_jw *w, const char *key, uint64_t v);
void tp_jw_us(tp_jw *w, const char *key, int64_t ns);
void tp_jw_double(tp_jw *w, const char *key, double v);
void tp_jw_null(tp_jw *w, const char *key);
void tp_jw_bool(tp_jw *w, const char *key, int v);
/* A value already written as JSON text (another renderer's document), trailing spaces and
 * newlines dropped. */
void tp_jw_raw(tp_jw *w, const char *key, const char *json, size_t len);
/* The same for a document the caller renders into the writer's buffer in place: tp_jw_key
 * writes the key, the caller appends the document, tp_jw_end_raw drops its trailing spaces and
 * newlines. */
void tp_jw_key(tp_jw *w, const char *key);
void tp_jw_end_raw(tp_jw *w);
/* null when the figure does not apply (v < 0) */
void tp_jw_us_opt(tp_jw *w, const char *key, int64_t ns);
void tp_jw_double_opt(tp_jw *w, const char *key, double v);

#endif
