/* summaries.c - `tprof analyze --summaries`: the cross-rank analysis (the "ranks" key: per-rank
 * table, step spread, straggler) from each rank's summary.json alone, reading no trace, for runs
 * of so many ranks that no machine should read every trace (docs/DISTRIBUTED.md).
 *
 * Each summary's "rank_summary" member (report/ranks_report.c writes it; docs/ANALYZE_JSON.md)
 * becomes one tp_rank_row, exactly what analysis/ranks.c makes of that rank's traces, and
 * tp_ranks_attach completes them as it completes the rows of traces: the same figures from
 * either source, within the collectives a summary keeps (its last TP_SUMMARY_COLLECTIVES).
 *
 * Every rank must have the same stages (the first summary's, by name and order), and each rank
 * appears once. A malformed summary is one error naming the file and byte. */
#include "cli/cli.h"
#include "run/rundir.h"

#include "analysis/ranks.h"
#include "report/ranks.h"
#include "trace/scan.h"
#include "util/log.h"
#include "util/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sreader {
    tp_scan sc;
    const char *path;
    tp_ranks *r; /* rows so far; stage names from the first summary */
    size_t cap_rows;
    char err[600];
} sreader;

static int bad(sreader *rd, const char *at, const char *msg) {
    if (!rd->err[0])
        snprintf(rd->err, sizeof(rd->err), "%s: byte %llu: %s", rd->path,
                 (unsigned long long)tp_scan_offset(&rd->sc, at), msg);
    return -1;
}

/* A scanner's result as 0 or -1 (its error, or the data ending early). */
static int scanned(sreader *rd, int rc) {
    if (rc == TP_SCAN_ERR) return bad(rd, rd->sc.err_at, rd->sc.err_msg);
    if (rc == TP_SCAN_MORE) return bad(rd, rd->sc.end, "the file ends inside a value");
    return 0;
}

static int expect(sreader *rd, char c) {
    tp_scan_ws(&rd->sc);
    if (*rd->sc.p != c || rd->sc.p >= rd->sc.end) {
        char msg[32];
        snprintf(msg, sizeof(msg), "'%c' expected", c);
        return bad(rd, rd->sc.p, msg);
    }
    rd->sc.p++;
    return 0;
}

/* A number: an integer into *i (or -1 for null when nullable), else its value into *d when d. */
static int number(sreader *rd, int64_t *i, double *d, int nullable) {
    tp_scan_ws(&rd->sc);
    const char *at = rd->sc.p;
    tp_jnum n;
    int isnum = 0;
    if (scanned(rd, tp_scan_number(&rd->sc, &n, &isnum))) return -1;
    if (!isnum) {
        if (!nullable) return bad(rd, at, "a number expected");
        *i = -1;
        if (d) *d = -1;
        return 0;
    }
    double v = 0;
    int integral = tp_jnum_value(&rd->sc, &n, i, &v);
    if (d) *d = integral ? (double)*i : v;
    if (!integral && !d) return bad(rd, at, "an integer expected");
    return 0;
}

/* Steps through an array: 1 at each element, 0 at its end, -1 on error. */
static int element(sreader *rd, int *first) {
    int rc = tp_scan_element(&rd->sc, first);
    if (rc == TP_SCAN_ITEM) return 1;
    return scanned(rd, rc) ? -1 : 0;
}

/* The same through an object, with *key set. */
static int member(sreader *rd, int *first, tp_jstr *key) {
    int rc = tp_scan_member(&rd->sc, first, key);
    if (rc == TP_SCAN_ITEM) return 1;
    return scanned(rd, rc) ? -1 : 0;
}

/* "stages_ns": the first summary names the stages; the others must have the same. */
static int stages(sreader *rd, tp_rank_row *row) {
    tp_ranks *r = rd->r;
    int defining = r->n == 0, first = 1, more;
    size_t st = 0;
    tp_jstr key;
    if (expect(rd, '{')) return -1;
    while ((more = member(rd, &first, &key)) == 1) {
        size_t len;
        const char *name = tp_scan_text(&rd->sc, &key, &len);
        if (defining) {
            char **grown = realloc(r->stage_names, (st + 1) * sizeof(char *));
            if (!grown) return bad(rd, key.s, "out of memory");
            r->stage_names = grown;
            if (!(grown[st] = strndup(name, len))) return bad(rd, key.s, "out of memory");
            r->nstage_names = st + 1;
        } else if (st >= r->nstage_names || strlen(r->stage_names[st]) != len ||
                   memcmp(r->stage_names[st], name, len) != 0) {
            return bad(rd, key.s,
                       "the stages differ from the first summary's: record every "
                       "rank with the same stages");
        }
        int64_t *grown = realloc(row->stage_ns, (st + 1) * sizeof(int64_t));
        if (!grown) return bad(rd, key.s, "out of memory");
        row->stage_ns = grown;
        if (number(rd, &row->stage_ns[st++], NULL, 0)) return -1;
    }
    if (more < 0) return -1;
    if (st != r->nstage_names || st == 0)
        return bad(rd, rd->sc.p, "the stages differ from the first summary's");
    return 0;
}

/* "step_durations_ns": [[number, duration], ...] by number ascending. */
static int step_durations(sreader *rd, tp_rank_row *row) {
    size_t cap = 0;
    int first = 1, more;
    if (expect(rd, '[')) return -1;
    while ((more = element(rd, &first)) == 1) {
        size_t n = row->nstep_numbers;
        if (TP_GROW(row->step_number, cap, n + 1)) return bad(rd, rd->sc.p, "out of memory");
        int64_t *d = realloc(row->step_dur_ns, cap * sizeof(int64_t));
        if (!d) return bad(rd, rd->sc.p, "out of memory");
        row->step_dur_ns = d;
        int inner = 1;
        if (expect(rd, '[') || element(rd, &inner) != 1 ||
            number(rd, &row->step_number[n], NULL, 0) || element(rd, &inner) != 1 ||
            number(rd, &row->step_dur_ns[n], NULL, 0) || element(rd, &inner) != 0)
            return bad(rd, rd->sc.p, "a step is [number, duration_ns]");
        if (n && row->step_number[n] <= row->step_number[n - 1])
            return bad(rd, rd->sc.p, "steps are not in ascending order of number");
        row->nstep_numbers = n + 1;
    }
    return more;
}

/* One collective: [seq, start_ns, end_ns, sync, keyed, "name hash"]. */
static int collective(sreader *rd, tp_coll *c) {
    int64_t key, sync, keyed;
    int first = 1;
    tp_jstr hash;
    if (expect(rd, '[') || element(rd, &first) != 1 || number(rd, &key, NULL, 0) ||
        element(rd, &first) != 1 || number(rd, &c->start_ns, NULL, 0) || element(rd, &first) != 1 ||
        number(rd, &c->end_ns, NULL, 0) || element(rd, &first) != 1 || number(rd, &sync, NULL, 0) ||
        element(rd, &first) != 1 || number(rd, &keyed, NULL, 0) || element(rd, &first) != 1 ||
        *rd->sc.p != '"' || scanned(rd, tp_scan_string(&rd->sc, &hash)) || element(rd, &first) != 0)
        return bad(rd, rd->sc.p, "a collective is [seq, start_ns, end_ns, sync, keyed, hash]");
    char hex[17];
    size_t len;
    const char *h = tp_scan_text(&rd->sc, &hash, &len);
    char *end;
    if (len == 0 || len > 16) return bad(rd, hash.s, "a name hash is 1 to 16 hex digits");
    memcpy(hex, h, len);
    hex[len] = '\0';
    c->name_hash = strtoull(hex, &end, 16);
    if (*end || key < 0) return bad(rd, hash.s, "a bad collective seq or name hash");
    c->key = (uint64_t)key;
    c->sync = sync != 0;
    c->keyed = keyed != 0;
    return 0;
}

static int collectives(sreader *rd, tp_rank_row *row) {
    int first = 1, more;
    if (expect(rd, '[')) return -1;
    while ((more = element(rd, &first)) == 1) {
        tp_coll_list *l = &row->colls;
        if (TP_GROW(l->v, l->cap, l->n + 1)) return bad(rd, rd->sc.p, "out of memory");
        if (collective(rd, &l->v[l->n])) return -1;
        l->n++;
    }
    if (more == 0) tp_coll_sort(&row->colls); /* written sorted; sorting again costs little */
    return more;
}

/* The members of "rank_summary" into row. */
static int rank_summary(sreader *rd, tp_rank_row *row) {
    int first = 1, more, have_stages = 0;
    int64_t flag = 0, steps = 0;
    tp_jstr key;
    tp_scan *sc = &rd->sc;
    if (expect(rd, '{')) return -1;
    while ((more = member(rd, &first, &key)) == 1) {
        int rc;
        if (tp_scan_str_eq(sc, &key, "rank"))
            rc = number(rd, &row->rank, NULL, 0);
        else if (tp_scan_str_eq(sc, &key, "steps"))
            rc = number(rd, &steps, NULL, 0);
        else if (tp_scan_str_eq(sc, &key, "steps_total_ns"))
            rc = number(rd, &row->steps_total_ns, NULL, 0);
        else if (tp_scan_str_eq(sc, &key, "step_mean_ns"))
            rc = number(rd, &row->step_mean_ns, NULL, 1);
        else if (tp_scan_str_eq(sc, &key, "step_p95_ns"))
            rc = number(rd, &row->step_p95_ns, NULL, 1);
        else if (tp_scan_str_eq(sc, &key, "compute_ns"))
            rc = number(rd, &row->compute_ns, NULL, 0);
        else if (tp_scan_str_eq(sc, &key, "communication_ns"))
            rc = number(rd, &row->communication_ns, NULL, 0);
        else if (tp_scan_str_eq(sc, &key, "idle_ns"))
            rc = number(rd, &row->idle_ns, NULL, 0);
        else if (tp_scan_str_eq(sc, &key, "overlap_pct"))
            rc = number(rd, &flag, &row->overlap_pct, 1);
        else if (tp_scan_str_eq(sc, &key, "stages_ns"))
            rc = stages(rd, row), have_stages = 1;
        else if (tp_scan_str_eq(sc, &key, "step_durations_ns"))
            rc = step_durations(rd, row);
        else if (tp_scan_str_eq(sc, &key, "collectives"))
            rc = collectives(rd, row);
        else if (tp_scan_str_eq(sc, &key, "gpu")) {
            tp_scan_ws(sc);
            row->gpu = *sc->p == 't';
            rc = scanned(rd, tp_scan_skip_value(sc));
        } else
            rc = scanned(rd, tp_scan_skip_value(sc));
        if (rc) return -1;
    }
    if (more < 0) return -1;
    if (!have_stages || row->rank < 0 || steps < 0)
        return bad(rd, sc->p, "rank_summary lacks its rank or stages_ns");
    row->steps = (size_t)steps;
    return 0;
}

/* One summary.json: its top-level members, of which only "rank_summary" is read. */
static int read_summary(sreader *rd, const char *path) {
    tp_buf text;
    tp_buf_init(&text);
    rd->path = path;
    int rc = tp_cli_read_file(path, &text, rd->err, sizeof(rd->err));
    if (rc == 0 && tp_scan_reserve(&rd->sc, text.len)) rc = bad(rd, rd->sc.buf, "out of memory");
    if (rc == 0) {
        memcpy(rd->sc.buf, text.data, text.len);
        rd->sc.origin = 0;
        rd->sc.eof = 1;
        tp_scan_set_data(&rd->sc, text.len);
        rd->sc.p = rd->sc.buf;
    }
    tp_buf_free(&text);
    if (rc) return -1;
    tp_ranks *r = rd->r;
    if (TP_GROW(r->rows, rd->cap_rows, r->n + 1)) return bad(rd, rd->sc.p, "out of memory");
    tp_rank_row *row = &r->rows[r->n];
    *row = (tp_rank_row){.rank = -1};
    int first = 1, more = 0, found = 0;
    tp_jstr key;
    if (expect(rd, '{')) rc = -1;
    while (rc == 0 && (more = member(rd, &first, &key)) == 1) {
        if (tp_scan_str_eq(&rd->sc, &key, "rank_summary")) {
            found = 1;
            rc = rank_summary(rd, row);
        } else {
            rc = scanned(rd, tp_scan_skip_value(&rd->sc));
        }
    }
    r->n++; /* even half-read: tp_ranks_free frees what it holds */
    if (rc || more < 0) return -1;
    if (!found)
        return bad(rd, rd->sc.p,
                   "no \"rank_summary\": not a summary.json of tprof 0.x with "
                   "the cross-rank figures (re-run with this tprof)");
    return 0;
}

/* An input: a summary file, or a run directory meaning its summary files. */
static int read_input(sreader *rd, const char *input) {
    if (!tp_run_is_dir(input)) return read_summary(rd, input);
    tp_run_dir d = {0};
    if (tp_run_dir_list(input, &d, rd->err, sizeof(rd->err))) return -1;
    int rc = 0, any = 0;
    for (size_t i = 0; i < d.n && rc == 0; i++)
        if (d.files[i].kind == TP_RUN_SUMMARY) rc = read_summary(rd, d.files[i].path), any = 1;
    tp_run_dir_free(&d);
    if (rc == 0 && !any) {
        snprintf(rd->err, sizeof(rd->err), "%s: no summary.json in this directory", input);
        return -1;
    }
    return rc;
}

static int cmp_row(const void *pa, const void *pb) {
    const tp_rank_row *a = pa, *b = pb;
    return (a->rank > b->rank) - (a->rank < b->rank);
}

/* The rows by rank, each rank once, two ranks at least. */
static int check_ranks(sreader *rd) {
    tp_ranks *r = rd->r;
    qsort(r->rows, r->n, sizeof(*r->rows), cmp_row);
    for (size_t k = 1; k < r->n; k++)
        if (r->rows[k].rank == r->rows[k - 1].rank) {
            snprintf(rd->err, sizeof(rd->err),
                     "rank %lld: two summaries: give each rank's summary once",
                     (long long)r->rows[k].rank);
            return -1;
        }
    if (r->n < 2) {
        snprintf(rd->err, sizeof(rd->err),
                 "--summaries: %zu rank%s found: the cross-rank analysis needs two or more", r->n,
                 r->n == 1 ? "" : "s");
        return -1;
    }
    return 0;
}

tp_analysis *tp_cli_analyse_summaries(char *const *inputs, size_t n) {
    sreader rd = {.r = calloc(1, sizeof(tp_ranks))};
    tp_scan_init(&rd.sc);
    int rc = rd.r ? 0 : -1;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = read_input(&rd, inputs[i]);
    tp_scan_free(&rd.sc);
    if (rc == 0) rc = check_ranks(&rd);
    tp_analysis_opts o = {0};
    tp_analysis *a = rc == 0 ? tp_analysis_new(&o) : NULL;
    if (a) {
        tp_analysis_finish(a);
        tp_analysis_add_warning(a,
                                "analysed from %zu ranks' summary.json alone (--summaries): "
                                "only the Ranks section and its recommendations",
                                rd.r->n);
        rc = tp_ranks_attach(a, rd.r);
        rd.r = NULL;
    }
    if (rc || !a) {
        char line[sizeof(rd.err)]; /* escaped: the error names a file (tp_log_escape) */
        tp_log_escape(line, sizeof(line), rd.err[0] ? rd.err : "out of memory");
        fprintf(stderr, "tprof analyze: %s\n", line);
        tp_ranks_free(rd.r);
        tp_analysis_free(a);
        return NULL;
    }
    return a;
}
