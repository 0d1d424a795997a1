/* range.c - tprof.range: the hot call from Python, a named range as a context manager, a
 * decorator and a pair of hook callables, all in C so that a range costs no Python frame.
 *
 * A range object is immutable (its name and the name's UTF-8), so one object may be entered
 * again while open (recursion), from several threads, and kept for reuse. Recording never raises:
 * __enter__, __exit__, begin and end cannot fail. */
#include "tprof_py.h"

#include "record/record.h"

#include <structmember.h>

typedef struct tp_py_range {
    PyObject_HEAD PyObject *name; /* the str given (or str() of the object given) */
    PyObject *owner;              /* keeps utf8 alive: name itself, or a bytes copy of it */
    const char *utf8;             /* what the recorder copies at each begin */
} tp_py_range;

/* A function decorated with a range: the call runs inside the range. */
typedef struct tp_py_rangefn {
    PyObject_HEAD tp_py_range *range;
    PyObject *func;
    PyObject *dict; /* __name__, __doc__, __wrapped__, ... from functools.update_wrapper */
    vectorcallfunc vectorcall;
} tp_py_rangefn;

const char *tp_py_text(PyObject *obj, PyObject **owner) {
    if (obj == Py_True || obj == Py_False) {
        *owner = PyUnicode_FromString(obj == Py_True ? "true" : "false");
        return *owner ? PyUnicode_AsUTF8(*owner) : NULL;
    }
    PyObject *s = PyUnicode_Check(obj) ? Py_NewRef(obj) : PyObject_Str(obj);
    if (!s) return NULL;
    const char *utf8 = PyUnicode_AsUTF8(s);
    if (utf8) {
        *owner = s;
        return utf8;
    }
    /* Lone surrogates (from a file name, say) cannot be UTF-8: replace them. */
    PyErr_Clear();
    *owner = PyUnicode_AsEncodedString(s, "utf-8", "replace");
    Py_DECREF(s);
    return *owner ? PyBytes_AS_STRING(*owner) : NULL;
}

const char *tp_py_text_whole(PyObject *obj, PyObject **owner, const char *fn) {
    const char *s = tp_py_text(obj, owner);
    if (!s) return NULL;
    Py_ssize_t n = 0;
    if (PyUnicode_Check(*owner))
        PyUnicode_AsUTF8AndSize(*owner, &n); /* cached by tp_py_text */
    else
        n = PyBytes_GET_SIZE(*owner);
    if ((size_t)n == strlen(s)) return s;
    PyErr_Format(PyExc_ValueError, "%s: the text %.80R holds a NUL character", fn, obj);
    Py_CLEAR(*owner);
    return NULL;
}

PyObject *tp_py_range_new(PyObject *name) {
    tp_py_range *r = PyObject_New(tp_py_range, &tp_py_range_type);
    if (!r) return NULL;
    r->utf8 = tp_py_text(name, &r->owner);
    if (!r->utf8) {
        r->name = NULL;
        Py_DECREF(r);
        return NULL;
    }
    r->name = PyUnicode_Check(r->owner) ? Py_NewRef(r->owner) : PyObject_Str(name);
    if (!r->name) {
        Py_DECREF(r);
        return NULL;
    }
    /* The recorder copies a C string: a NUL would cut the name silently. */
    if (PyUnicode_FindChar(r->name, 0, 0, PyUnicode_GET_LENGTH(r->name), 1) >= 0) {
        PyErr_Format(PyExc_ValueError, "tprof.range: the name %.80R holds a NUL character",
                     r->name);
        Py_DECREF(r);
        return NULL;
    }
    return (PyObject *)r;
}

static PyObject *rangefn_new(tp_py_range *range, PyObject *func);

/* tprof.range(name) or, as a bare decorator, tprof.range(function) named by its __qualname__. */
static PyObject *range_vectorcall(PyObject *type, PyObject *const *args, size_t nargsf,
                                  PyObject *kwnames) {
    (void)type;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != 1 || (kwnames && PyTuple_GET_SIZE(kwnames))) {
        PyErr_SetString(PyExc_TypeError, "tprof.range() takes one argument: a name or a function");
        return NULL;
    }
    PyObject *arg = args[0];
    if (PyUnicode_Check(arg) || !PyCallable_Check(arg)) return tp_py_range_new(arg);
    PyObject *qualname = PyObject_GetAttrString(arg, "__qualname__");
    if (!qualname) {
        PyErr_Clear();
        qualname = PyObject_Repr(arg);
        if (!qualname) return NULL;
    }
    tp_py_range *r = (tp_py_range *)tp_py_range_new(qualname);
    Py_DECREF(qualname);
    if (!r) return NULL;
    PyObject *fn = rangefn_new(r, arg);
    Py_DECREF(r);
    return fn;
}

static PyObject *range_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "tprof.range() takes no keyword arguments");
        return NULL;
    }
    return range_vectorcall((PyObject *)type, &PyTuple_GET_ITEM(args, 0),
                            (size_t)PyTuple_GET_SIZE(args), NULL);
}

static void range_dealloc(tp_py_range *r) {
    Py_XDECREF(r->name);
    Py_XDECREF(r->owner);
    PyObject_Free(r);
}

static PyObject *range_enter(tp_py_range *r, PyObject *unused) {
    (void)unused;
    tprof_begin_copy(r->utf8);
    return Py_NewRef(r);
}

/* __exit__ and end: whatever the arguments (exception details, hook arguments), the range ends
 * and None is returned, so an exception passes through and a forward hook changes nothing. */
static PyObject *range_end(tp_py_range *r, PyObject *const *args, Py_ssize_t nargs) {
    (void)args, (void)nargs;
    /* named: a range open as a window opened (an epoch's) is written in it (record.h) */
    if (tprof_active()) tp_range_end_named(r->utf8);
    return Py_NewRef(Py_None);
}

static PyObject *range_begin(tp_py_range *r, PyObject *const *args, Py_ssize_t nargs) {
    (void)args, (void)nargs;
    tprof_begin_copy(r->utf8);
    return Py_NewRef(Py_None);
}

/* range(function): the decorator. */
static PyObject *range_call(tp_py_range *r, PyObject *args, PyObject *kwds) {
    PyObject *func;
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "a tprof.range decorates one function");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O:range", &func)) return NULL;
    if (!PyCallable_Check(func)) {
        PyErr_Format(PyExc_TypeError, "a tprof.range decorates a function, not %.100s",
                     Py_TYPE(func)->tp_name);
        return NULL;
    }
    return rangefn_new(r, func);
}

static PyObject *range_repr(tp_py_range *r) {
    return PyUnicode_FromFormat("tprof.range(%R)", r->name);
}

static PyMethodDef range_methods[] = {
    {"__enter__", (PyCFunction)range_enter, METH_NOARGS,
     "__enter__($self, /)\n--\n\nBegins the range; returns it."},
    {"__exit__", (PyCFunction)(void (*)(void))range_end, METH_FASTCALL,
     "__exit__($self, /, *exc_info)\n--\n\nEnds the range; exceptions pass through."},
    {"begin", (PyCFunction)(void (*)(void))range_begin, METH_FASTCALL,
     "begin($self, /, *args)\n--\n\nBegins the range; ignores its arguments (usable as a forward "
     "pre-hook)."},
    {"end", (PyCFunction)(void (*)(void))range_end, METH_FASTCALL,
     "end($self, /, *args)\n--\n\nEnds the innermost range; ignores its arguments (usable as a "
     "forward hook)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef range_members[] = {
    {"name", T_OBJECT_EX, offsetof(tp_py_range, name), READONLY, "The range's name."},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject tp_py_range_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tprof.range",
    .tp_basicsize = sizeof(tp_py_range),
    .tp_dealloc = (destructor)range_dealloc,
    .tp_repr = (reprfunc)range_repr,
    .tp_call = (ternaryfunc)range_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "range(name, /)\n--\n\n"
              "A named range: `with tprof.range(name):`, `@tprof.range(name)` or `@tprof.range`.\n"
              "Ranges nest per thread and are kept only while a profile records.",
    .tp_methods = range_methods,
    .tp_members = range_members,
    .tp_new = range_tp_new,
    .tp_vectorcall = range_vectorcall,
};

/* ---- the decorated function ---- */

static PyObject *rangefn_vectorcall(PyObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames) {
    tp_py_rangefn *f = (tp_py_rangefn *)self;
    tprof_begin_copy(f->range->utf8);
    PyObject *res = PyObject_Vectorcall(f->func, args, nargsf, kwnames);
    if (tprof_active()) tp_range_end_named(f->range->utf8);
    return res;
}

static PyObject *rangefn_new(tp_py_range *range, PyObject *func) {
    tp_py_rangefn *f = PyObject_GC_New(tp_py_rangefn, &tp_py_rangefn_type);
    if (!f) return NULL;
    f->range = (tp_py_range *)Py_NewRef(range);
    f->func = Py_NewRef(func);
    f->dict = NULL;
    f->vectorcall = rangefn_vectorcall;
    PyObject_GC_Track(f);
    /* __name__, __qualname__, __doc__, __module__, __wrapped__ as functools.wraps gives them. */
    PyObject *functools = PyImport_ImportModule("functools");
    PyObject *res =
        functools ? PyObject_CallMethod(functools, "update_wrapper", "OO", f, func) : NULL;
    Py_XDECREF(functools);
    if (!res) {
        Py_DECREF(f);
        return NULL;
    }
    Py_DECREF(res);
    return (PyObject *)f;
}

static int rangefn_traverse(tp_py_rangefn *f, visitproc visit, void *arg) {
    Py_VISIT(f->range);
    Py_VISIT(f->func);
    Py_VISIT(f->dict);
    return 0;
}

static int rangefn_clear(tp_py_rangefn *f) {
    Py_CLEAR(f->range);
    Py_CLEAR(f->func);
    Py_CLEAR(f->dict);
    return 0;
}

static void rangefn_dealloc(tp_py_rangefn *f) {
    PyObject_GC_UnTrack(f);
    rangefn_clear(f);
    PyObject_GC_Del(f);
}

/* A decorated method binds like a function does. */
static PyObject *rangefn_get(PyObject *self, PyObject *obj, PyObject *type) {
    (void)type;
    if (!obj || obj == Py_None) return Py_NewRef(self);
    return PyMethod_New(self, obj);
}

static PyObject *rangefn_repr(tp_py_rangefn *f) {
    return PyUnicode_FromFormat("<%R in tprof.range(%R)>", f->func, f->range->name);
}

static PyMemberDef rangefn_members[] = {
    {"range", T_OBJECT_EX, offsetof(tp_py_rangefn, range), READONLY, "The range of each call."},
    {NULL, 0, 0, 0, NULL},
};

static PyGetSetDef rangefn_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject tp_py_rangefn_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tprof.ranged_function",
    .tp_basicsize = sizeof(tp_py_rangefn),
    .tp_dealloc = (destructor)rangefn_dealloc,
    .tp_vectorcall_offset = offsetof(tp_py_rangefn, vectorcall),
    .tp_repr = (reprfunc)rangefn_repr,
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_doc = "A function whose every call runs inside a tprof.range.",
    .tp_traverse = (traverseproc)rangefn_traverse,
    .tp_clear = (inquiry)rangefn_clear,
    .tp_members = rangefn_members,
    .tp_getset = rangefn_getset,
    .tp_descr_get = rangefn_get,
    .tp_dictoffset = offsetof(tp_py_rangefn, dict),
};
