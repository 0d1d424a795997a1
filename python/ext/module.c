/* module.c - the module tprof._tprof: its types, its exception and its functions gathered.
 *
 * Multi-phase initialisation (PEP 489): PyInit__tprof returns the definition and Py_mod_exec
 * fills the module. The library's state is process-wide (one session, one recorder, one set of
 * signal handlers), and so is the extension's (static types, ConfigError, with_stack's hook and
 * name table), so the module keeps no state of its own (m_size 0) and says so to the interpreter:
 * - Py_mod_multiple_interpreters (3.12+): not supported; a subinterpreter's import fails rather
 *   than sharing the static types and the session between interpreters;
 * - Py_mod_gil (3.13+): the GIL is used; the extension's own statics (with_stack's names, the
 *   hook's stack) rely on it, so a free-threaded interpreter keeps the GIL on for this module.
 * An exec that runs again (the module removed from sys.modules and imported anew) reuses the
 * ready types and the one exception object. */
#include "tprof_py.h"

#include <string.h>

static PyMethodDef *const method_groups[] = {tp_py_session_methods, tp_py_analyze_methods,
                                             tp_py_stack_methods, tp_py_messages_methods};

static int add_functions(PyObject *m) {
    for (size_t g = 0; g < sizeof(method_groups) / sizeof(method_groups[0]); g++)
        if (PyModule_AddFunctions(m, method_groups[g])) return -1;
    return 0;
}

static int add_type(PyObject *m, const char *name, PyTypeObject *type) {
    if (PyType_Ready(type)) return -1;
    return PyModule_AddObjectRef(m, name, (PyObject *)type);
}

static int exec_module(PyObject *m) {
    if (!tp_py_config_error)
        tp_py_config_error = PyErr_NewExceptionWithDoc(
            "tprof.ConfigError",
            "A bad tprof configuration; the message names key, value and source.", PyExc_ValueError,
            NULL);
    if (!tp_py_config_error || PyModule_AddObjectRef(m, "ConfigError", tp_py_config_error) ||
        add_type(m, "range", &tp_py_range_type) ||
        add_type(m, "ranged_function", &tp_py_rangefn_type) ||
        add_type(m, "Config", &tp_py_config_type) || add_functions(m) ||
        tp_py_add_observer_api(m) || PyModule_AddStringConstant(m, "version", TPROF_VERSION))
        return -1;
    return 0;
}

static PyModuleDef_Slot module_slots[] = {
    {Py_mod_exec, NULL}, /* exec_module, set by PyInit__tprof */
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_MULTIPLE_INTERPRETERS_NOT_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef tprof_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "tprof._tprof",
    .m_doc = "libtprof for Python: ranges, steps, counters, configuration and trace analysis. "
             "Use it through the tprof package.",
    .m_size = 0, /* no per-module state: it is all process-wide (above) */
    .m_slots = module_slots,
};

PyMODINIT_FUNC PyInit__tprof(void); /* the interpreter's entry point, found by name */

PyMODINIT_FUNC PyInit__tprof(void) {
    /* ISO C converts no function pointer to void * (the slot's type): the pointer's bytes are
     * copied instead, which POSIX guarantees round-trip (as dlsym's do the other way). */
    int (*exec)(PyObject *) = exec_module;
    _Static_assert(sizeof(exec) == sizeof(module_slots[0].value), "function pointer size");
    memcpy(&module_slots[0].value, &exec, sizeof(exec));
    return PyModuleDef_Init(&tprof_module);
}
