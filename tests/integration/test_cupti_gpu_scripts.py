"""The GPU machine's checks (bench/gpu/), run here on what can run without a GPU: the trace checks
on traces built in the test (expected numbers by construction) and on the fixtures, the PyTorch
workload on the CPU, and the driver script's syntax."""
import gzip
import json
import os
import shutil
import subprocess

import pytest

SOURCE = os.environ["TPROF_SOURCE_DIR"]
FIXTURES = os.environ["TPROF_FIXTURES"]
PYTHON = os.environ.get("TPROF_PYTHON", "python3")
SCRIPTS = os.path.join(SOURCE, "bench", "gpu")


def check(*args):
    p = subprocess.run([PYTHON, os.path.join(SCRIPTS, "check_trace.py"), *map(str, args)],
                       capture_output=True, text=True, timeout=120)
    lines = p.stdout.strip().splitlines()
    last = json.loads(lines[-1]) if lines and lines[-1].startswith("{") else {}
    return p.returncode, last, p.stdout + p.stderr


def x(name, cat, pid, tid, ts, dur, **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


# Steps 7 and 8 on thread (1, 1); launches 1 and 2 in step 7, 3 in step 8, 4 after the steps.
TRACE = {"traceEvents": [
    x("ProfilerStep#7", "user_annotation", 1, 1, 0, 100),
    x("ProfilerStep#8", "user_annotation", 1, 1, 100, 100),
    x("cudaLaunchKernel", "cuda_runtime", 1, 1, 10, 2, correlation=1),
    x("cudaLaunchKernel", "cuda_runtime", 1, 1, 20, 2, correlation=2),
    x("cudaLaunchKernel", "cuda_runtime", 1, 1, 110, 2, correlation=3),
    x("cudaLaunchKernel", "cuda_runtime", 1, 1, 250, 2, correlation=4),
    x("gemm", "kernel", 0, 7, 15, 5.5, correlation=1),
    x("relu", "kernel", 0, 7, 25, 4.5, correlation=2),
    x("gemm", "kernel", 0, 7, 190, 10, correlation=3),  # ran after its step: still step 8's
    x("gemm", "kernel", 0, 7, 260, 1, correlation=4),
]}


@pytest.fixture
def trace(tmp_path):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(TRACE))
    return path


def write_lines(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_events_check(trace, tmp_path):
    # trace: step 7 has 2 kernels, 10 us; step 8 has 1 kernel, 10 us
    good = write_lines(tmp_path / "good.jsonl", [{"step": 7, "kernels": 2, "kernel_us": 11.0},
                                                 {"step": 8, "kernels": 1, "kernel_us": 10.5}])
    rc, res, out = check("events", trace, good)
    assert rc == 0 and res["status"] == "PASS", out
    assert res["kernels_trace"] == 3 and res["kernels_outside_steps"] == 1
    assert res["kernel_us_trace"] == pytest.approx(20.0)
    count = write_lines(tmp_path / "count.jsonl", [{"step": 7, "kernels": 3, "kernel_us": 11.0},
                                                   {"step": 8, "kernels": 1, "kernel_us": 10.5}])
    rc, res, _ = check("events", trace, count)
    assert rc == 1 and res["status"] == "FAIL"
    # 20 us in the trace vs 40 us timed: a gap beyond 6 us per kernel
    slow = write_lines(tmp_path / "slow.jsonl", [{"step": 7, "kernels": 2, "kernel_us": 30.0},
                                                 {"step": 8, "kernels": 1, "kernel_us": 10.0}])
    rc, res, _ = check("events", trace, slow)
    assert rc == 1 and res["status"] == "FAIL"
    # 20 us in the trace vs 19 us timed: kernels cannot outlast the events around them
    short = write_lines(tmp_path / "short.jsonl", [{"step": 7, "kernels": 2, "kernel_us": 9.5},
                                                   {"step": 8, "kernels": 1, "kernel_us": 9.5}])
    rc, res, _ = check("events", trace, short)
    assert rc == 1 and res["status"] == "FAIL"
    missing = write_lines(tmp_path / "missing.jsonl", [{"step": 7, "kernels": 2, "kernel_us": 10}])
    rc, res, _ = check("events", trace, missing)
    assert rc == 1 and "8" in res["reason"]


def test_analyze_check(trace, tmp_path):
    # by construction: gemm 3 calls 16.5 us, relu 1 call 4.5 us
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps({"top_gpu_kernels": [
        {"name": "gemm", "calls": 3, "total_us": 16.5, "pct": 78.57},
        {"name": "relu", "calls": 1, "total_us": 4.5, "pct": 21.43}]}))
    rc, res, out = check("analyze", trace, ok)
    assert rc == 0 and res["status"] == "PASS", out
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"top_gpu_kernels": [
        {"name": "gemm", "calls": 2, "total_us": 16.5},
        {"name": "relu", "calls": 1, "total_us": 4.5}]}))
    assert check("analyze", trace, wrong)[0] == 1
    unsorted = tmp_path / "unsorted.json"
    unsorted.write_text(json.dumps({"top_gpu_kernels": [
        {"name": "relu", "calls": 1, "total_us": 4.5},
        {"name": "gemm", "calls": 3, "total_us": 16.5}]}))
    assert check("analyze", trace, unsorted)[0] == 1


def test_overhead_summary(tmp_path):
    runs = tmp_path / "runs.txt"
    runs.write_text("off@64 1.0\ngpu@64 1.3\noff@64 3.0\ngpu@64 1.2\noff@64 2.0\ngpu@64 1.1\n"
                    "torch@64 4\ntorch_prof@64 6\noff@1024 5\ngpu@1024 5.5\n")
    rc, res, _ = check("overhead", runs)
    assert rc == 0
    assert res["median_step_ms"]["off@64"] == 2.0 and res["median_step_ms"]["gpu@64"] == 1.2
    assert res["ratio"]["gpu@64"] == pytest.approx(0.6)
    assert res["ratio"]["gpu@1024"] == pytest.approx(1.1)
    assert res["ratio"]["torch_prof@64"] == pytest.approx(1.5)  # against torch's own baseline
    # round by round (1.3/1, 1.2/3, 1.1/2): the median of the pairs, and the ratio of minimums
    assert res["paired_ratio"]["gpu@64"] == pytest.approx(0.55)
    assert res["min_ratio"]["gpu@64"] == pytest.approx(1.1)
    runs.write_text("gpu@64 1.3\n")
    rc, res, _ = check("overhead", runs)
    assert rc == 1 and "off@64" in res["reason"]
    runs.write_text("")  # no run printed a step time: a failure, not an empty pass
    rc, res, _ = check("overhead", runs)
    assert rc == 1 and "no run" in res["reason"]


def test_find_and_compare_fixtures(tmp_path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "config.json").write_text("{}")
    src = os.path.join(FIXTURES, "kineto", "nccl_data.json.gz")
    dst = tmp_path / "run" / "window.json.gz"
    dst.write_bytes(open(src, "rb").read())
    rc, _, out = check("find", tmp_path)
    assert rc == 0 and out.strip() == str(dst)
    rc, res, out = check("compare", dst, os.path.join(FIXTURES, "kineto", "sampled_rank-0.json.gz"))
    assert rc == 0 and res["status"] == "PASS", out
    assert res["torch"]["steps"] == 2  # ProfilerStep#551 and #552
    with gzip.open(src, "rt") as f:
        steps = [e for e in json.load(f)["traceEvents"]
                 if e.get("name", "").startswith("ProfilerStep#")]
    assert res["tprof"]["steps"] == len(steps)


def test_torch_workload_on_cpu(tmp_path):
    """The PyTorch side of check.sh, on the CPU: it trains and writes a profiler trace with the
    scheduled steps (the exact step numbers depend on the profiler's version)."""
    pytest.importorskip("torch")
    out = tmp_path / "torch.json"
    p = subprocess.run([PYTHON, os.path.join(SCRIPTS, "torch_mlp.py"), "--device", "cpu",
                        "--steps", "16", "--batch", "8", "--trace", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "step_ms=" in p.stdout
    data = json.loads(out.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    steps = {e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")}
    assert len(steps) == 10
    names = {e.get("name") for e in events}
    assert {"dataloader", "forward", "backward", "optimizer"} <= names


H200 = os.path.join(FIXTURES, "gpu-h200")


def tprof_analyze(path):
    tool = os.path.join(os.environ["TPROF_BUILD_DIR"], "tprof")
    out = subprocess.run([tool, "analyze", "--json", "--top", "1000", path], capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_h200_run_passes_the_gpu_checks():
    """The traces of check.sh's first run on a GPU (tests/fixtures/README.md, gpu-h200/): the
    example's kernels against its CUDA events, and the same PyTorch MLP profiled by tprof.torch
    (tprof's CUPTI source) and by torch.profiler (Kineto's)."""
    example = os.path.join(H200, "train_mlp_cuda.tprof.json.gz")
    rc, res, out = check("events", example,
                         os.path.join(H200, "expected", "train_mlp_cuda.cuda_events.jsonl"))
    assert rc == 0 and res["kernels_trace"] == res["kernels_events"] == 250, out
    assert 0 < res["kernel_us_events"] - res["kernel_us_trace"] < 4.0 * 250  # 3.2 us per kernel
    ours = os.path.join(H200, "torch_mlp.tprof.json.gz")
    kineto = os.path.join(H200, "torch_mlp.torch_profiler.pt.trace.json.gz")
    rc, res, out = check("same_kernels", ours, kineto)
    assert rc == 0 and res["kernels"] == [170, 170], out
    rc, res, _ = check("same_kernels", example, kineto)  # another program: other kernels
    assert rc == 1 and res["names_in_one_only"]
    # tprof analyze reads both the same: the kernel table's names and calls agree row for row
    tables = [{r["name"]: r["calls"] for r in tprof_analyze(p)["top_gpu_kernels"]}
              for p in (ours, kineto)]
    assert tables[0] == tables[1] and len(tables[0]) >= 10


def test_kernel_ops_check():
    """check.sh's kernel-to-op comparison (issue 21): on torch.profiler's H200 trace the
    launching op found by nesting (the innermost cpu_op around the launch) is the op Kineto
    links by External id for every kernel; tprof's H200 trace was recorded without ops (module
    ranges only), so every kernel lacks an op there and the check fails, as it must."""
    kineto = os.path.join(H200, "torch_mlp.torch_profiler.pt.trace.json.gz")
    rc, res, out = check("kernel_ops", kineto, kineto)
    assert rc == 0 and res["pairs"] >= 5 and not res["differ"], out
    assert "0 without an op, 0 whose External id names another op, 0 whose External id names " \
        "no op" in out
    rc, res, _ = check("kernel_ops", os.path.join(H200, "torch_mlp.tprof.json.gz"), kineto)
    assert rc == 1 and res["without_op"] == 170


def _ext_trace(path, kernel_ext):
    """A step with one op (External id 1) launching one kernel whose External id is kernel_ext."""
    ev = [{"ph": "X", "pid": 1, "tid": 1, "name": "ProfilerStep#3", "cat": "user_annotation",
           "ts": 0, "dur": 100},
          {"ph": "X", "pid": 1, "tid": 1, "name": "aten::mm", "cat": "cpu_op", "ts": 10,
           "dur": 20, "args": {"External id": 1}},
          {"ph": "X", "pid": 1, "tid": 1, "name": "cudaLaunchKernel", "cat": "cuda_runtime",
           "ts": 12, "dur": 2, "args": {"External id": 1, "correlation": 7}},
          {"ph": "X", "pid": 0, "tid": 7, "name": "gemm", "cat": "kernel", "ts": 40, "dur": 5,
           "args": {"External id": kernel_ext, "correlation": 7}}]
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def test_kernel_ops_external_ids(tmp_path):
    """Where ops carry External ids (tprof's trace with its CUPTI source and torch's observer),
    a kernel whose External id names another op, or none, fails the check."""
    good = _ext_trace(tmp_path / "good.json", 1)
    rc, res, out = check("kernel_ops", good, good)
    assert rc == 0 and res["pairs"] == 1, out
    rc, res, out = check("kernel_ops", _ext_trace(tmp_path / "none.json", 99), good)
    assert rc == 1 and res["external_id_unlinked"] == 1, out


def test_torch_workload_under_tprof_on_cpu(tmp_path):
    """check.sh's tprof.torch run, on the CPU: tprof's run directory with the scheduled steps."""
    if os.environ.get("TPROF_SANITIZE") == "1":
        # the extension of a sanitizer build cannot load into an uninstrumented Python (make
        # sanitize leaves the python label out for the same reason)
        pytest.skip("the Python package of a sanitizer build")
    pytest.importorskip("torch")
    p = subprocess.run([PYTHON, os.path.join(SCRIPTS, "torch_mlp.py"), "--device", "cpu",
                        "--steps", "16", "--batch", "8", "--tprof", str(tmp_path)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    rc, _, found = check("find", tmp_path / "torch_mlp")
    assert rc == 0, found
    with open(found.strip()) as f:
        events = json.load(f)["traceEvents"]
    steps = {e["name"] for e in events if e.get("name", "").startswith("ProfilerStep#")}
    assert len(steps) == 10
    names = {e.get("name") for e in events}
    assert {"Sequential", "Sequential.0", "Sequential.4"} <= names  # the model's module ranges


def test_streamed_torch_workload_and_its_summary_check_on_cpu(tmp_path):
    """check.sh's streamed tprof.torch run (`stream` section), on the CPU: the window streamed,
    and `check_trace.py summary` finding its summary files equal to `tprof analyze` of its trace;
    a summary file altered is found."""
    if os.environ.get("TPROF_SANITIZE") == "1":
        pytest.skip("the Python package of a sanitizer build")  # as above
    pytest.importorskip("torch")
    p = subprocess.run([PYTHON, os.path.join(SCRIPTS, "torch_mlp.py"), "--device", "cpu",
                        "--steps", "16", "--batch", "8", "--tprof", str(tmp_path), "--stream"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    run = tmp_path / "torch_mlp"
    config = json.loads((run / "tprof" / "config.json").read_text())
    assert config["stream"] is True
    build = os.environ["TPROF_BUILD_DIR"]
    rc, res, out = check("summary", run, build)
    assert rc == 0 and res["steps"] == 10, out
    summary = run / "tprof" / "summary.json"
    data = json.loads(summary.read_text())
    data["top_cpu_ops"][0]["calls"] += 1
    summary.write_text(json.dumps(data))
    rc, res, out = check("summary", run, build)
    assert rc == 1 and res["problem"], out


def test_check_script_parses():
    p = subprocess.run(["bash", "-n", os.path.join(SCRIPTS, "check.sh")], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr


def _graph_trace(path, level, drop_node_id=False):
    """Three steps, each copying its batch and replaying one CUDA graph (three nodes, or one
    graph-level event), as check.sh's graph runs write them."""
    host = {"ph": "X", "pid": 1, "tid": 1}
    ev = []
    for step in range(3):
        t0, corr = 1000 * step, 100 + step
        ev += [dict(host, name=f"ProfilerStep#{step + 7}", cat="user_annotation", ts=t0, dur=900),
               dict(host, name="graph", cat="user_annotation", ts=t0 + 100, dur=50),
               dict(host, name="cudaGraphLaunch", cat="cuda_runtime", ts=t0 + 110, dur=20,
                    args={"cbid": 311, "correlation": corr})]
        gpu = {"ph": "X", "pid": 0, "tid": 13, "args": {"correlation": corr, "graph id": 4}}
        if level == "graph":
            ev.append(dict(gpu, name="CUDA graph 4", cat="kernel", ts=t0 + 200, dur=300))
            continue
        for i, cat in enumerate(("gpu_memset", "kernel", "kernel")):
            args = dict(gpu["args"], **{"graph node id": 50 + i})
            if drop_node_id and step == 1 and i == 2:
                del args["graph node id"]
            ev.append(dict(gpu, name=f"node{i}", cat=cat, ts=t0 + 200 + 50 * i, dur=40, args=args))
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


@pytest.mark.parametrize("level", ["node", "graph"])
def test_graph_check(tmp_path, level):
    """check.sh's CUDA graph check on traces built here: one graph launch a step, its work with
    its graph and node ids, all charged to the range around the launch by `tprof analyze`."""
    trace = _graph_trace(tmp_path / "g.json", level)
    analysis = tmp_path / "a.json"
    analysis.write_text(json.dumps(tprof_analyze(str(trace))))
    nodes = ["3"] if level == "node" else []
    rc, res, out = check("graph", trace, analysis, level, *nodes)
    assert rc == 0 and res["steps"] == 3 and res["work_per_step"] == [3 if level == "node" else 1]
    if level == "node":
        assert check("graph", trace, analysis, level, "4")[0] == 1  # the example's count differs
        bad = _graph_trace(tmp_path / "bad.json", level, drop_node_id=True)
        rc, res, out = check("graph", bad, analysis, level)
        assert rc == 1 and res["problems"] == ["step 8: 3 records of a graph launch"], out
        assert check("graph", bad, analysis, level, "any")[0] == 1  # each launch's work checked
        rc, res, out = check("graph", trace, analysis, level, "any")  # reduce-overhead's form
        assert rc == 0 and res["work_per_step"] == [3], out


H100 = os.path.join(FIXTURES, "gpu-h100")


def _analysis(tmp_path, trace):
    path = tmp_path / (os.path.basename(trace) + ".analysis.json")
    path.write_text(json.dumps(tprof_analyze(trace)))
    return path


def test_h100_kernel_ops():
    """Issue 21's check on real CUPTI output (H100, tests/fixtures/gpu-h100): tprof.torch's ops
    (torch's observer, External ids pushed to CUPTI) launch the same kernels as torch.profiler's
    ops, pair by pair, and no kernel lacks its op."""
    ours = os.path.join(H100, "torch_mlp.tprof.json.gz")
    kineto = os.path.join(H100, "torch_mlp.torch_profiler.pt.trace.json.gz")
    rc, res, out = check("kernel_ops", ours, kineto)
    assert rc == 0 and res["pairs"] == 9 and not res["differ"], out
    assert "170 kernels in steps on 9 (op, kernel) pairs, 0 without an op" in out


def test_h100_compiled(tmp_path):
    """torch.compile on an H100 under tprof.torch: inductor's 100 Triton kernels of the ten steps,
    each launched by cuLaunchKernel (CUPTI's DRIVER kind) inside the compiled region's ranges,
    the same kernels as torch.profiler's run, and all GPU work charged by `tprof analyze`. Before
    the DRIVER kind was on, the launches were missing and this failed (docs/GPU.md)."""
    ours = os.path.join(H100, "compiled_mlp.tprof.json.gz")
    kineto = os.path.join(H100, "compiled_mlp.torch_profiler.pt.trace.json.gz")
    rc, res, out = check("compiled", ours, kineto, _analysis(tmp_path, ours))
    assert rc == 0, out
    assert res["triton_kernels"] == 100 and res["launches"] == {"cuLaunchKernel": 100}
    assert res["regions"] == {"CompiledFunction": 20, "CompiledFunctionBackward": 80}
    assert res["attributed_us"] == res["work_us"] > 0
    # without the launches (as tprof wrote before), the check fails
    trimmed = tmp_path / "no_driver.json"
    with gzip.open(ours, "rt") as f:
        data = json.load(f)
    data["traceEvents"] = [e for e in data["traceEvents"] if e.get("cat") != "cuda_driver"]
    trimmed.write_text(json.dumps(data))
    rc, res, _ = check("compiled", trimmed, kineto, _analysis(tmp_path, str(trimmed)))
    assert rc == 1 and res["without_launch"] == 100
    # each launch recorded twice (a runtime call and the driver call inside it, as the driver
    # callbacks gave on an H100 before the reduction dropped the inner one): the check fails
    doubled = tmp_path / "doubled.json"
    with gzip.open(ours, "rt") as f:
        data = json.load(f)
    driver = [e for e in data["traceEvents"] if e.get("cat") == "cuda_driver"]
    data["traceEvents"] += [dict(e, cat="cuda_runtime", name="cudaLaunchKernel") for e in driver]
    doubled.write_text(json.dumps(data))
    rc, res, _ = check("compiled", doubled, kineto, _analysis(tmp_path, str(doubled)))
    assert rc == 1 and res["launched_twice"] == len(driver) > res["triton_kernels"]


@pytest.mark.parametrize("name,nodes,per_step", [("train_mlp_cuda_graph", "26", 26),
                                                 ("torch_mlp_graph", None, 43)])
def test_h100_graphs(tmp_path, name, nodes, per_step):
    """CUDA graphs recorded per node on an H100 (the example's graph and torch.cuda.graph): one
    graph launch a step, its work under the launch's correlation id with graph and node ids, and
    every piece of work launched in the window charged to a range (the work queued by the last
    warm-up step's launch, which ran after the window opened, cannot be)."""
    trace = os.path.join(H100, name + ".tprof.json.gz")
    args = [nodes] if nodes else []
    rc, res, out = check("graph", trace, _analysis(tmp_path, trace), "node", *args)
    assert rc == 0 and res["steps"] == 10 and res["work_per_step"] == [per_step], out
    assert res["attributed_us"] < res["work_us"]  # the work launched before the window


def test_h100_streamed_window(tmp_path):
    """Issue 25's streamed window on real CUPTI (H100, check.sh's `stream` section,
    tests/fixtures/gpu-h100/torch_mlp_stream.tprof.json.gz, its summary files in expected/):
    tprof.torch with `stream: true`, CUPTI's records moved into the segments while the window
    recorded and the summary computed as it went. Its kernels and their ops are torch.profiler's
    (the same program's run in the fixtures), every piece of GPU work is charged, and its summary
    files are what `tprof analyze` finds in its trace; a GPU figure of the summary altered is
    found."""
    run = tmp_path / "torch_mlp"  # the run directory as the run wrote it (its trace's name too)
    shutil.copytree(os.path.join(H100, "expected", "torch_mlp_stream"), run / "tprof")
    (run / ".tprof").touch()
    trace = run / "tprof" / "trace_0001_steps_5-14.json.gz"
    shutil.copyfile(os.path.join(H100, "torch_mlp_stream.tprof.json.gz"), trace)
    kineto = os.path.join(H100, "torch_mlp.torch_profiler.pt.trace.json.gz")
    rc, res, out = check("same_kernels", trace, kineto)
    assert rc == 0 and res["kernels"] == [170, 170], out
    rc, res, out = check("kernel_ops", trace, kineto)
    assert rc == 0 and res["pairs"] == 9 and not res["differ"], out
    assert "0 without an op, 0 whose External id names another op" in out
    build = os.environ["TPROF_BUILD_DIR"]
    rc, res, out = check("summary", run, build)
    assert rc == 0 and res["steps"] == 10, out
    summary = run / "tprof" / "summary.json"
    data = json.loads(summary.read_text())
    gpu = data["gpu"]
    assert gpu["kernel_count"] == 390 and gpu["attributed_us"] == gpu["work_us"] > 0
    assert len(tprof_analyze(str(trace))["top_gpu_kernels"]) == len(data["top_gpu_kernels"])
    data["top_gpu_kernels"][0]["total_us"] += 1
    summary.write_text(json.dumps(data))
    rc, res, out = check("summary", run, build)
    assert rc == 1 and res["problem"], out
