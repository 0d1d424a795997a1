"""The C analysis against the independent Python reference, on every real trace in TPROF_FIXTURES.

tests/lib/tprof_ref.py reads each trace with Python's json module and computes docs/SEMANTICS.md's
figures itself; it also writes the trace's classified events in a neutral line format, which
tests/tools/tp_analyze_feed turns into a tp_model for the C analysis (so this test does not
depend on the C trace reader). Integers and microsecond times must match exactly; percentages
within 1e-6 relative.
"""

import json
import math
import os
import pathlib
import random
import subprocess

import pytest

import tprof_ref

FIXTURES = pathlib.Path(os.environ["TPROF_FIXTURES"])
TOOL = pathlib.Path(os.environ["TPROF_BUILD_DIR"]) / "tests" / "tp_analyze_feed"
# every trace among the fixtures (expected/ folders hold expected figures, not traces)
TRACES = sorted(p for p in FIXTURES.rglob("*")
                if p.name.endswith((".json", ".json.gz")) and "expected" not in p.parts)
ALL_ROWS = "1000000"
RELATIVE = {"pct", "self_pct", "utilization_pct", "dataloader_pct", "per_second",
            "capacity_pct", "flops", "total", "step_flops"}


def close(key, want, got):
    if want is None or got is None:
        return want is None and got is None
    if key in RELATIVE and isinstance(want, float):
        return math.isclose(want, got, rel_tol=1e-6, abs_tol=1e-9)
    return want == got


def check_obj(where, want, got, keys):
    for k in keys:
        assert k in got, "%s: missing key %s" % (where, k)
        assert close(k, want[k], got[k]), "%s.%s: reference %r, tprof %r" % (
            where, k, want[k], got[k])


def check_rows(where, want, got, keys):
    assert len(got) == len(want), "%s: %d rows, reference has %d" % (where, len(got), len(want))
    for i, (w, g) in enumerate(zip(want, got)):
        check_obj("%s[%d]" % (where, i), w, g, keys)


def run_tool(args, tmp_path, feeds):
    paths = []
    for i, text in enumerate(feeds):
        p = tmp_path / ("in%d.feed" % i)
        p.write_text(text, encoding="utf-8")
        paths.append(str(p))
    out = subprocess.run([str(TOOL)] + args + paths, capture_output=True, check=True)
    return out.stdout.decode("utf-8")


@pytest.fixture(scope="module")
def traces():
    assert TRACES, "no traces under %s" % FIXTURES
    return {p: tprof_ref.load(str(p)) for p in TRACES}


def check_analysis(want, got):
    """Every figure of the reference against tprof's JSON."""
    check_obj("input", want["input"], got["input"], ["path", "bytes", "events"])
    steps = ["count", "total_us", "mean_us", "p50_us", "p95_us", "max_us", "window_us", "lead_us"]
    check_obj("steps", want["steps"], got["steps"], steps)
    check_rows("steps.slowest", want["steps"]["slowest"], got["steps"]["slowest"],
               ["name", "dur_us"])
    check_rows("steps.list", want["steps"]["list"], got["steps"]["list"],
               ["name", "start_us", "dur_us", "stages", "other_us", "lead_us", "flops"])
    check_rows("top_cpu_ops", want["top_cpu_ops"], got["top_cpu_ops"],
               ["name", "calls", "total_us", "self_us", "self_pct", "mean_us", "min_us",
                "max_us", "flops", "gpu_us", "kernels"])
    check_rows("top_cpu_ops_by_shape", want["top_cpu_ops_by_shape"], got["top_cpu_ops_by_shape"],
               ["name", "input_shapes", "calls", "total_us", "self_us", "self_pct", "mean_us",
                "min_us", "max_us", "flops", "gpu_us", "kernels"])
    check_rows("top_gpu_kernels", want["top_gpu_kernels"], got["top_gpu_kernels"],
               ["name", "calls", "total_us", "pct", "mean_us", "min_us", "max_us"])
    check_rows("top_ops_by_gpu_time", want["top_ops_by_gpu_time"], got["top_ops_by_gpu_time"],
               ["name", "gpu_us", "kernels", "pct"])
    check_obj("gpu", want["gpu"], got["gpu"],
              ["busy_us", "utilization_pct", "kernel_count", "devices"])
    check_rows("gpu.idle", sorted(want["gpu"]["idle"], key=lambda r: str(r["device"])),
               sorted(got["gpu"]["idle"], key=lambda r: str(r["device"])),
               ["device", "idle_us", "host_us", "sync_us", "launch_us", "other_us"])
    check_rows("gpu.per_device", sorted(want["gpu"]["per_device"], key=lambda r: str(r["device"])),
               sorted(got["gpu"]["per_device"], key=lambda r: str(r["device"])),
               ["device", "busy_us", "idle_us", "window_us", "utilization_pct"])
    check_rows("stages", want["stages"], got["stages"],
               ["stage", "count", "total_us", "mean_us", "p50_us", "p95_us", "max_us", "pct"])
    check_obj("other", want["other"], got["other"],
              ["stage", "count", "total_us", "mean_us", "p50_us", "p95_us", "max_us", "pct"])
    assert close("dataloader_pct", want["dataloader_pct"], got["dataloader_pct"])
    check_rows("memory", want["memory"], got["memory"],
               ["device_type", "device_id", "peak_bytes", "peak_ts_us", "capacity_bytes"])
    check_obj("flops", want["flops"], got["flops"], ["total", "time_us", "per_second"])
    check_obj("mfu", want["mfu"], got["mfu"], ["step_flops"])
    assert [(r["id"], r["saving_us"]) for r in got["recommendations"]] == \
        [(r["id"], r["saving_us"]) for r in want["recommendations"]]
    for r in got["recommendations"]:
        assert any(c.isdigit() for c in r["message"]), r  # the evidence is in numbers


def analyse_trace(path):
    """tprof's JSON for a trace read by the C reader (end to end)."""
    out = subprocess.run([str(TOOL), "--trace", "--top", ALL_ROWS, str(path)],
                         capture_output=True, check=True)
    return json.loads(out.stdout)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_fixture_matches_reference(path, traces, tmp_path):
    trace = traces[path]
    check_analysis(tprof_ref.analyze(trace),
                   json.loads(run_tool(["--top", ALL_ROWS], tmp_path, [tprof_ref.feed(trace)])))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_real_reader_end_to_end(path, traces):
    """The same figures through the C trace reader instead of the reference's feed."""
    check_analysis(tprof_ref.analyze(traces[path]), analyse_trace(path))


SHAPES = [[[2, 3], [3, 4]], [[2, 3], []], [], [[[1, 2], [3]], [4]], [[-1]]]


def random_trace(seed):
    """A trace with what the fixtures lack or have little of: FLOPs, B/E pairs, string tids,
    zero-length and overlapping ranges, equal starts, several devices, Bytes-only memory,
    shuffled event order, stage names nested in each other, input shapes (odd seeds)."""
    rng = random.Random(seed)
    names = ["aten::mm", "aten::add", "forward", "## backward ##", "Optimizer.step#SGD.step",
             "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", "dataloader",
             "python_thing", "ncclKernel_AllReduce"]
    events, corr = [], 0
    t = 0
    for step in range(rng.randint(1, 4)):
        length = rng.randint(2000, 9000)
        events.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % step,
                       "pid": 1, "tid": "1", "ts": t, "dur": length})
        for _ in range(rng.randint(5, 40)):
            tid = rng.choice([1, "1", 2])
            ts = t + rng.randint(0, length)
            dur = rng.choice([0, rng.randint(1, 3000)]) + rng.choice([0, 0.5, 0.125])
            name = rng.choice(names)
            if rng.random() < 0.2:
                events.append({"ph": "B", "name": name, "pid": 1, "tid": tid, "ts": ts,
                               "args": {"Input Dims": rng.choice(SHAPES)} if seed % 2 else {}})
                events.append({"ph": "E", "pid": 1, "tid": tid, "ts": ts + int(dur)})
                continue
            ev = {"ph": "X", "cat": rng.choice(["cpu_op", "python_function"]), "name": name,
                  "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}
            if rng.random() < 0.3:
                ev["args"]["flops"] = rng.randint(1, 10**9)
            if seed % 2 and rng.random() < 0.7:  # odd seeds: record_shapes
                ev["args"]["Input Dims"] = rng.choice(SHAPES)
            events.append(ev)
            if rng.random() < 0.5:
                corr += 1
                lt = ts + rng.randint(0, max(0, int(dur)))
                events.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
                               "pid": 1, "tid": tid, "ts": lt, "dur": 1,
                               "args": {"correlation": corr}})
                for _ in range(rng.randint(0, 2)):
                    events.append({"ph": "X", "cat": rng.choice(["kernel", "gpu_memcpy"]),
                                   "name": rng.choice(["gemm", "ncclKernel_AllReduce", "relu"]),
                                   "pid": rng.choice([0, 1000]), "tid": rng.choice([7, 8]),
                                   "ts": lt + rng.randint(0, 500), "dur": rng.randint(0, 900),
                                   "args": {"correlation": corr}})
        for _ in range(rng.randint(0, 6)):
            events.append({"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1,
                           "ts": t + rng.randint(0, length),
                           "args": {"Device Type": 0, "Device Id": -1,
                                    "Bytes": rng.randint(-500, 1000)}})
        t += length + rng.randint(0, 100)
    rng.shuffle(events)  # B/E stay matched per thread: re-sort those by time
    be = sorted((e for e in events if e["ph"] in "BE"), key=lambda e: e["ts"])
    events = [e for e in events if e["ph"] not in "BE"] + be
    return {"traceEvents": events, "baseTimeNanoseconds": 1700000000000000000}


@pytest.mark.parametrize("seed", range(8))
def test_random_traces_match_reference(seed, tmp_path):
    path = tmp_path / "random.json"
    path.write_text(json.dumps(random_trace(seed)))
    trace = tprof_ref.load(str(path))
    want = tprof_ref.analyze(trace)
    check_analysis(want, json.loads(run_tool(["--top", ALL_ROWS], tmp_path,
                                             [tprof_ref.feed(trace)])))
    check_analysis(want, analyse_trace(path))


def test_fixtures_exercise_every_figure(traces):
    """The comparison above means something only if the fixtures reach every figure."""
    results = [tprof_ref.analyze(t) for t in traces.values()]
    assert any(r["steps"]["count"] > 1 for r in results)
    assert any(r["gpu"]["utilization_pct"] is not None for r in results)
    assert any(r["top_ops_by_gpu_time"] for r in results)
    assert any(r["dataloader_pct"] for r in results)
    assert any(any(s["count"] for s in r["stages"] if s["stage"] == "optimizer") for r in results)
    assert any(len(r["memory"]) > 1 for r in results)
    assert any(r["recommendations"] for r in results)
    assert any(r["gpu"]["devices"] == 0 for r in results)
    # the op table by input shape: traces with shapes (some launching GPU work) and without
    assert any(any(o["gpu_us"] for o in r["top_cpu_ops_by_shape"]) for r in results)
    assert any(not r["top_cpu_ops_by_shape"] for r in results)


def test_two_inputs_accumulate(traces, tmp_path):
    """Two ranks of one job added to one analysis: sums add, steps append, rows merge by name."""
    a, b = (traces[FIXTURES / "kineto" / n] for n in
            ("sampled_rank-0.json.gz", "sampled_rank-1.json.gz"))
    ra, rb = tprof_ref.analyze(a), tprof_ref.analyze(b)
    got = json.loads(run_tool(["--top", ALL_ROWS], tmp_path,
                              [tprof_ref.feed(a), tprof_ref.feed(b)]))
    assert got["input"]["count"] == 2
    assert got["steps"]["count"] == ra["steps"]["count"] + rb["steps"]["count"]
    assert got["steps"]["total_us"] == round(ra["steps"]["total_us"] + rb["steps"]["total_us"], 3)
    assert got["gpu"]["busy_us"] == round(ra["gpu"]["busy_us"] + rb["gpu"]["busy_us"], 3)
    assert got["gpu"]["kernel_count"] == ra["gpu"]["kernel_count"] + rb["gpu"]["kernel_count"]
    want_ops = {}
    for r in ra["top_cpu_ops"] + rb["top_cpu_ops"]:
        w = want_ops.setdefault(r["name"], [0, 0])
        w[0] += r["calls"]
        w[1] += round(r["self_us"] * 1000)
    got_ops = {r["name"]: [r["calls"], round(r["self_us"] * 1000)] for r in got["top_cpu_ops"]}
    assert got_ops == want_ops
    self_sum = sum(v[1] for v in want_ops.values())
    for r in got["top_cpu_ops"][:5]:
        assert math.isclose(r["self_pct"], 100.0 * want_ops[r["name"]][1] / self_sum,
                            rel_tol=1e-9)


def test_compare_two_ranks(traces, tmp_path):
    a, b = (traces[FIXTURES / "kineto" / n] for n in
            ("sampled_rank-0.json.gz", "sampled_rank-1.json.gz"))
    ra, rb = tprof_ref.analyze(a), tprof_ref.analyze(b)
    got = json.loads(run_tool(["--compare", "--top", ALL_ROWS], tmp_path,
                              [tprof_ref.feed(a), tprof_ref.feed(b)]))
    ma, mb = ra["steps"]["mean_us"], rb["steps"]["mean_us"]
    assert got["a"]["mean_step_us"] == ma and got["b"]["mean_step_us"] == mb
    assert math.isclose(got["step_change_pct"], 100.0 * (mb - ma) / ma, rel_tol=1e-9)
    sa = {r["name"]: round(r["self_us"] * 1000) for r in ra["top_cpu_ops"]}
    sb = {r["name"]: round(r["self_us"] * 1000) for r in rb["top_cpu_ops"]}
    want = {n: sb.get(n, 0) - sa.get(n, 0) for n in set(sa) | set(sb)}
    rows = got["ops"]
    assert {r["name"]: round(r["delta_us"] * 1000) for r in rows} == want
    assert [abs(r["delta_us"]) for r in rows] == sorted((abs(r["delta_us"]) for r in rows),
                                                        reverse=True)
    assert got["ops_added"] == len(set(sb) - set(sa))
    assert got["ops_removed"] == len(set(sa) - set(sb))
    for r in rows:
        status = "added" if r["name"] not in sa else "removed" if r["name"] not in sb else "changed"
        assert r["status"] == status
    ka = {r["name"]: round(r["total_us"] * 1000) for r in ra["top_gpu_kernels"]}
    kb = {r["name"]: round(r["total_us"] * 1000) for r in rb["top_gpu_kernels"]}
    assert {r["name"]: round(r["delta_us"] * 1000) for r in got["kernels"]} == \
        {n: kb.get(n, 0) - ka.get(n, 0) for n in set(ka) | set(kb)}
