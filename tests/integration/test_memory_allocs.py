"""The ops that allocate most (`top_ops_by_allocation`, docs/ANALYZE_JSON.md): every allocation
(a [memory] event with Bytes > 0) is charged to the innermost op range enclosing it on the same
thread, start <= t <= end, as torch charges self memory. Cross-checked on every fixture trace
against a computation that never walks a stack: for each allocation, among the op ranges of its
thread that contain it, the one that starts last (the shortest on a tie) is the innermost."""

import bisect
import json

import pytest
from cli_helpers import ALL, TRACES, tprof

import tprof_ref


def is_op(e):
    return (e.kind == tprof_ref.HOST and not e.step and not tprof_ref.is_runtime(e.cat)
            and e.cat.lower() != "python_function")


def reference(trace):
    """{op name: [bytes, count]} for one trace (tprof_ref.load's reading)."""
    ops = {}
    for e in trace.events:
        if is_op(e):
            ops.setdefault((e.pid, e.tid), []).append(e)
    for v in ops.values():
        v.sort(key=lambda e: e.ts)
    out = {}
    for m in trace.events:
        b = m.args.get("Bytes") if m.kind == tprof_ref.MEMORY else None
        if b is None or b <= 0:
            continue
        ranges = ops.get((m.pid, m.tid), [])
        starts = [e.ts for e in ranges]
        inside = [e for e in ranges[:bisect.bisect_right(starts, m.ts)] if e.end >= m.ts]
        if not inside:
            continue
        inner = max(inside, key=lambda e: (e.ts, -e.dur, e.index))
        row = out.setdefault(inner.name, [0, 0])
        row[0] += b
        row[1] += 1
    return out


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_top_ops_by_allocation_match_reference(path):
    want = reference(tprof_ref.load(str(path)))
    got = json.loads(tprof("analyze", "--json", "--top", ALL, path, rc=0).stdout)
    rows = got["top_ops_by_allocation"]
    assert {r["name"]: [r["alloc_bytes"], r["allocs"]] for r in rows} == want
    # most bytes first, then by name
    assert [(-r["alloc_bytes"], r["name"]) for r in rows] == \
        sorted((-r["alloc_bytes"], r["name"]) for r in rows)


def test_a_fixture_has_allocations():
    """The cross-check above is not vacuous: the torch 2 CPU fixture allocates inside ops."""
    path = next(p for p in TRACES if p.name.startswith("cnn_cpu_3steps"))
    want = reference(tprof_ref.load(str(path)))
    assert len(want) >= 3 and all(b > 0 and n > 0 for b, n in want.values())
