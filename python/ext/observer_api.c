/* observer_api.c - the table of recorder calls that torch's C++ observer uses, given to it as a
 * capsule (observer_api.h says why a table). Every entry is the library's own function, or a
 * thin wrapper that adds the public API's "is a session active" check the inline functions of
 * tprof.h make. */
#include "observer_api.h"
#include "tprof_py.h"

#include "record/inputs.h"
#include "record/record.h"
#include "model/flops.h"
#include "util/log.h"

static int op_begin(const char *name, int64_t seq, int64_t fwd_tid) {
    return tprof_active() ? tp_op_begin(name, seq, fwd_tid) : 0;
}

static void end(void) {
    tprof_end();
}

_Static_assert(TP_OBSERVER_PUSHED == TP_OP_PUSHED, "one flag, two names");

static uint64_t now(void) {
    return tp_clock_ticks();
}

static void begin(const char *name) {
    if (tprof_active()) tprof_begin_copy_(name);
}

static void complete(const char *name, uint64_t begin_ticks) {
    if (tprof_active()) tp_range_complete(name, begin_ticks);
}

static void warn(const char *text) {
    tp_log_warn("%s", text);
}

static const tp_observer_api api = {
    .size = sizeof(tp_observer_api),
    .op_begin = op_begin,
    .end = end,
    .op_pop = tp_op_pop,
    .now = now,
    .complete = complete,
    .arg_int = tprof_arg_int,
    .arg_str = tprof_arg_str,
    .inputs = tp_op_inputs,
    .flops_counted = tp_flops_counted,
    .memory = tp_memory_reported,
    .warn = warn,
    .begin = begin,
};

int tp_py_add_observer_api(PyObject *module) {
    PyObject *capsule = PyCapsule_New((void *)&api, TP_OBSERVER_CAPSULE, NULL);
    if (!capsule) return -1;
    int rc = PyModule_AddObjectRef(module, "observer_api", capsule);
    Py_DECREF(capsule);
    return rc;
}
