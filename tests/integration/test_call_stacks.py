"""Call stacks (with_stack): `tprof analyze --folded`, the JSON report's `call_stacks` key and the
text "Call stacks" section, on real Kineto traces recorded with_stack, against the independent
reference of tests/lib/stacks_ref.py (the raw trace read by Python's json module)."""

import json
import math

import pytest
from cli_helpers import ALL, FIXTURES, TRACES, tprof

import stacks_ref
import tprof_ref

# the real traces with python_function ranges: a CPU CNN (torch 2.13), BERT on an H100 (kernels
# launched under Python frames), a small CPU MLP
STACK_TRACES = ["torch2/cnn_cpu_3steps.pt.trace.json.gz",
                "kineto/gaunernst_bert-small-uncased__1016001.json.gz",
                "advice/torch_python_stack.json.gz"]


@pytest.fixture(scope="module", params=STACK_TRACES)
def case(request):
    path = FIXTURES / request.param
    return path, stacks_ref.compute(tprof_ref.load(str(path)))


def test_folded_equals_reference(case):
    path, ref = case
    got = stacks_ref.parse_folded(tprof("analyze", "--folded", path, rc=0).stdout.decode())
    want = stacks_ref.folded_lines(ref)
    assert len(want) > 20
    assert got == want


def test_folded_is_sorted_and_covers_the_python_time(case):
    path, ref = case
    text = tprof("analyze", "--folded", path, rc=0).stdout.decode()
    stacks = [line.rpartition(" ")[0] for line in text.splitlines()]
    assert [s.encode() for s in stacks] == sorted(s.encode() for s in stacks)
    # a root frame's width in a flame graph (the sum of its lines) holds all the time under it:
    # at least the durations of the outermost Python ranges with that name, less the rounding of
    # each line. (It may hold more: siblings that overlap, as a step overlaps the frames of
    # profiler.step() that start and end it, each count their own self time, as in the op table.)
    trace = tprof_ref.load(str(path))
    host = [e for e in trace.events if e.kind == tprof_ref.HOST]
    parent = tprof_ref.walk_tracks(host)
    roots = {}
    for e in host:
        p, outer = parent[e.index], True
        while p is not None:
            outer = outer and p.cat.lower() != "python_function"
            p = parent[p.index]
        if e.cat.lower() == "python_function" and outer:
            roots[e.name] = roots.get(e.name, 0) + e.dur
    values = stacks_ref.parse_folded(text)
    assert roots
    for name, dur in roots.items():
        width = sum(v for s, v in values.items() if s.split(";")[0] == name)
        lines = sum(1 for s in values if s.split(";")[0] == name)
        assert width >= dur / 1000 - lines * 0.5, name
        assert width <= dur / 1000 * 1.05, name


def test_json_callers_equal_reference(case):
    path, ref = case
    j = json.loads(tprof("analyze", "--json", "--top", ALL, path, rc=0).stdout)
    cs = j["call_stacks"]
    for key, table, rows in (("ops", ref.ops, j["top_cpu_ops"]),
                             ("kernels", ref.kernels, j["top_gpu_kernels"])):
        # every op (kernel) with a Python caller has a row, in the table's order
        assert [r["name"] for r in cs[key]] == [r["name"] for r in rows if r["name"] in table]
        total = {r["name"]: r["total_us"] for r in rows}
        for row in cs[key]:
            callers = table[row["name"]]
            assert row["stacks"] == len(callers)
            assert math.isclose(row["total_us"], total[row["name"]])
            want_pct = 100 * sum(ns for _, ns in callers.values()) / (row["total_us"] * 1000)
            assert math.isclose(row["python_pct"], want_pct, rel_tol=1e-6), row["name"]
            times = sorted((ns for _, ns in callers.values()), reverse=True)
            assert [round(c["time_us"] * 1000) for c in row["callers"]] == times[:5]
            for c in row["callers"]:
                calls, ns = callers[tuple(c["stack"])]
                assert (c["calls"], round(c["time_us"] * 1000)) == (calls, ns)
                assert math.isclose(c["pct"], 100 * ns / (row["total_us"] * 1000), rel_tol=1e-6)
    if FIXTURES / STACK_TRACES[1] == path:
        assert cs["kernels"], "BERT's kernels have Python callers"


def test_text_line_names_the_main_caller(case):
    path, ref = case
    j = json.loads(tprof("analyze", "--json", path, rc=0).stdout)
    text = tprof("analyze", "--markdown", path, rc=0).stdout.decode()
    assert "## Call stacks" in text
    section = text.split("## Call stacks")[1].split("\n## ")[0]
    op = j["call_stacks"]["ops"][0]
    shares = {}
    for caller, (_, ns) in ref.ops[op["name"]].items():
        frame = stacks_ref.program_frame(caller) or "torch"
        shares[frame] = shares.get(frame, 0) + ns
    frame, ns = max(shares.items(), key=lambda kv: (kv[1], kv[0]))
    line = [ln for ln in section.splitlines() if ln.startswith("- " + op["name"] + ": ")][0]
    assert line.startswith("- %s: %.1f%% from %s" % (op["name"], 100 * ns / (op["total_us"] * 1000),
                                                     frame)), line


def test_cnn_addmm_is_called_from_the_training_step():
    path = FIXTURES / STACK_TRACES[0]
    text = tprof("analyze", path, rc=0).stdout.decode()
    assert "aten::addmm: 100.0% from test_torch_kineto.py(52): train_step" in text
    assert "aten::mkldnn_convolution: 100.0% from test_torch_kineto.py(52): train_step " \
        "(nn.Module: Conv2d_0)" in text


@pytest.mark.parametrize("name", ["kineto/nccl_data.json.gz",
                                  "torch-legacy/mlp_cpu_300steps.json.gz"])
def test_traces_without_stacks_have_none(name):
    path = FIXTURES / name
    assert tprof("analyze", "--folded", path, rc=0).stdout == b""
    assert "call_stacks" not in json.loads(tprof("analyze", "--json", path, rc=0).stdout)
    assert "Call stacks" not in tprof("analyze", path, rc=0).stdout.decode()


def test_folded_refuses_another_format():
    p = tprof("analyze", "--folded", "--json", TRACES[0], rc=2)
    assert b"--folded" in p.stderr and len(p.stderr.splitlines()) == 1


def test_folded_edge_cases(tmp_path):
    """A hand-written trace: a frame named with ';' and a newline, an op merged into its parent
    of the same name, a step inside a Python frame (transparent), an op outside every Python
    frame (no stack), a kernel launched under a frame. Against the reference and by hand."""
    def x(name, cat, ts, dur, tid=1, **args):
        return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
                "args": args}
    events = [
        x("main.py(1): <module>", "python_function", 0, 1000),
        x("ProfilerStep#1", "user_annotation", 10, 900),
        x("main.py(5): a;b\nc", "python_function", 20, 500),
        x("aten::mul", "cpu_op", 30, 300),
        x("aten::mul", "cpu_op", 40, 200),  # its parent's only child, same name: merged
        x("cudaLaunchKernel", "cuda_runtime", 600, 50, correlation=7),
        x("aten::add", "cpu_op", 2000, 100),  # outside every Python frame
        {"ph": "X", "name": "gemm", "cat": "kernel", "pid": 0, "tid": 7, "ts": 700, "dur": 40,
         "args": {"correlation": 7, "device": 0, "stream": 7}},
    ]
    path = tmp_path / "edge.json"
    path.write_text(json.dumps({"traceEvents": events}))
    got = stacks_ref.parse_folded(tprof("analyze", "--folded", path, rc=0).stdout.decode())
    want = {"main.py(1): <module>": 1000 - 500 - 50,  # the step's self time is its parent's
            "main.py(1): <module>;main.py(5): a:b c": 200,
            "main.py(1): <module>;main.py(5): a:b c;aten::mul": 300,  # with its merged child
            "main.py(1): <module>;cudaLaunchKernel": 50}
    assert got == want == stacks_ref.folded_lines(stacks_ref.compute(tprof_ref.load(str(path))))
    cs = json.loads(tprof("analyze", "--json", path, rc=0).stdout)["call_stacks"]
    mul = [r for r in cs["ops"] if r["name"] == "aten::mul"][0]
    assert (mul["stacks"], mul["callers"][0]["calls"], mul["callers"][0]["time_us"]) == (1, 1, 300)
    assert mul["callers"][0]["stack"] == ["main.py(1): <module>", "main.py(5): a;b\nc"]
    assert "aten::add" not in [r["name"] for r in cs["ops"]]
    assert cs["kernels"] == [{"name": "gemm", "total_us": 40, "python_pct": 100.0, "stacks": 1,
                              "callers": [{"stack": ["main.py(1): <module>"], "calls": 1,
                                           "time_us": 40, "pct": 100.0}]}]
