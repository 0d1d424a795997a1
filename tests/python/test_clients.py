"""Real clients of tprof's traces, run in process through their own loading code:

- TensorBoard's PyTorch profiler plugin (torch-tb-profiler): a tprof run written with
  tensorboard_names=True is parsed by the plugin's RunProfileData and RunGenerator (what its
  RunLoader runs per worker file); it finds the steps and the ops, with tprof's figures.
- traceinsight (the PyPI successor of Holistic Trace Analysis, package `hta`): its
  TraceAnalysis loads tprof's traces and the Kineto fixtures; its kernel breakdown and step
  durations agree with `tprof analyze --json` on the same files.
- Both pointed at a run directory as tprof wrote it (its top level: one trace per rank with
  every window; tprof's own files in tprof/): every rank, every window's events and steps.

Each client is skipped, with the reason, where it is not installed."""
import glob
import gzip
import json
import logging
import os
import re
import subprocess
from decimal import Decimal

import pytest

torch = pytest.importorskip("torch")

import tprof  # noqa: E402
import tprof.torch  # noqa: E402
from conftest import PYTHON, free_port, ranges, run_traces, trace_events  # noqa: E402
from run_files import artifact  # noqa: E402

FIXTURES = os.path.join(os.environ.get("TPROF_FIXTURES", ""), "kineto")
TPROF = os.path.join(os.environ.get("TPROF_BUILD_DIR", "."), "tprof")


def tprof_analyze(path):
    """`tprof analyze --json` (the CLI), every row of every table."""
    out = subprocess.run([TPROF, "analyze", "--json", "--top", "100000", path],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


@pytest.fixture(scope="module")
def tprof_run(tmp_path_factory):
    """A small training loop profiled with op recording: 20 recorded steps, TensorBoard names."""
    torch.set_num_threads(1)
    out = str(tmp_path_factory.mktemp("clients") / "runs")
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    data = [(torch.randn(4, 8), torch.randint(0, 3, (4,))) for _ in range(22)]
    with tprof.profile(model=model, record_ops=True, output_dir=out, tensorboard_names=True,
                       summary=False, wait=1, active=20, repeat=1) as prof:
        for x, y in tprof.torch.dataloader(data):
            with tprof.stage("forward"):
                loss = torch.nn.functional.cross_entropy(model(x), y)
            with tprof.stage("backward"):
                loss.backward()
            with tprof.stage("optimizer"):
                opt.step()
                opt.zero_grad()
            prof.step()
    (trace,) = glob.glob(artifact(prof.run_dir, "*.pt.trace.json"))  # the window's, in tprof/
    return prof.run_dir, trace


def test_a_step_never_ends_after_the_next_begins(tmp_path):
    """Readers compute a range's end as ts + dur in doubles. Step k ends exactly where step k+1
    begins, and without care the sum rounds past it: torch-tb-profiler then takes step k+1 for
    an intersecting child of step k and drops it with all its ops. tprof's writer keeps the
    computed end at or before the next step's start (2000 adjacent steps)."""
    with tprof.profile(output_dir=str(tmp_path), summary=False) as prof:
        for _ in range(2000):
            with tprof.range("work"):
                pass
            prof.step()
    (trace,) = glob.glob(artifact(prof.run_dir, "trace_*.json"))
    with open(trace, encoding="utf-8") as f:
        events = json.load(f, parse_float=Decimal)["traceEvents"]
    steps = sorted((e for e in ranges(events) if e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    assert len(steps) == 2001  # and the one open at the end
    for a, b in zip(steps, steps[1:]):
        assert b["ts"] - (a["ts"] + a["dur"]) in (0, Decimal("0.001"))  # adjacent, 1 ns at most
        assert float(a["ts"]) + float(a["dur"]) <= float(b["ts"]), a["name"]


# ---- TensorBoard's PyTorch profiler plugin ----

def test_tensorboard_plugin_loads_a_tprof_run(tprof_run, tmp_path, caplog):
    pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler is not installed")
    from torch_tb_profiler import consts
    from torch_tb_profiler.profiler.data import RunProfileData
    from torch_tb_profiler.profiler.run_generator import RunGenerator

    run_dir, trace = tprof_run
    match = consts.WORKER_PATTERN.match(os.path.basename(trace))
    assert match, "tensorboard_names must give a name the plugin lists"
    worker, span = match.group(1), match.group(2)
    with caplog.at_level(logging.WARNING):
        data = RunProfileData.parse(worker, span, trace, str(tmp_path))
        profile = RunGenerator(worker, span, data).generate_run_profile()
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text
    ours = tprof_analyze(trace)
    # steps: the plugin's step list and each step's total are tprof's
    assert data.steps_names == [str(s["number"]) for s in ours["steps"]["list"]]
    assert [name for name, _ in zip(data.steps_names, profile.overview["steps"]["rows"])] == \
        data.steps_names
    totals = [c.costs[-1] for c in data.steps_costs]  # the plugin's last column: the step total
    assert len(totals) == len(ours["steps"]["list"]) == 20
    for got, step in zip(totals, ours["steps"]["list"]):
        assert got == pytest.approx(step["dur_us"], rel=0.01)
    # ops: every aten op the plugin aggregates, with tprof's calls and self time
    mine = {o["name"]: o for o in ours["top_cpu_ops"]}
    plugin_ops = {o.name: o for o in data.op_list_groupby_name}
    assert {"aten::addmm", "aten::mm", "aten::relu"} <= set(plugin_ops)
    for name, op in plugin_ops.items():
        assert op.calls == mine[name]["calls"], name
        assert op.self_host_duration == pytest.approx(mine[name]["self_us"], rel=0.01, abs=0.01)
    assert {"operator", "overall", "trace"} <= {v.name for v in profile.views}


# ---- traceinsight (Holistic Trace Analysis) ----

def hta_analysis(folder, **kw):
    """HTA's analysis of the traces in folder (kw: TraceAnalysis's options), with ns-resolution
    times kept (by default HTA rounds each event's start up and end down to whole µs:
    pytorch/pytorch#122425)."""
    pytest.importorskip("hta", reason="traceinsight (package hta) is not installed")
    from hta.configs.env_options import HTAEnvOptions
    from hta.trace_analysis import TraceAnalysis

    HTAEnvOptions.instance().set_disable_ns_rounding(True)
    return TraceAnalysis(trace_dir=folder, **kw)


def hta_steps(analysis):
    """The host ProfilerStep#N durations HTA parsed (not the GPU's gpu_user_annotation copies),
    in time order."""
    trace = analysis.t.get_trace(0)
    names = analysis.t.symbol_table.get_sym_table()
    steps = trace[trace["name"].map(lambda i: names[i].startswith("ProfilerStep#"))
                  & trace["cat"].map(lambda i: names[i] != "gpu_user_annotation")]
    return [float(d) for d in steps.sort_values("ts")["dur"]]


def padded_trace_folder(tmp_path, path):
    """A folder holding a copy of the trace with one empty ProfilerStep after everything: HTA
    takes a trace's last ProfilerStep for incomplete and leaves it and its kernels out, so the
    padding makes it keep every real step (tprof's figures are those of the original file)."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        doc = json.load(f)
    events = doc["traceEvents"]
    steps = [e for e in ranges(events) if str(e.get("name", "")).startswith("ProfilerStep#")]
    end = max(e["ts"] + e.get("dur", 0) for e in events if "ts" in e)
    events.append(dict(max(steps, key=lambda e: e["ts"]), name="ProfilerStep#999999",
                       ts=end + 10, dur=1))
    folder = tmp_path / "trace"
    folder.mkdir()
    with open(folder / "trace.json", "w", encoding="utf-8") as f:
        json.dump(doc, f)
    return str(folder)


def test_traceinsight_loads_a_tprof_run(tprof_run, tmp_path):
    analysis = hta_analysis(padded_trace_folder(tmp_path, tprof_run[1]))
    ours = [s["dur_us"] for s in tprof_analyze(tprof_run[1])["steps"]["list"]]
    got = hta_steps(analysis)  # HTA left the padding step out
    assert len(got) == len(ours) == 20
    for g, o in zip(got, ours):
        assert g == pytest.approx(o, rel=0.01)


KINETO = ["worker0.1623143089861.pt.trace.json.gz",
          "gaunernst_bert-small-uncased__1016001.json.gz",
          "mi250_minitoy_train_ROCm6_2_kineto.json.gz"]


@pytest.mark.parametrize("name", KINETO)
def test_traceinsight_kernel_breakdown_and_steps_agree(tmp_path, name):
    """Per kernel, HTA's total (its kernel breakdown) and each step's duration equal tprof's
    within 1% (CUDA and ROCm traces, µs and ns resolution)."""
    path = os.path.join(FIXTURES, name)
    if not os.path.exists(path):
        pytest.skip("fixture %s not found" % path)
    analysis = hta_analysis(padded_trace_folder(tmp_path, path))
    _, kernels = analysis.get_gpu_kernel_breakdown(visualize=False, num_kernels=100000)
    ours = tprof_analyze(path)
    mine = {k["name"]: k for k in ours["top_gpu_kernels"]}
    hta = kernels[kernels["kernel_type"] == "COMPUTATION"]
    assert len(hta) > 0
    for _, row in hta.iterrows():
        assert row["sum (us)"] == pytest.approx(mine[row["name"]]["total_us"], rel=0.01), \
            row["name"]
    steps = [s["dur_us"] for s in ours["steps"]["list"]]
    got = hta_steps(analysis)
    assert len(got) == len(steps)
    for g, o in zip(got, steps):
        assert g == pytest.approx(o, rel=0.01)


# ---- a run directory as it is, written with default settings ----

TB_LOADER = r'''
import json, sys, types
from torch_tb_profiler import io
from torch_tb_profiler.plugin import TorchProfilerPlugin
from torch_tb_profiler.profiler.loader import RunLoader


def main():
    logdir = sys.argv[1]
    # the plugin's own discovery (TorchProfilerPlugin._get_run_dirs reads self.logdir alone)
    found = list(TorchProfilerPlugin._get_run_dirs(types.SimpleNamespace(logdir=logdir)))
    profiles, distributed = [], []
    for run_dir in found:
        run = RunLoader(run_dir, run_dir, io.Cache()).load()
        for p in run.get_profiles():
            if not hasattr(p, "overview"):  # the distributed view of a span, not a worker's
                distributed.append(p.span)
                continue
            steps = p.overview["steps"]
            loading = [c.get("name") for c in steps["columns"]].index("DataLoader")
            profiles.append({"dir": run_dir, "worker": p.worker, "span": p.span,
                             "steps": [r[0] for r in steps["rows"]],
                             "dataloader_us": sum(r[loading] for r in steps["rows"])})
    print(json.dumps({"dirs": found, "profiles": profiles, "distributed": distributed}))


if __name__ == "__main__":
    main()
'''


def tensorboard_load(logdir):
    """What TensorBoard's plugin, pointed at logdir, loads: the folders it takes for runs and
    each worker profile's (worker, span, step names), through its RunLoader."""
    pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler is not installed")
    env = dict(os.environ, TORCH_PROFILER_START_METHOD="fork")
    r = subprocess.run([PYTHON, "-c", TB_LOADER, logdir], capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout)


def window_rank(path):
    """The rank of a window's trace by its name (.rank<N>.), or None with one rank."""
    m = re.search(r"\.rank(\d+)\.", os.path.basename(path))
    return int(m.group(1)) if m else None


def check_tensorboard_sees_the_run(run_dir, ranks):
    """The plugin pointed at the run directory, then at its output_dir, finds one run, the run
    directory itself (not tprof/), whose profiles are its top-level traces: one per rank (a
    worker, without span), each with the steps of every window of that rank in order, and as
    its DataLoader time tprof's dataloader stage time of those windows (not 0)."""
    windows = run_traces(run_dir)
    assert len(windows) >= 2 * ranks and len(windows) % ranks == 0, windows
    ours = {t: tprof_analyze(t) for t in windows}
    for logdir in (run_dir, os.path.dirname(run_dir)):
        got = tensorboard_load(logdir)
        assert got["dirs"] == [run_dir], got["dirs"]
        profiles = got["profiles"]
        assert len(profiles) == ranks and len({p["worker"] for p in profiles}) == ranks
        assert all(p["span"] is None for p in profiles), profiles
        for p in profiles:  # the worker's rank: its windows, in order
            rank = re.search(r"\.rank(\d+)$", p["worker"])
            mine = [t for t in windows if window_rank(t) == (int(rank.group(1)) if rank else None)]
            assert len(mine) == len(windows) // ranks
            assert p["steps"] == [str(s["number"]) for t in mine for s in ours[t]["steps"]["list"]]
            loading = sum(s["total_us"] for t in mine for s in ours[t]["stages"]
                          if s["stage"] == "dataloader")
            assert loading > 0
            assert p["dataloader_us"] == pytest.approx(loading, abs=0.01 * len(mine))
        if ranks > 1:  # the plugin's distributed view: one, across the ranks (span "default")
            assert len(got["distributed"]) == 1, got["distributed"]


def test_tensorboard_loads_the_c_example_run_as_it_is(tmp_path):
    example = os.path.join(os.environ.get("TPROF_BUILD_DIR", "."), "examples", "train_mlp")
    out = tmp_path / "runs"
    r = subprocess.run([example, "--steps", "30", "--profile", "--profiling.output_dir", str(out),
                        "--profiling.run_id", "c", "--profiling.active", "5",
                        "--profiling.repeat", "3"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert len(run_traces(str(out / "c"))) == 3
    check_tensorboard_sees_the_run(str(out / "c"), 1)


def test_tensorboard_loads_a_torch_run_as_it_is(tmp_path):
    torch.set_num_threads(1)
    model = torch.nn.Linear(8, 3)
    with tprof.profile(model=model, output_dir=str(tmp_path / "runs"), run_id="py",
                       summary=False, wait=1, active=3, repeat=2) as prof:
        for x in tprof.torch.dataloader([torch.randn(4, 8) for _ in range(9)]):
            model(x).sum().backward()
            prof.step()
    assert len(run_traces(prof.run_dir)) == 2
    check_tensorboard_sees_the_run(prof.run_dir, 1)


RANKS_JOB = r'''
import os, sys
import torch, torch.distributed as dist, torch.multiprocessing as mp
import tprof, tprof.torch


def worker(rank, out, port):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 3))
    data = [torch.randn(4, 8) for _ in range(7)]
    with tprof.profile(model=model, output_dir=out, run_id="ddp", summary=False, wait=1,
                       active=3, repeat=2) as prof:
        for x in tprof.torch.dataloader(data):
            model(x).sum().backward()
            dist.barrier()
            prof.step()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.13's gloo teardown can deadlock (tests/python/test_torch_distributed.py)


if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[1], sys.argv[2]), nprocs=2)
'''


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """A 2-rank gloo run (torch.multiprocessing.spawn), 2 windows per rank: its run directory."""
    if not torch.distributed.is_available():
        pytest.skip("this torch has no torch.distributed")
    tmp = tmp_path_factory.mktemp("ranks")
    script = tmp / "job.py"
    script.write_text(RANKS_JOB)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    r = subprocess.run([PYTHON, str(script), str(tmp / "runs"), free_port()], env=env,
                       capture_output=True, text=True, timeout=400)
    assert r.returncode == 0, r.stderr[-4000:]
    run_dir = str(tmp / "runs" / "ddp")
    assert len(run_traces(run_dir)) == 4
    return run_dir


def test_tensorboard_loads_two_ranks_as_they_are(two_ranks):
    check_tensorboard_sees_the_run(two_ranks, 2)


def test_traceinsight_loads_the_run_directory_as_it_is(two_ranks):
    """traceinsight pointed at the run directory as tprof wrote it. HTA takes every top-level
    *.json and *.gz of the folder, one per rank, the rank from the first "rank":\\s+N of the file
    (a later file of a rank replacing an earlier one): before, config.json, summary.json and
    each window's trace competed for rank 0 and 1. Now the top level holds one trace per rank
    with every window, so HTA loads ranks 0 and 1, each with every event of both its windows in
    tprof/ and their steps with tprof's durations."""
    analysis = hta_analysis(two_ranks, include_last_profiler_step=True)
    assert sorted(analysis.t.get_ranks()) == [0, 1]
    names = analysis.t.symbol_table.get_sym_table()
    windows = run_traces(two_ranks)
    for rank in (0, 1):
        mine = [t for t in windows if window_rank(t) == rank]
        assert len(mine) == 2
        events = [e for t in mine for e in trace_events(t) if e.get("ph") == "X"]
        trace = analysis.t.get_trace(rank)
        assert len(trace) == len(events)
        assert sorted(names[i] for i in trace["name"]) == sorted(e["name"] for e in events)
        steps = trace[trace["name"].map(lambda i: names[i].startswith("ProfilerStep#"))]
        ours = [s["dur_us"] for t in mine for s in tprof_analyze(t)["steps"]["list"]]
        assert len(ours) == 6
        assert sorted(float(d) for d in steps["dur"]) == pytest.approx(sorted(ours), rel=0.01)
