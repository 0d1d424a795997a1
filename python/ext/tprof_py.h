/* tprof_py.h - what the parts of the CPython extension tprof._tprof share: its types, its
 * exception and the helpers that turn Python values into the library's text.
 *
 * The extension is the library's C sources compiled together with these files, so it calls the
 * public API (include/tprof.h) for recording and the internal one for configuration and analysis.
 * Every function here expects the GIL held. */
#ifndef TP_PY_H
#define TP_PY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "tprof.h"

/* tprof.ConfigError (a ValueError): a bad configuration, with the library's one-line message. */
extern PyObject *tp_py_config_error;

extern PyTypeObject tp_py_range_type;   /* tprof.range */
extern PyTypeObject tp_py_rangefn_type; /* what @tprof.range decorates a function into */
extern PyTypeObject tp_py_config_type;  /* tprof.Config */

/* The library's configuration inside a tprof.Config (NULL when obj is not one; TypeError set). */
tprof_config *tp_py_config_get(PyObject *obj);

/* A range named name (any object: a non-string is named by its str()); NULL with an error set. */
PyObject *tp_py_range_new(PyObject *name);

/* obj's text as the library takes it: a str as UTF-8 (unencodable characters replaced), True and
 * False as "true" and "false", anything else by str(). *owner keeps the text alive; release it
 * with Py_DECREF. NULL with an error set when even str() fails. */
const char *tp_py_text(PyObject *obj, PyObject **owner);
/* tp_py_text, and a ValueError naming fn when the text holds a NUL (C would cut it there):
 * every str the library takes whole goes through it, as tprof.range's name does. */
const char *tp_py_text_whole(PyObject *obj, PyObject **owner, const char *fn);

/* The module's functions, by area (py_session.c, py_analyze.c, stack.c, py_messages.c); each ends
 * with a zeroed entry. */
extern PyMethodDef tp_py_session_methods[];
extern PyMethodDef tp_py_analyze_methods[];
extern PyMethodDef tp_py_stack_methods[];
extern PyMethodDef tp_py_messages_methods[];

/* Hands the library's queued lines to the handler tprof._messages installed (py_messages.c).
 * Called by the extension's functions that may print, on their way back to Python, so that their
 * lines arrive before they return; lines of other threads arrive by a pending call. */
void tp_py_messages_deliver(void);

/* Adds tprof._tprof.observer_api, the capsule torch's C++ observer records through
 * (observer_api.h). 0, or -1 with an error set. */
int tp_py_add_observer_api(PyObject *module);

#endif
