/* py_analyze.c - tprof.analyze's C half: trace files read by the library's reader into one
 * analysis, rendered by the same JSON renderer as `tprof analyze --json` (docs/ANALYZE_JSON.md).
 *
 * The files are read with the GIL released: a large trace takes seconds. */
#include "tprof_py.h"

#include "analysis/analysis.h"
#include "model/stage.h"
#include "report/report.h"
#include "trace/reader.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

typedef struct analyze_job {
    char **paths;
    size_t n;
    size_t top_k;
    char **specs; /* the stages as "name" or "name=pattern|pattern", split in place */
    tp_stage_def *stages;
    size_t nstages; /* 0: the default stages */
    tp_buf out;
    char err[1024];
} analyze_job;

static int out_of_memory(analyze_job *job) {
    snprintf(job->err, sizeof(job->err), "out of memory");
    return -1;
}

/* Every file into one analysis, then its JSON into job->out; -1 with job->err on the first
 * unreadable file or when memory runs out. Runs without the GIL. */
static int run_analysis(analyze_job *job) {
    tp_analysis_opts opts = {.stages = job->stages, .nstages = job->nstages};
    tp_analysis *a = tp_analysis_new(job->nstages ? &opts : NULL);
    if (!a) return out_of_memory(job);
    int rc = 0;
    for (size_t i = 0; i < job->n && rc == 0; i++) {
        tp_model m;
        tp_model_init(&m);
        rc = tp_trace_read_file(job->paths[i], &m, NULL, job->err, sizeof(job->err));
        if (rc == 0 && tp_analysis_add_model(a, &m, job->paths[i])) rc = out_of_memory(job);
        tp_model_free(&m);
    }
    if (rc == 0) {
        tp_analysis_finish(a);
        tp_report_opts o = {.top_k = job->top_k};
        tp_report_json(&job->out, a, &o);
        if (job->out.failed) rc = out_of_memory(job);
    }
    tp_analysis_free(a);
    return rc;
}

/* analyze(paths, top_k) -> str: the JSON report of the traces, read as one run. An unreadable
 * file raises ValueError with the reader's one line ("PATH: byte N: problem"). */
/* The stages argument (a list of str, or None: the default stages) into job, parsed as the
 * stages key is: 0, or -1 with an exception set. */
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

static PyObject *py_analyze(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *list, *stages = Py_None;
    Py_ssize_t top_k = 10;
    if (!PyArg_ParseTuple(args, "O|nO:analyze", &list, &top_k, &stages)) return NULL;
    if (top_k < 1) {
        PyErr_SetString(PyExc_ValueError, "top_k must be at least 1");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(list, "paths must be a list of paths");
    if (!seq) return NULL;
    analyze_job job = {.n = (size_t)PySequence_Fast_GET_SIZE(seq), .top_k = (size_t)top_k};
    tp_buf_init(&job.out);
    PyObject *result = NULL;
    if (take_stages(&job, stages)) goto out;
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
    free_stages(&job);
    tp_buf_free(&job.out);
    Py_DECREF(seq);
    return result;
}

PyMethodDef tp_py_analyze_methods[] = {
    {"analyze", py_analyze, METH_VARARGS,
     "analyze(paths, top_k=10, stages=None) -> str\n--\n\nThe traces' analysis as `tprof analyze "
     "--json` "
     "writes it."},
    {NULL, NULL, 0, NULL},
};
