/* stack.c - Python call stacks (with_stack): a range per Python function call, as
 * torch.profiler(with_stack=True) records them: category "python_function", named
 * "<file>(<first line>): <function>" with the file relative to the longest sys.path-like prefix.
 *
 * The ranges come from CPython's C profiling hook (PyEval_SetProfile) on the thread that
 * installs it: no Python callback runs per call. A call is a range only when a window records at
 * the moment it begins; the hook then keeps a bit per open frame saying whether the frame's
 * return owes an end, so calls begun outside a window, or before the hook was installed, end
 * nothing.
 *
 * tprof's own functions (the files under the folder given at start: step(), stop()) are never
 * ranges: they are the profiler, and a step() range would always be open when its window closes.
 *
 * Names are built once per code object and kept in a process-wide intern table, which the hook's
 * co_extra slot points into: the recorder keeps name pointers until the session's windows are
 * written (tprof_begin), and a code object may die before that, so names are never freed. The
 * table grows with the distinct functions a process runs. Every function here runs with the GIL
 * held; the GIL is what serialises the table. */
#include "tprof_py.h"

#include "model/kineto.h"
#include "model/strtab.h"
#include "record/record.h"
#include "util/log.h"

#include <assert.h>
#include <stdint.h>
#include <string.h>

#if PY_VERSION_HEX >= 0x030C0000
#define code_get_extra PyUnstable_Code_GetExtra
#define code_set_extra PyUnstable_Code_SetExtra
#define request_extra  PyUnstable_Eval_RequestCodeExtraIndex
#else
#define code_get_extra _PyCode_GetExtra
#define code_set_extra _PyCode_SetExtra
#define request_extra  _PyEval_RequestCodeExtraIndex
#endif

/* Open frames tracked per thread; deeper calls are counted but never recorded. */
enum { TP_STACK_WORDS = 64, TP_STACK_MAX = TP_STACK_WORDS * 64 };

/* The calling thread's frames since the hook was installed: bit d of `owes` says whether the
 * frame at depth d began a range. depth counts frames past TP_STACK_MAX too. */
typedef struct tp_pystack {
    uint64_t owes[TP_STACK_WORDS];
    int64_t depth;
    int installed;
} tp_pystack;

static __thread tp_pystack stack_cur;

static tp_strtab names;             /* every name built, never freed (see the head comment) */
static int names_ready;             /* names initialised */
static Py_ssize_t extra_index = -1; /* the co_extra slot holding a code object's name */
static PyObject *prefixes;          /* tuple of str: path prefixes removed from file names */
static PyObject *skip_dir;          /* str: functions of files under it are not recorded */
static const char not_recorded[] = "(tprof)"; /* the co_extra of such functions */
static const char *category;                  /* "python_function", interned in names */

/* The file name shown: co_filename without the longest matching prefix. */
static PyObject *shown_file(PyObject *filename) {
    Py_ssize_t best = 0, n = prefixes ? PyTuple_GET_SIZE(prefixes) : 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *p = PyTuple_GET_ITEM(prefixes, i);
        Py_ssize_t len = PyUnicode_GET_LENGTH(p);
        if (len > best && PyUnicode_Tailmatch(filename, p, 0, len, -1) == 1) best = len;
    }
    return PyUnicode_Substring(filename, best, PyUnicode_GET_LENGTH(filename));
}

/* The interned name of code, built on its first call; not_recorded for tprof's own functions;
 * NULL (no Python error) when it cannot be built. */
static const char *build_name(PyCodeObject *code) {
    if (skip_dir && PyUnicode_Tailmatch(code->co_filename, skip_dir, 0,
                                        PyUnicode_GET_LENGTH(skip_dir), -1) == 1) {
        code_set_extra((PyObject *)code, extra_index, (void *)not_recorded);
        PyErr_Clear();
        return not_recorded;
    }
    PyObject *file = shown_file(code->co_filename);
    PyObject *name =
        file ? PyUnicode_FromFormat("%U(%d): %U", file, code->co_firstlineno, code->co_name) : NULL;
    Py_XDECREF(file);
    PyObject *owner = NULL;
    const char *utf8 = name ? tp_py_text(name, &owner) : NULL;
    Py_XDECREF(name);
    const char *kept = NULL;
    if (utf8) {
        tp_str id = tp_strtab_intern(&names, utf8, strlen(utf8));
        kept = names.failed ? NULL : tp_strtab_get(&names, id);
    }
    Py_XDECREF(owner);
    PyErr_Clear();
    if (kept) code_set_extra((PyObject *)code, extra_index, (void *)kept);
    PyErr_Clear();
    return kept;
}

static const char *code_name(PyCodeObject *code) {
    void *extra = NULL;
    if (code_get_extra((PyObject *)code, extra_index, &extra) == 0 && extra) return extra;
    PyErr_Clear();
    return build_name(code);
}

static void push(tp_pystack *s, int owes) {
    if (s->depth < TP_STACK_MAX) {
        uint64_t bit = UINT64_C(1) << (s->depth & 63);
        if (owes)
            s->owes[s->depth >> 6] |= bit;
        else
            s->owes[s->depth >> 6] &= ~bit;
    }
    s->depth++;
}

/* Pops a frame: 1 when it began a range. A return with nothing pushed (a frame that was open
 * when the hook was installed) pops nothing. */
static int pop(tp_pystack *s) {
    assert(s->depth >= 0);
    if (s->depth == 0) return 0;
    s->depth--;
    if (s->depth >= TP_STACK_MAX) return 0;
    return (int)(s->owes[s->depth >> 6] >> (s->depth & 63) & 1);
}

/* tprof_begin(name) and the range's category. The category record is written here rather than
 * through tp_range_category, which copies its text into the thread's table on every call: the
 * category lives in `names`, which outlives every window. A begin that was not kept (outside a
 * window, out of budget) gets no room for the category either (record.h, invariant 5). */
static void begin_python_range(const char *name) {
    tprof_begin(name);
    tp_tls *t = &tp_tls_cur;
    tp_rec *r = t->owed ? tp_room(t, 1) : NULL;
    if (!r) return;
    r->a = 0;
    r->b = tp_rec_word(TP_REC_CATEGORY, (uintptr_t)category);
    tp_publish(t, 1);
}

static int hook(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
    (void)obj, (void)arg;
    tp_pystack *s = &stack_cur;
    if (what == PyTrace_CALL) {
        int rec = tprof_is_recording() && s->depth < TP_STACK_MAX;
        const char *name = NULL;
        if (rec) {
            PyCodeObject *code = PyFrame_GetCode(frame);
            name = code_name(code);
            Py_DECREF(code);
            if (name == not_recorded) name = NULL;
        }
        push(s, name != NULL);
        if (name) begin_python_range(name);
    } else if (what == PyTrace_RETURN) {
        if (pop(s)) tprof_end();
    }
    return 0;
}

static int prepare(void) {
    if (!names_ready) {
        tp_strtab_init(&names);
        names_ready = 1;
        category = tp_strtab_get(&names, tp_strtab_intern(&names, tp_kcat_python_function,
                                                          TP_KLEN(tp_kcat_python_function)));
    }
    if (extra_index < 0) extra_index = request_extra(NULL);
    return extra_index >= 0 && !names.failed;
}

/* stack_start(prefixes, skip_dir) -> bool: installs the hook on the calling thread. False (and a
 * warning) when another profiling hook (a debugger, torch.profiler's with_stack) holds it. */
static PyObject *py_stack_start(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *seq, *skip;
    if (!PyArg_ParseTuple(args, "OU:stack_start", &seq, &skip)) return NULL;
    PyObject *tuple = PySequence_Tuple(seq);
    if (!tuple) return NULL;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(tuple); i++)
        if (!PyUnicode_Check(PyTuple_GET_ITEM(tuple, i))) {
            Py_DECREF(tuple);
            PyErr_SetString(PyExc_TypeError, "stack_start: the prefixes must be str");
            return NULL;
        }
    Py_XSETREF(prefixes, tuple);
    Py_XSETREF(skip_dir, Py_NewRef(skip));
    tp_pystack *s = &stack_cur;
    if (s->installed) return Py_NewRef(Py_True);
    if (PyThreadState_Get()->c_profilefunc) {
        tp_log_warn("with_stack: another profiler hook is installed on this thread (a "
                    "debugger, torch.profiler(with_stack=True)): no Python stacks");
        return Py_NewRef(Py_False);
    }
    if (!prepare()) return PyErr_NoMemory();
    memset(s, 0, sizeof(*s));
    s->installed = 1;
    PyEval_SetProfile(hook, NULL);
    return Py_NewRef(Py_True);
}

/* stack_stop(): removes the hook from the calling thread; the ranges still open end now, so the
 * window sees them closed where recording stopped. */
static PyObject *py_stack_stop(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    tp_pystack *s = &stack_cur;
    if (!s->installed) return Py_NewRef(Py_None);
    PyEval_SetProfile(NULL, NULL);
    while (s->depth > 0)
        if (pop(s)) tprof_end();
    s->installed = 0;
    return Py_NewRef(Py_None);
}

/* stack_forget(): in a child process after fork, where the forking thread's hook was copied: it
 * is removed without ending ranges (the child records nothing), so that a DataLoader worker does
 * not pay for a hook per Python call. */
static PyObject *py_stack_forget(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    tp_pystack *s = &stack_cur;
    if (s->installed) {
        PyEval_SetProfile(NULL, NULL);
        memset(s, 0, sizeof(*s));
    }
    return Py_NewRef(Py_None);
}

/* stack_installed() -> bool: whether the calling thread's profiling hook is tprof's. */
static PyObject *py_stack_installed(PyObject *mod, PyObject *unused) {
    (void)mod, (void)unused;
    return PyBool_FromLong(PyThreadState_Get()->c_profilefunc == hook);
}

PyMethodDef tp_py_stack_methods[] = {
    {"stack_start", py_stack_start, METH_VARARGS,
     "stack_start(prefixes, skip_dir, /)\n--\n\nRecords Python calls on this thread as "
     "python_function ranges while a window records (with_stack); file names lose the longest "
     "of prefixes; functions of files under skip_dir are not recorded. False when another hook "
     "holds the thread."},
    {"stack_stop", py_stack_stop, METH_NOARGS,
     "stack_stop()\n--\n\nStops recording Python calls on this thread; open ones end now."},
    {"stack_forget", py_stack_forget, METH_NOARGS,
     "stack_forget()\n--\n\nAfter fork, in the child: removes the copied hook without ending its "
     "ranges."},
    {"stack_installed", py_stack_installed, METH_NOARGS,
     "stack_installed()\n--\n\nWhether this thread's profiling hook is tprof's (with_stack)."},
    {NULL, NULL, 0, NULL},
};
