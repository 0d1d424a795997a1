/* session.c - the session's life: tprof_init/tprof_start, tprof_shutdown, sinks and sources, and
 * the writer thread's work for each closed window.
 *
 * There is one session per process at a time. Its state lives in tp_sess under its lock; the
 * hot path sees only tprof_active_, tp_gen and tp_opts, all set before they turn on. */
#include "tprof.h"

#include "record/gpu_calls.h"
#include "record/memory.h"
#include "record/record.h"
#include "record/session.h"
#include "util/lock.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

tp_session tp_sess = {.lock = PTHREAD_MUTEX_INITIALIZER};
tp_rec_opts tp_opts;

void tp_session_set_nsight(int on) {
    TP_STORE_RLX(&tp_opts.nsight, on);
}

void tp_session_set_ext_corr(int on) {
    TP_STORE_RLX(&tp_opts.ext_corr, on);
}

static tp_sink next_sink;
static int next_sink_set;

void tp_session_lock(void) {
    tp_lock(&tp_sess.lock);
}

void tp_session_unlock(void) {
    tp_unlock(&tp_sess.lock); /* a signal that came meanwhile takes its course now (lock.h) */
}

void tp_session_set_sink(const tp_sink *sink) {
    tp_session_lock();
    next_sink_set = sink != NULL;
    if (sink) next_sink = *sink;
    tp_session_unlock();
}

int tp_session_add_source(const tp_source *src) {
    int rc = -1;
    tp_session_lock();
    if (src && tp_sess.state == TP_SESSION_ACTIVE && tp_sess.nsources < TP_MAX_SOURCES) {
        tp_sess.sources[tp_sess.nsources++] = *src;
        /* It joins mid-run: tell it where the schedule stands. */
        if (src->on_action) src->on_action(src->ctx, tp_sess.sm.action);
        rc = 0;
    }
    tp_session_unlock();
    return rc;
}

void tp_session_unmatched_end(void) {
    if (__atomic_fetch_add(&tp_sess.unmatched_ends, 1, __ATOMIC_RELAXED) == 0)
        tp_log_warn("tprof_end without a matching tprof_begin on thread %lld (ignored)",
                    (long long)gettid());
}

void tp_session_inactive_call(const char *fn) {
    tp_session_state st = __atomic_load_n(&tp_sess.state, __ATOMIC_RELAXED);
    if (st == TP_SESSION_IDLE && !__atomic_exchange_n(&tp_sess.warned_before, 1, __ATOMIC_RELAXED))
        tp_log_warn("%s called before tprof_init; ignored, as is every tprof call until then", fn);
    if (st >= TP_SESSION_ENDING && !__atomic_exchange_n(&tp_sess.warned_after, 1, __ATOMIC_RELAXED))
        tp_log_warn("%s called after tprof_shutdown; ignored, as is every tprof call since", fn);
}

static void fill_run_info(tp_run_info *run);

/* ---- the writer thread's side ---- */

/* The steps w ended since the last poll, handed to its conversion for the next segment: copied
 * under the session lock, as the stepping thread appends them, and only while w records (a
 * closing window's last step may be cut: the last segment has it). A source that adds its events
 * at the window's end only (collect without collect_settled, source.h) would add some to steps
 * handed over already: with one, the steps wait for the last segment as before, and no segment
 * settles any time (window.h). */
static void stream_steps(tp_window *w) {
    tp_step_span *copy = NULL;
    size_t n = 0, given = tp_wstream_given(w->ws);
    int64_t tid = 0;
    char name[sizeof(w->step_thread)] = "";
    int collects = 0;
    tp_session_lock();
    for (size_t i = 0; i < tp_sess.nsources; i++)
        collects |= tp_sess.sources[i].collect && !tp_sess.sources[i].collect_settled;
    if (!collects && TP_LOAD_RLX(&tp_sess.streaming) == w && w->nsteps > given &&
        (copy = malloc((w->nsteps - given) * sizeof(*copy)))) {
        n = w->nsteps - given;
        memcpy(copy, w->steps + given, n * sizeof(*copy));
        tid = tp_sess.step_tid;
        memcpy(name, tp_sess.step_name, sizeof(name));
    }
    tp_session_unlock();
    if (collects) tp_wstream_settle_none(w->ws);
    if (n) tp_wstream_steps(w->ws, copy, n, tid, name); /* out of memory: they wait */
    free(copy);
}

/* The session's sources as they are now, copied under the lock so that they are called without
 * it (a source may take it, or take long). Returns how many. */
static size_t sources_now(tp_source out[TP_MAX_SOURCES]) {
    tp_session_lock();
    size_t n = tp_sess.nsources;
    memcpy(out, tp_sess.sources, n * sizeof(out[0]));
    tp_session_unlock();
    return n;
}

/* The sources' events of w whose place is final join its segment m, whose settled_ts becomes the
 * earliest of the window's and theirs (source.h: collect_settled). */
static void sources_settle(tp_window *w, tp_model *m) {
    tp_source src[TP_MAX_SOURCES];
    size_t n = sources_now(src);
    tp_window_info info;
    tp_wstream_info(w->ws, &info);
    info.deadline_ns = &tp_sess.writer.deadline_ns;
    for (size_t i = 0; i < n; i++) {
        if (!src[i].collect_settled) continue;
        int64_t t = src[i].collect_settled(src[i].ctx, m, &info);
        if (t == INT64_MAX) continue; /* it holds nothing back */
        int64_t ts = t > INT64_MIN + info.model_offset_ns ? t - info.model_offset_ns : INT64_MIN;
        if (ts < m->settled_ts) m->settled_ts = ts;
    }
}

/* A streamed window's next segments (up to `passes`) to the sink's trace: begun at the first,
 * when the sink takes one (else the window is built whole at its end); each with the steps
 * ended so far while it records. */
static void stream_segments(tp_window *w, size_t passes, int recording) {
    if (!w->ws && !w->head) {
        w->head = calloc(1, sizeof(*w->head));
        if (w->head) {
            tp_model_init(w->head);
            w->head->base_ns = tp_sess.env.base_ns;
            w->head->rank = tp_sess.env.rank;
            w->head->world_size = tp_sess.env.world_size;
            w->trace = tp_sess.sink.stream_open(tp_sess.sink.ctx, w->head);
        }
        if (w->trace) w->ws = tp_wstream_new(w, &tp_sess.env);
    }
    for (size_t n = 1, k = 0; w->ws && n && k < passes; k++) {
        if (recording) stream_steps(w); /* at each pass: the loop steps on meanwhile */
        tp_model *m = tp_wstream_pass(w->ws);
        if (m && recording) sources_settle(w, m);
        n = m ? m->nevents : 0;
        if (n) tp_sess.sink.stream_add(tp_sess.sink.ctx, w->trace, m);
        if (m) tp_model_free(m);
        free(m);
    }
}

/* The writer's poll: the streamed window recording now, if any, gives its filled chunks; polled
 * again soon while the sink takes its segments. Not while a closed window waits in the queue:
 * the sources take that window's events at its end before the next window's segments take
 * theirs (the GPU's work belongs to its launch's window, source.h). */
static int stream_poll(void *ctx) {
    (void)ctx;
    tp_window *w = TP_LOAD_ACQ(&tp_sess.streaming);
    if (!w) return 0;
    if (tp_writer_queued(&tp_sess.writer)) return 1; /* again once that window is written */
    stream_segments(w, 8, 1); /* back soon to a flush a signal may ask for meanwhile */
    return w->ws != NULL;
}

/* A closed window's model to the sources and the sink: built whole, or a streamed window's last
 * segment. */
static void build_window(tp_window *w) {
    tp_window_info info;
    if (w->stream) /* all but the threads' newest chunks, a segment's worth at a time (also a
                      window that closed before the first poll) */
        stream_segments(w, SIZE_MAX, 0);
    tp_model *m = w->ws ? tp_wstream_finish(w->ws, &info) : tp_window_build(w, &tp_sess.env, &info);
    w->ws = NULL;
    info.deadline_ns = &tp_sess.writer.deadline_ns;
    if (m) {
        tp_source src[TP_MAX_SOURCES];
        size_t n = sources_now(src);
        for (size_t i = 0; i < n; i++)
            if (src[i].collect) src[i].collect(src[i].ctx, m, &info);
        __atomic_fetch_add(&tp_sess.dropped, m->dropped_events, __ATOMIC_RELAXED);
        if (m->dropped_events > info.too_deep) /* the too-deep ones were warned about apart */
            tp_log_warn(
                "window %s: %llu events dropped: more than profiling.max_events=%lld records "
                "were held at once",
                w->name, (unsigned long long)(m->dropped_events - info.too_deep),
                (long long)tp_sess.cfg->max_events);
        if (w->trace)
            tp_sess.sink.stream_close(tp_sess.sink.ctx, w->trace, m, &info);
        else
            tp_sess.sink.window(tp_sess.sink.ctx, m, &info);
    } else {
        tp_log_warn("window %s: out of memory; it is not written", w->name);
    }
}

static void write_window(void *ctx, tp_window *w) {
    (void)ctx;
    if (!w->empty)
        build_window(w);
    else if (w->trace)
        tp_sess.sink.stream_abort(tp_sess.sink.ctx, w->trace);
    if (w->gen_lo)
        tp_flight_window_done(w);
    else
        tp_window_done(w->gen);
    tp_wstream_free(w->ws); /* an empty window's */
    if (w->head) tp_model_free(w->head);
    free(w->head);
    free(w->steps);
    free(w);
}

/* A signal asked for the open window: it is saved as partial, and the session records nothing
 * more (the host is expected to end; if it goes on, tprof_shutdown still finishes normally). */
static void signal_flush(void *ctx) {
    (void)ctx;
    tp_session_lock();
    if (tp_sess.state == TP_SESSION_ACTIVE && !tp_sess.stopped) {
        tp_steps_end(tp_clock_ticks(), 1);
        tp_sess.stopped = 1;
    }
    tp_session_unlock();
}

/* After the signal's window: the run's summary files from what was recorded, marked partial, so
 * that a killed run is complete on disk (tprof check passes, tprof analyze says partial). */
static void signal_finish(void *ctx) {
    (void)ctx;
    tp_run_info run;
    tp_session_lock();
    int active = tp_sess.state == TP_SESSION_ACTIVE && tp_sess.stopped;
    fill_run_info(&run);
    tp_session_unlock();
    if (!active || !tp_sess.sink.finish) return;
    run.interrupted = 1;
    run.print_summary = 0; /* the host is being stopped: only the files, and one line */
    run.no_window_reason = NULL;
    __atomic_store_n(&tp_sess.finished_by_signal, 1, __ATOMIC_RELEASE);
    tp_sess.sink.finish(tp_sess.sink.ctx, &run);
}

static void flight_serve(void *ctx) {
    (void)ctx;
    tp_flight_serve();
}

int tp_session_signal_flush(int deadline_ms, int timeout_ms) {
    return tp_writer_flush_from_signal(&tp_sess.writer, deadline_ms, timeout_ms);
}

void tp_session_run_dir(char *buf, size_t n) {
    tp_session_lock();
    snprintf(buf, n, "%s", tp_sess.run_dir ? tp_sess.run_dir : "");
    tp_session_unlock();
}

int tp_session_ending(void) {
    return __atomic_load_n(&tp_sess.state, __ATOMIC_ACQUIRE) == TP_SESSION_ENDING;
}

void tp_session_cut_writes(int deadline_ms) {
    tp_writer_set_deadline(&tp_sess.writer, deadline_ms);
}

/* ---- start ---- */

static void free_run(void) {
    for (size_t i = 0; i < tp_sess.nstages; i++)
        free((void *)tp_sess.stages[i].patterns);
    free(tp_sess.stages);
    free(tp_sess.run_dir);
    free(tp_sess.config_json);
    tprof_config_free(tp_sess.cfg);
    tp_sess.stages = NULL;
    tp_sess.nstages = 0;
    tp_sess.run_dir = tp_sess.config_json = NULL;
    tp_sess.cfg = NULL;
}

/* Stage definitions from the configured "name" or "name=pattern|pattern" entries; the strings
 * point into the session's configuration. Left NULL when stages are not configured, so the
 * analysis uses its defaults. */
static int build_stages(void) {
    const tprof_config *cfg = tp_sess.cfg;
    if (!cfg->origin[TP_KEY_STAGES] || !cfg->nstages) return 0;
    if (!(tp_sess.stages = calloc(cfg->nstages, sizeof(*tp_sess.stages)))) return -1;
    tp_sess.nstages = cfg->nstages;
    for (size_t i = 0; i < cfg->nstages; i++)
        if (tp_stage_parse(cfg->stages[i], &tp_sess.stages[i])) return -1;
    return 0;
}

static void fill_run_info(tp_run_info *run) {
    const tprof_config *cfg = tp_sess.cfg;
    *run = (tp_run_info){.run_dir = tp_sess.run_dir,
                         .output_dir = cfg->output_dir,
                         .run_id = cfg->run_id,
                         .config_json = tp_sess.config_json,
                         .rank = tp_sess.rank.rank,
                         .world_size = tp_sess.rank.world_size,
                         .gzip = cfg->gzip,
                         .trace_format = cfg->trace_format,
                         .max_events = (uint64_t)cfg->max_events,
                         .tensorboard_names = cfg->tensorboard_names,
                         .print_summary = cfg->summary && tp_sess.rank.rank == 0,
                         .top_k = (size_t)cfg->top_k,
                         .html_report = cfg->html_report,
                         .stages = tp_sess.stages,
                         .nstages = tp_sess.nstages,
                         .peak_tflops = cfg->peak_tflops,
                         .windows = tp_sess.windows,
                         .partial_windows = tp_sess.partial_windows,
                         .dropped_events = __atomic_load_n(&tp_sess.dropped, __ATOMIC_RELAXED),
                         .no_window_reason =
                             tp_sess.no_window_reason[0] ? tp_sess.no_window_reason : NULL};
}

static int prepare_run(const tprof_config *cfg) {
    if (!(tp_sess.cfg = tp_config_dup(cfg))) return -1;
    size_t n = strlen(cfg->output_dir) + strlen(cfg->run_id) + 2;
    if (!(tp_sess.run_dir = malloc(n))) return -1;
    snprintf(tp_sess.run_dir, n, "%s/%s", cfg->output_dir, cfg->run_id);
    if (!(tp_sess.config_json = tprof_config_to_json(cfg))) return -1;
    return build_stages();
}

/* The sink may have put the run elsewhere than <output_dir>/<run_id> (sink.h): the session
 * reports that directory from now on. */
static int take_sinks_run_dir(void) {
    const char *dir = tp_sess.sink.run_dir ? tp_sess.sink.run_dir(tp_sess.sink.ctx) : NULL;
    if (!dir || strcmp(dir, tp_sess.run_dir) == 0) return 0;
    char *copy = strdup(dir);
    if (!copy) return -1;
    free(tp_sess.run_dir);
    tp_sess.run_dir = copy;
    return 0;
}

/* The session clock's origin: model time 0, and its wall-clock time for cross-rank alignment. */
static void set_origin(void) {
    struct timespec real;
    tp_sess.env.origin_ns = tp_clock_now_ns();
    clock_gettime(CLOCK_REALTIME, &real);
    tp_sess.env.base_ns = (int64_t)real.tv_sec * 1000000000 + real.tv_nsec;
    tp_sess.env.pid = (int64_t)getpid();
    snprintf(tp_sess.process_name, sizeof(tp_sess.process_name), "%s",
             program_invocation_short_name);
    tp_sess.env.process_name = tp_sess.process_name;
    tp_sess.env.rank = tp_sess.rank.distributed ? tp_sess.rank.rank : -1;
    tp_sess.env.world_size = tp_sess.rank.distributed ? tp_sess.rank.world_size : -1;
}

/* fork: the locks are held across it so the child finds them free and the state consistent.
 * The child has no writer thread, so a session active in the parent is off in the child (its
 * tprof calls do nothing, as when profiling is disabled); the parent's goes on. */
static void fork_prepare(void) {
    tp_session_lock();
    tp_lock(tp_threads_mutex());
    tp_lock(tp_mem_mutex());
}

static void fork_parent(void) {
    tp_unlock(tp_mem_mutex());
    tp_unlock(tp_threads_mutex());
    tp_session_unlock();
}

static void fork_child(void) {
    TP_STORE_RLX(&tprof_active_, 0);
    TP_STORE_RLX(&tp_gen, 0);
    TP_STORE_RLX(&tp_flight_on, 0);
    TP_STORE_RLX(&tp_sess.writer.running, 0);
    if (tp_sess.state == TP_SESSION_ACTIVE || tp_sess.state == TP_SESSION_ENDING) {
        tp_sess.state = TP_SESSION_DISABLED;
        tp_sess.open = NULL; /* the parent's to write */
        tp_signals_restore();
        tp_signals_restore_flight();
    }
    fork_parent();
}

static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static void register_fork(void) {
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

static int start_locked(const tprof_config *cfg, const char *fn) {
    char err[512];
    if (tp_sess.state == TP_SESSION_ACTIVE || tp_sess.state == TP_SESSION_ENDING) {
        tp_log_warn("%s called while a session is active (ignored)", fn);
        return -1;
    }
    if (tp_config_validate(cfg, err, sizeof(err))) {
        tp_log_error("%s", err);
        return -1;
    }
    if (!cfg->enabled) {
        if (tp_config_idle_note(cfg, err, sizeof(err))) tp_log_warn("%s", err);
        tp_sess.state = TP_SESSION_DISABLED;
        return 0;
    }
    tp_log_reset();
    pthread_once(&fork_once, register_fork);
    tp_clock_setup(cfg->clock);
    tp_rank_detect(&tp_sess.rank);
    char prefix[32] = "";
    if (tp_sess.rank.distributed && tp_sess.rank.rank != 0)
        snprintf(prefix, sizeof(prefix), "[rank %lld] ", (long long)tp_sess.rank.rank);
    tp_log_set_prefix(prefix);
    if (tp_config_cycle_note(cfg, err, sizeof(err))) tp_log_warn("%s", err);
    if (prepare_run(cfg)) {
        tp_log_warn("out of memory: profiling is off");
        free_run();
        return -1;
    }
    tp_sess.sink = next_sink_set ? next_sink : *tp_default_sink();
    tp_run_info run;
    fill_run_info(&run);
    if (tp_sess.sink.start && tp_sess.sink.start(tp_sess.sink.ctx, &run)) {
        free_run();
        return -1;
    }
    if (take_sinks_run_dir()) {
        tp_log_warn("out of memory: profiling is off");
        free_run();
        return -1;
    }
    set_origin();
    tp_sess.writer.write = write_window;
    tp_sess.writer.flush = signal_flush;
    tp_sess.writer.after_flush = signal_finish;
    tp_sess.writer.flight = flight_serve;
    tp_sess.writer.poll = stream_poll;
    if (tp_writer_start(&tp_sess.writer)) {
        tp_log_warn("cannot start the writer thread: %s; profiling is off", strerror(errno));
        free_run();
        return -1;
    }
    tp_opts = (tp_rec_opts){cfg->record_shapes, cfg->profile_memory, cfg->with_flops, 0, 0};
    tp_budget_reset(cfg->max_events);
    if (cfg->profile_memory) tp_mem_start();
    tp_config_schedule(tp_sess.cfg, &tp_sess.sched);
    tp_sched_start(&tp_sess.sm, &tp_sess.sched);
    tp_sess.nsources = tp_sess.windows = tp_sess.partial_windows = 0;
    tp_sess.dropped = tp_sess.unmatched_ends = 0;
    tp_sess.stepper = tp_sess.step_tid = 0;
    tp_steps_note_thread(); /* the starter carries the steps until a tprof_step says otherwise */
    tp_sess.stopped = tp_sess.warned_after = tp_sess.finished_by_signal = 0;
    tp_sess.drop_open = tp_sess.dropped_step = 0;
    tp_sess.steps_ended = 0;
    tp_sess.no_window_reason[0] = '\0';
    tp_flight_start(tp_sess.cfg); /* out of memory: warned, and the run goes on without it */
    tp_sess.state = TP_SESSION_ACTIVE;
    __atomic_fetch_add(&tp_session_serial, 1, __ATOMIC_RELEASE);
    tp_steps_begin(tp_clock_ticks());
    TP_STORE_REL(&tprof_active_, 1);
    if (tp_sess.cfg->signals) tp_signals_install(tp_sess.cfg->flush_timeout_ms);
    if (tp_sess.flight.on && tp_sess.cfg->flight_signal) tp_signals_install_flight();
    return 0;
}

int tprof_start(const tprof_config *cfg) {
    if (!cfg) {
        tp_log_warn("tprof_start: no configuration");
        return -1;
    }
    tp_session_lock();
    int rc = start_locked(cfg, "tprof_start");
    tp_session_unlock();
    if (rc == 0 && cfg->enabled) tp_gpu_attach(cfg);
    return rc;
}

int tprof_init(int *argc, char **argv) {
    tprof_config *cfg = tprof_config_new();
    if (!cfg) {
        tp_log_warn("out of memory: profiling is off");
        return -1;
    }
    int rc = -1;
    if (tp_config_load_sources(cfg, argc, argv)) {
        tp_log_error("%s", cfg->err);
    } else {
        tp_session_lock();
        rc = start_locked(cfg, "tprof_init");
        tp_session_unlock();
        if (rc == 0 && cfg->enabled) tp_gpu_attach(cfg);
    }
    tprof_config_free(cfg);
    return rc;
}

/* ---- shutdown ---- */

static void finish_run(void) {
    tp_source src[TP_MAX_SOURCES];
    size_t n = sources_now(src);
    for (size_t i = 0; i < n; i++)
        if (src[i].shutdown) src[i].shutdown(src[i].ctx);
    tp_mem_stop();
    tp_flight_stop();
    tp_threads_session_end();
    tp_steps_no_window_reason(tp_sess.no_window_reason, sizeof(tp_sess.no_window_reason));
    if (tp_sess.no_window_reason[0]) tp_log_warn("%s", tp_sess.no_window_reason);
    uint64_t unmatched = __atomic_load_n(&tp_sess.unmatched_ends, __ATOMIC_RELAXED);
    if (unmatched > 1)
        tp_log_warn("%llu tprof_end calls in all had no matching tprof_begin",
                    (unsigned long long)unmatched);
    tp_run_info run;
    fill_run_info(&run);
    if (tp_signals_deferred()) { /* the host is being stopped: the files, and one line */
        run.interrupted = 1;
        run.print_summary = 0;
    }
    if (tp_sess.sink.finish && !__atomic_load_n(&tp_sess.finished_by_signal, __ATOMIC_ACQUIRE))
        tp_sess.sink.finish(tp_sess.sink.ctx, &run);
}

void tprof_shutdown(void) {
    tp_session_lock();
    tp_session_state st = tp_sess.state;
    if (st == TP_SESSION_IDLE) tp_log_warn("tprof_shutdown called before tprof_init (ignored)");
    if (st == TP_SESSION_ENDING || st == TP_SESSION_ENDED)
        tp_log_warn("tprof_shutdown called twice (ignored)");
    if (st == TP_SESSION_DISABLED) tp_sess.state = TP_SESSION_IDLE;
    if (st != TP_SESSION_ACTIVE) {
        tp_session_unlock();
        return;
    }
    if (!tp_sess.stopped) {
        /* The no-schedule window and an epoch window meant to last the whole epoch end here
         * naturally; a step-schedule window is cut short. */
        const tp_schedule *s = &tp_sess.sched;
        int partial =
            s->mode == TP_SCHED_STEPS || (s->mode == TP_SCHED_EPOCHS && s->epoch_steps > 0);
        tp_steps_end(tp_clock_ticks(), partial);
    }
    TP_STORE_REL(&tprof_active_, 0);
    TP_STORE_REL(&tp_gen, 0);
    __atomic_store_n(&tp_sess.state, TP_SESSION_ENDING, __ATOMIC_RELEASE);
    /* SIGINT/SIGTERM stay tprof's until the files are written (tp_signals_end). */
    tp_signals_restore_flight();
    tp_session_unlock();

    /* The writer may take the lock (a signal flush, the sources), so it is joined unlocked;
     * ENDING keeps a new session from starting meanwhile. */
    tp_writer_stop(&tp_sess.writer);
    finish_run();

    tp_session_lock();
    free_run();
    __atomic_store_n(&tp_sess.state, TP_SESSION_ENDED, __ATOMIC_RELEASE);
    tp_session_unlock();
    tp_signals_end(); /* a signal that came meanwhile takes its course now */
}

const char *tprof_last_error(void) {
    return tp_log_last();
}
