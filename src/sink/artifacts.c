/* artifacts.c - the default sink: what a profiled run leaves behind.
 *
 * In <output_dir>/<run_id>/tprof/ (TP_RUN_FILES_DIR): config.json when the run starts, one trace
 * per closed window, and at the end stage_times.json, op_stats.csv and summary.json, all derived
 * from one analysis to which every window was added, and report.html (the html_report key: the
 * page `tprof report` writes, from the same analysis and tp_html_data_of, with the windows'
 * timeline and memory curve); then the console summary (rank 0), which names it. With several
 * ranks each file name carries ".rank<N>". An output directory that cannot be written costs the
 * files, never the summary: the windows are still analysed.
 *
 * The top level of the run directory is for other tools: one trace per rank holding every
 * window, <worker>[.rank<N>].pt.trace.json[.gz], streamed as the windows close (and a streamed
 * window's segments as they are written) under <worker>[.rank<N>].partial.pt.trace.json[.gz],
 * a whole trace after each, so that a process killed outright leaves one, and renamed into place
 * at the end of the run. traceinsight (HTA) takes
 * every top-level *.json and *.gz of the folder it is given, one per rank (the first
 * "rank":\s+N of the file, a later file of a rank replacing the earlier), and TensorBoard's
 * PyTorch profiler plugin lists the <worker>[.<span>].pt.trace.json files of any folder below
 * its logdir: both, pointed at the run directory as it is, find every rank with every window.
 * tprof's own readers take the run's files from tprof/ (run/rundir.c), so the copy is never
 * counted twice. Perfetto's format has no such copy (neither tool reads it). With
 * tensorboard_names the window traces in tprof/ carry the plugin's names too (TensorBoard then
 * also lists tprof/ as a run, one span per window).
 *
 * A run directory never mixes two runs: a run_id used again first removes the earlier run's
 * files of this rank (with one rank, or on rank 0, also those of ranks the run does not have),
 * so that `tprof analyze` of the directory reads exactly one run.
 *
 * The library's composition root: the one file that joins the recorder (its sink seam,
 * record/sink.h) to the writers (src/export), the analysis and its reports (src/analysis,
 * src/report) and the run directory (src/run). It has src/sink to itself, above all of them, so
 * that none of those includes another above it. */
#include "record/sink.h"

#include "config/config.h"
#include "export/chrome.h"
#include "export/perfetto.h"
#include "model/copy.h"
#include "report/html.h"
#include "report/jsonw.h"
#include "report/report.h"
#include "run/claim.h"
#include "run/runfiles.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/log.h"
#include "util/msg.h"
#include "util/sort.h"
#include "util/vec.h"

#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct artifacts {
    tp_analysis *analysis;
    char *run_dir;           /* claim.dir: the run directory taken */
    char *files_dir;         /* <run_dir>/tprof: tprof's own files */
    tp_claim claim;          /* its marker's lock, held until the run's end */
    const char *config_json; /* the session's, valid until finish */
    int dir_ok;              /* run_dir exists: files are written */
    int gzip, tensorboard_names;
    int perfetto;         /* trace_format: perfetto (gzip applies to JSON only) */
    char rank_suffix[32]; /* ".rank<N>" with several ranks, else "" */
    char worker[128];     /* TensorBoard's worker name: <host>_<pid> */
    size_t seq;           /* windows written so far */
    int html_report;      /* report.html at the end; series collects its timeline */
    uint64_t max_events;  /* the max_events key: bounds a streamed window's pending events */
    tp_series series;
    char **traces; /* file names of the written traces, in order */
    size_t ntraces, cap_traces;
    /* The top-level trace of every window (see the head of this file): its document's facts
     * (rank, base time, devices, partial, dropped events) and the stream, open from the first
     * window on; export_pid, the process that opened it (a forked child must not remove it). */
    tp_model export_doc;
    tp_chrome_opts export_opts;
    tp_chrome_stream *export;
    pid_t export_pid;
    int export_failed; /* warned: no top-level trace this run */
} artifacts;

static artifacts art; /* one session at a time (the recorder guarantees it) */

static void art_reset(void) {
    if (art.export && art.export_pid == getpid()) tp_chrome_stream_abort(art.export);
    tp_model_free(&art.export_doc);
    free(art.files_dir);
    tp_analysis_free(art.analysis);
    tp_series_free(&art.series);
    tp_claim_release(&art.claim);
    for (size_t i = 0; i < art.ntraces; i++)
        free(art.traces[i]);
    free(art.traces);
    memset(&art, 0, sizeof(art));
}

/* <dir>/<stem><rank suffix><ext>, or NULL when out of memory. */
static char *run_path(const char *dir, const char *stem, const char *ext) {
    size_t n = strlen(dir) + strlen(stem) + strlen(art.rank_suffix) + strlen(ext) + 2;
    char *p = malloc(n);
    if (p) snprintf(p, n, "%s/%s%s%s", dir, stem, art.rank_suffix, ext);
    return p;
}

/* The folder where runs of tprof before the tprof/ subfolder put TensorBoard's links: cleared
 * with the rest of an earlier run that used this run_id. */
#define OLD_TB_LINK_DIR "tensorboard"

/* Writes data as <files_dir>/<stem><rank><ext>; a failure is warned about once per file. 0 when
 * written. */
static int write_artifact(const char *stem, const char *ext, const tp_buf *data) {
    if (!art.dir_ok) return -1;
    char err[512];
    char *path = run_path(art.files_dir, stem, ext);
    int rc = -1;
    if (!path || data->failed) {
        tp_log_warn("out of memory writing %s%s", stem, ext);
    } else if (tp_write_file(path, data->data, data->len, err, sizeof(err))) {
        tp_log_warn("%s", err);
    } else {
        rc = 0;
    }
    free(path);
    return rc;
}

/* A file this process would write, or an earlier run with the same run_id wrote: an artifact
 * (report.html too), a
 * trace under tprof's own names (trace_*, <worker>.<time>.pt.trace.*), of a rank that is ours
 * to replace. Other files in the folder are the user's and are left alone. */
static int earlier_runs_file(const char *name, const tp_run_info *run) {
    int64_t rank;
    int kind = tp_run_file_kind(name, &rank);
    if (kind < 0 && !tp_run_is_report(name, &rank)) return 0;
    if (kind == TP_RUN_TRACE && strncmp(name, "trace_", 6) != 0 && !strstr(name, ".pt.trace."))
        return 0;
    if (run->world_size <= 1) return 1;
    if (rank == run->rank) return 1;
    return run->rank == 0 && (rank < 0 || rank >= run->world_size);
}

/* Removes the earlier run's files of dir (in an old run's tensorboard/, only the links tprof
 * made there); how many. */
static size_t clear_folder(const char *dir, const tp_run_info *run, int links_only) {
    DIR *dh = opendir(dir);
    if (!dh) return 0;
    size_t removed = 0;
    for (struct dirent *de; (de = readdir(dh));) {
        if (!earlier_runs_file(de->d_name, run)) continue;
        size_t n = strlen(dir) + strlen(de->d_name) + 2;
        char *path = malloc(n);
        if (!path) break;
        snprintf(path, n, "%s/%s", dir, de->d_name);
        struct stat st;
        if (!links_only || (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)))
            removed += unlink(path) == 0;
        free(path);
    }
    closedir(dh);
    return removed;
}

static void clear_earlier_run(const tp_run_info *run) {
    size_t removed = clear_folder(art.run_dir, run, 0) + clear_folder(art.files_dir, run, 0);
    char *links = tp_run_join(art.run_dir, OLD_TB_LINK_DIR);
    if (links) removed += clear_folder(links, run, 1);
    free(links);
    if (removed)
        tp_log_warn("%s held %zu file%s of an earlier run with this run_id: removed, so that "
                    "the directory holds this run only",
                    art.run_dir, removed, removed == 1 ? "" : "s");
}

static int art_start(void *ctx, const tp_run_info *run) {
    (void)ctx;
    art_reset();
    tp_series_init(&art.series);
    art.config_json = run->config_json;
    art.gzip = run->gzip;
    art.perfetto = run->trace_format == TP_TRACE_PERFETTO;
    art.tensorboard_names = run->tensorboard_names;
    art.html_report = run->html_report;
    art.max_events = run->max_events;
    if (run->world_size > 1)
        snprintf(art.rank_suffix, sizeof(art.rank_suffix), ".rank%lld", (long long)run->rank);
    char host[64] = "localhost";
    gethostname(host, sizeof(host) - 1);
    snprintf(art.worker, sizeof(art.worker), "%s_%ld", host, (long)getpid());
    tp_analysis_opts opts = {
        .stages = run->stages,
        .nstages = run->nstages,
        .peak_tflops = run->peak_tflops,
        .per_rank = TP_PER_RANK_SELF}; /* summary.json's rank_summary (tprof analyze --summaries) */
    art.analysis = tp_analysis_new(&opts);
    if (!art.analysis) {
        tp_log_warn("out of memory: profiling is off");
        art_reset();
        return -1;
    }
    char err[512];
    if (tp_claim_run_dir(run->output_dir, run->run_id, run->rank, run->world_size, &art.claim, err,
                         sizeof(err))) {
        tp_log_warn("%s; no traces or artifacts will be written, the summary still will", err);
        return 0;
    }
    art.run_dir = art.claim.dir;
    art.files_dir = tp_run_join(art.run_dir, TP_RUN_FILES_DIR);
    struct stat st; /* a real folder: a link planted in its place is not followed */
    if (!art.files_dir ||
        ((mkdir(art.files_dir, 0777) != 0 && errno != EEXIST) || lstat(art.files_dir, &st) != 0 ||
         (!S_ISDIR(st.st_mode) && (errno = ENOTDIR)))) {
        tp_log_warn("%s: cannot make the folder of tprof's files: %s; no traces or artifacts "
                    "will be written, the summary still will",
                    tp_log_name(art.run_dir), strerror(art.files_dir ? errno : ENOMEM));
        return 0;
    }
    art.dir_ok = 1;
    if (art.claim.reused) clear_earlier_run(run);
    tp_buf cfg;
    tp_buf_init(&cfg);
    tp_buf_puts(&cfg, run->config_json ? run->config_json : "{}");
    tp_buf_putc(&cfg, '\n');
    write_artifact("config", ".json", &cfg);
    tp_buf_free(&cfg);
    return 0;
}

/* The trace's file name: trace_<seq>_<window><rank>.json[.gz] (names sort in window order), or
 * TensorBoard's <worker>.<time_ns>.pt.trace.json[.gz]; .pftrace for Perfetto's format. */
static char *trace_name(const tp_window_info *w) {
    char name[512];
    const char *ext = art.perfetto ? ".pftrace" : art.gzip ? ".json.gz" : ".json";
    if (art.tensorboard_names) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        long long ns = (long long)now.tv_sec * 1000000000LL + now.tv_nsec;
        snprintf(name, sizeof(name), "%s%s.%lld.pt.trace%s", art.worker, art.rank_suffix, ns, ext);
    } else {
        snprintf(name, sizeof(name), "trace_%04zu_%s%s%s", art.seq, w->name, art.rank_suffix, ext);
    }
    return strdup(name);
}

/* After a trace cut short: m keeps the events it holds, the first `written` of the JSON writer's
 * order (the model's) or of the Perfetto writer's (tp_perfetto_order), so that the summary files
 * describe exactly the trace. */
static void keep_written(tp_model *m, size_t written) {
    size_t *order = art.perfetto ? malloc((m->nevents ? m->nevents : 1) * sizeof(*order)) : NULL;
    uint8_t *keep = order ? calloc(m->nevents ? m->nevents : 1, 1) : NULL;
    if (art.perfetto && !keep)
        tp_log_warn("out of memory: the summary may count events the trace lacks");
    if (!keep) {
        m->nevents = written;
        free(order);
        return;
    }
    tp_perfetto_order(m, order);
    for (size_t k = 0; k < written; k++)
        keep[order[k]] = 1;
    size_t j = 0;
    for (size_t i = 0; i < m->nevents; i++)
        if (keep[i]) m->events[j++] = m->events[i];
    m->nevents = j;
    free(order);
    free(keep);
}

/* <files_dir>/<name> of w's trace (name in *name), with room for it in art.traces; NULL after
 * warning when out of memory. */
static char *trace_path(const tp_window_info *w, char **name) {
    *name = trace_name(w);
    size_t n = strlen(art.files_dir) + (*name ? strlen(*name) : 0) + 2;
    char *path = *name ? malloc(n) : NULL;
    if (!path || TP_GROW(art.traces, art.cap_traces, art.ntraces + 1)) {
        tp_log_warn("window %s: out of memory; its trace is not written", w->name);
        free(*name);
        free(path);
        return NULL;
    }
    snprintf(path, n, "%s/%s", art.files_dir, *name);
    return path;
}

/* The trace of w was written to path (rc 0; name is then the run's) or not (rc -1, err says
 * why): listed, linked, announced. recorded of its events, written were. */
static void trace_done(int rc, char *name, const char *path, const tp_window_info *w,
                       size_t written, size_t recorded, const char *err) {
    if (rc != 0) {
        tp_log_warn("%s", err);
        free(name);
        return;
    }
    art.traces[art.ntraces++] = name;
    if (w->flight_reason) /* the one line an operator needs: what happened, and where */
        tp_msg_printf(TP_MSG_OUTPUT, "tprof: %s: saved steps %lld-%lld to %s", w->flight_note,
                      (long long)w->first_step, (long long)w->last_step, path);
    if (written < recorded)
        tp_log_warn("window %s: profiling.flush_timeout_ms ran out: %zu of %zu events saved "
                    "(%.1f%%); the trace is marked truncated",
                    w->name, written, recorded, 100.0 * (double)written / (double)recorded);
}

/* Writes m's trace. A signal's flush may run out of time (w->deadline_ns): the trace then holds
 * the events written before it, and so does m afterwards, so that the summary files describe
 * exactly what the trace holds. */
static void write_trace(tp_model *m, const tp_window_info *w) {
    char *name;
    char *path = trace_path(w, &name);
    if (!path) return;
    char err[512];
    size_t written = 0;
    tp_chrome_opts o = {.gzip = art.gzip,
                        .config_json = art.config_json,
                        .window = w->name,
                        .deadline_ns = w->deadline_ns,
                        .events_written = &written};
    int rc = art.perfetto ? tp_perfetto_write_file(m, path, &o, err, sizeof(err))
                          : tp_chrome_write_file(m, path, &o, err, sizeof(err));
    trace_done(rc, name, path, w, written, m->nevents, err);
    if (rc == 0 && written < m->nevents) keep_written(m, written);
    free(path);
}

/* ---- the top-level trace of every window (see the head of this file) ---- */

/* The top-level trace lost: warned once, the rest of the run goes on without it. */
static void export_lost(const char *err) {
    tp_log_warn("%s; the run directory's top-level trace (for TensorBoard and traceinsight) is "
                "not written, " TP_RUN_FILES_DIR "/ holds every window",
                err);
    if (art.export) tp_chrome_stream_abort(art.export);
    art.export = NULL;
    art.export_failed = 1;
}

/* Ends the top-level trace and renames it into place (the end of the run, or a write that
 * failed: the commit says why). */
static void export_commit(void) {
    char err[512];
    if (!art.export) return;
    tp_chrome_stream *s = art.export;
    art.export = NULL;
    if (tp_chrome_stream_commit(s, NULL, err, sizeof(err))) export_lost(err);
}

/* Opens the top-level trace <run_dir>/<worker><rank>.pt.trace.json[.gz] at the first window, the
 * document's facts (rank, base time, devices) taken from m, its first model (a streamed window's
 * head: its devices are known only at its end, so such a trace's header has none). 0, or -1
 * with err filled. */
static int export_open(const tp_model *m, const int64_t *deadline_ns, char *err, size_t errlen) {
    char *path =
        run_path(art.run_dir, art.worker, art.gzip ? ".pt.trace.json.gz" : ".pt.trace.json");
    if (!path) return snprintf(err, errlen, "out of memory"), -1;
    tp_model_init(&art.export_doc);
    art.export_doc.rank = m->rank;
    art.export_doc.world_size = m->world_size;
    art.export_doc.base_ns = m->base_ns;
    tp_model_copy_devices(&art.export_doc, m);
    art.export_opts = (tp_chrome_opts){
        .gzip = art.gzip, .config_json = art.config_json, .deadline_ns = deadline_ns};
    art.export = tp_chrome_stream_open(&art.export_doc, path, &art.export_opts, err, errlen);
    art.export_pid = getpid();
    free(path);
    /* valid after each window or segment under a name for the same tools, until the end */
    path =
        run_path(art.run_dir, art.worker,
                 art.gzip ? TP_RUN_PARTIAL ".pt.trace.json.gz" : TP_RUN_PARTIAL ".pt.trace.json");
    if (art.export && (!path || tp_chrome_stream_checkpoints(art.export, path)))
        tp_log_warn("out of memory: a process killed before the run's end leaves no top-level "
                    "trace");
    free(path);
    return art.export ? 0 : -1;
}

/* Whether m (a window, or a streamed window's segment) can join the top-level trace: opened at
 * the first, on the same clock base. */
static int export_takes(const tp_model *m, const int64_t *deadline_ns) {
    char err[512];
    if (!art.dir_ok || art.perfetto || art.export_failed) return 0;
    if (!art.export && export_open(m, deadline_ns, err, sizeof(err))) {
        export_lost(err);
        return 0;
    }
    if (m->base_ns != art.export_doc.base_ns) {
        export_lost("a window on another clock base");
        return 0;
    }
    return 1;
}

/* Adds window m, whole or a streamed window's last segment, with its tracks' metadata. */
static void export_window(const tp_model *m, const int64_t *deadline_ns) {
    if (!export_takes(m, deadline_ns)) return;
    art.export_doc.partial |= m->partial;
    art.export_doc.dropped_events += m->dropped_events;
    if (tp_chrome_stream_add(art.export, m)) export_commit();
}

/* Adds a streamed window's segment, its events only (its last segment has every track). */
static void export_segment(const tp_model *segment) {
    if (export_takes(segment, NULL) && tp_chrome_stream_add_events(art.export, segment))
        export_commit();
}

/* m, the window's model or a piece of it, joins the run's analysis and report data; frees m. */
static void add_window(tp_model *m, const char *window) {
    if (tp_analysis_add_model(art.analysis, m, NULL))
        tp_log_warn("window %s: out of memory; the summary misses part of it", window);
    if (art.html_report && art.dir_ok) tp_series_add_model(&art.series, m);
    tp_model_free(m);
    free(m);
}

static void art_window(void *ctx, tp_model *m, const tp_window_info *w) {
    (void)ctx;
    art.seq++;
    if (art.dir_ok) write_trace(m, w);
    export_window(m, w->deadline_ns);
    add_window(m, w->name);
}

/* ---- streamed windows (record/sink.h) ---- */

/* A streamed window's summary is computed in the same pass as its trace, in pieces, so that
 * memory holds a piece rather than the window (docs/CONFIG.md, `stream`).
 *
 * Design (issue 25). The analysis adds models one after another and sums them, so a window can
 * be handed to it as several models, provided that each figure of the pieces adds up to the
 * figure of the whole. Every figure is computed over one thread's ranges nested in each other
 * (self time, calls, stages and their carving, modules, call stacks, the op around each
 * allocation), or over one step's ranges (stage times by step, other, lead, FLOPs by step), or
 * is a sum, a maximum or a union over time. A piece that ends at a time T such that no range
 * starts before T and ends after it, and that holds every event starting before T (and none
 * after), therefore gives each range the same parent, children and step as the whole window:
 * the figures are equal, not approximated (each thread's events also keep the order they ended
 * in, which breaks ties of start and length as in the whole window). Three things are not sums
 * of the pieces', and the analysis takes the pieces as one window for them (tp_model.piece): the
 * window count, the window's span (a piece's runs to the next piece's start) and an op's module
 * (around its longest call in the window, add_model.c). So the segments (record/window.h: ranges
 * that ended, and the steps that ended, as the window records) are kept in `pending`, and once it
 * holds a piece's worth of events it is cut at the latest step start T that no range of it spans
 * and that the window has settled (tp_model.settled_ts: no later segment starts an event before it,
 * but for the ranges still open on the threads' stacks; the writer knows which records are not
 * read yet). Rejected: cutting anywhere and carrying what a range open at the cut lacks (its
 * children's time for its self time) across pieces, as its children's nesting (stage carving,
 * module, call stack, the op an allocation is charged to) would need the whole stack carried into
 * every pass of the analysis, and step figures need each step whole anyway.
 *
 * Parts. A range still open on a stack across T (a `train` or epoch range around the loop,
 * Lightning's run_training_epoch: the segment lists them, tp_model.open) is cut there into parts
 * (model.h's TP_EVF_PART): the piece gets its part from its start (or the last cut) to T, and
 * when it ends it comes as its last part from the last cut on, with its whole duration. Each part
 * counts its own time and self time, which add up to the range's; the range's call (calls, min,
 * max, its module, FLOPs, call stack) counts once, on its last part, with the whole duration
 * (analysis/internal.h's tp_call_dur). Nesting is kept: T is cut only where the step starting
 * there ended before the segment's settled time, so a range open then holds that whole step, as
 * in the whole window, and a part is at least as long as any range of its piece that starts with
 * it and ahead of it in the piece's order (add_parts, front_last_parts). A range that ended and
 * spans T (begun in one step, ended in the next) still holds the cut back.
 *
 * What holds the cut back: a range that ended across every step start (a range around the
 * `step()` call), or a thread whose records wait in its buffer (it recorded a little, then nothing:
 * its newest chunk is not read while it records), or a launch whose GPU work has not arrived (the
 * GPU source adds a launch to a segment with its work, and settles the segment before the earliest
 * launch it holds: record/source.h's collect_settled). GPU work that runs after a step start while
 * its launch came before it (a GPU a step behind its host, the usual state of a loop that never
 * waits for it) holds no cut back: the analysis joins work to its launch (by correlation id)
 * within a piece, so each piece of work goes into its launch's piece (placement), and the
 * analysis carries to the next piece what runs past a cut (GPU busy time and the GPU split,
 * analysis/add_model.c and collectives.c) and each stream's last work, for the idle gap across
 * the cut (analysis/idle.c); a stream's work must then keep its start order across the cut, which
 * a GPU's streams do (mark_streams_spanned). A source that adds its events at the window's end only
 * (collect without collect_settled) keeps every segment from settling. Then `pending` grows, up to
 * max_events / 2 events (the bound of the read back before this design): past that the summary
 * leaves the rest of the window out and says so. Ranges written whole at their end
 * (record/record.h's tp_range_complete: those begun before the window, Python's tprof.range
 * across the window's start and LightningProfiler's open actions, which start with it, and
 * torch's record_function ranges through the observer) sit on no stack while open, so nothing
 * holds a cut back for them: one that spans a cut arrives after it and is analysed in its
 * piece, so its self time also counts its children of earlier pieces; the summary says so when
 * it happens. */

enum { PIECE_EVENTS = 1 << 16 }; /* a piece's events before a cut is tried (less: max_events) */

/* A range open on its thread's stack, by (pid, tid, ts, name); `from`: where its parts so far end
 * (the last cut across it), INT64_MIN when it has none. */
typedef struct spanning {
    int64_t pid, tid, ts, from;
    char *name, *cat;
} spanning;

typedef struct art_stream {
    tp_chrome_stream *cs;
    /* with trace_format: perfetto, in place of cs */
    tp_perfetto_stream *ps;
    tp_chrome_opts o;  /* the writer reads them until the end */
    tp_model *pending; /* the window's events not analysed yet; NULL once left out */
    size_t streamed;   /* events of the segments written to the trace */
    size_t next_try;   /* pending's size at which a cut is tried next */
    size_t pieces;     /* analysed so far */
    int64_t cut;       /* where the last piece ended (INT64_MIN: no piece yet) */
    size_t early;      /* ranges that started before a cut and came after it */
    spanning *open;    /* the ranges open on a stack as of the last segment (tp_model.open) */
    size_t nopen;
    char left_out[200]; /* why the summary leaves the window's rest out ("" when it does not) */
} art_stream;

/* A pending model on the trace's clock, as the segments' head says. */
static tp_model *pending_new(const tp_model *head) {
    tp_model *m = malloc(sizeof(*m));
    if (!m) return NULL;
    tp_model_init(m);
    m->base_ns = head->base_ns;
    m->rank = head->rank;
    m->world_size = head->world_size;
    return m;
}

static void pending_free(art_stream *st) {
    if (st->pending) tp_model_free(st->pending);
    free(st->pending);
    st->pending = NULL;
}

static void spanning_free(spanning *v, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(v[i].name);
        free(v[i].cat);
    }
    free(v);
}

/* A JSON trace (or Perfetto's, export/perfetto.h's stream) under a temporary name, valid after
 * each segment under the name trace_<seq>_streaming[.rank<N>].partial.json[.gz] (.pftrace) (a
 * trace to tprof's readers, told from a finished window by its name: run/runfiles.h), which a
 * process killed while the window records leaves, and a later run with its run_id removes;
 * renamed at its end, when the window has its name. */
static void *art_stream_open(void *ctx, const tp_model *head) {
    (void)ctx;
    if (!art.dir_ok) return NULL;
    art_stream *st = calloc(1, sizeof(*st));
    const char *ext = art.perfetto ? ".pftrace" : art.gzip ? ".json.gz" : ".json";
    char *path = run_path(art.files_dir, "trace_streaming", art.perfetto ? ".pftrace" : ".json");
    char stem[64], pext[32];
    snprintf(stem, sizeof(stem), "trace_%04zu_streaming", art.seq + 1);
    snprintf(pext, sizeof(pext), "%s%s", TP_RUN_PARTIAL, ext);
    char *partial = run_path(art.files_dir, stem, pext);
    char err[512];
    if (st && path && partial) {
        st->o = (tp_chrome_opts){.gzip = art.gzip, .config_json = art.config_json};
        if (art.perfetto)
            st->ps = tp_perfetto_stream_open(head, path, partial, &st->o, err, sizeof(err));
        else
            st->cs = tp_chrome_stream_open(head, path, &st->o, err, sizeof(err));
        if (!st->cs && !st->ps) tp_log_warn("%s; the window is written when it ends", err);
        if (st->cs && tp_chrome_stream_checkpoints(st->cs, partial))
            tp_log_warn("out of memory: a process killed while window %zu records leaves no "
                        "trace of it",
                        art.seq + 1);
        st->pending = st->cs || st->ps ? pending_new(head) : NULL;
        st->cut = INT64_MIN;
        if ((st->cs || st->ps) && !st->pending)
            snprintf(st->left_out, sizeof(st->left_out), "out of memory");
    }
    free(partial);
    free(path);
    if (st && (st->cs || st->ps)) return st;
    free(st);
    return NULL;
}

/* The summary leaves the rest of the window out, for the reason given. */
static void leave_out(art_stream *st, const char *why) {
    snprintf(st->left_out, sizeof(st->left_out), "%s", why);
    pending_free(st);
}

static int cmp_time(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Marks the times at[k] (sorted) inside (from, to): no cut there. */
static void mark_spanned(const int64_t *at, size_t n, uint8_t *spanned, int64_t from, int64_t to) {
    if (!n || to <= at[0] || from >= at[n - 1]) return;
    size_t lo = 0, hi = n; /* the first at[] past from */
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (at[mid] <= from)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t k = lo; k < n && at[k] < to; k++)
        spanned[k] = 1;
}

static int cmp_keyed(const void *a, const void *b) {
    uint64_t x = ((const tp_keyed *)a)->key, y = ((const tp_keyed *)b)->key;
    return (x > y) - (x < y);
}

/* Where each event of m falls for a cut: its start, but GPU work's is its launch's (the host
 * range with its correlation id, when m holds it), since the analysis joins work to its launch
 * within a piece: work launched before a cut goes into the piece before it, even where it runs
 * after it (a GPU a step behind its host). NULL when out of memory. */
static int64_t *placement(const tp_model *m) {
    int64_t *at = malloc((m->nevents ? m->nevents : 1) * sizeof(*at));
    tp_keyed *launches = NULL;
    size_t nl = 0, cap = 0;
    for (size_t i = 0; at && i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        at[i] = e->ts;
        if (e->kind != TP_HOST_RANGE || !e->corr) continue;
        if (TP_GROW(launches, cap, nl + 1)) {
            free(at);
            at = NULL;
            break;
        }
        launches[nl++] = (tp_keyed){e->corr, (uint64_t)e->ts};
    }
    tp_sort_buf spare = {0};
    if (at && nl && tp_sort_keyed(&spare, launches, nl)) {
        free(at);
        at = NULL;
    }
    tp_sort_buf_free(&spare);
    for (size_t i = 0; at && nl && i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if (!tp_kind_is_device(e->kind) || !e->corr) continue;
        tp_keyed key = {.key = e->corr};
        const tp_keyed *hit = bsearch(&key, launches, nl, sizeof(key), cmp_keyed);
        if (hit) at[i] = (int64_t)hit->val;
    }
    free(launches);
    return at;
}

typedef struct placed_work {
    uint32_t track;
    int64_t at, ts; /* its placement, its start */
} placed_work;

static int cmp_placed(const void *a, const void *b) {
    const placed_work *x = a, *y = b;
    if (x->track != y->track) return x->track < y->track ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* No cut between two pieces of work of one stream that would put the later-starting one in the
 * earlier piece: the analysis' idle gaps take each stream's work in start order, carrying only
 * its last work to the next piece (analysis/idle.c). A stream runs its launches in order, so
 * this holds back no cut on a GPU; it keeps a trace that says otherwise exact too, as far as its
 * work has arrived (work that comes after a cut is taken to keep its stream's launch order, as a
 * GPU's does). Out of memory, no time is left to cut at. */
static void mark_streams_spanned(const tp_model *m, const int64_t *place, const int64_t *at,
                                 size_t n, uint8_t *spanned) {
    placed_work *w = NULL;
    size_t nw = 0, cap = 0;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if (!tp_kind_is_device(e->kind)) continue;
        if (TP_GROW(w, cap, nw + 1)) {
            memset(spanned, 1, n);
            free(w);
            return;
        }
        w[nw++] = (placed_work){e->track, place[i], e->ts};
    }
    if (nw) qsort(w, nw, sizeof(*w), cmp_placed);
    int64_t *latest = malloc((nw ? nw : 1) * sizeof(*latest)); /* the latest start so far */
    if (!latest) memset(spanned, 1, n);
    for (size_t g = 0, j = 0; latest && j < nw; j++) {
        if (j && w[j].track != w[j - 1].track) g = j; /* a stream's first work */
        latest[j] = j > g && latest[j - 1] > w[j].ts ? latest[j - 1] : w[j].ts;
        size_t lo = g, hi = j; /* the first of the stream's earlier work that starts after it */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (latest[mid] > w[j].ts)
                hi = mid;
            else
                lo = mid + 1;
        }
        if (lo < j && w[lo].at < w[j].at) mark_spanned(at, n, spanned, w[lo].at, w[j].at + 1);
    }
    free(latest);
    free(w);
}

/* Whether a range open on a stack starts before t: a cut at t cuts it into parts. */
static int cuts_open(const art_stream *st, int64_t t) {
    for (size_t i = 0; i < st->nopen; i++)
        if (st->open[i].ts < t) return 1;
    return 0;
}

/* The latest time, after the last cut and up to settled, that starts a step of pending and that
 * no host range of it spans (starts before, ends after); INT64_MIN when there is none. GPU work
 * goes with its launch (place: placement's), and the analysis carries what runs past a cut to
 * the next piece (GPU busy time and the GPU split, as the idle gaps), so it holds no cut back,
 * but for a stream whose work would leave start order (mark_streams_spanned). A range open on a
 * stack across the time is cut into parts (cut_piece), provided that the step it starts ended
 * before settled: the range, open then, ends after that step, and holds it as it does in the
 * whole window. */
static int64_t find_cut(const art_stream *st, const int64_t *place, int64_t settled) {
    const tp_model *m = st->pending;
    int64_t *at = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = 0; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if (!(e->flags & TP_EVF_STEP) || e->ts <= st->cut || e->ts > settled) continue;
        if (cuts_open(st, e->ts) && e->dur >= settled - e->ts - 1) continue; /* ends too late */
        if (TP_GROW(at, cap, n + 1)) break;
        at[n++] = e->ts;
    }
    if (n) qsort(at, n, sizeof(*at), cmp_time); /* (steps arrive in order: sorted already) */
    uint8_t *spanned = calloc(n + 1, 1);        /* a range spans at[k]: no cut there */
    for (size_t i = 0; spanned && i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        int64_t end = e->ts + (e->dur > 0 ? e->dur : 0);
        if (e->kind == TP_HOST_RANGE && end > e->ts) mark_spanned(at, n, spanned, e->ts, end);
    }
    if (spanned) mark_streams_spanned(m, place, at, n, spanned);
    int64_t cut = INT64_MIN;
    for (size_t k = n; spanned && k-- > 0;)
        if (!spanned[k]) {
            cut = at[k];
            break;
        }
    free(at);
    free(spanned);
    return cut;
}

typedef struct last_part {
    int64_t start; /* its range's */
    size_t at;     /* its index */
} last_part;

static int cmp_last_part(const void *a, const void *b) {
    const last_part *x = a, *y = b;
    if (x->start != y->start) return x->start < y->start ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

/* Moves the last parts among m's events from index `from` on (TP_EVF_LAST_PART) ahead of the
 * others there, those of ranges begun earlier first. The analysis orders a thread's ranges by
 * start, then length, then index: a last part as long as a range that starts with it (two ranges
 * ended together at the window's end) stands for one that began earlier, the other's parent, as
 * in the whole window. 0, or -1 when out of memory. */
static int front_last_parts(tp_model *m, size_t from) {
    tp_str key = tp_strtab_find(&m->strings, TP_PART_WHOLE_DUR, strlen(TP_PART_WHOLE_DUR));
    if (key == UINT32_MAX) return 0; /* none */
    last_part *lp = NULL;
    size_t n = 0, cap = 0;
    for (size_t i = from; i < m->nevents; i++) {
        const tp_event *e = &m->events[i];
        if (!(e->flags & TP_EVF_LAST_PART)) continue;
        if (TP_GROW(lp, cap, n + 1)) {
            free(lp);
            return -1;
        }
        lp[n++] = (last_part){e->ts + e->dur - tp_part_whole_dur(m, e, key), i};
    }
    tp_event *moved = n ? malloc((m->nevents - from) * sizeof(*moved)) : NULL;
    if (n && !moved) {
        free(lp);
        return -1;
    }
    if (n) qsort(lp, n, sizeof(*lp), cmp_last_part);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        moved[k++] = m->events[lp[i].at];
    for (size_t i = from; n && i < m->nevents; i++)
        if (!(m->events[i].flags & TP_EVF_LAST_PART)) moved[k++] = m->events[i];
    if (n) memcpy(m->events + from, moved, k * sizeof(*moved));
    free(moved);
    free(lp);
    return 0;
}

/* The parts before cut of the ranges open across it, into piece m at the head of its events (a
 * part and a range of the same start and length: the part is the parent, as the range it stands
 * for is longer). 0, or -1 when out of memory. */
static int add_parts(art_stream *st, tp_model *m, int64_t cut) {
    size_t nparts = 0;
    for (size_t i = 0; i < st->nopen; i++)
        nparts += st->open[i].ts < cut;
    size_t n = m->nevents;
    for (size_t k = 0; k < nparts; k++) /* room at the end, then moved to the head */
        if (!tp_model_add_event(m)) return -1;
    memmove(m->events + nparts, m->events, n * sizeof(*m->events));
    size_t k = 0;
    for (size_t i = 0; i < st->nopen; i++) {
        spanning *sp = &st->open[i];
        if (sp->ts >= cut) continue;
        int64_t from = sp->from == INT64_MIN ? sp->ts : sp->from;
        uint32_t track = tp_model_track(m, sp->pid, 0, sp->tid, 0);
        if (track == UINT32_MAX) return -1;
        m->events[k++] = (tp_event){.kind = TP_HOST_RANGE,
                                    .flags = TP_EVF_PART,
                                    .ts = from,
                                    .dur = cut - from,
                                    .track = track,
                                    .name = tp_model_intern_cstr(m, sp->name),
                                    .cat = tp_model_intern_cstr(m, sp->cat),
                                    .arg0 = (uint32_t)m->nargs};
        sp->from = cut;
    }
    return 0;
}

/* pending's events placed before cut (at: placement's) become a piece, analysed; those from cut
 * on stay pending. */
static void cut_piece(art_stream *st, const int64_t *at, int64_t cut) {
    tp_model *m = st->pending;
    size_t head = 0, tail = 0;
    for (size_t i = 0; i < m->nevents; i++)
        tail += at[i] >= cut;
    tp_event *later = malloc((tail ? tail : 1) * sizeof(*later));
    tp_model *rest = pending_new(m);
    if (!later || !rest) {
        free(later);
        free(rest);
        leave_out(st, "out of memory");
        return;
    }
    tail = 0;
    for (size_t i = 0; i < m->nevents; i++) /* stable: each thread's order is kept */
        if (at[i] >= cut)
            later[tail++] = m->events[i];
        else
            m->events[head++] = m->events[i];
    memcpy(m->events + head, later, tail * sizeof(*later));
    free(later);
    tp_model view = *m; /* the later events, with m's strings, args and tracks */
    view.events = m->events + head;
    view.nevents = tail;
    tp_copy_opts co = {.map_track = tp_copy_track};
    int rc = tp_model_append(rest, &view, &co);
    m->nevents = head;
    size_t nparts = m->nevents;
    if (add_parts(st, m, cut)) rc = -1;
    nparts = m->nevents - nparts; /* at the head, ahead of the last parts */
    if (front_last_parts(m, nparts)) rc = -1;
    m->piece = 1;
    m->piece_end = cut;
    st->pending = rest;
    st->cut = cut;
    st->pieces++;
    add_window(m, "(streaming)");
    if (rc) leave_out(st, "out of memory");
}

/* Whether sp is the range of that name begun at ts on track tr. */
static int is_range(const spanning *sp, const tp_track *tr, int64_t ts, const char *name) {
    return sp->ts == ts && sp->pid == tr->pid && sp->tid == tr->tid && strcmp(sp->name, name) == 0;
}

/* The open range of st that the range ev, just come on dst, closes, when it was cut into parts;
 * NULL when none. */
static spanning *parts_of(art_stream *st, const tp_model *dst, const tp_event *ev) {
    for (size_t i = 0; i < st->nopen; i++) {
        spanning *sp = &st->open[i];
        if (sp->from != INT64_MIN &&
            is_range(sp, &dst->tracks[ev->track], ev->ts, tp_model_str(dst, ev->name)))
            return sp;
    }
    return NULL;
}

/* Each event of a segment as it joins pending (tp_copy_opts.on_event): a range cut into parts
 * becomes its last part, from the last cut on, with its whole duration; one written whole at
 * its end that starts before the last cut is counted (the design above). */
static int on_arrival(void *ctx, tp_model *dst, tp_event *ev) {
    art_stream *st = ctx;
    if (ev->kind != TP_HOST_RANGE) return 0;
    spanning *sp = parts_of(st, dst, ev);
    if (!sp) {
        st->early += st->pieces && ev->ts < st->cut;
        return 0;
    }
    int64_t whole = ev->dur, end = ev->ts + ev->dur;
    assert(end >= sp->from); /* it was open when the segment before was read, after the cut */
    ev->ts = sp->from;
    ev->dur = end - sp->from;
    ev->flags |= TP_EVF_LAST_PART;
    sp->from = INT64_MIN; /* ended */
    return tp_model_arg_int(dst, ev, TP_PART_WHOLE_DUR, whole);
}

/* The ranges open as of segment become st's, those cut into parts keeping where their parts
 * end. Out of memory, the summary leaves the rest out (a part would lack its range). */
static void note_open(art_stream *st, const tp_model *segment) {
    spanning *now = calloc(segment->nopen ? segment->nopen : 1, sizeof(*now));
    for (size_t i = 0; now && i < segment->nopen; i++) {
        const tp_stacked_range *o = &segment->open[i];
        const tp_track *tr = &segment->tracks[o->track];
        const char *name = tp_model_str(segment, o->name);
        spanning *sp = &now[i];
        *sp = (spanning){.pid = tr->pid, .tid = tr->tid, .ts = o->ts, .from = INT64_MIN};
        for (size_t k = 0; k < st->nopen; k++)
            if (is_range(&st->open[k], tr, o->ts, name)) sp->from = st->open[k].from;
        sp->name = strdup(name);
        sp->cat = strdup(tp_model_str(segment, o->cat));
        if (!sp->name || !sp->cat) {
            spanning_free(now, i + 1);
            now = NULL;
        }
    }
    spanning_free(st->open, st->nopen);
    st->open = now;
    st->nopen = now ? segment->nopen : 0;
    if (!now) leave_out(st, "out of memory");
}

/* The segment's events join pending; a piece is cut off when it is big enough and the window
 * is settled far enough (the design above). */
static void pending_add(art_stream *st, const tp_model *segment) {
    size_t piece = art.max_events / 8 < PIECE_EVENTS ? (size_t)art.max_events / 8 : PIECE_EVENTS;
    tp_copy_opts co = {.map_track = tp_copy_track, .on_event = on_arrival, .ctx = st};
    if (!st->pending) return;
    if (tp_model_append(st->pending, segment, &co)) {
        leave_out(st, "out of memory");
        return;
    }
    note_open(st, segment);
    tp_model *m = st->pending;
    if (!m || m->nevents < piece || m->nevents < st->next_try) return;
    int64_t *place = placement(m); /* where a cut puts each event: for find_cut and cut_piece */
    int64_t cut = place ? find_cut(st, place, segment->settled_ts) : INT64_MIN;
    if (!place) {
        leave_out(st, "out of memory");
    } else if (cut != INT64_MIN) {
        cut_piece(st, place, cut);
    } else if ((uint64_t)m->nevents > art.max_events / 2) {
        leave_out(st, "no step boundary to cut it at: a range across every step start (around "
                      "the step call), a thread whose records wait in its buffer, or GPU work "
                      "behind its launches");
    } else {
        st->next_try = m->nevents + piece / 4; /* not at every segment */
    }
    free(place);
}

static void art_stream_add(void *ctx, void *trace, const tp_model *segment) {
    (void)ctx;
    art_stream *st = trace;
    if (st->ps)
        tp_perfetto_stream_add(st->ps, segment);
    else
        tp_chrome_stream_add_events(st->cs, segment);
    st->streamed += segment->nevents;
    export_segment(segment);
    pending_add(st, segment);
}

static void art_stream_abort(void *ctx, void *trace) {
    (void)ctx;
    art_stream *st = trace;
    tp_chrome_stream_abort(st->cs);
    tp_perfetto_stream_abort(st->ps);
    pending_free(st);
    spanning_free(st->open, st->nopen);
    free(st);
}

/* The window's last piece, pending with the last segment (of which the trace holds `kept`
 * events, fewer when a signal's flush ran out of time), to the summary; or, when the summary
 * left its rest out, the window's facts alone and why. Frees pending. */
static void add_last_piece(art_stream *st, tp_model *last, size_t kept, const tp_window_info *w,
                           const char *path) {
    tp_copy_opts co = {.map_track = tp_copy_track, .on_event = on_arrival, .ctx = st};
    if (kept < last->nevents) last->nevents = kept;
    if (st->pending && tp_model_append(st->pending, last, &co)) leave_out(st, "out of memory");
    if (st->early) {
        int one = st->early == 1;
        tp_log_warn("window %s: %zu range%s written whole at %s end came after the summary had "
                    "analysed steps %s: %s self time also counts %s children in those steps "
                    "(docs/CONFIG.md, stream)",
                    w->name, st->early, one ? "" : "s", one ? "its" : "their",
                    one ? "it spans" : "they span", one ? "its" : "their", one ? "its" : "their");
    }
    if (st->left_out[0]) {
        tp_log_warn("window %s: %s; the summary leaves %s out, `tprof analyze %s` reads it",
                    w->name, st->left_out, st->pieces ? "all but its first steps" : "it",
                    path ? tp_log_name(path) : "its trace");
        if (!st->pieces) return;
        st->pending = pending_new(last); /* the window's count, dropped events, partial */
        if (!st->pending) return;
    }
    tp_model *m = st->pending;
    if (!m) return; /* left out, as said above */
    if (front_last_parts(m, 0)) m->failed = 1;
    st->pending = NULL;
    m->dropped_events = last->dropped_events;
    m->partial = last->partial;
    m->failed |= last->failed;
    add_window(m, w->name);
}

static void art_stream_close(void *ctx, void *trace, tp_model *last, const tp_window_info *w) {
    (void)ctx;
    art_stream *st = trace;
    art.seq++;
    char *name;
    char *path = trace_path(w, &name);
    char err[512] = "out of memory";
    size_t written = 0;
    st->o.window = w->name;
    st->o.deadline_ns = w->deadline_ns;
    int rc = -1;
    if (path) {
        rc = st->ps ? tp_perfetto_stream_end(st->ps, last, path, &written, err, sizeof(err))
                    : tp_chrome_stream_end(st->cs, last, path, &written, err, sizeof(err));
        trace_done(rc, name, path, w, written, written, err);
    } else {
        tp_chrome_stream_abort(st->cs);
        tp_perfetto_stream_abort(st->ps);
    }
    export_window(last, w->deadline_ns);
    size_t kept = rc == 0 && written < st->streamed + last->nevents
                      ? (written > st->streamed ? written - st->streamed : 0)
                      : last->nevents;
    add_last_piece(st, last, kept, w, rc == 0 ? path : NULL);
    pending_free(st);
    spanning_free(st->open, st->nopen);
    free(st);
    tp_model_free(last);
    free(last);
    free(path);
}

/* summary.json's "run" member: where the files are and what happened. */
static void run_json(tp_buf *b, const tp_run_info *run) {
    tp_jw w;
    tp_jw_init(&w, b);
    tp_jw_object(&w, "run");
    tp_jw_str(&w, "dir", run->run_dir);
    tp_jw_i64(&w, "rank", run->rank);
    tp_jw_i64(&w, "world_size", run->world_size);
    tp_jw_u64(&w, "windows", run->windows);
    tp_jw_u64(&w, "partial_windows", run->partial_windows);
    tp_jw_u64(&w, "dropped_events", run->dropped_events);
    tp_jw_bool(&w, "interrupted", run->interrupted);
    if (run->no_window_reason)
        tp_jw_str(&w, "no_window_reason", run->no_window_reason);
    else
        tp_jw_null(&w, "no_window_reason");
    tp_jw_array(&w, "traces");
    for (size_t i = 0; i < art.ntraces; i++)
        tp_jw_str(&w, NULL, art.traces[i]);
    tp_jw_end_array(&w);
    tp_jw_array(&w, "errors");
    for (size_t i = 0, n = tp_log_count(); i < n; i++)
        tp_jw_str(&w, NULL, tp_log_get(i));
    tp_jw_end_array(&w);
    tp_jw_end_object(&w);
}

static void write_summary_files(const tp_analysis *a, const tp_run_info *run, size_t top_k) {
    tp_buf b, extra;
    tp_buf_init(&b);
    tp_buf_init(&extra);
    tp_report_stage_times_json(&b, a);
    write_artifact("stage_times", ".json", &b);
    b.len = 0;
    tp_report_op_stats_csv(&b, a);
    write_artifact("op_stats", ".csv", &b);
    b.len = 0;
    run_json(&extra, run);
    tp_buf_putc(&extra, '\0');
    tp_report_opts o = {.top_k = top_k, .extra_json = extra.failed ? NULL : extra.data};
    tp_report_json(&b, a, &o);
    write_artifact("summary", ".json", &b);
    tp_buf_free(&b);
    tp_buf_free(&extra);
}

/* report.html: the report data of the run's analysis in the report page. Not on a signal's
 * flush, whose time is bounded. 1 when written. */
static int write_html_report(const tp_analysis *a, const tp_run_info *run) {
    if (!art.dir_ok || !art.html_report || run->interrupted) return 0;
    tp_buf page; /* the data is rendered straight into the page */
    tp_buf_init(&page);
    tp_html_extras x = {.title = run->run_dir, .run_dir = art.files_dir, .series = &art.series};
    size_t data_start = tp_html_page_open(&page);
    tp_html_data_of(&page, a, &x);
    int ok = tp_html_page_close(&page, data_start) == 0;
    if (!ok) tp_log_warn("out of memory writing report.html");
    ok = ok && write_artifact("report", ".html", &page) == 0;
    tp_buf_free(&page);
    return ok;
}

static void print_summary(const tp_analysis *a, const tp_run_info *run, int html) {
    char title[600];
    snprintf(title, sizeof(title), "tprof summary: %zu window%s of %s", run->windows,
             run->windows == 1 ? "" : "s", run->run_dir);
    tp_report_opts o = {.top_k = run->top_k, .title = title};
    tp_buf b;
    tp_buf_init(&b);
    tp_report_text(&b, a, &o);
    if (art.dir_ok) tp_buf_printf(&b, "Artifacts: %s/\n", run->run_dir);
    if (html)
        tp_buf_printf(&b, "Report: %s/" TP_RUN_FILES_DIR "/report%s.html\n", run->run_dir,
                      art.rank_suffix);
    tp_msg_write(TP_MSG_OUTPUT, b.data, b.len);
    tp_buf_free(&b);
}

static void art_finish(void *ctx, const tp_run_info *run) {
    (void)ctx;
    tp_analysis *a = art.analysis;
    if (!a) return;
    /* Windows, partial ones and dropped events came in with the models; only the reason why
     * none completed is the run's own. */
    if (run->no_window_reason) tp_analysis_add_warning(a, "%s", run->no_window_reason);
    if (run->interrupted)
        tp_analysis_add_warning(a, "the run was interrupted by a signal: the figures cover what "
                                   "was recorded until then");
    tp_analysis_finish(a);
    export_commit();
    write_summary_files(a, run, run->top_k);
    int html = write_html_report(a, run);
    if (run->print_summary) print_summary(a, run, html);
    if (run->interrupted)
        tp_log_warn("interrupted: %zu window%s saved to %s (partial)", run->windows,
                    run->windows == 1 ? "" : "s", run->run_dir);
    art_reset();
}

static const char *art_run_dir(void *ctx) {
    (void)ctx;
    return art.run_dir;
}

const tp_sink *tp_default_sink(void) {
    static const tp_sink sink = {.start = art_start,
                                 .run_dir = art_run_dir,
                                 .window = art_window,
                                 .finish = art_finish,
                                 .stream_open = art_stream_open,
                                 .stream_add = art_stream_add,
                                 .stream_close = art_stream_close,
                                 .stream_abort = art_stream_abort};
    return &sink;
}
