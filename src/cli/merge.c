/* merge.c - `tprof merge INPUT... -o FILE`: the traces of several ranks as one Chrome trace, one
 * process per rank named "rank N" (its threads and GPU streams under it), clocks aligned
 * (docs/DISTRIBUTED.md).
 *
 * Two passes over the inputs, one trace in memory at a time, so memory is bounded by the largest
 * trace (twice: read, then copied as its rank) plus each rank's collectives, not by the sum of
 * the ranks. The first pass keeps each rank's collectives, base time and largest correlation
 * id, and the devices, from which the clock offsets are estimated (each trace's absolute time,
 * then the median difference of the ends of the blocking collectives every rank took part in,
 * as those end at one instant on every rank). The second reads each trace again, copies it
 * shifted by its rank's offset onto the rank's process, and streams it to the output
 * (tp_chrome_stream: under a temporary name, renamed when the last trace is written, so a
 * failure midway leaves nothing). Reading twice rules out stdin and pipes as inputs. An output
 * named .pftrace or .perfetto-trace is Perfetto's protobuf trace (export/perfetto.h): its writer
 * sorts each track's ranges, so the ranks are gathered into one model first (memory: the sum of
 * the ranks), then written whole or not at all.
 * A trace's rank: ".rank<N>" in its file name, else its distributedInfo, else its position among
 * the inputs. */
#include "cli/cli.h"

#include "analysis/ranks.h"
#include "run/rundir.h"
#include "export/chrome.h"
#include "export/perfetto.h"
#include "model/copy.h"
#include "trace/reader.h"
#include "util/log.h"
#include "util/vec.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char help[] =
    "usage: tprof merge [options] INPUT... -o FILE\n"
    "\n"
    "Merges the traces of several ranks into one Chrome trace (for Perfetto UI), or one Perfetto\n"
    "protobuf trace when FILE ends in .pftrace or .perfetto-trace: one process per rank, named\n"
    "\"rank N\", with its threads and GPU streams; clocks aligned from each trace's absolute\n"
    "time, refined so that the same blocking collective ends at the same instant on every rank.\n"
    "The offsets used are printed on stderr and kept in the trace. Given one trace, merge\n"
    "converts it (JSON to Perfetto, or back).\n"
    "\n"
    "INPUT is a trace (.json, .json.gz, tprof's .pftrace; or Kineto's) or a run directory;\n"
    "each is read twice (collectives, then events, written rank by rank), so not stdin or a pipe.\n"
    "A trace's rank is \".rank<N>\" in its file name, else its distributedInfo, else its\n"
    "position among the inputs.\n"
    "\n"
    "options:\n"
    "  -o, --output FILE    the merged trace (.json, .json.gz compressed, or .pftrace:\n"
    "                       Perfetto's protobuf format); required\n"
    "  --no-refine          align by absolute time only (no offsets from collectives)\n"
    "  -h, --help           this help\n"
    "\n"
    "Exit status: 0 done, 2 usage error, unreadable input or unwritable output.\n";

static const tp_cli_opt opts[] = {{"output", 'o', 1}, {"no-refine", 0, 0}, {"help", 'h', 0}};
enum { OPT_OUTPUT, OPT_NO_REFINE, OPT_HELP };

/* Prints the error line; the value of a failed step. */
#define FAIL(...) (tp_cli_error(__VA_ARGS__), -1)

typedef struct trace_ref {
    char *path;
    int64_t rank; /* -1 until known */
} trace_ref;

typedef struct rank_info {
    int64_t rank;
    uint64_t max_corr;
    uint64_t corr_base;
    tp_coll_list colls;
    int64_t offset_ns;
    size_t matched;
} rank_info;

typedef struct merge_job {
    trace_ref *traces;
    size_t ntraces, cap_traces;
    rank_info *ranks;
    size_t nranks, cap_ranks;
    tp_inputs_seen seen; /* each trace once: the same one twice would make a second rank */
    const char *output;
    int refine;
    tp_model doc; /* the merged trace's header and trailer: base time, devices */
} merge_job;

static void job_free(merge_job *j) {
    for (size_t i = 0; i < j->ntraces; i++)
        free(j->traces[i].path);
    free(j->traces);
    for (size_t k = 0; k < j->nranks; k++)
        free(j->ranks[k].colls.v);
    free(j->ranks);
    tp_inputs_seen_free(&j->seen);
    tp_model_free(&j->doc);
}

/* Each trace is read twice: a stream that cannot be read again is refused up front. */
static int check_rereadable(const char *path) {
    struct stat st;
    if (strcmp(path, "-") == 0 || (stat(path, &st) == 0 && !S_ISREG(st.st_mode)))
        return FAIL("%s: merge reads each trace twice: give a file, not stdin or a pipe",
                    strcmp(path, "-") == 0 ? "<stdin>" : tp_log_name(path));
    return 0; /* a missing file is the reader's to report */
}

static int add_trace_ref(merge_job *j, const char *path, int64_t rank) {
    char err[1024];
    if (check_rereadable(path)) return -1;
    if (tp_inputs_seen_add(&j->seen, path, err, sizeof(err))) return FAIL("%s", err);
    char *copy = strdup(path);
    if (!copy || TP_GROW(j->traces, j->cap_traces, j->ntraces + 1)) {
        free(copy);
        return FAIL("out of memory");
    }
    trace_ref *t = &j->traces[j->ntraces++];
    t->path = copy;
    t->rank = rank;
    return 0;
}

/* The traces of one input: a run directory's, or the input itself. */
static int gather(merge_job *j, const char *input) {
    if (!tp_run_is_dir(input)) return add_trace_ref(j, input, tp_run_path_rank(input));
    tp_run_dir d;
    char err[1024];
    if (tp_run_dir_list(input, &d, err, sizeof(err))) return FAIL("%s", err);
    size_t before = j->ntraces;
    int rc = 0;
    for (size_t i = 0; i < d.n && rc == 0; i++)
        if (d.files[i].kind == TP_RUN_TRACE)
            rc = add_trace_ref(j, d.files[i].path, d.files[i].rank);
    tp_run_dir_free(&d);
    if (rc == 0 && j->ntraces == before)
        rc = FAIL("%s: no trace files in this directory (*.json, *.json.gz, *.pftrace)",
                  tp_log_name(input));
    return rc;
}

static int parse(int argc, char **argv, merge_job *j) {
    tp_cli_parser p;
    tp_cli_parser_init(&p, "merge", argc, argv, opts, sizeof(opts) / sizeof(opts[0]));
    size_t ninputs = 0;
    for (int k; (k = tp_cli_next(&p)) != TP_CLI_END;) {
        if (k == TP_CLI_BAD) return -1;
        if (k == TP_CLI_OPERAND)
            argv[1 + ninputs++] = (char *)p.value;
        else if (k == OPT_OUTPUT)
            j->output = p.value;
        else if (k == OPT_NO_REFINE)
            j->refine = 0;
        else {
            fputs(help, stdout);
            return 1;
        }
    }
    if (!ninputs) return tp_cli_usage("merge", "no input: give traces or run directories"), -1;
    if (!j->output) return tp_cli_usage("merge", "no output: give -o FILE (.json or .json.gz)"), -1;
    if (tp_cli_check_output(j->output, argv + 1, ninputs)) return -1;
    for (size_t i = 0; i < ninputs; i++)
        if (gather(j, argv[1 + i])) return -1;
    return 0;
}

static rank_info *rank_of(merge_job *j, int64_t rank) {
    for (size_t k = 0; k < j->nranks; k++)
        if (j->ranks[k].rank == rank) return &j->ranks[k];
    if (TP_GROW(j->ranks, j->cap_ranks, j->nranks + 1)) return NULL;
    rank_info *r = &j->ranks[j->nranks++];
    *r = (rank_info){.rank = rank};
    return r;
}

static int read_trace(const trace_ref *t, tp_model *m) {
    char err[1024];
    tp_model_init(m);
    tp_read_opts o = {.name = tp_log_name(t->path)};
    if (tp_trace_read_file(t->path, m, &o, err, sizeof(err)) == 0) return 0;
    tp_model_free(m);
    return FAIL("%s", err);
}

/* Pass 1: each trace's rank, base time, largest correlation id and collectives; the devices. */
static int survey(merge_job *j) {
    j->doc.base_ns = INT64_MAX;
    for (size_t i = 0; i < j->ntraces; i++) {
        tp_model m;
        if (read_trace(&j->traces[i], &m)) return -1;
        trace_ref *t = &j->traces[i];
        if (t->rank < 0) t->rank = m.rank >= 0 ? m.rank : (int64_t)i;
        rank_info *r = rank_of(j, t->rank);
        int rc = r && tp_collectives_of(&m, &r->colls) == 0 ? 0 : -1;
        if (m.base_ns < j->doc.base_ns) j->doc.base_ns = m.base_ns;
        for (size_t e = 0; r && e < m.nevents; e++)
            if (m.events[e].corr > r->max_corr) r->max_corr = m.events[e].corr;
        tp_model_copy_devices(&j->doc, &m);
        tp_model_free(&m);
        if (rc) return FAIL("out of memory");
    }
    return 0;
}

static int cmp_rank(const void *pa, const void *pb) {
    const rank_info *a = pa, *b = pb;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The offsets: collectives' times are absolute already, so what is left is each clock's error
 * against the lowest rank's, from the collectives' ends. */
static int align(merge_job *j) {
    assert(j->nranks > 0); /* parse refused no input; survey gave each trace a rank */
    qsort(j->ranks, j->nranks, sizeof(*j->ranks), cmp_rank);
    tp_coll_list *lists = calloc(j->nranks, sizeof(*lists));
    int64_t *off = calloc(j->nranks, sizeof(*off));
    size_t *matched = calloc(j->nranks, sizeof(*matched));
    int rc = lists && off && matched ? 0 : -1;
    uint64_t corr = 0;
    for (size_t k = 0; rc == 0 && k < j->nranks; k++) {
        tp_coll_sort(&j->ranks[k].colls);
        lists[k] = j->ranks[k].colls;
        j->ranks[k].corr_base = corr;
        corr += j->ranks[k].max_corr + 1;
    }
    if (rc == 0 && j->refine) rc = tp_ranks_offsets(lists, j->nranks, off, matched);
    for (size_t k = 0; rc == 0 && k < j->nranks; k++) {
        j->ranks[k].offset_ns = k && matched[k] ? off[k] : 0;
        j->ranks[k].matched = k ? matched[k] : 0;
    }
    free(lists), free(off), free(matched);
    return rc ? tp_cli_error("out of memory") : 0;
}

/* ---- pass 2: each trace as its rank, to the output ---- */

typedef struct track_map {
    int64_t rank;
    unsigned char *gpu; /* per source track: it carries device events */
} track_map;

/* Device tracks (pid = device, tid = stream) get tids above every thread id of the host. */
#define GPU_TID_BASE (INT64_C(1) << 40)

static uint32_t map_track(void *ctx, tp_model *dst, const tp_model *src, uint32_t t) {
    const track_map *tm = ctx;
    const tp_track *s = &src->tracks[t];
    int gpu = tm->gpu[t];
    int64_t tid = gpu ? GPU_TID_BASE + (s->pid << 20) + s->tid : s->tid;
    tp_str tid_str = tp_model_restr(dst, src, s->tid_str != TP_STR_EMPTY ? s->tid_str : s->pid_str);
    uint32_t d = tp_model_track(dst, tm->rank, TP_STR_EMPTY, tid, tid_str);
    if (d == UINT32_MAX) return UINT32_MAX - 1;
    tp_track *dt = &dst->tracks[d];
    char name[96];
    snprintf(name, sizeof(name), "rank %lld", (long long)tm->rank);
    dt->process_name = tp_model_intern_cstr(dst, name);
    if (dt->thread_name == TP_STR_EMPTY) {
        if (s->thread_name != TP_STR_EMPTY && !gpu)
            dt->thread_name = tp_model_restr(dst, src, s->thread_name);
        else {
            snprintf(name, sizeof(name), gpu ? "GPU %lld stream %lld" : "thread %lld",
                     (long long)(gpu ? s->pid : s->tid), (long long)s->tid);
            dt->thread_name = tp_model_intern_cstr(dst, name);
        }
    }
    return d;
}

/* The trace t as its rank's process, shifted by the rank's offset, appended to dst (its own
 * model for the JSON output, the source freed before writing; all the ranks' one for Perfetto). */
static int copy_as_rank(merge_job *j, const trace_ref *t, tp_model *dst) {
    tp_model m;
    if (read_trace(t, &m)) return -1;
    const rank_info *r = rank_of(j, t->rank);
    assert(r); /* survey made every rank */
    track_map tm = {.rank = t->rank, .gpu = calloc(m.ntracks ? m.ntracks : 1, 1)};
    int rc = tm.gpu ? 0 : -1;
    for (size_t e = 0; rc == 0 && e < m.nevents; e++)
        if (tp_kind_is_device(m.events[e].kind) && m.events[e].track < m.ntracks)
            tm.gpu[m.events[e].track] = 1;
    tp_copy_opts o = {
        .shift_ns = r->offset_ns, .corr_base = r->corr_base, .map_track = map_track, .ctx = &tm};
    if (rc == 0) rc = tp_model_append(dst, &m, &o);
    free(tm.gpu);
    tp_model_free(&m);
    return rc ? tp_cli_error("%s: out of memory", tp_log_name(t->path)) : 0;
}

/* What the merged trace's tprof object says of each rank, and stderr the same. */
static void describe(const merge_job *j, tp_buf *members) {
    tp_buf_puts(members, "\"merged\":{\"ranks\":[");
    for (size_t k = 0; k < j->nranks; k++) {
        const rank_info *r = &j->ranks[k];
        tp_buf_printf(members, "%s{\"rank\":%lld,\"offset_ns\":%lld,\"collectives\":%zu}",
                      k ? "," : "", (long long)r->rank, (long long)r->offset_ns, r->matched);
        if (k == 0) continue;
        if (r->matched)
            fprintf(stderr,
                    "tprof: merge: rank %lld: clock offset %+.3f us (median over %zu "
                    "collectives)\n",
                    (long long)r->rank, (double)r->offset_ns / 1e3, r->matched);
        else
            fprintf(stderr,
                    "tprof: merge: rank %lld: no blocking collective matched: aligned "
                    "by absolute time only\n",
                    (long long)r->rank);
    }
    tp_buf_puts(members, "]}");
}

static int ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

/* A Perfetto output (.pftrace, .perfetto-trace): the writer deals each track's ranges to
 * nesting lanes, so every rank is gathered into one model, then written. */
static int is_perfetto(const char *path) {
    return ends_with(path, ".pftrace") || ends_with(path, ".perfetto-trace");
}

static int write_perfetto(merge_job *j, const char *target, const tp_chrome_opts *o) {
    tp_model all;
    tp_model_init(&all);
    all.base_ns = j->doc.base_ns;
    tp_model_copy_devices(&all, &j->doc);
    int rc = 0;
    for (size_t i = 0; i < j->ntraces && rc == 0; i++)
        rc = copy_as_rank(j, &j->traces[i], &all);
    char err[1024];
    if (rc == 0 && tp_perfetto_write_file(&all, target, o, err, sizeof(err))) rc = FAIL("%s", err);
    tp_model_free(&all);
    return rc;
}

/* The JSON output: rank by rank, one in memory at a time. */
static int write_json(merge_job *j, const char *target, const tp_chrome_opts *o) {
    char err[1024];
    tp_chrome_stream *out = tp_chrome_stream_open(&j->doc, target, o, err, sizeof(err));
    int rc = out ? 0 : FAIL("%s", err);
    for (size_t i = 0; i < j->ntraces && rc == 0; i++) {
        tp_model one;
        tp_model_init(&one);
        one.base_ns = j->doc.base_ns;
        rc = copy_as_rank(j, &j->traces[i], &one);
        if (rc == 0) tp_chrome_stream_add(out, &one); /* a failure is the commit's to report */
        tp_model_free(&one);
    }
    if (rc && out)
        tp_chrome_stream_abort(out);
    else if (rc == 0 && tp_chrome_stream_commit(out, NULL, err, sizeof(err)))
        rc = FAIL("%s", err);
    return rc;
}

static int write_merged(merge_job *j) {
    tp_buf members;
    tp_buf_init(&members);
    describe(j, &members);
    tp_buf_putc(&members, '\0');
    if (members.failed) {
        tp_buf_free(&members);
        return FAIL("out of memory");
    }
    tp_chrome_opts o = {.gzip = ends_with(j->output, ".gz"),
                        .trace_name = "tprof merge",
                        .tprof_members = members.data};
    char *target = tp_cli_output_target(j->output); /* an -o link is written through */
    int rc = !target               ? -1
             : is_perfetto(target) ? write_perfetto(j, target, &o)
                                   : write_json(j, target, &o);
    free(target);
    tp_buf_free(&members);
    return rc;
}

static int run(int argc, char **argv) {
    merge_job j = {.refine = 1};
    tp_model_init(&j.doc);
    int rc = parse(argc, argv, &j);
    if (rc == 0) rc = survey(&j);
    if (rc == 0) rc = align(&j);
    if (rc == 0) rc = write_merged(&j);
    job_free(&j);
    return rc < 0 ? TP_EXIT_ERROR : TP_EXIT_OK;
}

const tp_cli_verb tp_cli_merge = {
    .name = "merge",
    .summary = "the traces of several ranks as one Chrome or Perfetto trace, clocks aligned",
    .help = help,
    .run = run,
};
