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
 * "Concrete Inputs". Collectives get the args of their ParamCommsDebugInfo.
 *
 * Inputs: the callback writes no text. As torch.profiler keeps its inputs' metadata compact and
 * formats it after the profile, the observer encodes each op's inputs as a few bytes (per input
 * a tag; a tensor's dtype name pointer and sizes; an int, bool or double's value; an int list's
 * values: src/record/inputs.h) handed to the recorder in one call, and the window's writer
 * thread makes the three texts of them and the op's FLOPs from those texts by the library's
 * formulas (model/flops.c, shared with the trace reader). Only rare inputs (complex or symbolic
 * scalars, double and bool lists) go through torch's printer here, as text in the bytes.
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
 * The library is reached through the table tprof._tprof gives (ext/observer_api.h); of the
 * library's headers only record/inputs.h's inline encoders are compiled in. Nothing here throws
 * into torch: the callbacks catch everything. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ATen/core/ivalue.h>
#include <ATen/record_function.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/distributed/c10d/ParamCommsUtils.hpp>
#include <torch/csrc/profiler/api.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "model/kineto.h"
#include "observer_api.h"
#include "record/inputs.h"

namespace {

namespace prof = torch::profiler::impl;

const tp_observer_api *api; // set by start, never cleared (the extension outlives us)
std::atomic<bool> shapes_on, flops_on;
at::CallbackHandle handle; // 0: no callback registered

/* ---- an op's inputs, as compact bytes (src/record/inputs.h) ---- */

/* Where an op's input bytes are written: a buffer of the thread's own, and past its end a
 * growing one (an op with hundreds of tensors, as a foreach optimizer's). */
struct encoder {
    static constexpr size_t fixed_size = 4096;
    uint8_t *start, *p, *end;

    uint8_t *room(size_t need) { return static_cast<size_t>(end - p) >= need ? p : grow(need); }
    uint8_t *grow(size_t need) {
        thread_local std::vector<uint8_t> spill;
        size_t used = static_cast<size_t>(p - start);
        if (start != spill.data()) spill.assign(start, p);
        spill.resize(std::max(2 * (used + need), fixed_size));
        start = spill.data();
        p = start + used;
        end = start + spill.size();
        return p;
    }
    void tag(uint8_t t) { *room(1) = t, p++; }
};

void encode_tensor(encoder &e, const at::Tensor &t) {
    if (!t.defined()) return e.tag(TP_IN_UNDEFINED);
    auto sizes = t.sizes();
    auto name = t.dtype().name(); // "float", "long int", "c10::Half": static, not NUL-ended
    uint8_t *p = e.room(1 + sizeof(void *) + (2 + sizes.size()) * TP_IN_VARINT_MAX);
    *p++ = TP_IN_TENSOR;
    p = tp_in_put_ptr(p, name.data());
    p = tp_in_put_count(p, name.size());
    p = tp_in_put_count(p, sizes.size());
    for (int64_t size : sizes)
        p = tp_in_put_varint(p, size);
    e.p = p;
}

/* A value torch's printer prints (the rare scalars and lists: complex, symbolic, double and
 * bool lists), as text. */
void encode_printed(encoder &e, uint8_t tag, const c10::IValue &v) {
    std::ostringstream ss;
    ss << v;
    std::string text = ss.str();
    uint8_t *p = e.room(1 + TP_IN_VARINT_MAX + text.size());
    *p++ = tag;
    p = tp_in_put_count(p, text.size());
    std::memcpy(p, text.data(), text.size());
    e.p = p + text.size();
}

/* A list input: its tensors' sizes, its ints, or (rare) its doubles or bools as torch prints
 * them; one longer than torch's traces keep, as they write it. */
void encode_list(encoder &e, const c10::IValue &v) {
    auto list = v.toListRef();
    if (v.isTensorList()) {
        bool kept = list.size() <= TP_IN_LIST_MAX; // else "[]"
        uint8_t *p = e.room(1 + TP_IN_VARINT_MAX);
        *p++ = TP_IN_TENSORS;
        e.p = tp_in_put_count(p, kept ? list.size() : 0);
        for (size_t i = 0; kept && i < list.size(); i++)
            encode_tensor(e, list[i].toTensor());
    } else if (!(v.isIntList() || v.isDoubleList() || v.isBoolList()) ||
               list.size() > TP_IN_LIST_MAX) {
        e.tag(TP_IN_OTHER); // a longer one: neither type nor value
    } else if (v.isIntList()) {
        uint8_t *p = e.room(1 + (1 + list.size()) * TP_IN_VARINT_MAX);
        *p++ = TP_IN_INTS;
        p = tp_in_put_count(p, list.size());
        for (const c10::IValue &i : list)
            p = tp_in_put_varint(p, i.toInt());
        e.p = p;
    } else {
        encode_printed(e, TP_IN_TEXT_LIST, v);
    }
}

/* The common kinds first, by IValue's inline tag checks. */
void encode_input(encoder &e, const c10::IValue &v) {
    if (v.isTensor()) {
        encode_tensor(e, v.toTensor());
    } else if (v.isInt()) {
        uint8_t *p = e.room(1 + TP_IN_VARINT_MAX);
        *p = TP_IN_INT;
        e.p = tp_in_put_varint(p + 1, v.toInt());
    } else if (v.isBool()) {
        e.tag(v.toBool() ? TP_IN_TRUE : TP_IN_FALSE);
    } else if (v.isDouble()) {
        uint8_t *p = e.room(1 + sizeof(double));
        double d = v.toDouble();
        *p = TP_IN_DOUBLE;
        std::memcpy(p + 1, &d, sizeof d);
        e.p = p + 1 + sizeof d;
    } else if (v.isList()) {
        encode_list(e, v);
    } else if (v.isScalar()) {
        encode_printed(e, TP_IN_TEXT_SCALAR, v);
    } else {
        e.tag(TP_IN_OTHER);
    }
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

/* The op's inputs as bytes, for the window's writer to make its three texts and FLOPs of. */
void annotate_inputs(const at::RecordFunction &fn, const char *name) {
    /* With shapes every op's inputs are recorded anyway: the writer picks the ops torch counts
     * FLOPs of, so that no name is looked up here. */
    bool flops = flops_on.load(std::memory_order_relaxed);
    int flags = flops ? TP_INPUTS_FLOPS : 0;
    if (shapes_on.load(std::memory_order_relaxed))
        flags |= TP_INPUTS_SHAPES;
    else if (!flops || !api->flops_counted(name, std::strlen(name)))
        return;
    if (!fn.needsInputs()) return;
    auto inputs = fn.inputs();
    if (inputs.empty()) return;
    thread_local uint8_t fixed[encoder::fixed_size];
    encoder e{fixed, fixed, fixed + sizeof fixed};
    for (const c10::IValue &v : inputs)
        encode_input(e, v);
    api->inputs(name, e.start, static_cast<size_t>(e.p - e.start), flags);
}

/* The state a RecordFunction needs at its end, kept only when the thread id it records is not
 * enough: a USER_SCOPE one (record_function) begun on the thread that made it is written whole
 * at its end, from its begin time (tp_range_complete: torch's Optimizer.step encloses
 * Lightning's hooks, which end tprof's own stage ranges, so it must not sit on the thread's
 * stack of ranges); one begun on another thread than the one that made it (gloo's work, begun
 * on the backend's thread) ends its range where it began. */
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
    bool made_here = fn.threadId() == at::RecordFunction::currentThreadId();
    if (fn.scope() == at::RecordScope::USER_SCOPE && !made_here) {
        /* gloo's work on the backend's thread, alone on that thread's stack: begun now. Its end
         * comes after the work's future completes, so the caller may have gone on and closed
         * the window by then (seen under load for the last all-reduce of a window): written
         * whole at its end, it would be lost; begun here, it is kept, cut at the window's end
         * and flagged truncated, as any range still open then. */
        api->begin(fn.name());
        return std::make_unique<observed>();
    }
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
    if ((evaluate && kept) || pushed || !made_here) {
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
