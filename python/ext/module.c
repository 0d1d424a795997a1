/* module.c - the module tprof._tprof: its types, its exception and its functions gathered.
 *
 * One module per process holds the library, whose state (the session) is process-wide too, so
 * the module uses single-phase initialisation and static types. */
#include "tprof_py.h"

static PyMethodDef *const method_groups[] = {tp_py_session_methods, tp_py_analyze_methods,
                                             tp_py_stack_methods};

static int add_functions(PyObject *m) {
    for (size_t g = 0; g < sizeof(method_groups) / sizeof(method_groups[0]); g++)
        if (PyModule_AddFunctions(m, method_groups[g])) return -1;
    return 0;
}

static int add_type(PyObject *m, const char *name, PyTypeObject *type) {
    if (PyType_Ready(type)) return -1;
    return PyModule_AddObjectRef(m, name, (PyObject *)type);
}

static struct PyModuleDef tprof_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tprof._tprof",
    .m_doc = "libtprof for Python: ranges, steps, counters, configuration and trace analysis. "
             "Use it through the tprof package.",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__tprof(void); /* the interpreter's entry point, found by name */

PyMODINIT_FUNC PyInit__tprof(void) {
    PyObject *m = PyModule_Create(&tprof_module);
    if (!m) return NULL;
    if (!tp_py_config_error)
        tp_py_config_error = PyErr_NewExceptionWithDoc(
            "tprof.ConfigError",
            "A bad tprof configuration; the message names key, value and source.", PyExc_ValueError,
            NULL);
    if (!tp_py_config_error || PyModule_AddObjectRef(m, "ConfigError", tp_py_config_error) ||
        add_type(m, "range", &tp_py_range_type) ||
        add_type(m, "ranged_function", &tp_py_rangefn_type) ||
        add_type(m, "Config", &tp_py_config_type) || add_functions(m) ||
        tp_py_add_observer_api(m) || PyModule_AddStringConstant(m, "version", TPROF_VERSION)) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
