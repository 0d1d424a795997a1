/* html_assets.h - the HTML report's files, embedded at build time (cmake/report.cmake).
 *
 * page: src/report/html/report.html, the skeleton with the {{STYLE}}, {{CHARTJS}}, {{DATA}} and
 * {{APP}} markers; style: report.css; app: stacks.js, modules.js, trace.js then report.js, as
 * one script; chartjs: Debian's Chart.js. Each array holds the file's bytes and a NUL after them
 * that its length does not count. */
#ifndef TP_REPORT_HTML_ASSETS_H
#define TP_REPORT_HTML_ASSETS_H

#include <stddef.h>

extern const unsigned char tp_asset_page[], tp_asset_style[], tp_asset_app[], tp_asset_chartjs[];
extern const size_t tp_asset_page_len, tp_asset_style_len, tp_asset_app_len, tp_asset_chartjs_len;

#endif
