/* observer.cpp - torch's ops as tprof ranges, seen where torch.profiler sees them: a global
 * at::RecordFunction callback and c10's memory reporting. The module tprof._observer; the
 * project's only C++, because these two APIs are C++ (docs/PYTHON.md, "Op recording through
 * torch's observer").
 *
 * Every RecordFunction (an aten op, an autograd node, a record_function range, a compiled
 * region, a collective's record_param_comms) becomes a range on the thread that runs it,
 * named and categorised as Kineto writes it ("cpu_op", or "user_annotation" for USER_SCOPE),
 * with Kineto's "Sequence number" and "Fwd thread id" (the link from a backward op to the
 * forward op that made it), and with record_shapes its "Input Dims", "Input type" and
 * "Concrete Inputs". FLOPs come from the library's own formulas (trace/flops.c, shared with the
 * trace reader), fed the same text. Collectives get the args of their ParamCommsDebugInfo.
 *
 * The callback is registered only while a window records (tprof.torch.observer calls start and
 * stop as windows open and close): outside windows torch runs no callback at all. A range
 * begun by the callback always ends on the thread that began it (torch calls a RecordFunction's
 * end callbacks where it ends; an async one ended elsewhere stays open there and the window
 * marks it truncated). record_function ranges (USER_SCOPE) are written whole at their end
 * instead, from their begin time, because they enclose Python hooks that end tprof's own ranges
 * (on_start).
 *
 * Memory: a ProfilerStateBase pushed as the starting thread's PROFILER_STATE debug info, as
 * torch.profiler does, so that the CPU allocator and the CUDA caching allocator report every
 * allocation and free to it, on that thread and on those that inherit its thread-local state
 * (autograd's workers, at::launch). Its configuration is "disabled", so torch sees no profiler
 * running (profilerEnabled() stays false) and behaves exactly as unprofiled.
 *
 * The library is reached through the table tprof._tprof gives (ext/observer_api.h). Nothing
 * here throws into torch: the callbacks catch everything. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>
#include <torch/csrc/profiler/api.h>

#include <atomic>
#include <charconv>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>

#include "model/kineto.h"
#include "observer_api.h"

namespace {

namespace prof = torch::profiler::impl;

const tp_observer_api *api; // set by start, never cleared (the extension outlives us)
std::atomic<bool> shapes_on, flops_on;
at::CallbackHandle handle; // 0: no callback registered

/* ---- the text of an op's inputs, as Kineto writes it ---- */

/* JSON string content of s (the values are short: scalars and dtype names). */
void append_escaped(std::string &out, const std::string &s) {
    for (unsigned char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c < 0x20) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\u%04x", c);
            out += hex;
        } else {
            out += static_cast<char>(c);
        }
    }
}

/* An integer in decimal, without the temporary string std::to_string makes. */
void append_int(std::string &out, int64_t v) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, v).ptr;
    out.append(digits, static_cast<size_t>(end - digits));
}

/* "[a, b, ...]": item(out, i) appends the i-th of n items. */
template <typename Item> void append_list(std::string &out, size_t n, Item item) {
    out += '[';
    for (size_t i = 0; i < n; i++) {
        if (i) out += ", ";
        item(out, i);
    }
    out += ']';
}

void append_sizes(std::string &out, const at::Tensor &t) {
    auto sizes = t.defined() ? t.sizes() : c10::IntArrayRef();
    append_list(out, sizes.size(), [&](std::string &o, size_t i) { append_int(o, sizes[i]); });
}

/* A scalar or a list of scalars printed as torch prints an IValue ("1", "0.", "False",
 * "[1, 1]"): what Kineto's "Concrete Inputs" holds. Ints, bools and int lists (nearly every
 * case: sizes, strides, dims, flags) are written directly; the rest through torch's printer. */
void append_concrete(std::string &out, const c10::IValue &v) {
    if (v.isInt()) {
        append_int(out, v.toInt());
    } else if (v.isBool()) {
        out += v.toBool() ? "True" : "False";
    } else if (v.isIntList()) {
        auto list = v.toIntList();
        append_list(out, list.size(),
                    [&](std::string &o, size_t i) { append_int(o, list.get(i)); });
    } else {
        std::ostringstream ss;
        ss << v;
        append_escaped(out, ss.str());
    }
}

bool is_scalar_list(const c10::IValue &v) {
    return v.isIntList() || v.isDoubleList() || v.isBoolList();
}

/* One input's entries of the three lists. */
void describe_input(const c10::IValue &v, std::string &dims, std::string &types,
                    std::string &concrete) {
    std::string_view type;
    bool has_value = false;
    if (v.isTensor()) {
        const at::Tensor &t = v.toTensor();
        append_sizes(dims, t);
        if (t.defined()) type = t.dtype().name(); // "float", "long int", "c10::Half"
    } else if (v.isTensorList()) {
        auto list = v.toTensorList();
        append_list(dims, list.size(),
                    [&](std::string &o, size_t i) { append_sizes(o, list.get(i)); });
        type = "TensorList";
    } else {
        dims += "[]";
        if (v.isScalar())
            type = "Scalar";
        else if (is_scalar_list(v))
            type = "ScalarList";
        has_value = !type.empty();
    }
    types += '"';
    types += type;
    types += '"';
    concrete += '"';
    if (has_value) append_concrete(concrete, v);
    concrete += '"';
}

struct input_text {
    std::string dims, types, concrete;
};

void describe_inputs(const at::RecordFunction &fn, input_text &out) {
    out.dims = "[";
    out.types = "[";
    out.concrete = "[";
    auto inputs = fn.inputs();
    for (size_t i = 0; i < inputs.size(); i++) {
        if (i) {
            out.dims += ", ";
            out.types += ", ";
            out.concrete += ", ";
        }
        describe_input(inputs[i], out.dims, out.types, out.concrete);
    }
    out.dims += ']';
    out.types += ']';
    out.concrete += ']';
}

/* ---- collectives ---- */

void annotate_collective() {
    auto *info = dynamic_cast<torch::ParamCommsDebugInfo *>(
        c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PARAM_COMMS_INFO));
    if (!info) return;
    int64_t elem = static_cast<int64_t>(c10::elementSize(info->getDType()));
    int64_t nelems = std::max(info->getInMessageNelems(), info->getOutMessageNelems());
    api->arg_str(tp_karg_collective_name, info->getCollectiveName().c_str());
    api->arg_int(tp_karg_seq, info->getSequenceNumber());
    api->arg_int("bytes", nelems * elem);
    api->arg_int(tp_karg_group_size, info->getWorldSize());
    api->arg_int("In msg nelems", info->getInMessageNelems());
    api->arg_int("Out msg nelems", info->getOutMessageNelems());
    api->arg_int("Rank", info->getRank());
    api->arg_str("Process Group Name", info->getProcessGroupName().c_str());
}

/* ---- the callbacks ---- */

void annotate_inputs(const at::RecordFunction &fn, const char *name) {
    bool want_shapes = shapes_on.load(std::memory_order_relaxed);
    bool want_flops =
        flops_on.load(std::memory_order_relaxed) && api->flops_counted(name, std::strlen(name));
    if (!(want_shapes || want_flops) || !fn.needsInputs() || fn.inputs().empty()) return;
    thread_local input_text text;
    describe_inputs(fn, text);
    if (want_shapes) {
        api->shapes(text.dims.c_str());
        api->arg_json(tp_karg_input_type, text.types.c_str());
        api->arg_json(tp_karg_concrete_inputs, text.concrete.c_str());
    }
    if (want_flops) {
        int64_t n = api->flops_of(name, std::strlen(name), text.dims.data(), text.dims.size(),
                                  text.concrete.data(), text.concrete.size());
        if (n > 0) api->flops(static_cast<uint64_t>(n));
    }
}

/* The state a RecordFunction needs at its end, kept only when the thread id it records is not
 * enough: a USER_SCOPE one (record_function) is written whole at its end, from its begin time
 * (tp_range_complete: torch's Optimizer.step encloses Lightning's hooks, which end tprof's own
 * stage ranges, so it must not sit on the thread's stack of ranges); one begun on another
 * thread than the one that made it (gloo's work, begun on the backend's thread) ends its range
 * where it began. */
struct observed : at::ObserverContext {
    uint64_t thread = at::RecordFunction::currentThreadId();
    uint64_t begin_ticks = 0;
    bool whole = false;
    bool link = false;   /* an autograd evaluate_function range, kept: it takes its node's link */
    bool pushed = false; /* its External id went to CUPTI: popped at its end, on this thread */
};

/* autograd's "evaluate_function: XBackward0" range has no sequence number of its own; Kineto
 * gives it its node's (the XBackward0 range inside it, the first range there with a sequence
 * number) afterwards. Here the node's start remembers its link on the thread and the enclosing
 * range takes it at its end, when it is the thread's innermost range again. */
constexpr char evaluate_prefix[] = "autograd::engine::evaluate_function: ";
thread_local int64_t node_seq = -1;
thread_local int64_t node_fwd_tid = 0;

bool is_evaluate(const at::RecordFunction &fn, const char *name) {
    return fn.seqNr() < 0 && std::strncmp(name, evaluate_prefix, sizeof evaluate_prefix - 1) == 0;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction &fn) {
    if (fn.scope() == at::RecordScope::USER_SCOPE) {
        auto ctx = std::make_unique<observed>();
        ctx->begin_ticks = api->now();
        ctx->whole = true;
        return ctx;
    }
    bool evaluate = false, kept = false, pushed = false;
    try {
        const char *name = fn.name();
        int got = api->op_begin(name, fn.seqNr(), static_cast<int64_t>(fn.forwardThreadId()));
        kept = got != 0;
        pushed = (got & TP_OBSERVER_PUSHED) != 0;
        if (pushed && fn.isAsync()) { // may end on another thread: CUPTI's stack is per thread
            api->op_pop();
            pushed = false;
        }
        if (kept) {
            annotate_inputs(fn, name);
            if (std::strcmp(name, "record_param_comms") == 0) annotate_collective();
        }
        evaluate = is_evaluate(fn, name);
        if (evaluate) {
            node_seq = -1;
        } else if (fn.seqNr() >= 0 && node_seq < 0) { // the node: the first linked range inside
            node_seq = fn.seqNr();
            node_fwd_tid = static_cast<int64_t>(fn.forwardThreadId());
        }
    } catch (...) {
        api->warn("the op observer failed to describe an op (its range has no args)");
    }
    if ((evaluate && kept) || pushed || fn.threadId() != at::RecordFunction::currentThreadId()) {
        auto ctx = std::make_unique<observed>();
        ctx->link = evaluate && kept;
        ctx->pushed = pushed;
        return ctx;
    }
    return nullptr;
}

/* A range ends on the thread it began on, where the RecordFunction ends too, but for an async
 * one (a future's callback) that may end elsewhere: its end there would close that thread's
 * innermost range, so it is left open (the window then cuts it and marks it truncated). */
void on_end(const at::RecordFunction &fn, at::ObserverContext *ctx) {
    auto *o = static_cast<observed *>(ctx);
    uint64_t began = o ? o->thread : fn.threadId();
    if (began != at::RecordFunction::currentThreadId()) return;
    if (o && o->whole) {
        api->complete(fn.name(), o->begin_ticks);
        return;
    }
    if (o && o->link && node_seq >= 0) {
        api->arg_int(tp_karg_sequence_number, node_seq);
        api->arg_int(tp_karg_fwd_thread_id, node_fwd_tid);
        node_seq = -1;
    }
    api->end();
    if (o && o->pushed) api->op_pop();
}

/* ---- memory ---- */

struct memory_reporter final : prof::ProfilerStateBase {
    memory_reporter()
        : prof::ProfilerStateBase(prof::ProfilerConfig(prof::ProfilerState::Disabled, false,
                                                       /*profile_memory=*/true)) {}
    std::atomic<bool> on{false};

    void reportMemoryUsage(void *ptr, int64_t bytes, size_t total_allocated, size_t total_reserved,
                           c10::Device device) override {
        if (!on.load(std::memory_order_relaxed)) return;
        int dev = device.is_cpu() ? -1 : device.is_cuda() ? device.index() : -2;
        if (dev == -2) return; // only the host and CUDA devices, as tprof_alloc
        api->memory(dev, ptr, bytes, static_cast<int64_t>(total_allocated),
                    static_cast<int64_t>(total_reserved));
    }
    bool memoryProfilingEnabled() const override { return on.load(std::memory_order_relaxed); }
    prof::ActiveProfilerType profilerType() override { return prof::ActiveProfilerType::NONE; }
};

std::shared_ptr<memory_reporter> reporter; // pushed on the starting thread, or null

/* Another profiler's state on this thread (torch.profiler running): memory stays its own. */
bool memory_push() {
    if (c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE)) return false;
    reporter = std::make_shared<memory_reporter>();
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, reporter);
    return true;
}

/* Popped when it is still the innermost debug info of this thread; else (a profiler pushed
 * its state after ours) it stays in the chain, silent, and the other pops its own later. */
void memory_pop() {
    if (!reporter) return;
    reporter->on = false;
    if (c10::ThreadLocalDebugInfo::_peek(c10::DebugInfoKind::PROFILER_STATE) == reporter)
        c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
    reporter.reset();
}

/* ---- the module ---- */

bool take_api() {
    if (api) return true;
    PyObject *mod = PyImport_ImportModule("tprof._tprof");
    if (!mod) return false;
    PyObject *capsule = PyObject_GetAttrString(mod, "observer_api");
    Py_DECREF(mod);
    if (!capsule) return false;
    auto *table =
        static_cast<const tp_observer_api *>(PyCapsule_GetPointer(capsule, TP_OBSERVER_CAPSULE));
    Py_DECREF(capsule);
    if (!table) return false;
    if (table->size < sizeof(tp_observer_api)) {
        PyErr_SetString(PyExc_ImportError,
                        "tprof._observer: tprof._tprof is older than the observer (rebuild tprof)");
        return false;
    }
    api = table;
    return true;
}

PyObject *py_start(PyObject *, PyObject *args, PyObject *kw) {
    static const char *keys[] = {"record_shapes", "with_flops", nullptr};
    int shapes = 0, flops = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|pp", const_cast<char **>(keys), &shapes, &flops))
        return nullptr;
    if (!take_api()) return nullptr;
    shapes_on = shapes != 0;
    flops_on = flops != 0;
    if (handle) Py_RETURN_FALSE;
    try {
        handle = at::addGlobalCallback(
            at::RecordFunctionCallback(on_start, on_end).needsInputs(shapes || flops));
    } catch (const std::exception &e) {
        PyErr_Format(PyExc_RuntimeError, "tprof._observer: %s", e.what());
        return nullptr;
    }
    Py_RETURN_TRUE;
}

PyObject *py_stop(PyObject *, PyObject *) {
    if (handle) {
        at::removeCallback(handle);
        handle = 0;
    }
    Py_RETURN_NONE;
}

PyObject *py_memory_push(PyObject *, PyObject *) {
    if (!take_api()) return nullptr;
    if (reporter) Py_RETURN_TRUE;
    return PyBool_FromLong(memory_push());
}

PyObject *py_memory_on(PyObject *, PyObject *arg) {
    int on = PyObject_IsTrue(arg);
    if (on < 0) return nullptr;
    if (reporter) reporter->on = on != 0;
    Py_RETURN_NONE;
}

PyObject *py_memory_pop(PyObject *, PyObject *) {
    memory_pop();
    Py_RETURN_NONE;
}

PyMethodDef methods[] = {
    {"start", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_start)),
     METH_VARARGS | METH_KEYWORDS,
     "start(record_shapes=False, with_flops=False): registers the RecordFunction callback; "
     "False when it already was."},
    {"stop", py_stop, METH_NOARGS, "Removes the callback (ranges open now still end)."},
    {"memory_push", py_memory_push, METH_NOARGS,
     "Receives this thread's allocator reports (off until memory_on(True)); False when another "
     "profiler holds them."},
    {"memory_on", py_memory_on, METH_O, "Turns the reports on (a window records) or off."},
    {"memory_pop", py_memory_pop, METH_NOARGS, "Stops receiving allocator reports."},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    "tprof._observer",
    "torch's ops and allocations as tprof ranges and memory events (use tprof.torch).",
    -1,
    methods,
    nullptr,
    nullptr,
    nullptr,
    nullptr,
};

} // namespace

PyMODINIT_FUNC PyInit__observer() {
    PyObject *m = PyModule_Create(&module);
    if (!m) return nullptr;
    if (PyModule_AddStringConstant(m, "built_for_torch", TPROF_TORCH_VERSION)) {
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
