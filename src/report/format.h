/* format.h - numbers as people read them in reports: durations, bytes, percentages, rates.
 *
 * Each helper returns a small struct holding the text, so calls nest inside one printf-style
 * argument list: tp_doc_cell(d, "%s", tp_fmt_dur(ns).s). The text lives until the end of the
 * full expression. Figures that do not apply (negative) print as "n/a". */
#ifndef TP_REPORT_FORMAT_H
#define TP_REPORT_FORMAT_H

#include <stdint.h>

typedef struct tp_fmt {
    char s[64];
} tp_fmt;

/* 950 ns, 12.345 us, 3.210 ms, 1.234 s */
tp_fmt tp_fmt_dur(int64_t ns);
/* 512 B, 1.50 KiB, 2.00 GiB */
tp_fmt tp_fmt_bytes(int64_t bytes);
/* 12.3%, or n/a when pct < 0 */
tp_fmt tp_fmt_pct(double pct);
/* a signed change: +12.3%, -4.0%, n/a */
tp_fmt tp_fmt_change(double pct);
/* a signed duration: +1.250 ms */
tp_fmt tp_fmt_delta(int64_t ns);
/* a count with an SI prefix and unit: 1.23 TFLOP/s, 512 FLOP */
tp_fmt tp_fmt_si(double v, const char *unit);
/* a bar of '#' of width pct% of `width` characters */
tp_fmt tp_fmt_bar(double pct, int width);

#endif
