/* artifacts.h - the default sink: the run directory a profiled run leaves behind (config.json,
 * one trace per window, stage_times.json, op_stats.csv, summary.json) and the console summary. */
#ifndef TP_ARTIFACTS_H
#define TP_ARTIFACTS_H

#include "record/sink.h"

const tp_sink *tp_artifacts_sink(void);

#endif
