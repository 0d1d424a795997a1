/* stub.h - TEMPORARY stand-in for src/report/html.h (branch report) until it is merged. */
#ifndef TP_SERVE_STUB_H
#define TP_SERVE_STUB_H
#include "util/buf.h"
#include <stddef.h>
int tp_html_page(tp_buf *out, const char *data_json, size_t data_len);
int tp_html_data(tp_buf *out, const char *const *inputs, size_t n_inputs, char *err,
                 size_t errlen);
#endif
