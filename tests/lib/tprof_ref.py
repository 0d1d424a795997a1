"""tprof_ref - an independent reference for the figures of docs/SEMANTICS.md, standard library only.

Reads a Chrome/Kineto trace (object or array form, plain or gzip) with Python's json module,
classifies its events as docs/SEMANTICS.md §2 says, and computes the figures of §3 directly from
them, so that tests can cross-check tprof's C implementation against code that shares nothing
with it.

API (what other tests import):
    trace = load(path)              # the classified events of a trace (a Trace)
    result = analyze(path_or_trace) # a dict keyed like `tprof analyze --json`, every row kept
    tree = modules(path_or_trace)   # the module tree, by module path
    text = feed(trace)              # the events in the neutral line format read by
                                    # tests/tools/tp_analyze_feed.c (see FEED FORMAT below)

Times inside are integer nanoseconds; the result dict gives microseconds as floats (ns / 1000),
which equal what Python's json module reads from tprof's exact decimal output.

Command line: python3 tprof_ref.py analyze|feed PATH

FEED FORMAT: one record per line, fields separated by tabs; strings escape backslash, tab,
newline and carriage return as \\\\, \\t, \\n, \\r.
    path <path of the trace>
    base <base_ns>
    input <events> <bytes>
    device <id> <total_mem> <compute_major> <name>
    ev <kind> <flags> <pid> <tid> <ts_ns> <dur_ns> <corr> <cat> <name>
    arg <key> <i|d|j> <value>      (an arg of the event of the previous ev line; j: JSON text)
kind is host, kernel, memcpy, memset, gpu_annotation, memory or counter; flags is 1 for a step,
0 otherwise; pid and tid are decimal integers or s:<text> for ids that are not numbers.
"""

import bisect
import functools
import gzip
import json
import math
import re
import sys
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

HOST, KERNEL, MEMCPY, MEMSET, GPU_ANNOTATION, MEMORY, COUNTER = (
    "host", "kernel", "memcpy", "memset", "gpu_annotation", "memory", "counter")
GPU_WORK = (KERNEL, MEMCPY, MEMSET)
# the copy tprof writes of each "dataloader" range for TensorBoard's plugin: not an event of the
# trace for any figure (docs/SEMANTICS.md)
DATALOADER_TWIN = "enumerate(DataLoader)#dataloader.__next__"
DEVICE_CATEGORIES = {
    "kernel": KERNEL, "gpu_memcpy": MEMCPY, "memcpy": MEMCPY, "gpu_memset": MEMSET,
    "memset": MEMSET, "gpu_user_annotation": GPU_ANNOTATION,
}

DEFAULT_STAGES = [
    ("dataloader", ["dataloader", "*DataLoader*", "*DataPipe*", "*data_load*",
                    "*dataloader_next*"]),
    ("forward", ["forward", "## forward ##", "*.training_step", "nn.Module: *"]),
    ("backward", ["backward", "## backward ##", "*.backward",
                  "autograd::engine::evaluate_function: *"]),
    ("optimizer", ["optimizer", "Optimizer.step#*", "Optimizer.zero_grad#*", "*optimizer_step"]),
    ("validation", ["validation", "*.validation_step", "*[_EvaluationLoop]*"]),
]

# Recommendation thresholds (docs/METRICS.md).
DATALOADER_PCT = 5.0
GPU_IDLE_PCT = 50.0
MEMORY_PRESSURE_PCT = 90.0
NCCL_PCT = 10.0
LAUNCH_BOUND_MEAN_NS = 10000
LAUNCH_BOUND_MIN_KERNELS = 100
SYNC_PCT = 5.0
PAGEABLE_PCT = 1.0
FP32_PCT = 10.0
OPTIM_OPS = 20.0
OPTIM_PCT = 5.0
CPU_OP_PCT = 25.0
UNSTABLE_RATIO = 2.0
UNSTABLE_MIN_STEPS = 5
DOMINANT_PCT = 30.0
# Ranges the dominant-op rule leaves to other rules (recommend.c's dominant_candidate).
DOMINANT_SKIP = ["*.py(*", "<built-in*", "cuda*", "gc", "hip*", "*nccl*", "c10d::*", "[pl]*",
                 "record_param_comms"]
DOMINANT_EXPLAINED_STAGES = ("dataloader", "optimizer", "validation")
# tprof.torch's record of the run's setup (python/tprof/torch/setup.py): metadata, no op row.
SETUP_NAME = "tprof.setup"
# Matrix ops whose dtype the fp32 rule reads from "Input type" (evidence.c).
MATRIX_OPS = ["aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::*convolution*"]
PYTHON_PCT = 10.0
OTHER_PCT = 30.0
IDLE_LAUNCH_NS = 30000
SYNC_NAMES = {"cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize",
              "cudaMemcpy", "hipDeviceSynchronize", "hipStreamSynchronize",
              "hipEventSynchronize", "hipMemcpy"}
# The architecture a kernel's name shows, when the trace lists no compute capability.
ARCH_NAMES = [("sm90", 9), ("hopper", 9), ("sm80", 8), ("sm86", 8), ("ampere", 8),
              ("cutlass_80", 8), ("turing", 7), ("sm75", 7), ("volta", 7), ("sm70", 7)]

STEP_RE = re.compile(r"ProfilerStep#[0-9]+\Z")
DECIMAL_ID = re.compile(r"-?[0-9]+\Z")


class Event:
    __slots__ = ("kind", "name", "cat", "pid", "tid", "ts", "dur", "corr", "step", "args",
                 "index", "shapes")

    def __init__(self, kind, name, cat, pid, tid, ts, dur, corr=0, args=None, shapes=None):
        self.kind, self.name, self.cat, self.pid, self.tid = kind, name, cat, pid, tid
        self.ts, self.dur, self.corr = ts, dur, corr
        self.step = kind == HOST and STEP_RE.match(name) is not None
        self.args = args or {}
        self.index = 0
        self.shapes = shapes  # a range's "Input Dims" (a list) when it has them, else None

    @property
    def end(self):
        return self.ts + self.dur


class Trace:
    def __init__(self):
        self.path = ""
        self.events = []
        self.base_ns = 0
        self.input_events = 0
        self.input_bytes = 0
        self.devices = {}  # device id -> totalGlobalMem
        self.compute_major = 0  # the highest computeMajor of deviceProperties
        self.device_info = {}  # device id -> (computeMajor, name)
        self.gpu_name = None  # the first device's name


# ---- reading -----------------------------------------------------------------------------------

def to_ns(us):
    """Microseconds (int or Decimal) as integer nanoseconds, halves rounded away from zero."""
    if isinstance(us, bool) or us is None:
        return 0
    if isinstance(us, int):
        return us * 1000
    d = Decimal(us) * 1000
    return int(d.copy_abs().quantize(Decimal(1), rounding=ROUND_HALF_UP)) * (1 if d >= 0 else -1)


def track_id(v):
    if isinstance(v, str) and DECIMAL_ID.match(v):
        return int(v)
    return v if isinstance(v, (int, str)) else str(v)


def number(v):
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, Decimal):
        return float(v)
    return None


def range_kind(cat):
    return DEVICE_CATEGORIES.get(cat.lower(), HOST)


def _int_list(v):
    """A list of ints (a tensor's sizes), else None."""
    if isinstance(v, list) and all(isinstance(d, int) and not isinstance(d, bool) for d in v):
        return v
    return None


def _concrete(args, i):
    """Concrete input i ("[2, 2]" or "1") as a list of ints, else None."""
    c = args.get("Concrete Inputs")
    if not isinstance(c, list) or i >= len(c) or not isinstance(c[i], str):
        return None
    try:
        v = json.loads(c[i])
    except ValueError:
        return None
    v = [v] if isinstance(v, int) and not isinstance(v, bool) else v
    return _int_list(v)


def shape_flops(name, args):
    """torch.profiler's FLOPs of an aten op from its "Input Dims" (and "Concrete Inputs"), as
    torch's computeFlops defines them, for traces that carry no flops arg; None when the op is
    not counted or the args lack what the formula needs (docs/METRICS.md)."""
    dims = args.get("Input Dims")
    if not isinstance(dims, list) or not name.startswith("aten::"):
        return None
    op = name[6:]
    shapes = [_int_list(d) for d in dims]

    def shape(i):
        return shapes[i] if i < len(shapes) else None

    def prod(v):
        return math.prod(v)

    if op in ("mm", "addmm", "bmm", "baddbmm"):
        a, b = (shape(0), shape(1)) if op in ("mm", "bmm") else (shape(1), shape(2))
        if a is None or b is None:
            return None
        if op in ("mm", "addmm"):
            if len(a) != 2 or len(b) != 2 or a[1] != b[0] or a[1] == 0:
                return 0
            return 2 * (prod(a) // a[1]) * prod(b)
        if len(a) != 3 or len(b) != 3 or a[0] != b[0] or a[2] != b[1] or a[0] == 0 or a[2] == 0:
            return 0
        return 2 * (prod(a) // a[2] // a[0]) * prod(b)
    if op in ("mul", "add"):
        return None if shape(0) is None else prod(shape(0))
    if op == "conv2d":
        x, w = shape(0), shape(1)
        stride, pad, dil, groups = (_concrete(args, i) for i in (3, 4, 5, 6))
        if x is None or w is None or None in (stride, pad, dil, groups) or len(groups) != 1:
            return None
        if len(x) != 4 or len(w) != 4 or len(pad) != 2 or len(stride) != 2 or len(dil) != 2:
            return 0
        if min(x) < 0 or min(w) < 0:
            return 0
        if 0 in stride or groups[0] == 0:
            return 0

        def out(i):  # C++ division: truncation toward zero
            num = x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1
            return int(num / stride[i]) + 1

        n = 2 * x[0] * out(0) * out(1) * w[2] * w[3] * x[1] * w[0]
        return int(n / groups[0]) if n * groups[0] < 0 else n // groups[0]
    return None


def make_range(e, ts, dur):
    cat = e.get("cat") if isinstance(e.get("cat"), str) else ""
    if cat.lower() == "trace":
        return None
    if e.get("name") == DATALOADER_TWIN and range_kind(cat) == HOST:
        return None  # tprof's copy of its dataloader range for TensorBoard's plugin
    args = e.get("args") if isinstance(e.get("args"), dict) else {}
    corr = args.get("correlation")
    kept = {}
    if number(args.get("flops")) is not None:
        kept["flops"] = number(args["flops"])
    elif (shape_flops(str(e.get("name", "")), args) or 0) > 0:  # only positive counts kept
        kept["flops"] = shape_flops(str(e.get("name", "")), args)
    first = next(iter(args), None)  # an "External id" counts as the first arg, as written
    ext = args.get(first) if first == "External id" else None
    if isinstance(ext, int) and not isinstance(ext, bool) and ext > 0:
        kept["External id"] = ext
    dims = args.get("Input Dims")
    for key in ("Sequence number", "Fwd thread id"):  # autograd's link (modules())
        if isinstance(args.get(key), int) and not isinstance(args.get(key), bool):
            kept[key] = args[key]
    if isinstance(args.get("Input type"), list):
        kept["Input type"] = args["Input type"]
    return Event(range_kind(cat), str(e.get("name", "")), cat, track_id(e.get("pid", 0)),
                 track_id(e.get("tid", 0)), ts, dur,
                 corr if isinstance(corr, int) and not isinstance(corr, bool) else 0, kept,
                 dims if isinstance(dims, list) else None)


def _int_lists(v):
    return isinstance(v, list) and all(
        _int_lists(x) or (isinstance(x, int) and not isinstance(x, bool)) for x in v)


def shapes_key(shapes):
    """An op's input shapes as key_averages(group_by_input_shape=True) keys them: str() of
    the Python list ("[[6, 3], []]"); "" for a range that recorded none."""
    if shapes is None:
        return ""
    if _int_lists(shapes):
        return str(shapes)
    return json.dumps(shapes, separators=(", ", ": "), default=str)


def load(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError:
        # The array form may omit its closing bracket (and keep a trailing comma).
        doc = json.loads(text.rstrip().rstrip(",") + "]", parse_float=Decimal)
    t = Trace()
    t.path = path
    t.input_bytes = len(raw)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    if isinstance(doc, dict):
        base = doc.get("baseTimeNanoseconds")
        t.base_ns = int(base) if isinstance(base, (int, Decimal)) else 0
        for d in doc.get("deviceProperties") or doc.get("computeProperties") or []:
            if isinstance(d, dict) and isinstance(d.get("id"), int):
                t.devices[d["id"]] = int(d.get("totalGlobalMem") or 0)
                major = d.get("computeMajor", d.get("major"))
                if isinstance(major, int):
                    t.compute_major = max(t.compute_major, major)
                name = d.get("name") if isinstance(d.get("name"), str) else ""
                t.device_info[d["id"]] = (major if isinstance(major, int) else 0, name)
                if t.gpu_name is None and name:
                    t.gpu_name = name
    t.input_events = len(events)
    open_ranges = {}
    for e in events:
        if not isinstance(e, dict):
            continue
        ph = e.get("ph")
        ts = to_ns(e.get("ts", 0))
        ev = None
        if ph == "X":
            ev = make_range(e, ts, to_ns(e.get("dur", 0)))
        elif ph == "B":
            open_ranges.setdefault((track_id(e.get("pid", 0)), track_id(e.get("tid", 0))),
                                   []).append((e, ts))
        elif ph == "E":
            stack = open_ranges.get((track_id(e.get("pid", 0)), track_id(e.get("tid", 0))))
            if stack:
                b, bts = stack.pop()
                ev = make_range(b, bts, ts - bts)
        elif ph in ("i", "I") and e.get("name") == "[memory]":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            kept = {k: number(args[k]) for k in
                    ("Device Type", "Device Id", "Bytes", "Total Allocated", "Addr")
                    if number(args.get(k)) is not None}
            ev = Event(MEMORY, "[memory]", str(e.get("cat", "")), track_id(e.get("pid", 0)),
                       track_id(e.get("tid", 0)), ts, 0, 0, kept)
        elif ph == "C":
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            ev = Event(COUNTER, str(e.get("name", "")), str(e.get("cat", "")),
                       track_id(e.get("pid", 0)), track_id(e.get("tid", 0)), ts, 0, 0,
                       {k: number(v) for k, v in args.items() if number(v) is not None})
        if ev is not None:
            ev.index = len(t.events)
            t.events.append(ev)
    return t


# ---- the figures -------------------------------------------------------------------------------

@functools.cache
def _glob_regex(pattern):
    rx = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
    return re.compile(rx, re.IGNORECASE | re.ASCII | re.DOTALL)


def glob_match(pattern, name):
    """Whole-name match, `*` any run, `?` one character, ASCII case-insensitive."""
    return _glob_regex(pattern).fullmatch(name) is not None


def round_div(num, den):
    """num / den for integers, rounded to the nearest integer, halves away from zero."""
    q = Fraction(num, den)
    r = abs(q)
    n = int(r)
    if r - n >= Fraction(1, 2):
        n += 1
    return n if q >= 0 else -n


def percentile(sorted_values, p):
    """Linear interpolation between closest ranks (numpy's default), rounded half up."""
    n = len(sorted_values)
    if n == 0:
        return 0
    rank = Fraction(p) * (n - 1) / 100
    lo = int(rank)
    if lo >= n - 1:
        return sorted_values[-1]
    v = sorted_values[lo] + (rank - lo) * (sorted_values[lo + 1] - sorted_values[lo])
    return math.floor(v + Fraction(1, 2))


def clock_offset(pairs):
    """docs/DISTRIBUTED.md ("Clock alignment"): what to add to rank k's times to put them on rank
    0's clock, from the blocking collectives both took part in, given as (start0, end0, startk,
    endk) in ns: the median of end0 - endk, unless it lies outside [max(start0 - endk),
    min(end0 - startk)] (every rank arrives before any leaves), then that interval's middle."""
    if not pairs:
        return 0
    median = percentile(sorted(e0 - ek for s0, e0, sk, ek in pairs), 50)
    lo = max(s0 - ek for s0, e0, sk, ek in pairs)
    hi = min(e0 - sk for s0, e0, sk, ek in pairs)
    if lo > hi or lo <= median <= hi:
        return median
    return lo + (hi - lo) // 2


def us(ns):
    return None if ns is None else ns / 1000


def is_runtime(cat):
    c = cat.lower()
    return "runtime" in c or "driver" in c


def walk_tracks(host):
    """torch's nesting rule per (pid, tid): returns {event index: parent Event or None}."""
    tracks = {}
    for e in host:
        tracks.setdefault((e.pid, e.tid), []).append(e)
    parent = {}
    for evs in tracks.values():
        evs.sort(key=lambda e: (e.ts, -e.dur, e.index))
        stack = []
        for c in evs:
            while stack and (c.ts >= stack[-1].end or c.end > stack[-1].end):
                stack.pop()
            parent[c.index] = stack[-1] if stack else None
            stack.append(c)
    return parent


def merged_into_parent(host, parent):
    """{index of a range merged into its parent: that parent}, as torch's
    EventList._remove_dup_nodes does it, literally: until nothing changes, a range whose parent
    has its name and no other child is removed and its children become the parent's."""
    children = {}
    for e in host:
        p = parent[e.index]
        if p is not None:
            children.setdefault(p.index, []).append(e)
    up = {e.index: parent[e.index] for e in host}
    merged = {}
    while True:
        found = [e for e in host if e.index not in merged and up[e.index] is not None
                 and not e.step and not up[e.index].step and up[e.index].name == e.name
                 and len(children.get(up[e.index].index, [])) == 1]
        if not found:
            return merged
        for e in found:
            p = up[e.index]
            merged[e.index] = p
            children[p.index] = children.get(e.index, [])
            for ch in children[p.index]:
                up[ch.index] = p


def analyze(src, stages=None):
    t = load(src) if isinstance(src, str) else src
    stages = DEFAULT_STAGES if stages is None else stages
    events = t.events
    host = [e for e in events if e.kind == HOST]
    steps = sorted((e for e in host if e.step), key=lambda e: (e.ts, -e.dur, e.index))
    parent = walk_tracks(host)

    # Op table: self = dur - sum of direct children's durations, never below zero.
    child_sum = {}
    for e in host:
        p = parent[e.index]
        if p is not None:
            child_sum[p.index] = child_sum.get(p.index, 0) + e.dur
    def count(table, key, e):
        r = table.setdefault(key, {"name": e.name, "calls": 0, "total": 0, "self": 0,
                                   "min": None, "max": None, "flops": 0, "flops_time": 0,
                                   "gpu": 0, "kernels": 0, "shapes": shapes_key(e.shapes)})
        r["calls"] += 1
        r["total"] += e.dur
        r["self"] += max(0, e.dur - child_sum.get(e.index, 0))
        r["min"] = e.dur if r["min"] is None else min(r["min"], e.dur)
        r["max"] = e.dur if r["max"] is None else max(r["max"], e.dur)
        if "flops" in e.args:
            r["flops"] += e.args["flops"]
            r["flops_time"] += e.dur
        itype = e.args.get("Input type")
        if itype and itype[0] == "float" and any(glob_match(p, e.name) for p in MATRIX_OPS):
            r["fp32"] = r.get("fp32", 0) + 1

    # The same table by (name, input shapes), when some op recorded shapes. A merged range
    # (torch's tables) is no call: its self time is its parent's, whose row has its name.
    ops, by_shape = {}, {}
    keep_shapes = any(e.shapes is not None for e in host if not e.step)
    merged = merged_into_parent(host, parent)
    for e in host:
        if e.step or e.index in merged or e.name == SETUP_NAME:  # the setup is no op
            continue
        count(ops, e.name, e)
        if keep_shapes:
            count(by_shape, (e.name, shapes_key(e.shapes)), e)
    host_at = {e.index: e for e in host}
    for i, p in merged.items():
        while p.index in merged:
            p = merged[p.index]
        e = host_at[i]
        own = max(0, e.dur - child_sum.get(e.index, 0))
        ops[p.name]["self"] += own
        if keep_shapes:
            by_shape[(p.name, shapes_key(p.shapes))]["self"] += own

    # Launch attribution: device work -> launch (same corr, first host range in file order) ->
    # innermost enclosing op on the launch's thread.
    launch = {}
    for e in host:
        if e.corr and e.corr not in launch:
            launch[e.corr] = e

    def is_op(e):
        return not e.step and not is_runtime(e.cat) and e.cat.lower() != "python_function"

    # ... or, for a launch outside every op on its thread, the op its External id names (not its
    # own correlation id, which Kineto writes there for such launches)
    by_external = {}
    for e in host:
        if is_op(e) and "External id" in e.args:
            by_external.setdefault(e.args["External id"], e)

    gpu_work = [e for e in events if e.kind in GPU_WORK]
    for k in gpu_work:
        ln = launch.get(k.corr) if k.corr else None
        if ln is None:
            continue
        p = parent[ln.index]
        while p is not None and not is_op(p):
            p = parent[p.index]
        ext = ln.args.get("External id")
        if p is None and ext is not None and ext != ln.corr:
            p = by_external.get(ext)
        while p is not None and p.index in merged:  # torch lifts its kernels to the parent
            p = merged[p.index]
        if p is not None:
            for r in [ops[p.name]] + ([by_shape[(p.name, shapes_key(p.shapes))]]
                                      if keep_shapes else []):
                r["gpu"] += k.dur
                r["kernels"] += 1

    # Kernels.
    kernels = {}
    for e in events:
        if e.kind != KERNEL:
            continue
        r = kernels.setdefault(e.name, {"name": e.name, "calls": 0, "total": 0, "min": None,
                                        "max": None})
        r["calls"] += 1
        r["total"] += e.dur
        r["min"] = e.dur if r["min"] is None else min(r["min"], e.dur)
        r["max"] = e.dur if r["max"] is None else max(r["max"], e.dur)

    # Steps and the window.
    step_durs = sorted(s.dur for s in steps)
    step_total = sum(step_durs)
    if steps:
        w0, w1 = min(s.ts for s in steps), max(s.end for s in steps)
    elif events:
        w0, w1 = min(e.ts for e in events), max(e.end for e in events)
    else:
        w0 = w1 = 0

    # GPU busy: union of work intervals per device (the pid of its device ranges), each clipped
    # to the window (docs/METRICS.md), so that utilization never exceeds 100%.
    per_dev = {}
    for e in gpu_work:
        per_dev.setdefault(e.pid, []).append((e.ts, e.end))
    busy, dev_busy = 0, {}
    for pid, ivs in per_dev.items():
        ivs = sorted((max(a, w0), min(b, w1)) for a, b in ivs)
        ivs = [(a, b) for a, b in ivs if b > a]
        one = 0
        if ivs:
            cur0, cur1 = ivs[0]
            for a, b in ivs[1:]:
                if a > cur1:
                    one += cur1 - cur0
                    cur0, cur1 = a, b
                else:
                    cur1 = max(cur1, b)
            one += cur1 - cur0
        dev_busy[pid] = one
        busy += one
    per_device = [{"device": pid, "busy_us": us(b), "idle_us": us(w1 - w0 - b),
                   "window_us": us(w1 - w0),
                   "utilization_pct": 100.0 * b / (w1 - w0) if w1 > w0 else None}
                  for pid, b in dev_busy.items()]
    capacity = (w1 - w0) * len(per_dev)
    util = 100.0 * busy / capacity if per_dev and capacity > 0 else None

    # Stages (docs/METRICS.md): a range named as its stage (explicit) counts whole and hides
    # everything inside it; another matching range counts unless its innermost counted ancestor
    # has the same stage, and is carved out of that ancestor when the stage differs.
    def stage_of(name):
        for si, (_, pats) in enumerate(stages):
            if any(glob_match(p, name) for p in pats):
                return si
        return -1

    stage_cache = {}
    counted = {}    # index -> the innermost counted stage range among it and its ancestors
    explicit = {}   # index -> inside an explicit stage range (itself included)
    carved = {}     # counted index -> durations of other-stage ranges counted inside it
    own_stage = {}  # counted index -> its stage
    order = sorted(host, key=lambda e: (e.ts, -e.dur, e.index))
    for e in order:  # parents come before their children in this order
        p = parent[e.index]
        counted[e.index] = counted[p.index] if p is not None else None
        explicit[e.index] = explicit[p.index] if p is not None else False
        if e.step:
            continue
        if e.name not in stage_cache:
            si = stage_of(e.name)
            stage_cache[e.name] = (si, si >= 0 and glob_match(stages[si][0], e.name))
        si, is_explicit = stage_cache[e.name]
        if si < 0 or explicit[e.index]:
            continue
        outer = counted[e.index]
        if outer is not None and own_stage[outer.index] == si:
            continue
        if outer is not None:
            carved[outer.index] += e.dur
        counted[e.index] = e
        own_stage[e.index] = si
        carved[e.index] = 0
        explicit[e.index] = is_explicit
    stage_ranges = [[] for _ in stages]
    step_starts = [s.ts for s in steps]
    per_step = [[0] * len(stages) for _ in steps]
    spans = [[] for _ in steps]
    # A range wholly inside a counted range of the same stage (on another thread) is left out.
    cands = sorted((e for e in order if own_stage.get(e.index) is not None),
                   key=lambda e: (own_stage[e.index], e.ts, -e.end, e.index))
    furthest, cur = None, None
    for e in cands:
        if own_stage[e.index] != cur:
            cur, furthest = own_stage[e.index], None
        if furthest is not None and e.end <= furthest:
            continue
        furthest = e.end
        si, own = own_stage[e.index], max(0, e.dur - carved[e.index])
        stage_ranges[si].append(own)
        k = bisect.bisect_right(step_starts, e.ts) - 1
        if k >= 0 and e.ts < steps[k].end:
            per_step[k][si] += own
            spans[k].append((e.ts, min(e.end, steps[k].end)))

    # other: per step, its duration less the union of its stage ranges (clipped to it).
    other = []
    for k, st in enumerate(steps):
        covered, cur = 0, None
        for a, b in sorted(spans[k]):
            if cur is None or a > cur[1]:
                if cur is not None:
                    covered += cur[1] - cur[0]
                cur = [a, b]
            else:
                cur[1] = max(cur[1], b)
        if cur is not None:
            covered += cur[1] - cur[0]
        other.append(max(0, st.dur - covered))

    # lead: per step, from its start to its first range on its own thread (all of it if none).
    first_child = {}
    for e in order:
        p = parent[e.index]
        if p is not None and p.step and p.index not in first_child:
            first_child[p.index] = e.ts
    lead = [max(0, first_child.get(st.index, st.end) - st.ts) for st in steps]
    step_flops = [0] * len(steps)
    for e in host:
        if not e.step and e.index not in merged and "flops" in e.args:
            k = bisect.bisect_right(step_starts, e.ts) - 1
            if k >= 0 and e.ts < steps[k].end:
                step_flops[k] += e.args["flops"]
    stage_rows = []
    for si, (sname, _) in enumerate(stages):
        d = sorted(stage_ranges[si])
        tot = sum(d)
        stage_rows.append({
            "stage": sname, "count": len(d), "total_us": us(tot),
            "mean_us": us(round_div(tot, len(d))) if d else None,
            "p50_us": us(percentile(d, 50)) if d else None,
            "p95_us": us(percentile(d, 95)) if d else None,
            "max_us": us(d[-1]) if d else None,
            "pct": 100.0 * tot / step_total if step_total > 0 else None,
        })
    od = sorted(other)
    other_row = {
        "stage": "other", "count": len(od), "total_us": us(sum(od)),
        "mean_us": us(round_div(sum(od), len(od))) if od else None,
        "p50_us": us(percentile(od, 50)) if od else None,
        "p95_us": us(percentile(od, 95)) if od else None,
        "max_us": us(od[-1]) if od else None,
        "pct": 100.0 * sum(od) / step_total if step_total > 0 else None,
    }
    dl = [r for r in stage_rows if r["stage"] == "dataloader"]
    dataloader_pct = dl[0]["pct"] if dl else None

    # Memory peaks per (Device Type, Device Id).
    groups = {}
    for e in sorted((e for e in events if e.kind == MEMORY), key=lambda e: (e.ts, e.index)):
        if "Device Type" in e.args and "Device Id" in e.args:
            groups.setdefault((int(e.args["Device Type"]), int(e.args["Device Id"])),
                              []).append(e)
    memory = []
    for (dtype, did), evs in sorted(groups.items()):
        peak = peak_ts = None
        if any("Total Allocated" in e.args for e in evs):
            for e in evs:
                v = e.args.get("Total Allocated")
                if v is not None and (peak is None or v > peak):
                    peak, peak_ts = int(v), e.ts
        else:
            run = 0
            for e in evs:
                run += int(e.args.get("Bytes", 0))
                if peak is None or run > peak:
                    peak, peak_ts = run, e.ts
        if peak is None:
            continue
        memory.append({"device_type": dtype, "device_id": did, "peak_bytes": peak,
                       "peak_ts_us": us(t.base_ns + peak_ts),
                       "capacity_bytes": t.devices.get(did, 0) if dtype == 1 else 0})

    # Tables.
    self_sum = sum(r["self"] for r in ops.values())
    ktotal = sum(r["total"] for r in kernels.values())
    work_total = sum(e.dur for e in gpu_work)

    def op_row(r, by_shape=False):
        row = {
            "name": r["name"], "calls": r["calls"], "total_us": us(r["total"]),
            "self_us": us(r["self"]),
            "self_pct": 100.0 * r["self"] / self_sum if self_sum > 0 else 0.0,
            "mean_us": us(round_div(r["total"], r["calls"])), "min_us": us(r["min"]),
            "max_us": us(r["max"]), "flops": r["flops"], "gpu_us": us(r["gpu"]),
            "kernels": r["kernels"]}
        if by_shape:
            row["input_shapes"] = r["shapes"]
        return row

    op_rows = [op_row(r) for r in sorted(ops.values(),
                                         key=lambda r: (-r["self"], r["name"].encode()))]
    shape_rows = [op_row(r, True) for r in sorted(
        by_shape.values(), key=lambda r: (-r["self"], r["name"].encode(), r["shapes"].encode()))]
    kernel_rows = [{
        "name": r["name"], "calls": r["calls"], "total_us": us(r["total"]),
        "pct": 100.0 * r["total"] / ktotal if ktotal > 0 else 0.0,
        "mean_us": us(round_div(r["total"], r["calls"])), "min_us": us(r["min"]),
        "max_us": us(r["max"])}
        for r in sorted(kernels.values(), key=lambda r: (-r["total"], r["name"].encode()))]
    by_gpu = [{"name": r["name"], "gpu_us": us(r["gpu"]), "kernels": r["kernels"],
               "pct": 100.0 * r["gpu"] / work_total if work_total > 0 else 0.0}
              for r in sorted(ops.values(), key=lambda r: (-r["gpu"], r["name"].encode()))
              if r["gpu"] > 0 or r["kernels"] > 0]

    flops = sum(r["flops"] for r in ops.values())
    flops_time = sum(r["flops_time"] for r in ops.values())

    # GPU idle explained (HTA's breakdown): per stream, the gaps between consecutive work.
    sync_ends = sorted(e.end for e in host if e.name in SYNC_NAMES)
    streams, idle = {}, {}
    for e in gpu_work:
        streams.setdefault((e.pid, e.tid), []).append(e)
    for (pid, _), work in streams.items():
        row = idle.setdefault(pid, {"device": pid, "idle_us": 0, "host_us": 0, "sync_us": 0,
                                    "launch_us": 0, "other_us": 0})
        work.sort(key=lambda e: e.ts)
        for prev, e in zip(work, work[1:]):
            gap = max(0, e.ts - prev.end)
            ln = launch.get(e.corr) if e.corr else None
            if ln is not None and ln.ts > prev.end:
                k = bisect.bisect_right(sync_ends, prev.end)
                cat = "sync_us" if k < len(sync_ends) and sync_ends[k] <= ln.ts else "host_us"
            elif gap < IDLE_LAUNCH_NS and not (e.corr and e.corr == prev.corr):
                cat = "launch_us"
            else:
                cat = "other_us"
            row[cat] += gap
            row["idle_us"] += gap
    idle_rows = [{k: (us(v) if k != "device" else v) for k, v in r.items()}
                 for r in idle.values()]

    # Recommendations: (id, the step time it could save), sorted by saving, then id.
    recos = []

    def step_pct(ns):
        return 100.0 * ns / step_total if step_total > 0 else None

    def beyond(pct, threshold):
        return pct is not None and pct > threshold

    dl_i = [i for i, (n, _) in enumerate(stages) if n == "dataloader"]
    if dl_i:
        dl_ns = sum(stage_ranges[dl_i[0]]) if stage_ranges[dl_i[0]] else sum(lead)
        if beyond(step_pct(dl_ns), DATALOADER_PCT):
            recos.append(("dataloader", dl_ns))
    idle = (capacity - busy) // len(per_dev) if per_dev and capacity > busy else 0
    if util is not None and util < GPU_IDLE_PCT:
        recos.append(("gpu_idle", idle))
    if any(m["capacity_bytes"] and 100.0 * m["peak_bytes"] / m["capacity_bytes"]
           > MEMORY_PRESSURE_PCT for m in memory):
        recos.append(("memory_pressure", 0))
    nccl = sum(r["total"] for r in kernels.values() if "nccl" in r["name"].lower())
    if beyond(step_pct(nccl), NCCL_PCT):
        recos.append(("nccl", nccl))
    nk = sum(r["calls"] for r in kernels.values())
    if (util is not None and util < GPU_IDLE_PCT and nk >= LAUNCH_BOUND_MIN_KERNELS
            and ktotal < LAUNCH_BOUND_MEAN_NS * nk):
        recos.append(("launch_bound", idle))

    def step_of(e):
        k = bisect.bisect_right(step_starts, e.ts) - 1
        return k if k >= 0 and e.ts < steps[k].end else None

    sync = sum(e.dur for e in host if not e.step and e.name in SYNC_NAMES
               and step_of(e) is not None)
    if beyond(step_pct(sync), SYNC_PCT):
        recos.append(("sync", sync))
    pageable = sum(e.dur for e in events if e.kind == MEMCPY
                   and glob_match("*HtoD*Pageable*", e.name))
    if beyond(step_pct(pageable), PAGEABLE_PCT):
        recos.append(("pageable_copy", pageable))
    ordered_kernels = sorted(kernels.values(), key=lambda r: (-r["total"], r["name"].encode()))
    major = t.compute_major or max(
        [m for r in ordered_kernels[:64] for pat, m in ARCH_NAMES if pat in r["name"].lower()],
        default=0)
    fp32 = sum(r["total"] for r in kernels.values()
               if "sgemm" in r["name"].lower()
               and not any(x in r["name"].lower() for x in ("tensorop", "xmma", "tf32")))
    if major >= 7 and ktotal > 0 and 100.0 * fp32 / ktotal > FP32_PCT:
        recos.append(("fp32_matmul", fp32 // 2))
    elif major >= 8 and ktotal > 0 and not any(
            glob_match(p, t.gpu_name or "") for p in ("*AMD*", "*Radeon*", "*Instinct*")):
        # the op-level view: matrix ops fed fp32 tensors, their GPU time by their fp32 share
        fp32_ops = sum(int(r["gpu"] * r["fp32"] / r["calls"]) for r in ops.values()
                       if r.get("fp32") and r["calls"])
        if 100.0 * fp32_ops / ktotal > FP32_PCT:
            recos.append(("fp32_matmul", fp32_ops // 2))

    def under_optim(e):
        p = parent[e.index]
        while p is not None:
            if p.name.startswith("Optimizer.step#"):
                return True
            p = parent[p.index]
        return False

    optim = [e for e in host if not e.step and e.name.startswith("Optimizer.step#")
             and not under_optim(e)]
    inside = [e for e in host if not e.step and is_op(e) and under_optim(e)
              and e.name != SETUP_NAME]
    if optim and not any("_foreach_" in e.name or "_fused_" in e.name for e in inside):
        optim_ns = sum(e.dur for e in optim)
        if len(inside) / len(optim) >= OPTIM_OPS and beyond(step_pct(optim_ns), OPTIM_PCT):
            recos.append(("optimizer_foreach", optim_ns // 2))
    top_aten = [r for r in op_rows if r["name"].startswith("aten::")]
    cpu_bound_op = None
    if not per_dev and steps and top_aten:
        top_self = ops[top_aten[0]["name"]]["self"]
        if beyond(step_pct(top_self), CPU_OP_PCT):
            recos.append(("cpu_op_bound", top_self // 2))
            cpu_bound_op = top_aten[0]["name"]

    def dominant_candidate(name):
        si = stage_of(name)
        if si >= 0 and (stages[si][0] in DOMINANT_EXPLAINED_STAGES
                        or glob_match(stages[si][0], name)):
            return False
        return not any(glob_match(p, name) for p in DOMINANT_SKIP)

    best, top = 0, None
    for row in op_rows:
        v = ops[row["name"]]["gpu" if per_dev else "self"]
        if v > best and dominant_candidate(row["name"]):
            best, top = v, row["name"]
    if steps and top is not None and top != cpu_bound_op and beyond(step_pct(best),
                                                                     DOMINANT_PCT):
        recos.append(("dominant_op", best // 2))
    if len(step_durs) >= UNSTABLE_MIN_STEPS:
        p50 = percentile(step_durs, 50)
        if p50 > 0 and percentile(step_durs, 95) / p50 > UNSTABLE_RATIO:
            recos.append(("unstable_steps", sum(d - p50 for d in step_durs if d > p50)))
    py = 0
    for e in host:
        if e.cat.lower() == "python_function" and not e.step:
            k = step_of(e)
            if k is not None and e.end <= steps[k].end:
                py += max(0, e.dur - child_sum.get(e.index, 0))
    if beyond(step_pct(py), PYTHON_PCT):
        recos.append(("python_overhead", py))
    if beyond(other_row["pct"], OTHER_PCT):
        recos.append(("other", 0))
    recos.sort(key=lambda r: (-r[1], r[0]))

    n = len(step_durs)
    slowest = sorted(steps, key=lambda s: (-s.dur, s.ts, s.index))
    return {
        "input": {"path": t.path, "bytes": t.input_bytes, "events": t.input_events},
        "steps": {
            "count": n, "total_us": us(step_total),
            "mean_us": us(round_div(step_total, n)) if n else None,
            "p50_us": us(percentile(step_durs, 50)) if n else None,
            "p95_us": us(percentile(step_durs, 95)) if n else None,
            "max_us": us(step_durs[-1]) if n else None,
            "window_us": us(w1 - w0),
            "lead_us": us(sum(lead)),
            "slowest": [{"name": s.name, "dur_us": us(s.dur)} for s in slowest],
            "list": [{"name": s.name, "start_us": us(t.base_ns + s.ts), "dur_us": us(s.dur),
                      "stages": {stages[i][0]: us(v) for i, v in enumerate(per_step[k])},
                      "other_us": us(other[k]), "lead_us": us(lead[k]),
                      "flops": step_flops[k]}
                     for k, s in enumerate(steps)],
        },
        "top_cpu_ops": op_rows,
        "top_cpu_ops_by_shape": shape_rows,
        "top_gpu_kernels": kernel_rows,
        "top_ops_by_gpu_time": by_gpu,
        "gpu": {"busy_us": us(busy), "utilization_pct": util, "kernel_count": nk,
                "devices": len(per_dev), "idle": idle_rows, "per_device": per_device},
        "stages": stage_rows,
        "other": other_row,
        "dataloader_pct": dataloader_pct,
        "memory": memory,
        "flops": {"total": flops, "time_us": us(flops_time),
                  "per_second": flops * 1e9 / flops_time if flops_time > 0 else None},
        "mfu": {"step_flops": sum(step_flops)},
        "recommendations": [{"id": r, "saving_us": us(v)} for r, v in recos],
    }


# ---- the module tree ---------------------------------------------------------------------------

MODULE_PREFIX = "nn.Module: "


def modules(src):
    """The module tree (docs/METRICS.md, "Module tree") from the trace's events: {path (a tuple
    of module names from the root): node}, each node with calls, forward, forward_self,
    backward_calls, backward, backward_self, flops, flops_self, gpu, gpu_self, kernels (ns and
    counts; totals over the subtree), and ops {(pass, name): {calls, total, flops, gpu,
    kernels}}; with "unlinked" (calls, ns) of backward nodes whose forward op is in no module.
    Computed per range from its chain of ancestors, unlike the C walk's stack of frames."""
    t = load(src) if isinstance(src, str) else src
    host = [e for e in t.events if e.kind == HOST]
    parent = walk_tracks(host)
    names = {e.name for e in host}

    def head_of(name):  # P of a name "P.c" whose P is a name too, else None
        head, dot, tail = name.rpartition(".")
        return head if dot and head and tail and " " not in name and head in names else None

    # tprof.torch's module paths, per thread: a range "P.c" inside a range named P (both
    # user_annotation ranges) makes both paths
    candidates = {n for n in names if head_of(n)} | {head_of(n) for n in names if head_of(n)}
    paths = {}
    for e in host:
        if e.cat != "user_annotation" or e.name not in candidates or not head_of(e.name):
            continue
        p = parent[e.index]
        while p is not None and not (p.cat == "user_annotation" and p.name == head_of(e.name)):
            p = parent[p.index]
        if p is not None:
            paths.setdefault((e.pid, e.tid), set()).update((e.name, p.name))

    def module_name(e):
        if e.step:
            return False
        if e.name.startswith(MODULE_PREFIX) and len(e.name) > len(MODULE_PREFIX):
            return True
        return e.cat == "user_annotation" and e.name in paths.get((e.pid, e.tid), ())

    def is_op(e):
        return not e.step and not is_runtime(e.cat) and e.cat.lower() != "python_function"

    def linked(e):
        seq, fwd = e.args.get("Sequence number", -1), e.args.get("Fwd thread id", -1)
        return is_op(e) and not module_name(e) and seq >= 0 and fwd > 0

    def chain(e):  # e, its parent, ... the outermost
        out = []
        while e is not None:
            out.append(e)
            e = parent[e.index]
        return out

    info = {}
    for e in host:
        c = chain(e)
        bwd = next((x for x in reversed(c) if linked(x)), None)  # the outermost
        path, op = (), None
        if bwd is None:
            mods = [x for x in c if module_name(x)]
            path = tuple(x.name[len(MODULE_PREFIX):] if x.name.startswith(MODULE_PREFIX)
                         else x.name for x in reversed(mods))
            if mods:  # the outermost op between e (included) and its innermost module
                between = c[:c.index(mods[0])]
                ops_between = [x for x in between if is_op(x)]
                op = ops_between[-1] if ops_between else None
        info[e.index] = (bwd, path, op)

    nodes = {}

    def node(path):
        return nodes.setdefault(path, {"calls": 0, "forward": 0, "forward_self": 0,
                                       "backward_calls": 0, "backward_self": 0,
                                       "flops_self": 0, "gpu_self": 0, "kernels_self": 0,
                                       "ops": {}})

    def op_row(path, backward, name):
        return node(path)["ops"].setdefault(("backward" if backward else "forward", name),
                                            {"calls": 0, "total": 0, "flops": 0, "gpu": 0,
                                             "kernels": 0})

    first_fwd = {}  # sequence number -> (order key, module path)
    for e in sorted(host, key=lambda e: (e.ts, -e.dur, e.index)):
        bwd, path, op = info[e.index]
        if bwd is None and module_name(e):
            n = node(path)
            n["calls"] += 1
            n["forward"] += e.dur
            n["forward_self"] += e.dur
            if len(path) > 1:
                node(path[:-1])["forward_self"] -= e.dur
        elif bwd is None and path and is_op(e):
            if op is e:
                r = op_row(path, False, e.name)
                r["calls"] += 1
                r["total"] += e.dur
            seq = e.args.get("Sequence number", -1)
            if seq >= 0:
                first_fwd.setdefault(seq, path)

    unlinked = [0, 0]
    bwd_path = {}
    for e in host:
        bwd, _, _ = info[e.index]
        if bwd is not e:
            continue
        path = first_fwd.get(e.args["Sequence number"])
        if path is None:
            unlinked[0] += 1
            unlinked[1] += e.dur
            continue
        bwd_path[e.index] = path
        n = node(path)
        n["backward_calls"] += 1
        n["backward_self"] += e.dur
        r = op_row(path, True, e.name)
        r["calls"] += 1
        r["total"] += e.dur

    def target(e):  # (path, op row) that e's FLOPs and launches count in, or None
        bwd, path, op = info[e.index]
        if bwd is not None:
            p = bwd_path.get(bwd.index)
            return None if p is None else (p, op_row(p, True, bwd.name))
        if module_name(e):
            return path, None
        if not path:
            return None
        return path, op_row(path, False, op.name) if op is not None else None

    for e in host:
        f = e.args.get("flops", 0) if not e.step else 0
        tg = target(e) if f else None
        if tg:
            node(tg[0])["flops_self"] += f
            if tg[1] is not None:
                tg[1]["flops"] += f

    launch = {}
    for e in host:
        if e.corr and e.corr not in launch:
            launch[e.corr] = e
    for k in (e for e in t.events if e.kind in GPU_WORK):
        ln = launch.get(k.corr) if k.corr else None
        tg = target(ln) if ln is not None and not ln.step else None
        if tg:
            n = node(tg[0])
            n["gpu_self"] += k.dur
            n["kernels_self"] += 1
            if tg[1] is not None:
                tg[1]["gpu"] += k.dur
                tg[1]["kernels"] += 1

    for path, n in nodes.items():
        sub = [m for p, m in nodes.items() if p[:len(path)] == path]
        n["backward"] = sum(m["backward_self"] for m in sub)
        n["flops"] = sum(m["flops_self"] for m in sub)
        n["gpu"] = sum(m["gpu_self"] for m in sub)
        n["kernels"] = sum(m["kernels_self"] for m in sub)
    return {"nodes": nodes, "unlinked": tuple(unlinked)}


# ---- the neutral feed --------------------------------------------------------------------------

def _esc(s):
    return (s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
            .replace("\r", "\\r"))


def _id(v):
    return str(v) if isinstance(v, int) else "s:" + _esc(v)


def feed(t):
    out = ["path\t" + _esc(t.path), "base\t%d" % t.base_ns,
           "input\t%d\t%d" % (t.input_events, t.input_bytes)]
    for did, mem in sorted(t.devices.items()):
        major, name = t.device_info.get(did, (0, ""))
        out.append("device\t%d\t%d\t%d\t%s" % (did, mem, major, _esc(name)))
    for e in t.events:
        out.append("ev\t%s\t%d\t%s\t%s\t%d\t%d\t%d\t%s\t%s" % (
            e.kind, 1 if e.step else 0, _id(e.pid), _id(e.tid), e.ts, e.dur, e.corr,
            _esc(e.cat), _esc(e.name)))
        for k, v in e.args.items():
            if isinstance(v, list):
                out.append("arg\t%s\tj\t%s" % (_esc(k), _esc(json.dumps(v, separators=(",", ":")))))
            elif isinstance(v, int):
                out.append("arg\t%s\ti\t%d" % (_esc(k), v))
            else:
                out.append("arg\t%s\td\t%r" % (_esc(k), v))
        if e.shapes is not None:  # compact, unlike Kineto: the C side normalises the spacing
            out.append("arg\tInput Dims\tj\t" + _esc(json.dumps(e.shapes, separators=(",", ":"),
                                                                 default=str)))
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3 or argv[1] not in ("analyze", "feed"):
        sys.stderr.write("usage: tprof_ref.py analyze|feed PATH\n")
        return 2
    t = load(argv[2])
    if argv[1] == "feed":
        sys.stdout.write(feed(t))
    else:
        json.dump(analyze(t), sys.stdout, indent=1)
        sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
