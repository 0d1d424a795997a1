/* sink.h - where the recorder delivers its output: the run's start, each closed window, the end.
 *
 * The recorder knows nothing of files or analyses; the sink does. The default sink
 * (src/sink/artifacts.c) writes the traces and the run artifacts and prints the summary;
 * tests install their own to capture the models a session produces. */
#ifndef TP_RECORD_SINK_H
#define TP_RECORD_SINK_H

#include "model/model.h"
#include "model/stage.h"
#include "record/source.h"

#include <stddef.h>
#include <stdint.h>

typedef struct tp_run_info {
    const char *run_dir; /* <output_dir>/<run_id>, or where the sink's start put the run */
    const char *output_dir, *run_id;
    const char *config_json;  /* the effective configuration, a JSON object */
    int64_t rank, world_size; /* world_size 1 when not distributed */
    int gzip;                 /* traces as .json.gz */
    int trace_format;         /* tp_trace_format (config/config.h) */
    int tensorboard_names;    /* <worker>.<time_ns>.pt.trace.json names */
    int print_summary;        /* this process prints the console summary (rank 0, summary on) */
    size_t top_k;
    int html_report;     /* write report.html (the html_report key) */
    uint64_t max_events; /* the max_events key */
    const tp_stage_def *stages;
    size_t nstages;
    double peak_tflops; /* a device's peak for MFU (the peak_tflops key); 0: the GPU table */
    /* filled at the end of the run */
    size_t windows, partial_windows;
    uint64_t dropped_events;
    const char *no_window_reason; /* why no window completed, or NULL */
    int interrupted;              /* a signal ended the recording: the files are partial */
} tp_run_info;

typedef struct tp_sink {
    void *ctx;
    /* The session starts (on the thread calling tprof_start): prepare the run directory.
     * Returns 0, or -1 after warning (the session then records nothing). */
    int (*start)(void *ctx, const tp_run_info *run);
    /* A window closed; called on the writer thread. The sink owns m and must free it
     * (tp_model_free(m); free(m)). */
    void (*window)(void *ctx, tp_model *m, const tp_window_info *w);
    /* The run ended (on the thread calling tprof_shutdown), after the last window; or a signal
     * ended the recording (on the writer thread, run->interrupted set; called once: shutdown
     * then calls it no more). */
    void (*finish)(void *ctx, const tp_run_info *run);
    /* Optional: a streamed window (the `stream` key) is written while it records, on the writer
     * thread. stream_open begins its trace, head giving what a trace says first (base_ns, rank,
     * world_size; it stays valid until stream_close), and returns the trace, or NULL (the
     * window is then delivered whole through `window`). stream_add writes a segment's events
     * (record/window.h; the caller frees it). stream_close gets the last segment, which the sink
     * owns as `window`'s m, and the window's info: the trace ends, and the window joins the
     * run's files as through `window`. */
    void *(*stream_open)(void *ctx, const tp_model *head);
    void (*stream_add)(void *ctx, void *trace, const tp_model *segment);
    void (*stream_close)(void *ctx, void *trace, tp_model *last, const tp_window_info *w);
    void (*stream_abort)(void *ctx, void *trace); /* the window holds no step: no trace */
    /* Optional, after start: the run directory the sink took when it is not run->run_dir (the
     * default sink's is another when <output_dir>/<run_id> is not tprof's to use, run/claim.h);
     * NULL keeps run->run_dir. The session reports it from then on. */
    const char *(*run_dir)(void *ctx);
} tp_sink;

/* Installs the sink for the next session (copied); NULL restores the default. */
void tp_session_set_sink(const tp_sink *sink);

/* The default sink: the run directory and the console summary. Declared here, where the recorder
 * needs it, and defined by src/sink/artifacts.c, so the recorder names no file of src/sink;
 * the link joins them. */
const tp_sink *tp_default_sink(void);

#endif
