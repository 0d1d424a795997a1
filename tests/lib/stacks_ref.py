"""The independent Python reference of call stacks (docs/METRICS.md, "Call stacks"): folded
stacks, and the Python stacks that called each op and kernel, computed from a trace that
tprof_ref read with Python's json module, by tprof_ref's nesting and merging rules."""

import collections

import tprof_ref

__all__ = ["Stacks", "compute", "folded_lines", "parse_folded", "program_frame"]

Stacks = collections.namedtuple("Stacks", "self_ns ops kernels")


def _is_python(e):
    return e.cat.lower() == "python_function"


def compute(trace):
    """Stacks(self_ns: {path tuple: ns}, ops: {op: {caller path: [calls, ns]}}, kernels: same).

    A host range's path: its name after its parent's path, when it is a python_function range
    or its parent has a path; a step or a merged range has its parent's path. A call's caller:
    the path of the innermost python_function range around it (a kernel: around its launch)."""
    host = [e for e in trace.events if e.kind == tprof_ref.HOST]
    parent = tprof_ref.walk_tracks(host)
    merged = tprof_ref.merged_into_parent(host, parent)
    child_sum = collections.Counter()
    for e in host:
        if parent[e.index] is not None:
            child_sum[parent[e.index].index] += e.dur
    path, py = {}, {}
    for e in sorted(host, key=lambda e: (e.ts, -e.dur, e.index)):  # parents first
        p = parent[e.index]
        pp = path[p.index] if p is not None else None
        py[e.index] = py[p.index] if p is not None else None
        if e.step or e.index in merged:
            path[e.index] = pp
        elif _is_python(e) or pp is not None:
            path[e.index] = (pp or ()) + (e.name,)
            if _is_python(e):
                py[e.index] = path[e.index]
        else:
            path[e.index] = None
    self_ns = collections.Counter()
    ops = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    for e in host:
        if path[e.index] is not None:
            self_ns[path[e.index]] += max(0, e.dur - child_sum[e.index])
        p = parent[e.index]
        caller = py[p.index] if p is not None else None
        if caller is None or e.step or e.index in merged or e.name == tprof_ref.SETUP_NAME:
            continue
        ops[e.name][caller][0] += 1
        ops[e.name][caller][1] += e.dur
    launch = {}
    for e in sorted(host, key=lambda e: e.index):
        if e.corr and e.corr not in launch:
            launch[e.corr] = e
    kernels = collections.defaultdict(lambda: collections.defaultdict(lambda: [0, 0]))
    for e in trace.events:
        if e.kind != tprof_ref.KERNEL or not e.corr or e.corr not in launch:
            continue
        p = parent[launch[e.corr].index]
        caller = py[p.index] if p is not None else None
        if caller is not None:
            kernels[e.name][caller][0] += 1
            kernels[e.name][caller][1] += e.dur
    return Stacks(self_ns, ops, kernels)


def _sanitize(frame):
    return "".join(":" if c == ";" else " " if ord(c) < 0x20 or ord(c) == 0x7f else c
                   for c in frame)


def folded_lines(stacks):
    """{folded stack: whole microseconds}, as `tprof analyze --folded` prints them."""
    ns = collections.Counter()
    for path, v in stacks.self_ns.items():
        if v > 0:
            ns[";".join(_sanitize(f) for f in path)] += v
    return {k: (v + 500) // 1000 for k, v in ns.items() if v >= 500}


def parse_folded(text):
    """{stack: value} from folded text, as flame graph tools read it: each line is a stack, one
    space and an integer; the stack is frames joined by ';'. Fails on any other line."""
    out = {}
    for line in text.splitlines():
        stack, _, value = line.rpartition(" ")
        assert stack and value.isdigit() and int(value) > 0, line
        assert all(stack.split(";")), line
        assert stack not in out, "a stack printed twice: " + stack
        out[stack] = int(value)
    return out


def program_frame(path):
    """The frame a text line names for a caller: the innermost Python source line outside
    torch/, else None."""
    for f in reversed(path):
        if not f.startswith("<") and ".py(" in f and not f.startswith("torch/") \
                and "/torch/" not in f:
            return f
    return None
