"""The recommendations on real traces: each rule fires on a trace that shows its problem and stays
quiet on one that does not; advice comes ranked by the time it could save; the stage patterns
find what torch 2.13 and Lightning 2.6 write by themselves.

The traces are the shared fixtures (TPROF_FIXTURES) and the small ones of tests/fixtures/advice
(their README says how each was made). tests/integration/test_analysis_fixtures.py already
compares every figure and each recommendation's id and saving with tests/lib/tprof_ref.py; this
file checks what the advice says."""

import json
import os
import pathlib

import pytest
from cli_helpers import FIXTURES, SOURCE, tprof

import tprof_ref

ADVICE = SOURCE / "tests" / "fixtures" / "advice"
KINETO = FIXTURES / "kineto"


def analyse(path):
    return json.loads(tprof("analyze", "--json", path, rc=0).stdout)


_cache = {}


def report(name):
    if name not in _cache:
        path = ADVICE / name if (ADVICE / name).exists() else KINETO / name
        if not path.exists():
            path = FIXTURES / "torch-legacy" / name
        _cache[name] = analyse(path)
    return _cache[name]


def reco(name, rid):
    found = [r for r in report(name)["recommendations"] if r["id"] == rid]
    return found[0] if found else None


# (rule, a trace where it fires, a trace where it does not)
CASES = [
    ("dataloader", "torch_dataloader_bound.json.gz", "torch_sync_foreach.json.gz"),
    ("pageable_copy", "worker0.1623143089861.pt.trace.json.gz", "sampled_rank-0.json.gz"),
    ("fp32_matmul", "worker0.1623143089861.pt.trace.json.gz",
     "gaunernst_bert-small-uncased__1016001.json.gz"),
    ("optimizer_foreach", "torch_sync_foreach.json.gz", "nccl_data.json.gz"),
    ("cpu_op_bound", "torch_compute_bound.json.gz", "torch_dataloader_bound.json.gz"),
    ("python_overhead", "torch_python_stack.json.gz", "torch_compute_bound.json.gz"),
    ("other", "lightning_fit.json.gz", "torch_dataloader_bound.json.gz"),
    ("nccl", "sampled_rank-0.json.gz", "gaunernst_bert-small-uncased__1016001.json.gz"),
    ("gpu_idle", "gaunernst_bert-small-uncased__1016001.json.gz", "torch_compute_bound.json.gz"),
    ("sync", "setup_sync_item.json.gz", "gpu_metrics_input.json"),
    # the rules of the setup_* traces (make_setup_traces.py; the README says what each shows)
    ("unstable_steps", "setup_unstable_gc.json.gz", "mlp_cpu_300steps.json.gz"),
    ("dominant_op", "setup_dominant_bmm.json.gz", "torch_dataloader_bound.json.gz"),
    ("launch_bound", "setup_launch_bound.json.gz",
     "gaunernst_bert-small-uncased__1016001.json.gz"),
    ("fp32_matmul", "setup_fp32_h100.json.gz", "setup_dominant_bmm.json.gz"),
    ("optimizer_foreach", "setup_optimizer_loop.json.gz", "setup_sync_item.json.gz"),
    ("dataloader", "setup_loader_saturated.json.gz", "setup_unstable_gc.json.gz"),
]


@pytest.mark.parametrize("rule,fires,quiet", CASES, ids=[c[0] for c in CASES])
def test_rule_fires_and_stays_quiet(rule, fires, quiet):
    if fires:
        r = reco(fires, rule)
        assert r is not None, (rule, fires, report(fires)["recommendations"])
        assert any(c.isdigit() for c in r["message"])
        assert r["saving_us"] >= 0
    assert reco(quiet, rule) is None, (rule, quiet)


def test_ranked_by_saving():
    for name in ("worker0.1623143089861.pt.trace.json.gz", "lightning_fit.json.gz",
                 "torch_compute_bound.json.gz"):
        savings = [r["saving_us"] for r in report(name)["recommendations"]]
        assert len(savings) >= 2 and savings == sorted(savings, reverse=True), name


def test_text_prints_the_top_three():
    path = KINETO / "worker0.1623143089861.pt.trace.json.gz"
    recos = report(path.name)["recommendations"]
    text = tprof("analyze", path, rc=0).stdout.decode()
    shown = [r["id"] for r in recos if "[%s]" % r["id"] in text]
    assert shown == [r["id"] for r in recos[:3]]
    assert "%d more" % (len(recos) - 3) in text


def test_single_process_loader_hint():
    """num_workers=0 is read from the iterator's name; with workers the advice differs."""
    single = reco("torch_dataloader_bound.json.gz", "dataloader")
    workers = reco("torch_dataloader_workers.json.gz", "dataloader")
    assert "num_workers=0" in single["message"] and "_SingleProcessDataLoaderIter" in \
        single["message"]
    assert workers is not None and "num_workers=0" not in workers["message"]


def test_plain_torch_profiler_loop_gets_the_loading_advice():
    """The issue's case: ~95% of the step in the DataLoader, torch.profiler alone, no stages."""
    r = report("torch_dataloader_bound.json.gz")
    dl = [s for s in r["stages"] if s["stage"] == "dataloader"][0]
    assert dl["pct"] > 90
    assert r["recommendations"][0]["id"] == "dataloader"


def trace_doc(name):
    """A fixture's JSON as Python's json module reads it (the independent side)."""
    import gzip
    with gzip.open(ADVICE / name) as f:
        return json.load(f)


def named(doc, name):
    return [e for e in doc["traceEvents"] if e.get("name") == name]


def test_loader_workers_saturated_vs_too_few():
    """The issue's case: num_workers=2 on a 2-CPU machine must not say "more workers"; with 8
    CPUs the advice is to raise it, to a number."""
    sat = reco("setup_loader_saturated.json.gz", "dataloader")["message"]
    few = reco("setup_loader_few.json.gz", "dataloader")["message"]
    assert "CPU is the limit" in sat and "2 workers already use all 2 CPUs" in sat
    assert "raise" not in sat and "more of them" not in sat
    assert "raise DataLoader(num_workers=2) to num_workers=7" in few and "8 CPUs" in few
    assert "persistent_workers=True" in sat and "persistent_workers=True" in few
    # the same figure either way: the loader's share of the steps, from the trace itself
    doc = trace_doc("setup_loader_few.json.gz")
    share = 100 * sum(e["dur"] for e in named(doc, "dataloader")) / sum(
        e["dur"] for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#"))
    assert "%.1f%% of step time" % share in few and "%.1f%% of step time" % share in sat


@pytest.mark.parametrize("workers,cpus,target", [(0, 2, 1), (1, 4, 3), (2, 8, 7)])
def test_loader_workers_estimate(tmp_path, workers, cpus, target):
    """What more workers could save, computed here from the trace: each worker loads a batch as
    fast as the process did, beside the rest of the step, so the steps still wait for
    max(0, work / target - rest), the work being the loading (num_workers=0: the process loaded
    alone) or, with W workers busy all the step, W x the step time."""
    doc = trace_doc("setup_loader_few.json.gz")
    text = json.dumps(doc).replace("num_workers=2;", "num_workers=%d;" % workers)
    path = tmp_path / "loader.json"
    path.write_text(text.replace("cpu_count=8", "cpu_count=%d" % cpus))
    load = sum(e["dur"] for e in named(doc, "dataloader"))
    steps = sum(e["dur"] for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#"))
    rest = steps - load
    work = load if workers == 0 else workers * steps
    want = load - max(0, work / target - rest)
    [r] = [r for r in json.loads(tprof("analyze", "--json", path, rc=0).stdout)[
        "recommendations"] if r["id"] == "dataloader"]
    assert r["saving_us"] == pytest.approx(want, abs=0.002)
    assert "to num_workers=%d" % target in r["message"]
    assert "could save up to %.1f ms of the %.1f ms" % (want / 1e3, load / 1e3) in r["message"]
    assert 0 < want < load or workers == 2  # the third case hides all of the loading


@pytest.mark.parametrize("loader_ms,process_ms", [(300, 200), (1500, 400)])
def test_loader_workers_at_the_cpus_waiting_or_busy(tmp_path, loader_ms, process_ms):
    """As many workers as CPUs: the CPU time tprof.torch read over the window (loader_cpu.py's
    readings, summed) tells workers that wait on something else (CPUs idle while the steps wait
    for batches: more workers hide the wait, estimated as for too few, doubling them) from
    workers the CPU limits (every CPU busy)."""
    doc = trace_doc("setup_loader_saturated.json.gz")
    text = json.dumps(doc)
    halves = "loader_cpu_ns=%d;process_cpu_ns=%d;reading_ns=500000000"
    readings = [halves % (loader_ms * 1e6 / 2, process_ms * 1e6 / 2)] * 2  # summed
    for i, reading in enumerate(readings):  # one more setup range per reading
        extra = {"ph": "X", "cat": "user_annotation", "name": "tprof.setup", "pid": 4242,
                 "tid": 4242, "ts": 7.0 + i, "dur": 1, "args": {"tprof.setup": reading}}
        text = text.replace('"traceEvents": [', '"traceEvents": [' + json.dumps(extra) + ", ", 1)
    path = tmp_path / "loader.json"
    path.write_text(text)
    [r] = [r for r in json.loads(tprof("analyze", "--json", path, rc=0).stdout)[
        "recommendations"] if r["id"] == "dataloader"]
    busy, workers = (loader_ms + process_ms) / 1e3, loader_ms / 1e3
    load = sum(e["dur"] for e in named(doc, "dataloader"))
    steps = sum(e["dur"] for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#"))
    if 2 - busy > 0.5 * (load / steps) * 2:  # CPUs idle while the steps waited
        want = load - max(0, 2 * steps / 4 - (steps - load))  # 2 workers busy all step, then 4
        assert "yet %.1f of the CPUs sat idle on average (the process and its workers kept " \
               "%.1f busy, the workers %.1f)" % (2 - busy, busy, workers) in r["message"]
        assert "Raise num_workers to 4" in r["message"] and "CPU is the limit" not in r["message"]
        assert r["saving_us"] == pytest.approx(want, abs=0.002)
        assert "could save up to %.1f ms of the %.1f ms" % (want / 1e3, load / 1e3) in r["message"]
    else:
        assert "CPU is the limit (the process and its workers kept %.1f of them busy, the " \
               "workers %.1f)" % (busy, workers) in r["message"]
        assert "raise" not in r["message"].lower()
        assert r["saving_us"] == pytest.approx(load, abs=0.002)


def test_loader_worker_starts_and_stops(tmp_path):
    """The fetches that started and stopped the workers (tprof.torch.dataloader's setup pairs)
    are left out of what more workers could save, and are what persistent_workers saves, less
    one start: computed here from the trace and the pairs."""
    doc = trace_doc("setup_loader_few.json.gz")  # 2 workers, 8 CPUs, persistent_workers=0
    start_ns, stop_ns = 6_000_000, 2_000_000
    extra = {"ph": "X", "cat": "user_annotation", "name": "tprof.setup", "pid": 4242,
             "tid": 4242, "ts": 7.0, "dur": 1,
             "args": {"tprof.setup": "loader_start_ns=%d;loader_starts=2;loader_stop_ns=%d"
                      % (start_ns, stop_ns)}}
    doc["traceEvents"].append(extra)
    path = tmp_path / "loader.json"
    path.write_text(json.dumps(doc))
    [r] = [r for r in json.loads(tprof("analyze", "--json", path, rc=0).stdout)[
        "recommendations"] if r["id"] == "dataloader"]
    load = sum(e["dur"] for e in named(doc, "dataloader"))
    steps = sum(e["dur"] for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#"))
    cycle = (start_ns + stop_ns) / 1e3
    steady, rest = load - cycle, steps - load
    workers = steady - max(0, 2 * (steady + rest) / 7 - rest)  # 2 workers, then 7
    persist = cycle - start_ns / 2 / 1e3  # one start kept
    assert r["saving_us"] == pytest.approx(workers + persist, abs=0.002)
    assert "could save up to %.1f ms of the %.1f ms of steady fetches" % (
        workers / 1e3, steady / 1e3) in r["message"]
    assert "persistent_workers=True: starting the workers (2 times, at each epoch) and " \
           "stopping them took %.1f ms of the loading, about %.1f ms more than starting them " \
           "once" % (cycle / 1e3, persist / 1e3) in r["message"]


def test_loader_without_setup_stays_generic():
    """A foreign trace holds no setup: no number of workers is made up, and "more workers" is
    not said without the CPU count."""
    msg = reco("torch_dataloader_workers.json.gz", "dataloader")["message"]
    assert "more of them if already set" not in msg and "CPU is the limit" in msg
    assert "raise DataLoader" not in msg


def test_unstable_steps_name_gc():
    """An epoch whose p95 step is 20x its median: the rule fires (the issue's "Bottlenecks:
    none" case) and names the garbage collections the trace holds."""
    r = report("setup_unstable_gc.json.gz")
    p50, p95 = r["steps"]["p50_us"], r["steps"]["p95_us"]
    assert p95 / p50 > 20
    msg = reco("setup_unstable_gc.json.gz", "unstable_steps")["message"]
    assert "%.1fx the median" % (p95 / p50) in msg
    gcs = named(trace_doc("setup_unstable_gc.json.gz"), "gc")
    assert "garbage collector ran %d times" % len(gcs) in msg and "gc.freeze()" in msg
    over = sum(s["dur_us"] - p50 for s in r["steps"]["list"] if s["dur_us"] > p50)
    assert reco("setup_unstable_gc.json.gz", "unstable_steps")["saving_us"] == \
        pytest.approx(over, abs=1e-3)


@pytest.mark.skipif(os.environ.get("TPROF_SANITIZE") == "1",
                    reason="imports the tprof extension, built with ASan in this build")
def test_unstable_steps_are_a_bottleneck_in_lightnings_report():
    """The same epoch in the Lightning integrations' text: a bottleneck, never "none"."""
    from tprof.torch.lightning_report import _bottleneck_lines
    r = report("setup_unstable_gc.json.gz")
    assert not any("none" in line for line in _bottleneck_lines(r))


def test_unstable_steps_name_the_stage_that_grew():
    """Lightning's fit: the slow step holds the validation; the advice says so."""
    msg = reco("lightning_fit.json.gz", "unstable_steps")["message"]
    assert "in validation" in msg and "val_check_interval" in msg


def test_sync_names_the_python_call():
    """cudaStreamSynchronize under aten::item -> aten::_local_scalar_dense: the advice names
    .item() and the time, which the trace's runtime calls add up to."""
    r = reco("setup_sync_item.json.gz", "sync")
    assert "aten::_local_scalar_dense" in r["message"] and "tensor.item()" in r["message"]
    syncs = named(trace_doc("setup_sync_item.json.gz"), "cudaStreamSynchronize")
    assert "waits for the GPU %d times" % len(syncs) in r["message"]
    assert r["saving_us"] == pytest.approx(sum(e["dur"] for e in syncs))  # not the async copy


def test_optimizer_advice_reads_its_setup():
    """Adam(foreach=False) on CUDA: the recorded setup says so, the advice says fused=True."""
    msg = reco("setup_optimizer_loop.json.gz", "optimizer_foreach")["message"]
    assert "Adam with foreach=False, fused=False" in msg and "pass fused=True" in msg
    generic = reco("torch_sync_foreach.json.gz", "optimizer_foreach")["message"]
    assert "foreach=True" in generic and "Adam with" not in generic


def test_dominant_op_names_the_op_and_what_helps():
    """aten::bmm's kernels take 60% of each step: named, with the matrix-product advice; the
    share is the trace's own bmm kernel time over its step time."""
    doc = trace_doc("setup_dominant_bmm.json.gz")
    kern = sum(e["dur"] for e in doc["traceEvents"] if e.get("cat") == "kernel"
               and "nn_n_tilesize256" in e["name"])
    steps = sum(e["dur"] for e in doc["traceEvents"] if e["name"].startswith("ProfilerStep#"))
    msg = reco("setup_dominant_bmm.json.gz", "dominant_op")["message"]
    # the module range around it, from the trace's nn.Module range enclosing its calls
    mod = named(doc, "nn.Module: MultiheadAttention_0")
    bmm = named(doc, "aten::bmm")
    assert all(any(m["ts"] <= b["ts"] and b["ts"] + b["dur"] <= m["ts"] + m["dur"] for m in mod)
               for b in bmm)
    assert "aten::bmm (in nn.Module: MultiheadAttention_0) takes %.1f%% of step time in its " \
        "GPU kernels" % (100 * kern / steps) in msg
    assert "matrix product" in msg and "bf16" in msg


def test_fp32_matmul_from_input_types_on_h100():
    """cuBLAS's fp32 kernels on an H100 are named sm90_xmma_gemm_f32f32... (no sgemm): the
    ops' Input type says fp32; bf16 ops on the same GPU (BERT) stay quiet."""
    msg = reco("setup_fp32_h100.json.gz", "fp32_matmul")["message"]
    assert "Input type float" in msg and "NVIDIA H100" in msg and "aten::addmm" in msg
    assert "set_float32_matmul_precision" in msg and "bfloat16" in msg
    assert reco("gaunernst_bert-small-uncased__1016001.json.gz", "fp32_matmul") is None
    # ROCm's gfx9 is no compute capability 9: no tensor-core advice for an MI250
    assert reco("mi250_minitoy_train_ROCm6_2_kineto.json.gz", "fp32_matmul") is None


def test_demo_names_its_dominant_op(tmp_path):
    """The C demo (make demo): one range takes about half of every step; the report says which
    instead of "no rule fired"."""
    import os
    import subprocess
    exe = pathlib.Path(os.environ["TPROF_BUILD_DIR"]) / "examples" / "train_mlp"
    if not exe.exists():
        pytest.skip("examples not built")
    subprocess.run([str(exe), "--steps", "30", "--profile", "--profiling.run_id=demo",
                    "--profiling.output_dir=%s" % tmp_path, "--profiling.wait=2",
                    "--profiling.active=20", "--profiling.summary=false"],
                   check=True, capture_output=True)
    r = analyse(tmp_path / "demo")
    top = max((o for o in r["top_cpu_ops"]), key=lambda o: o["self_us"])
    found = reco_in(r, "dominant_op")
    assert found is not None and top["name"] in found["message"], r["recommendations"]
    assert "%.1f%% of step time" % (100 * top["self_us"] / r["steps"]["total_us"]) in \
        found["message"]


def reco_in(r, rid):
    return next((x for x in r["recommendations"] if x["id"] == rid), None)


def test_fp32_action_follows_the_architecture():
    """A V100 (compute 7) has no TF32: the advice is fp16 autocast."""
    r = reco("worker0.1623143089861.pt.trace.json.gz", "fp32_matmul")
    assert "float16" in r["message"] and "compute capability 7" in r["message"]


def stage(name, st):
    return [s for s in report(name)["stages"] if s["stage"] == st][0]


def test_torch_patterns():
    """What torch 2.13 writes by itself maps to stages: the loader's iterator, autograd's
    nodes, the optimizer hooks; nn.Module ranges with stacks."""
    for name in ("torch_dataloader_bound.json.gz", "torch_dataloader_workers.json.gz"):
        assert stage(name, "dataloader")["count"] == 4
        assert stage(name, "backward")["count"] > 0
        assert stage(name, "optimizer")["count"] == 8  # step and zero_grad, 4 steps
        assert stage(name, "forward")["count"] == 0  # no range around the forward pass
    assert stage("torch_python_stack.json.gz", "forward")["count"] == 2  # nn.Module: Sequential_0


def test_lightning_patterns():
    """Lightning 2.6's action names: training_step and backward are carved out of the
    optimizer step that runs them; validation is its own stage."""
    name = "lightning_fit.json.gz"
    for st in ("dataloader", "forward", "backward", "optimizer", "validation"):
        assert stage(name, st)["count"] > 0, st
    r = report(name)
    # stage ranges may run past their step (Lightning's steps cut its batches), so their sum
    # can exceed what they cover; what no stage covers is the rest, at least
    staged = sum(s["total_us"] for s in r["stages"])
    assert r["steps"]["total_us"] - staged <= r["other"]["total_us"] < r["steps"]["total_us"]


# ---- GPU idle explained, against Holistic Trace Analysis (PyPI traceinsight, module hta) ----

# The fixtures whose GPU work HTA keeps whole. On the others HTA's loader leaves part of the work
# out (worker0: 7580 of its 9096 kernels, copies and sets; its last ends at 899.7 ms of the
# trace's 996.5 ms), so its sums cover less time than the trace holds; tprof's figures there
# are checked against tests/lib/tprof_ref.py only (test_analysis_fixtures.py).
HTA_WHOLE = ["gaunernst_bert-small-uncased__1016001.json.gz", "gpu_metrics_input.json",
             "mi250_minitoy_train_ROCm6_2_kineto.json.gz"]


def hta_idle(path, tmp_path):
    hta = pytest.importorskip("hta.trace_analysis")
    import logging
    import shutil
    logging.disable(logging.WARNING)
    shutil.copy(path, tmp_path)
    t = hta.TraceAnalysis(trace_dir=str(tmp_path))
    df, _ = t.get_idle_time_breakdown(ranks=list(t.t.traces.keys()), visualize=False)
    sums = {}
    for _, row in df.iterrows():
        sums[str(row["idle_category"])] = sums.get(str(row["idle_category"]), 0) + \
            float(row["idle_time"])
    return sums


@pytest.mark.parametrize("name", HTA_WHOLE)
def test_idle_breakdown_agrees_with_hta(name, tmp_path):
    """host + sync is HTA's host wait, launch its kernel wait, other its other. HTA reads
    times as whole microseconds, so each gap (between two pieces of work) may differ by up to
    2 us."""
    want = hta_idle(KINETO / name, tmp_path)
    gaps = sum(1 for e in tprof_ref.load(str(KINETO / name)).events
               if e.kind in tprof_ref.GPU_WORK)
    idle = report(name)["gpu"]["idle"]
    got = {"host_wait": sum(r["host_us"] + r["sync_us"] for r in idle),
           "kernel_wait": sum(r["launch_us"] for r in idle),
           "other": sum(r["other_us"] for r in idle)}
    for cat, value in got.items():
        assert abs(value - want.get(cat, 0.0)) <= 2 * gaps, (cat, got, want)
    assert got["host_wait"] > 0


def test_idle_sync_part():
    """The sync part is where a synchronization ended inside a host gap: the BERT trace calls
    cudaDeviceSynchronize and cudaStreamSynchronize between its kernels."""
    idle = report("gaunernst_bert-small-uncased__1016001.json.gz")["gpu"]["idle"]
    assert idle[0]["sync_us"] > 0
    assert report("sampled_rank-0.json.gz")["gpu"]["idle"][0]["sync_us"] == 0
