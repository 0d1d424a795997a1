"""The run directory the example training loop leaves behind, read back with Python's json.

What the library promises a user of build/examples/train_mlp: the steps recorded are exactly the
ones torch.profiler.schedule would record, every artifact parses and agrees with the traces, a
failing output directory or disk costs the files but never the run or its summary, ranks get their
own file names, and SIGTERM mid-window leaves a valid partial trace.
"""

import csv
import glob
import gzip
import json
import os
import re
import resource
import signal
import subprocess

import pytest
from cli_helpers import sigterm_mid_window

import tprof_ref
from run_files import files_dir

BUILD = os.environ["TPROF_BUILD_DIR"]
EXAMPLE = os.path.join(BUILD, "examples", "train_mlp")


def run_example(tmp_path, *args, env=None, preexec_fn=None, timeout=120):
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TPROF_")}
    for k in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
              "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        full_env.pop(k, None)
    full_env.update(env or {})
    return subprocess.run(
        [EXAMPLE, "--batch", "8", "--log-every", "1000", "--profile",
         "--profiling.output_dir", str(tmp_path), "--profiling.run_id", "run", *args],
        capture_output=True, text=True, env=full_env, preexec_fn=preexec_fn, timeout=timeout)


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def traces(run_dir):
    """The windows' traces, in tprof/ (run_files.files_dir)."""
    return sorted(glob.glob(os.path.join(files_dir(run_dir), "trace_*.json*")))


def step_numbers(trace):
    return [int(e["name"].split("#")[1]) for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")]


def torch_schedule_steps(nsteps, **kw):
    """The steps torch.profiler.schedule records (RECORD or RECORD_AND_SAVE), per saved window,
    for a loop that calls step() after each of its nsteps steps and then stops the profiler: step
    nsteps is the one running (from the last step() to the stop), as in torch."""
    torch_profiler = pytest.importorskip("torch.profiler")
    sched = torch_profiler.schedule(**kw)
    action = torch_profiler.ProfilerAction
    windows, current = [], []
    for k in range(nsteps + 1):
        a = sched(k)
        if a in (action.RECORD, action.RECORD_AND_SAVE):
            current.append(k)
        if a == action.RECORD_AND_SAVE:
            windows.append(current)
            current = []
    if current:  # still recording at the end: tprof saves it as a partial window
        windows.append(current)
    return windows


SCHEDULES = [
    dict(wait=1, warmup=1, active=2, repeat=2, skip_first=2),
    dict(wait=0, warmup=0, active=3, repeat=0, skip_first=0),
    dict(wait=2, warmup=1, active=4, repeat=1, skip_first=5),
    dict(wait=3, warmup=2, active=5, repeat=0, skip_first=1),
]


@pytest.mark.parametrize("sched", SCHEDULES,
                         ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()))
def test_recorded_steps_follow_torch_schedule(tmp_path, sched):
    nsteps = 23
    args = [f"--profiling.{k}={v}" for k, v in sched.items()]
    r = run_example(tmp_path, "--steps", str(nsteps), *args)
    assert r.returncode == 0, r.stderr
    want = torch_schedule_steps(nsteps, **sched)
    got = [step_numbers(load(p)) for p in traces(tmp_path / "run")]
    assert got == want
    for path, steps in zip(traces(tmp_path / "run"), want):
        assert load(path)["tprof"]["window"] == f"steps_{steps[0]}-{steps[-1]}"


def nesting_ok(events):
    """Ranges on each thread nest: a range that starts inside another ends inside it."""
    by_track = {}
    for e in events:
        if e.get("ph") == "X":
            by_track.setdefault((e["pid"], e["tid"]), []).append(
                (round(e["ts"] * 1000), round(e["dur"] * 1000)))
    for ranges in by_track.values():
        ranges.sort(key=lambda r: (r[0], -r[1]))
        stack = []
        for ts, dur in ranges:
            while stack and ts >= stack[-1]:
                stack.pop()
            if stack and ts + dur > stack[-1]:
                return False
            stack.append(ts + dur)
    return True


def test_artifacts_parse_and_agree(tmp_path):
    r = run_example(tmp_path, "--steps", "12", "--profiling.wait=1", "--profiling.active=4",
                    "--profiling.profile_memory=true", "--profiling.record_shapes=true")
    assert r.returncode == 0, r.stderr
    run_dir = tmp_path / "run"
    # the top level: one trace for TensorBoard and traceinsight (<host>_<pid>.pt.trace.json),
    # tprof's own files in tprof/
    top = sorted(os.listdir(run_dir))
    others = [n for n in top if n not in (".tprof", "tprof")]
    assert len(top) == 3 and len(others) == 1, top
    assert re.fullmatch(r".+_\d+\.pt\.trace\.json", others[0]), top
    names = sorted(os.listdir(run_dir / "tprof"))
    assert names == ["config.json", "op_stats.csv", "report.html", "stage_times.json",
                     "summary.json", "trace_0001_steps_1-4.json", "trace_0002_steps_6-9.json",
                     "trace_0003_steps_11-12.json"]
    # the top-level trace holds every window: their events one after another
    whole = load(str(run_dir / others[0]))
    windows = [load(p) for p in traces(run_dir)]
    assert step_numbers(whole) == [n for w in windows for n in step_numbers(w)]
    assert sorted(e.get("name", "") for e in whole["traceEvents"] if e.get("ph") != "M") == \
        sorted(e.get("name", "") for w in windows for e in w["traceEvents"] if e.get("ph") != "M")
    config = load(str(run_dir / "tprof" / "config.json"))
    assert config["wait"] == 1 and config["active"] == 4 and config["profile_memory"] is True

    # Every trace: object form, steps, the four stages, nesting, FLOPs on the layers, memory.
    all_steps = []
    for path in traces(run_dir):
        t = load(path)
        assert t["tprof"]["config"] == config
        assert isinstance(t["baseTimeNanoseconds"], int)
        events = t["traceEvents"]
        names_in = {e.get("name") for e in events}
        assert {"dataloader", "forward", "backward", "optimizer", "linear1"} <= names_in
        assert nesting_ok(events)
        layer = next(e for e in events if e.get("name") == "linear1")
        assert layer["args"]["flops"] == 2 * 8 * 64 * 256
        assert any(e.get("name") == "[memory]" and e["args"]["Device Type"] == 0 for e in events)
        assert any(e.get("ph") == "C" and e.get("name") == "loss" for e in events)
        all_steps += [e for e in events if e.get("name", "").startswith("ProfilerStep#")]

    # stage_times.json and summary.json against an independent reading of the traces.
    ref = [tprof_ref.analyze(p) for p in traces(run_dir)]
    stage_times = load(str(run_dir / "tprof" / "stage_times.json"))
    summary = load(str(run_dir / "tprof" / "summary.json"))
    assert summary["steps"]["count"] == len(all_steps) == sum(x["steps"]["count"] for x in ref)
    ref_total = sum(x["steps"]["total_us"] for x in ref)
    assert summary["steps"]["total_us"] == pytest.approx(ref_total, rel=1e-9)
    assert summary["run"]["windows"] == 3 and summary["run"]["partial_windows"] == 1
    assert summary["run"]["traces"] == [os.path.basename(p) for p in traces(run_dir)]
    ref_forward = sum(s["total_us"] for x in ref for s in x["stages"] if s["stage"] == "forward")
    forward = next(s for s in summary["stages"] if s["stage"] == "forward")
    assert forward["total_us"] == pytest.approx(ref_forward, rel=1e-9)
    assert json.dumps(stage_times)  # parsed; its per-step content is checked by tprof check's tests

    # op_stats.csv: one row per range name, calls and totals as the traces say (less the copies
    # of the dataloader ranges for TensorBoard: one per dataloader range, no row of their own)
    with open(run_dir / "tprof" / "op_stats.csv", newline="") as f:
        rows = {row["name"]: row for row in csv.DictReader(f)}
    calls = {}
    for path in traces(run_dir):
        for e in load(path)["traceEvents"]:
            if e.get("ph") == "X" and not e["name"].startswith("ProfilerStep#"):
                calls[e["name"]] = calls.get(e["name"], 0) + 1
    assert calls.pop(tprof_ref.DATALOADER_TWIN) == calls["dataloader"] > 0
    assert {n: int(r["calls"]) for n, r in rows.items()} == calls
    # batch 8, one load_sample per sample in every step but the tail after the last tprof_step
    loop_steps = [e for e in all_steps if int(e["name"].split("#")[1]) < 12]
    assert int(rows["load_sample"]["calls"]) == 8 * len(loop_steps) == 8 * 9


def test_gzip_and_tensorboard_names(tmp_path):
    r = run_example(tmp_path, "--steps", "3", "--profiling.gzip=true",
                    "--profiling.tensorboard_names=true")
    assert r.returncode == 0, r.stderr
    files = glob.glob(str(tmp_path / "run" / "tprof" / "*.pt.trace.json.gz"))
    assert len(files) == 1
    # the top-level trace, gzip too, holds the same window
    (top,) = glob.glob(str(tmp_path / "run" / "*.pt.trace.json.gz"))
    assert step_numbers(load(top)) == step_numbers(load(files[0]))
    worker, time_ns = os.path.basename(files[0]).split(".")[:2]
    assert worker.endswith(f"_{worker.rsplit('_', 1)[1]}") and int(time_ns) > 1.6e18
    # no schedule: one window from the start to shutdown, the tail after the last step included
    assert step_numbers(load(files[0])) == [0, 1, 2, 3]


def test_rank_file_names_and_only_rank0_prints(tmp_path):
    r1 = run_example(tmp_path, "--steps", "2", env={"RANK": "1", "WORLD_SIZE": "2"})
    r0 = run_example(tmp_path, "--steps", "2", env={"RANK": "0", "WORLD_SIZE": "2"})
    assert r0.returncode == 0 and r1.returncode == 0
    names = sorted(os.listdir(tmp_path / "run" / "tprof"))
    top = sorted(os.listdir(tmp_path / "run"))
    for rank in (0, 1):
        (mine,) = [n for n in top if n.endswith(".rank%d.pt.trace.json" % rank)]
        assert load(str(tmp_path / "run" / mine))["distributedInfo"]["rank"] == rank
        for stem in ("config", "stage_times", "summary"):
            assert f"{stem}.rank{rank}.json" in names
        assert f"op_stats.rank{rank}.csv" in names
        assert f"trace_0001_steps_0-2.rank{rank}.json" in names
        assert f"report.rank{rank}.html" in names
    t = load(str(tmp_path / "run" / "tprof" / "trace_0001_steps_0-2.rank1.json"))
    assert t["distributedInfo"] == {"rank": 1, "world_size": 2}
    assert "tprof summary" in r0.stderr and "tprof summary" not in r1.stderr


def assert_no_leftovers(directory):
    for _, _, files in os.walk(directory):
        assert not [f for f in files if ".tmp." in f], files


def test_unwritable_output_keeps_the_run_and_the_summary(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = run_example(tmp_path, "--steps", "4", "--profiling.output_dir", str(blocker / "sub"))
    assert r.returncode == 0
    assert "tprof: cannot create directory" in r.stderr and str(blocker) in r.stderr
    assert "tprof summary" in r.stderr and "Step time" in r.stderr
    assert "step    3" in r.stdout  # the training ran to its end


def test_full_disk_leaves_nothing_half_written(tmp_path):
    def small_files():  # as a full disk would: every write past 64 KiB fails
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, 64 * 1024))

    r = run_example(tmp_path, "--steps", "40", preexec_fn=small_files)
    assert r.returncode == 0, r.stderr
    assert "tprof: cannot write" in r.stderr and "File too large" in r.stderr
    assert "tprof summary" in r.stderr
    run_dir = tmp_path / "run"
    assert not traces(run_dir)  # the trace did not fit: not there at all, not half there
    for folder, _, names in os.walk(run_dir):  # what did fit is whole
        for name in names:
            if name.endswith(".json"):
                load(os.path.join(folder, name))
    assert_no_leftovers(tmp_path)


def test_sigterm_mid_window_writes_a_valid_partial_trace(tmp_path):
    run_dir = sigterm_mid_window(tmp_path, "--profiling.wait=2")
    [path] = traces(run_dir)
    t = load(path)
    assert t["tprof"]["partial"] is True
    steps = step_numbers(t)
    assert steps[0] == 2 and steps == list(range(2, 2 + len(steps))) and len(steps) >= 17
    assert nesting_ok(t["traceEvents"])
    assert_no_leftovers(tmp_path)


def test_bad_configuration_exits_2_with_one_line(tmp_path):
    r = run_example(tmp_path, "--steps", "2", "--profiling.active=0")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert lines == ['tprof: invalid value "0" for profiling.active (from --profiling.active): '
                     'must be an integer >= 1']
    assert not os.path.exists(tmp_path / "run")


def test_peak_tflops_key_gives_the_summary_its_mfu(tmp_path):
    # the library's peak_tflops key reaches the run's analysis: MFU = achieved / peak, with the
    # achieved rate recomputed here from the trace's flops args and step durations
    r = run_example(tmp_path, "--steps", "12", "--profiling.peak_tflops=0.25",
                    "--profiling.summary=false")
    assert r.returncode == 0, r.stderr
    mfu = load(os.path.join(tmp_path, "run", "tprof", "summary.json"))["mfu"]
    assert mfu["peak_tflops"] == 0.25 and mfu["peak_source"] == "given"
    events = [e for t in traces(os.path.join(tmp_path, "run")) for e in load(t)["traceEvents"]
              if e.get("ph") == "X"]
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    flops = sum(e["args"]["flops"] for e in events if "flops" in e.get("args", {})
                and any(s["ts"] <= e["ts"] < s["ts"] + s["dur"] for s in steps))
    achieved_tflops = flops / (sum(s["dur"] for s in steps) * 1e-6) / 1e12
    assert flops > 0 and mfu["pct"] == pytest.approx(100 * achieved_tflops / 0.25, rel=1e-3)
