/* py_analyze.c - tprof.analyze's C half: trace files read as `tprof analyze` reads its inputs
 * into one analysis, rendered by the same JSON renderer as `tprof analyze --json`
 * (docs/ANALYZE_JSON.md), so that both give the same numbers (tests/python/test_dataframes.py).
 *
 * The files are read with the GIL released: a large trace takes seconds. */
#include "tprof_py.h"

#include "analysis/analysis.h"
#include "report/report.h"
#include "run/inputs.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

typedef struct analyze_job {
    char **paths;
    size_t n;
    size_t top_k;
    tp_buf out;
    char err[1024];
} analyze_job;

/* The files read as `tprof analyze` reads its inputs (run/inputs.c: several ranks analysed each
 * apart too, a file given twice refused), then the JSON into job->out; -1 with job->err on the
 * first unreadable file or when memory runs out. Runs without the GIL. */
static int run_analysis(analyze_job *job) {
    tp_inputs_opts opts;
    tp_inputs_opts_init(&opts);
    opts.progress = TP_INPUTS_PROGRESS_OFF; /* a library call draws no progress line */
    tp_analysis *a = tp_inputs_analyse(job->paths, job->n, &opts, job->err, sizeof(job->err));
    if (!a) return -1;
    tp_report_opts o = {.top_k = job->top_k};
    tp_report_json(&job->out, a, &o);
    tp_analysis_free(a);
    if (job->out.failed) {
        snprintf(job->err, sizeof(job->err), "out of memory");
        return -1;
    }
    return 0;
}

/* analyze(paths, top_k) -> str: the JSON report of the traces, read as one run. An unreadable
 * file raises ValueError with the reader's one line ("PATH: byte N: problem"). */
static PyObject *py_analyze(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *list;
    Py_ssize_t top_k = 10;
    if (!PyArg_ParseTuple(args, "O|n:analyze", &list, &top_k)) return NULL;
    if (top_k < 1) {
        PyErr_SetString(PyExc_ValueError, "top_k must be at least 1");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(list, "paths must be a list of paths");
    if (!seq) return NULL;
    analyze_job job = {.n = (size_t)PySequence_Fast_GET_SIZE(seq), .top_k = (size_t)top_k};
    tp_buf_init(&job.out);
    PyObject *result = NULL;
    job.paths = calloc(job.n + 1, sizeof(*job.paths));
    if (!job.paths) {
        PyErr_NoMemory();
        goto out;
    }
    for (size_t i = 0; i < job.n; i++) {
        PyObject *path;
        if (!PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, (Py_ssize_t)i), &path)) goto out;
        job.paths[i] = strdup(PyBytes_AS_STRING(path));
        Py_DECREF(path);
        if (!job.paths[i]) {
            PyErr_NoMemory();
            goto out;
        }
    }
    PyThreadState *ts = PyEval_SaveThread();
    int rc = run_analysis(&job);
    PyEval_RestoreThread(ts);
    if (rc)
        PyErr_SetString(PyExc_ValueError, job.err);
    else
        result = PyUnicode_DecodeUTF8(job.out.data, (Py_ssize_t)job.out.len, "replace");
out:
    for (size_t i = 0; job.paths && i < job.n; i++)
        free(job.paths[i]);
    free(job.paths);
    tp_buf_free(&job.out);
    Py_DECREF(seq);
    return result;
}

PyMethodDef tp_py_analyze_methods[] = {
    {"analyze", py_analyze, METH_VARARGS,
     "analyze(paths, top_k=10, /)\n--\n\nThe traces' analysis as `tprof analyze --json` "
     "writes it (a str)."},
    {NULL, NULL, 0, NULL},
};
