/* inputs.h - what `tprof analyze`, `compare`, `report` and `serve` read: trace files, run
 * directories (their traces, in window order), standard input ("-"), each read into its own
 * model and added to one analysis, so several inputs give exactly the analysis of their union of
 * windows.
 *
 * Errors come back as one line in err (the caller prints it: the command as its error, the
 * server also into its answer); a file name in it is spelled as tp_log_name spells it. */
#ifndef TP_RUN_INPUTS_H
#define TP_RUN_INPUTS_H

#include "analysis/analysis.h"
#include "model/model.h"
#include "model/stage.h"

#include <stddef.h>
#include <stdint.h>

#define TP_INPUTS_ALL_RANKS (-1)

typedef struct tp_inputs_opts {
    int64_t rank;         /* --rank N: only traces of this rank; TP_INPUTS_ALL_RANKS for all */
    int progress;         /* tp_read_opts.progress; see TP_INPUTS_PROGRESS_* */
    int threads;          /* --threads N: tp_read_opts.threads (0: the cores available) */
    tp_stage_def *stages; /* --stage (parsed); NULL: the inputs' own (run/recorded_stages.h) */
    size_t nstages, cap_stages;
    char **specs; /* the strings the stages point into (the command's: it parsed them) */
    size_t cap_specs;
    /* Without --stage, whose recorded stages the analysis takes: these inputs' (a comparison
     * names both sides', so that its two analyses have the same stages); NULL: its own. */
    char *const *stages_of;
    size_t nstages_of;
    double peak_tflops; /* --peak-tflops: a device's peak for MFU; 0 for the GPU table */
    /* --max-memory SIZE: what one analysis of the inputs may take, as the reader estimates it
     * (tp_read_memory_estimate), all inputs together; 0 for no limit. */
    uint64_t max_memory;
    /* Called with each model read, after the analysis took it and before it is freed (the
     * report's timeline and memory curve); NULL for none. */
    void (*on_model)(void *ctx, const tp_model *m);
    void *on_model_ctx;
    int keep_args; /* tp_read_opts.keep_args: each range's whole args (the Trace view's) */
} tp_inputs_opts;

/* The reader's progress line: off; on for inputs over ~100 MB when stderr is a terminal (the
 * default); on even when stderr is not a terminal (--progress). */
enum { TP_INPUTS_PROGRESS_OFF = 0, TP_INPUTS_PROGRESS_AUTO = 1, TP_INPUTS_PROGRESS_FORCE = 2 };

/* Every rank, progress on a terminal, no memory limit, the stages the inputs were recorded with. */
void tp_inputs_opts_init(tp_inputs_opts *r);

/* The files read so far, by device and inode: a trace given twice (the same path, a link, a
 * run directory and its own trace) would count every step twice, or as a second rank. */
typedef struct tp_inputs_seen {
    struct tp_inputs_seen_file *v;
    size_t n, cap;
} tp_inputs_seen;

/* Notes path (standard input, "-", and a path that cannot be stat'ed pass: the reader reports
 * those). 0, or -1 with err "PATH: the same file as OTHER, given twice: ..." (or out of
 * memory). */
int tp_inputs_seen_add(tp_inputs_seen *s, const char *path, char *err, size_t errlen);
void tp_inputs_seen_free(tp_inputs_seen *s);

/* The inputs (trace files, run directories meaning their traces, "-" for standard input) read
 * and added into one finished analysis. NULL with the error in err. */
tp_analysis *tp_inputs_analyse(char *const *inputs, size_t n, const tp_inputs_opts *r, char *err,
                               size_t errlen);

#endif
