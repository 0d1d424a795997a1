/* py_session.c - the session and annotation calls of tprof._tprof: start and shutdown, steps and
 * epochs, counters, FLOPs, args, shapes, and what the library reported.
 *
 * Recording never raises into the training loop: a value that cannot be used is reported once
 * through the library's warning ("tprof: ...") and the call does nothing. Only start() checks
 * its configuration and raises tprof.ConfigError. Calls that may wait (start, shutdown, a step
 * that closes a window) release the GIL, so the host's other threads run meanwhile. A call that
 * may print hands the library's lines to Python before it returns (done(), py_messages.c). */
#include "tprof_py.h"

#include "config/config.h"
#include "record/gpu_calls.h"
#include "record/record.h"
#include "record/session.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/* None, once the lines this call made are handed to Python. */
static PyObject *done(void) {
    tp_py_messages_deliver();
    return Py_NewRef(Py_None);
}

/* start(config) -> bool: True when a session started (or the configuration leaves profiling
 * disabled), False when the library declined (a session is already active, the output cannot
 * be prepared): it then said why on stderr and in messages(). */
static PyObject *py_start(PyObject *mod, PyObject *arg) {
    (void)mod;
    tprof_config *cfg = tp_py_config_get(arg);
    if (!cfg) return NULL;
    char err[512];
    if (tp_config_validate(cfg, err, sizeof(err))) {
        PyErr_SetString(tp_py_config_error, err);
        return NULL;
    }
    PyThreadState *ts = PyEval_SaveThread();
    int rc = tprof_start(cfg);
    PyEval_RestoreThread(ts);
    tp_py_messages_deliver();
    return PyBool_FromLong(rc == 0);
}

/* fn() with the GIL released: it may wait for the writer thread. */
static PyObject *without_gil(void (*fn)(void)) {
    PyThreadState *ts = PyEval_SaveThread();
    fn();
    PyEval_RestoreThread(ts);
    return done();
}

static PyObject *py_shutdown(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return without_gil(tprof_shutdown);
}

static PyObject *py_step(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return without_gil(tprof_step);
}

static PyObject *py_step_restart(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return without_gil(tp_steps_restart);
}

static PyObject *py_window_ends(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    PyThreadState *ts = PyEval_SaveThread(); /* it may wait for the session lock */
    int ends = tp_steps_window_ends();
    PyEval_RestoreThread(ts);
    return PyBool_FromLong(ends);
}

/* open_ranges_cut(names): a sequence of str (outermost first); any other is a TypeError, a
 * name with a NUL a ValueError. */
static PyObject *py_open_ranges_cut(PyObject *mod, PyObject *arg) {
    (void)mod;
    PyObject *seq = PySequence_Fast(arg, "open_ranges_cut(names): names must be a sequence");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **names = PyMem_Calloc((size_t)n + 1, sizeof(*names));
    PyObject **owners = PyMem_Calloc((size_t)n + 1, sizeof(PyObject *));
    Py_ssize_t got = 0;
    if (!names || !owners) PyErr_NoMemory();
    for (; names && owners && got < n; got++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, got);
        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError,
                         "open_ranges_cut(names): a name must be a str, not %.100s",
                         Py_TYPE(item)->tp_name);
            break;
        }
        if (!(names[got] = tp_py_text_whole(item, &owners[got], "open_ranges_cut"))) break;
    }
    int ok = names && owners && got == n;
    if (ok && tprof_active()) tp_ranges_open_cut(names, (size_t)n);
    for (Py_ssize_t i = 0; owners && i < got; i++)
        Py_XDECREF(owners[i]);
    PyMem_Free(names);
    PyMem_Free(owners);
    Py_DECREF(seq);
    return ok ? Py_NewRef(Py_None) : NULL;
}

static PyObject *py_drop_open_step(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return without_gil(tp_steps_drop_open);
}

/* tprof_flight_save: True when the save is asked for, False after the library's one line. A
 * reason that is no str is a TypeError, one with a NUL a ValueError; lone surrogates are
 * replaced (the library then refuses the reason in its line), as in tprof.range. */
static PyObject *py_flight_save(PyObject *mod, PyObject *reason) {
    (void)mod;
    if (!PyUnicode_Check(reason)) {
        PyErr_Format(PyExc_TypeError, "tprof.flight_save(reason): reason must be a str, not %.100s",
                     Py_TYPE(reason)->tp_name);
        return NULL;
    }
    PyObject *owner;
    const char *r = tp_py_text_whole(reason, &owner, "tprof.flight_save");
    if (!r) return NULL;
    PyThreadState *ts = PyEval_SaveThread(); /* it may wait for the session lock */
    int rc = tprof_flight_save(r);
    PyEval_RestoreThread(ts);
    Py_DECREF(owner);
    tp_py_messages_deliver();
    return PyBool_FromLong(rc == 0);
}

/* An integer argument, which recording may not raise about: *ok = 0, a warning naming fn and no
 * Python error when obj is not an integer that fits 64 bits. */
static long long int_arg(PyObject *obj, const char *fn, int *ok) {
    int overflow = 0;
    long long v = PyLong_Check(obj) ? PyLong_AsLongLongAndOverflow(obj, &overflow) : 0;
    *ok = PyLong_Check(obj) && !overflow && !PyErr_Occurred();
    if (*ok) return v;
    PyErr_Clear();
    PyObject *r = PyObject_Repr(obj);
    const char *shown = r ? PyUnicode_AsUTF8(r) : NULL;
    tp_log_warn("%s: %.60s is not a 64-bit integer (ignored)", fn, shown ? shown : "?");
    PyErr_Clear();
    Py_XDECREF(r);
    return 0;
}

static PyObject *py_epoch(PyObject *mod, PyObject *arg) {
    (void)mod;
    int ok;
    long long e = int_arg(arg, "tprof.epoch", &ok);
    if (ok && (e < 0 || e > INT32_MAX)) {
        tp_log_warn("tprof.epoch: %lld is not an epoch number (ignored)", e);
        ok = 0;
    }
    if (ok) {
        PyThreadState *ts = PyEval_SaveThread();
        tprof_epoch((int)e);
        PyEval_RestoreThread(ts);
    }
    return done();
}

static PyObject *py_flops(PyObject *mod, PyObject *arg) {
    (void)mod;
    int ok;
    long long n = int_arg(arg, "tprof.flops", &ok);
    if (ok && n < 0) {
        tp_log_warn("tprof.flops: %lld is negative (ignored)", n);
        ok = 0;
    }
    if (ok) tprof_flops((uint64_t)n);
    return done();
}

/* The text of a name or value argument, or NULL (the Python error cleared, the problem reported
 * once: recording never raises). A NUL inside is such a problem: C would cut the text there. */
static const char *name_arg(PyObject *obj, PyObject **owner, const char *fn) {
    const char *s = tp_py_text_whole(obj, owner, fn);
    if (!s) {
        int nul = PyErr_ExceptionMatches(PyExc_ValueError);
        PyErr_Clear();
        tp_log_warn("%s: %s (ignored)", fn,
                    nul ? "a text argument holds a NUL character"
                        : "an argument has no text, its str() failed");
    }
    return s;
}

/* use(the text of arg); an argument without text is reported and skipped (recording never
 * raises). */
static PyObject *with_text(PyObject *arg, const char *fn, void (*use)(const char *)) {
    PyObject *owner;
    const char *text = name_arg(arg, &owner, fn);
    if (text) {
        use(text);
        Py_DECREF(owner);
    }
    return done();
}

/* category(text): the innermost open range's category, e.g. "cpu_op" for recorded aten ops. */
static PyObject *py_category(PyObject *mod, PyObject *arg) {
    (void)mod;
    return with_text(arg, "tprof.category", tp_range_category);
}

static PyObject *py_counter(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "counter(name, value) takes two arguments");
        return NULL;
    }
    double v = PyFloat_AsDouble(args[1]);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        tp_log_warn("tprof.counter: the value is not a number (ignored)");
        return done();
    }
    PyObject *owner;
    const char *name = name_arg(args[0], &owner, "tprof.counter");
    if (name) {
        tprof_counter(name, v);
        Py_DECREF(owner);
    }
    return done();
}

/* arg(key, value): an int value is kept as a number, anything else as its text. */
static PyObject *py_arg(PyObject *mod, PyObject *const *args, Py_ssize_t nargs) {
    (void)mod;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "arg(key, value) takes two arguments");
        return NULL;
    }
    PyObject *kown, *vown;
    const char *key = name_arg(args[0], &kown, "tprof.arg");
    if (!key) return done();
    int ok = 0;
    long long i = PyLong_Check(args[1]) ? int_arg(args[1], "tprof.arg", &ok) : 0;
    if (ok) {
        tprof_arg_int(key, i);
    } else if (!PyLong_Check(args[1])) {
        const char *v = name_arg(args[1], &vown, "tprof.arg");
        if (v) {
            tprof_arg_str(key, v);
            Py_DECREF(vown);
        }
    }
    Py_DECREF(kown);
    return done();
}

/* shapes(dims_json): the innermost range's "Input Dims" (kept only with record_shapes). */
static PyObject *py_shapes(PyObject *mod, PyObject *arg) {
    (void)mod;
    return with_text(arg, "tprof.shapes", tprof_shapes);
}

static PyObject *py_thread_name(PyObject *mod, PyObject *arg) {
    (void)mod;
    return with_text(arg, "tprof.thread_name", tprof_thread_name);
}

static void warn_line(const char *msg) {
    tp_log_warn("%s", msg);
}

static void error_line(const char *msg) {
    tp_log_error("%s", msg);
}

/* warn(message, must_act=False): a problem found by the Python layer, reported as the library
 * reports its own (once, as a "tprof: ..." line, and in messages()); must_act for one the user
 * must act on (the run goes on unprofiled). */
static PyObject *py_warn(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *msg;
    int must_act = 0;
    if (!PyArg_ParseTuple(args, "O|p:warn", &msg, &must_act)) return NULL;
    return with_text(msg, "tprof.warn", must_act ? error_line : warn_line);
}

/* run_dir(): where the running session writes ("" when none): <output_dir>/<run_id>, or the
 * suffixed folder taken when that one was not tprof's to use (run/claim.h). */
static PyObject *py_run_dir(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    char dir[4096];
    tp_session_run_dir(dir, sizeof(dir));
    return PyUnicode_DecodeFSDefault(dir);
}

static PyObject *py_is_recording(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return PyBool_FromLong(tprof_is_recording());
}

static PyObject *py_is_active(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return PyBool_FromLong(tprof_active());
}

static PyObject *py_last_error(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return PyUnicode_DecodeUTF8(tprof_last_error(), (Py_ssize_t)strlen(tprof_last_error()),
                                "replace");
}

/* Every distinct message the library reported since the last recording session started (a
 * session started disabled keeps the list). */
static PyObject *py_messages(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    PyObject *list = PyList_New(0);
    const char *m;
    for (size_t i = 0; list && (m = tp_log_get(i)) != NULL; i++) {
        PyObject *s = PyUnicode_DecodeUTF8(m, (Py_ssize_t)strlen(m), "replace");
        if (!s || PyList_Append(list, s)) Py_CLEAR(list);
        Py_XDECREF(s);
    }
    return list;
}

/* Folders holding a wheel-installed libcupti, searched before the system's. The library keeps
 * the pointers for the sessions to come, so they live as long as the process: each call leaks
 * the previous list, and callers set it once. */
static PyObject *py_set_cupti_dirs(PyObject *mod, PyObject *arg) {
    (void)mod;
    if (tprof_active()) {
        PyErr_SetString(PyExc_RuntimeError, "CUPTI folders can only change between sessions");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(arg, "the CUPTI folders must be a list of str");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    char **dirs = calloc((size_t)n + 1, sizeof(*dirs));
    int ok = dirs != NULL;
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        PyObject *path;
        ok = PyUnicode_FSConverter(PySequence_Fast_GET_ITEM(seq, i), &path);
        if (ok) {
            ok = (dirs[i] = strdup(PyBytes_AS_STRING(path))) != NULL;
            Py_DECREF(path);
        }
    }
    Py_DECREF(seq);
    if (!ok) {
        for (Py_ssize_t i = 0; dirs && i < n; i++)
            free(dirs[i]);
        free(dirs);
        return PyErr_Occurred() ? NULL : PyErr_NoMemory();
    }
    tp_gpu_set_extra_dirs((const char *const *)dirs);
    return Py_NewRef(Py_None);
}

PyMethodDef tp_py_session_methods[] = {
    {"start", py_start, METH_O,
     "start(config, /)\n--\n\nStarts a session (tprof_start); False when the library "
     "declined and said why."},
    {"shutdown", py_shutdown, METH_NOARGS,
     "shutdown()\n--\n\nEnds the session: the last window, the artifacts."},
    {"step", py_step, METH_NOARGS, "step()\n--\n\nEnds step k and begins step k+1."},
    {"step_restart", py_step_restart, METH_NOARGS,
     "step_restart()\n--\n\nThe step in progress begins again now: the time since the last step "
     "(a validation loop) is no step."},
    {"window_ends", py_window_ends, METH_NOARGS,
     "window_ends()\n--\n\nTrue when the step in progress is its window's last (the next "
     "step closes the window)."},
    {"open_ranges_cut", py_open_ranges_cut, METH_O,
     "open_ranges_cut(names, /)\n--\n\nThe innermost ranges begun before the recording window "
     "and still open (names outermost first) become its ranges, from its start, flagged "
     "truncated."},
    {"drop_open_step", py_drop_open_step, METH_NOARGS,
     "drop_open_step()\n--\n\nIf the session ends before the next step, the step in progress "
     "is no step (the time after a loop's last step)."},
    {"epoch", py_epoch, METH_O, "epoch(n, /)\n--\n\nMarks the start of epoch n."},
    {"flight_save", py_flight_save, METH_O,
     "flight_save(reason, /)\n--\n\nSaves the flight recorder's ring now (docs/FLIGHT.md); True "
     "when asked for."},
    {"flops", py_flops, METH_O, "flops(n, /)\n--\n\nAdds FLOPs to the innermost open range."},
    {"category", py_category, METH_O,
     "category(name, /)\n--\n\nSets the innermost open range's category."},
    {"counter", (PyCFunction)(void (*)(void))py_counter, METH_FASTCALL,
     "counter(name, value, /)\n--\n\nA counter sample (a Chrome \"C\" event)."},
    {"arg", (PyCFunction)(void (*)(void))py_arg, METH_FASTCALL,
     "arg(key, value, /)\n--\n\nAn argument of the innermost open range (int, else text)."},
    {"shapes", py_shapes, METH_O,
     "shapes(dims_json, /)\n--\n\nThe innermost range's input shapes, a JSON array of arrays "
     "(needs record_shapes)."},
    {"thread_name", py_thread_name, METH_O,
     "thread_name(name, /)\n--\n\nNames the calling thread's track."},
    {"warn", py_warn, METH_VARARGS,
     "warn(message, must_act=False, /)\n--\n\nReports a problem as the library does (once)."},
    {"is_recording", py_is_recording, METH_NOARGS,
     "is_recording()\n--\n\nTrue while the current step is recorded."},
    {"is_active", py_is_active, METH_NOARGS, "is_active()\n--\n\nTrue while a session is active."},
    {"run_dir", py_run_dir, METH_NOARGS,
     "run_dir()\n--\n\nThe running session's run directory, '' if none."},
    {"last_error", py_last_error, METH_NOARGS,
     "last_error()\n--\n\nThe library's latest warning, '' if none."},
    {"messages", py_messages, METH_NOARGS,
     "messages()\n--\n\nThe library's warnings since the last recording session started, oldest "
     "first."},
    {"set_cupti_dirs", py_set_cupti_dirs, METH_O,
     "set_cupti_dirs(dirs, /)\n--\n\nExtra folders to search for libcupti (set before a session "
     "starts)."},
    {NULL, NULL, 0, NULL},
};
