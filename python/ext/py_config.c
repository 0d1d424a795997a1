/* py_config.c - tprof.Config: the library's configuration (tprof_config) as a Python object.
 *
 * Every source goes through the library's own functions (src/config), so keys parse, combine
 * and fail exactly as in C; a bad value raises tprof.ConfigError with the C message. Python
 * values become the text a YAML file or an environment variable would hold (value_text): bools,
 * numbers, str, and bytes or os.PathLike as paths; lists and tuples become YAML-style lists.
 * Another type raises TypeError naming the key, a NUL character ValueError. */
#include "tprof_py.h"

#include "config/config.h"

#include <stdlib.h>

PyObject *tp_py_config_error;

typedef struct tp_py_config {
    PyObject_HEAD tprof_config *cfg;
} tp_py_config;

tprof_config *tp_py_config_get(PyObject *obj) {
    if (PyObject_TypeCheck(obj, &tp_py_config_type)) return ((tp_py_config *)obj)->cfg;
    PyErr_Format(PyExc_TypeError, "expected a tprof.Config, not %.100s", Py_TYPE(obj)->tp_name);
    return NULL;
}

static PyObject *config_wrap(PyTypeObject *type, tprof_config *cfg) {
    if (!cfg) return PyErr_NoMemory();
    tp_py_config *c = (tp_py_config *)type->tp_alloc(type, 0);
    if (!c) {
        tprof_config_free(cfg);
        return NULL;
    }
    c->cfg = cfg;
    return (PyObject *)c;
}

static PyObject *config_tp_new(PyTypeObject *type, PyObject *args, PyObject *kwds) {
    if (!PyArg_ParseTuple(args, ":Config") || (kwds && PyDict_GET_SIZE(kwds))) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "tprof.Config() takes no arguments; use set()");
        return NULL;
    }
    return config_wrap(type, tprof_config_new());
}

static void config_dealloc(tp_py_config *c) {
    tprof_config_free(c->cfg);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyObject *fail(const tp_py_config *c) {
    PyErr_SetString(tp_py_config_error, tprof_config_error(c->cfg));
    return NULL;
}

/* A value's text as the library takes it: True/False as true/false, an int or a float by str(),
 * (numpy ones too), a str, bytes or os.PathLike as a path is (bytes kept as they are, os.fsdecode's
 * inverse for a str that is not UTF-8). *owner keeps the text alive. NULL with TypeError naming the
 * key for any other type, ValueError for a NUL (C would cut the value there). */
static const char *value_text(PyObject *value, const char *key, const char *source,
                              PyObject **owner) {
    if (PyBool_Check(value) || PyIndex_Check(value) || PyFloat_Check(value))
        return tp_py_text(value, owner);
    PyObject *path = PyOS_FSPath(value);
    if (!path) {
        PyErr_Format(PyExc_TypeError,
                     "profiling.%.80s (from %.80s) must be a bool, an int, a float, a str or a "
                     "path, or a list of them; not %.100s",
                     key, source, Py_TYPE(value)->tp_name);
        return NULL;
    }
    PyObject *bytes = path;
    if (PyUnicode_Check(path)) {
        bytes = PyUnicode_AsUTF8String(path);
        if (!bytes) {
            PyErr_Clear(); /* lone surrogates: a file name's bytes, as os.fsencode gives them */
            bytes = PyUnicode_EncodeFSDefault(path);
        }
        Py_DECREF(path);
        if (!bytes) return NULL;
    }
    const char *text = PyBytes_AS_STRING(bytes);
    if (strlen(text) != (size_t)PyBytes_GET_SIZE(bytes)) {
        PyErr_Format(PyExc_ValueError, "profiling.%.80s (from %.80s) holds a NUL character", key,
                     source);
        Py_DECREF(bytes);
        return NULL;
    }
    *owner = bytes;
    return text;
}

/* A list or tuple value: each item as text, then the library's list rule. -2 when a Python
 * error is set, else what tp_config_apply_list returns. */
static int set_list(tp_py_config *c, const char *key, Py_ssize_t keylen, PyObject *seq,
                    const char *source) {
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    const char **items = PyMem_Calloc((size_t)n + 1, sizeof(char *));
    PyObject *owners = PyList_New(n); /* keeps the items' text alive */
    int rc = -2;
    if (!items || !owners) {
        if (!PyErr_Occurred()) PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *owner;
        if (!(items[i] = value_text(PySequence_Fast_GET_ITEM(seq, i), key, source, &owner)))
            goto out;
        PyList_SET_ITEM(owners, i, owner);
    }
    rc = tp_config_apply_list(c->cfg, key, (size_t)keylen, items, (size_t)n, source);
out:
    Py_XDECREF(owners);
    PyMem_Free(items);
    return rc;
}

static PyObject *config_set(tp_py_config *c, PyObject *args, PyObject *kwds) {
    static char *kwlist[] = {"key", "value", "source", NULL};
    const char *key, *source = "tprof.Config.set";
    Py_ssize_t keylen;
    PyObject *value;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s#O|s:set", kwlist, &key, &keylen, &value,
                                     &source))
        return NULL;
    if (strlen(key) != (size_t)keylen) {
        PyErr_SetString(PyExc_ValueError, "tprof.Config.set: the key holds a NUL character");
        return NULL;
    }
    if (keylen > 10 && strncmp(key, "profiling.", 10) == 0) key += 10, keylen -= 10;
    int rc;
    if (PyList_Check(value) || PyTuple_Check(value)) {
        PyObject *seq = PySequence_Fast(value, "a list");
        if (!seq) return NULL;
        rc = set_list(c, key, keylen, seq, source);
        Py_DECREF(seq);
    } else {
        PyObject *owner;
        const char *text = value_text(value, key, source, &owner);
        if (!text) return NULL;
        rc = tp_config_apply(c->cfg, key, (size_t)keylen, text, source);
        Py_DECREF(owner);
    }
    if (rc == -2) return NULL;
    return rc ? fail(c) : Py_NewRef(Py_None);
}

static PyObject *config_load_yaml(tp_py_config *c, PyObject *arg) {
    PyObject *path;
    if (!PyUnicode_FSConverter(arg, &path)) return NULL;
    int rc = tprof_config_load_yaml(c->cfg, PyBytes_AS_STRING(path));
    Py_DECREF(path);
    return rc ? fail(c) : Py_NewRef(Py_None);
}

static PyObject *config_load_env(tp_py_config *c, PyObject *unused) {
    (void)unused;
    return tprof_config_load_env(c->cfg) ? fail(c) : Py_NewRef(Py_None);
}

/* argv (a list of str, argv[0] the program) as the C array the library consumes from; the
 * list then holds what is left, the same str objects. load(cfg, &argc, argv) is the source. */
static PyObject *consume_args(tp_py_config *c, PyObject *list,
                              int (*load)(tprof_config *, int *, char **)) {
    if (!PyList_Check(list)) {
        PyErr_SetString(PyExc_TypeError, "argv must be a list of str");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(list);
    if (n > INT32_MAX - 1) return PyErr_NoMemory();
    PyObject *items = PyList_GetSlice(list, 0, n); /* stable while the C side reorders */
    char **argv = PyMem_Calloc((size_t)n + 1, sizeof(*argv));
    PyObject *rest = NULL;
    if (!items || !argv) {
        if (items) PyErr_NoMemory();
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *a = PyList_GET_ITEM(items, i);
        if (!PyUnicode_Check(a)) {
            PyErr_Format(PyExc_TypeError, "argv[%zd] is %.100s, not str", i, Py_TYPE(a)->tp_name);
            goto out;
        }
        /* The UTF-8 buffers belong to the str objects in items, which outlive argv. */
        Py_ssize_t len;
        if (!(argv[i] = (char *)PyUnicode_AsUTF8AndSize(a, &len))) goto out;
        if ((size_t)len != strlen(argv[i])) { /* C would cut the argument there */
            PyErr_Format(PyExc_ValueError, "argv[%zd] holds a NUL character", i);
            goto out;
        }
    }
    int argc = (int)n;
    int rc = load(c->cfg, &argc, argv);
    if (!(rest = PyList_New(argc))) goto out;
    for (int i = 0, j = 0; i < argc; i++) {
        /* What is left keeps its order: find each in the original list, from the last found. */
        while (j < n - 1 && PyUnicode_AsUTF8(PyList_GET_ITEM(items, j)) != argv[i])
            j++;
        PyList_SET_ITEM(rest, i, Py_NewRef(PyList_GET_ITEM(items, j)));
        j++;
    }
    if (PyList_SetSlice(list, 0, n, rest)) Py_CLEAR(rest);
    if (rest && rc) {
        Py_CLEAR(rest);
        fail(c);
    }
out:
    PyMem_Free(argv);
    Py_XDECREF(items);
    return rest;
}

static PyObject *config_load_args(tp_py_config *c, PyObject *list) {
    return consume_args(c, list, tprof_config_load_args);
}

static PyObject *config_load_sources(tp_py_config *c, PyObject *list) {
    return consume_args(c, list, tp_config_load_sources);
}

static PyObject *config_validate(tp_py_config *c, PyObject *unused) {
    (void)unused;
    char err[512];
    if (tp_config_validate(c->cfg, err, sizeof(err)) == 0) return Py_NewRef(Py_None);
    PyErr_SetString(tp_py_config_error, err);
    return NULL;
}

static PyObject *config_to_json(tp_py_config *c, PyObject *unused) {
    (void)unused;
    char *json = tprof_config_to_json(c->cfg);
    if (!json) return PyErr_NoMemory();
    PyObject *s = PyUnicode_FromString(json);
    free(json);
    return s;
}

static PyObject *config_copy(tp_py_config *c, PyObject *unused) {
    (void)unused;
    return config_wrap(Py_TYPE(c), tp_config_dup(c->cfg));
}

/* The schedule the configuration describes, by the library's rule (which keys select it). */
static PyObject *config_schedule(tp_py_config *c, PyObject *unused) {
    (void)unused;
    tp_schedule s;
    tp_config_schedule(c->cfg, &s);
    static const char *const modes[] = {"all", "steps", "epochs"};
    PyObject *epochs = PyList_New((Py_ssize_t)s.nepochs);
    for (size_t i = 0; epochs && i < s.nepochs; i++) {
        PyObject *e = PyLong_FromLongLong(s.epochs[i]);
        if (!e)
            Py_CLEAR(epochs);
        else
            PyList_SET_ITEM(epochs, (Py_ssize_t)i, e);
    }
    if (!epochs) return NULL;
    return Py_BuildValue("{s:s,s:L,s:L,s:L,s:L,s:L,s:O,s:N,s:L}", "mode", modes[s.mode],
                         "skip_first", (long long)s.skip_first, "wait", (long long)s.wait, "warmup",
                         (long long)s.warmup, "active", (long long)s.active, "repeat",
                         (long long)s.repeat, "skip_first_wait",
                         s.skip_first_wait ? Py_True : Py_False, "epochs", epochs, "epoch_steps",
                         (long long)s.epoch_steps);
}

static PyObject *config_origin(tp_py_config *c, PyObject *arg) {
    Py_ssize_t len;
    const char *key = PyUnicode_AsUTF8AndSize(arg, &len);
    if (!key) return NULL;
    const char *origin = tp_config_origin(c->cfg, key, (size_t)len);
    if (!origin) Py_RETURN_NONE;
    return PyUnicode_FromString(origin);
}

static PyObject *config_repr(tp_py_config *c) {
    char *json = tprof_config_to_json(c->cfg);
    if (!json) return PyErr_NoMemory();
    PyObject *r = PyUnicode_FromFormat("tprof.Config(%s)", json);
    free(json);
    return r;
}

static PyMethodDef config_methods[] = {
    {"set", (PyCFunction)(void (*)(void))config_set, METH_VARARGS | METH_KEYWORDS,
     "set($self, key, value, source='tprof.Config.set')\n--\n\nSets one key (bool, int, str or a "
     "list) "
     "as the library parses it; raises ConfigError with the library's message."},
    {"load_yaml", (PyCFunction)config_load_yaml, METH_O,
     "load_yaml($self, path, /)\n--\n\nReads the keys of the file's top-level `profiling:` "
     "mapping."},
    {"load_env", (PyCFunction)config_load_env, METH_NOARGS,
     "load_env($self)\n--\n\nReads the TPROF_<KEY> variables."},
    {"load_args", (PyCFunction)config_load_args, METH_O,
     "load_args($self, argv, /)\n--\n\nConsumes tprof's arguments from argv (a list, argv[0] the "
     "program), in place; returns the "
     "list."},
    {"load_sources", (PyCFunction)config_load_sources, METH_O,
     "load_sources($self, argv, /)\n--\n\nAs tprof_init: the YAML file (--profiling.config or "
     "TPROF_CONFIG), the environment, then "
     "argv (consumed in place; every source runs, the first error is raised)."},
    {"validate", (PyCFunction)config_validate, METH_NOARGS,
     "validate($self)\n--\n\nChecks the rules between keys (both schedules, epoch_steps without "
     "epochs)."},
    {"to_json", (PyCFunction)config_to_json, METH_NOARGS,
     "to_json($self)\n--\n\nThe effective configuration as a JSON object (what config.json "
     "holds)."},
    {"copy", (PyCFunction)config_copy, METH_NOARGS, "copy($self)\n--\n\nAn independent copy."},
    {"origin", (PyCFunction)config_origin, METH_O,
     "origin($self, key, /)\n--\n\nThe source that set key last (as messages name it), or None "
     "for the built-in default."},
    {"schedule", (PyCFunction)config_schedule, METH_NOARGS,
     "schedule($self)\n--\n\nThe schedule, by the library's rule: mode ('all', 'steps' or "
     "'epochs') and its numbers."},
    {NULL, NULL, 0, NULL},
};

PyTypeObject tp_py_config_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tprof.Config",
    .tp_basicsize = sizeof(tp_py_config),
    .tp_dealloc = (destructor)config_dealloc,
    .tp_repr = (reprfunc)config_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Config()\n--\n\n"
              "tprof's configuration: the built-in defaults, then the sources applied to it, in "
              "the order called (docs/CONFIG.md).",
    .tp_methods = config_methods,
    .tp_new = config_tp_new,
};
