/* columns.h - the names of the report's table columns, spelled once.
 *
 * The op, kernel, stage and step tables go out as CSV (op_stats.csv, `tprof analyze --csv`) and
 * JSON (summary.json, `analyze --json`, stage_times.json), and `tprof check` reads them back and
 * finds its columns and keys by these names (src/cli/check_tables.c): a column renamed in one
 * place only would make every run directory fail its check. One X-macro list, X(id, text); each
 * entry becomes a static const char array tp_col_<id> (as model/kineto.h does for Kineto's
 * vocabulary). docs/ANALYZE_JSON.md documents them. */
#ifndef TP_REPORT_COLUMNS_H
#define TP_REPORT_COLUMNS_H

#define TP_REPORT_COLUMNS(X)                                                                       \
    X(kind, "kind") /* analyze --csv: op, kernel, stage or other */                                \
    X(name, "name")                                                                                \
    X(stage, "stage")                                                                              \
    X(calls, "calls")                                                                              \
    X(count, "count")   /* a stage's ranges; other's: the steps */                                 \
    X(number, "number") /* a step's number */                                                      \
    X(start, "start_us")                                                                           \
    X(dur, "dur_us")                                                                               \
    X(total, "total_us")                                                                           \
    X(self, "self_us")                                                                             \
    X(self_pct, "self_pct")                                                                        \
    X(mean, "mean_us")                                                                             \
    X(min, "min_us")                                                                               \
    X(p50, "p50_us")                                                                               \
    X(p95, "p95_us")                                                                               \
    X(max, "max_us")                                                                               \
    X(pct, "pct")                                                                                  \
    X(flops, "flops")                                                                              \
    X(flops_fcm, "flops_fcm") /* FlopCounterMode's convention (docs/METRICS.md) */                 \
    X(gpu, "gpu_us")                                                                               \
    X(kernels, "kernels")

#define TP_REPORT_COLUMN(id, text) static const char tp_col_##id[] = text;
TP_REPORT_COLUMNS(TP_REPORT_COLUMN)
#undef TP_REPORT_COLUMN

#endif
