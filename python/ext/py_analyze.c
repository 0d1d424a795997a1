/* py_analyze.c - tprof.analyze's and tprof.compare's C half: trace files read as `tprof
 * analyze` reads its inputs into one analysis per side, rendered by the same JSON renderers as
 * `tprof analyze --json` and `tprof compare --json` (docs/ANALYZE_JSON.md), so that both give
 * the same numbers (tests/python/test_dataframes.py).
 *
 * The files are read with the GIL released: a large trace takes seconds. */
#include "tprof_py.h"

#include "analysis/analysis.h"
#include "analysis/compare.h"
#include "model/stage.h"
#include "report/report.h"
#include "run/inputs.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

typedef struct side {
    char **paths;
    size_t n;
} side;

typedef struct analyze_job {
    side sides[2]; /* one for analyze, two (A, B) for compare */
    size_t nsides;
    size_t top_k;
    char **specs; /* the stages as "name" or "name=pattern|pattern", split in place */
    tp_stage_def *stages;
    size_t nstages; /* 0: the stages the inputs were recorded with */
    tp_buf out;
    char err[1024];
} analyze_job;

static void out_of_memory(analyze_job *job) {
    snprintf(job->err, sizeof(job->err), "out of memory");
}

/* A side's files read as `tprof analyze` reads its inputs (run/inputs.c: several ranks analysed
 * each apart too, a file given twice refused) into one finished analysis, with the stages of
 * every side's inputs (stages_of: both sides' paths of a comparison, so that they agree); NULL
 * with job->err on the first unreadable file or when memory runs out. Runs without the GIL. */
static tp_analysis *analysis_of(analyze_job *job, const side *s, char *const *stages_of,
                                size_t nstages_of) {
    tp_inputs_opts opts;
    tp_inputs_opts_init(&opts);
    opts.progress = TP_INPUTS_PROGRESS_OFF; /* a library call draws no progress line */
    opts.stages = job->stages;
    opts.nstages = job->nstages;
    opts.stages_of = stages_of;
    opts.nstages_of = nstages_of;
    return tp_inputs_analyse(s->paths, s->n, &opts, job->err, sizeof(job->err));
}

/* The analysis of one side, or the comparison of two, as JSON into job->out; -1 with job->err.
 * Runs without the GIL. */
static int run_job(analyze_job *job) {
    size_t n = job->sides[0].n + (job->nsides == 2 ? job->sides[1].n : 0);
    char **all = malloc((n ? n : 1) * sizeof(*all));
    if (!all) {
        out_of_memory(job);
        return -1;
    }
    for (size_t i = 0, k = 0; i < job->nsides; i++)
        for (size_t f = 0; f < job->sides[i].n; f++)
            all[k++] = job->sides[i].paths[f];
    tp_analysis *a = analysis_of(job, &job->sides[0], all, n);
    tp_analysis *b = a && job->nsides == 2 ? analysis_of(job, &job->sides[1], all, n) : NULL;
    free(all);
    tp_report_opts o = {.top_k = job->top_k};
    if (a && job->nsides == 1) {
        tp_report_json(&job->out, a, &o);
    } else if (b) {
        tp_compare *c = tp_compare_new(a, b);
        if (c) tp_report_compare_json(&job->out, c, &o);
        job->out.failed |= !c;
        tp_compare_free(c);
    }
    int rc = a && (job->nsides == 1 || b) ? 0 : -1;
    if (rc == 0 && job->out.failed) {
        out_of_memory(job);
        rc = -1;
    }
    tp_analysis_free(b);
    tp_analysis_free(a);
    return rc;
}

/* The paths of a Python list into s; -1 with an error set. */
static int side_of(PyObject *list, side *s) {
    PyObject *seq = PySequence_Fast(list, "paths must be a list of paths");
    if (!seq) return -1;
    s->n = (size_t)PySequence_Fast_GET_SIZE(seq);
    s->paths = calloc(s->n + 1, sizeof(*s->paths));
    int rc = s->paths ? 0 : -1;
    if (rc) PyErr_NoMemory();
    for (size_t i = 0; rc == 0 && i < s->n; i++) {
        PyObject *path;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)i), &path)) {
            rc = -1;
            break;
        }
        s->paths[i] = strdup(PyBytes_AS_STRING(path));
        Py_DECREF(path);
        if (!s->paths[i]) rc = -1, (void)PyErr_NoMemory();
    }
    Py_DECREF(seq);
    return rc;
}

/* The stages argument (a list of str, or None: the inputs' own, run/recorded_stages.h) into job,
 * parsed as the stages key is: 0, or -1 with an exception set. */
static int take_stages(analyze_job *job, PyObject *stages) {
    if (stages == Py_None) return 0;
    PyObject *seq = PySequence_Fast(stages, "stages must be a list of str");
    if (!seq) return -1;
    size_t n = (size_t)PySequence_Fast_GET_SIZE(seq);
    job->specs = calloc(n + 1, sizeof(*job->specs));
    job->stages = calloc(n + 1, sizeof(*job->stages));
    int rc = job->specs && job->stages ? 0 : (PyErr_NoMemory(), -1);
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *spec = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)i));
        if (!spec || !(job->specs[i] = strdup(spec))) {
            if (spec) PyErr_NoMemory();
            rc = -1;
        } else if (tp_stage_parse(job->specs[i], &job->stages[i])) {
            PyErr_Format(PyExc_ValueError, "stages[%zu]: %.100s is not a stage", i, spec);
            rc = -1;
        } else {
            job->nstages = i + 1;
        }
    }
    Py_DECREF(seq);
    return rc;
}

static void free_stages(analyze_job *job) {
    for (size_t i = 0; i < job->nstages; i++)
        free((void *)job->stages[i].patterns);
    for (size_t i = 0; job->specs && job->specs[i]; i++)
        free(job->specs[i]);
    free(job->specs);
    free(job->stages);
}

/* The JSON of the analysis of paths a, or of a compared with paths b (not NULL), as a str; a
 * ValueError with the reader's one line ("PATH: byte N: problem") when a file is unreadable. */
static PyObject *run(PyObject *a, PyObject *b, Py_ssize_t top_k, PyObject *stages) {
    const size_t nsides = b ? 2 : 1;
    analyze_job job = {.nsides = nsides};
    PyObject *const lists[2] = {a, b};
    PyObject *result = NULL;
    tp_buf_init(&job.out);
    if (top_k < 1) {
        PyErr_SetString(PyExc_ValueError, "top_k must be at least 1");
        goto out;
    }
    job.top_k = (size_t)top_k;
    for (size_t i = 0; i < nsides; i++)
        if (side_of(lists[i], &job.sides[i])) goto out;
    if (take_stages(&job, stages)) goto out;
    PyThreadState *ts = PyEval_SaveThread();
    int rc = run_job(&job);
    PyEval_RestoreThread(ts);
    if (rc)
        PyErr_SetString(PyExc_ValueError, job.err);
    else
        result = PyUnicode_DecodeUTF8(job.out.data, (Py_ssize_t)job.out.len, "replace");
out:
    for (size_t s = 0; s < nsides; s++) {
        for (size_t i = 0; job.sides[s].paths && i < job.sides[s].n; i++)
            free(job.sides[s].paths[i]);
        free(job.sides[s].paths);
    }
    free_stages(&job);
    tp_buf_free(&job.out);
    return result;
}

/* analyze(paths, top_k, stages) -> str: the JSON report of the traces, read as one run. */
static PyObject *py_analyze(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *list, *stages = Py_None;
    Py_ssize_t top_k = 10;
    if (!PyArg_ParseTuple(args, "O|nO:analyze", &list, &top_k, &stages)) return NULL;
    return run(list, NULL, top_k, stages);
}

/* compare(paths_a, paths_b, top_k) -> str: `tprof compare --json` of the two sides, each read
 * as one run. */
static PyObject *py_compare(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *a, *b;
    Py_ssize_t top_k = 10;
    if (!PyArg_ParseTuple(args, "OO|n:compare", &a, &b, &top_k)) return NULL;
    return run(a, b, top_k, Py_None);
}

PyMethodDef tp_py_analyze_methods[] = {
    {"analyze", py_analyze, METH_VARARGS,
     "analyze(paths, top_k=10, stages=None, /)\n--\n\nThe traces' analysis as `tprof analyze "
     "--json` writes it, a str (stages: the stages key's list, None for the inputs' own)."},
    {"compare", py_compare, METH_VARARGS,
     "compare(paths_a, paths_b, top_k=10, /)\n--\n\nTwo runs compared as `tprof compare "
     "--json` writes it (a str)."},
    {NULL, NULL, 0, NULL},
};
