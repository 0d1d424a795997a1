"""Streamed windows (`stream: true`, docs/CONFIG.md) on the C example.

The same training loop (same seed, same schedule) profiled with and without streaming gives traces
that hold the same events (names, categories, threads' share, args, steps) and summary files
that agree (ops and their calls and FLOPs, steps, stages); the streamed trace was written while
the window recorded (its first entries are events, its metadata comes at the end); its figures
are what an independent reading of the trace (tprof_ref) finds; and SIGTERM in the middle of a
streamed window leaves a valid partial trace that `tprof analyze` reads.
"""

import collections
import csv
import glob
import io
import json
import os
import subprocess

from cli_helpers import ref_sum, sigterm_mid_window

import tprof_ref
from run_files import artifact, files_dir

BUILD = os.environ["TPROF_BUILD_DIR"]
EXAMPLE = os.path.join(BUILD, "examples", "train_mlp")
TPROF = os.path.join(BUILD, "tprof")


def clean_env():
    return {k: v for k, v in os.environ.items() if not k.startswith("TPROF_")}


def profile(out, stream, *args):
    """Runs the example, 64 samples a batch (about 150 ranges a step: several 4096-record
    buffers a window), into out/run; returns the run directory."""
    r = subprocess.run(
        [EXAMPLE, "--batch", "64", "--log-every", "1000", "--steps", "40", "--profile",
         "--profiling.output_dir", str(out), "--profiling.run_id", "run",
         "--profiling.warmup=2", "--profiling.active=30", "--profiling.summary=false",
         f"--profiling.stream={stream}", *args],
        capture_output=True, text=True, env=clean_env(), timeout=300)
    assert r.returncode == 0, r.stderr
    return os.path.join(str(out), "run")


def traces(run_dir):
    return sorted(glob.glob(os.path.join(files_dir(str(run_dir)), "trace_*.json")))


def top_level_trace(run_dir):
    """The run directory's one trace of every window, for TensorBoard and traceinsight."""
    [path] = glob.glob(os.path.join(str(run_dir), "*.pt.trace.json"))
    return load(path)


def x_events(trace):
    return collections.Counter((e["name"], e.get("cat"), e["ts"], e["dur"])
                               for e in trace["traceEvents"] if e["ph"] == "X")


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def event_kinds(trace):
    """Each event by what does not depend on the run's timing or pids."""
    return collections.Counter(
        (e["ph"], e["name"], e.get("cat"), json.dumps(
            {k: v for k, v in e.get("args", {}).items() if k != "sort_index"}, sort_keys=True)
         if e["ph"] != "M" else "")
        for e in trace["traceEvents"] if e["ph"] != "C")


def ops(summary):
    return {o["name"]: (o["calls"], o["flops"]) for o in summary["top_cpu_ops"]}


def test_streamed_and_whole_windows_agree(tmp_path):
    whole = profile(tmp_path / "whole", "false", "--profiling.top_k=1000")
    streamed = profile(tmp_path / "streamed", "true", "--profiling.top_k=1000")
    tw, ts = traces(whole), traces(streamed)
    assert [os.path.basename(p) for p in tw] == [os.path.basename(p) for p in ts]
    assert len(ts) == 2  # steps 2-31, and the window the end of the run cuts
    for a, b in zip(tw, ts):
        ta, tb = load(a), load(b)
        assert event_kinds(ta) == event_kinds(tb)
        assert {k: v for k, v in ta["tprof"].items() if k != "config"} == \
            {k: v for k, v in tb["tprof"].items() if k != "config"}
    first = load(ts[0])["traceEvents"]
    assert first[0]["ph"] == "X"  # written before the window's end: events, then metadata
    assert first[-1]["ph"] != "M" and any(e["ph"] == "M" for e in first)
    assert load(tw[0])["traceEvents"][0]["ph"] == "M"
    # the top-level trace holds every window's events, segments joined as they were written
    top_s = top_level_trace(streamed)
    assert x_events(top_s) == sum((x_events(load(p)) for p in ts), collections.Counter())
    assert event_kinds(top_s) == event_kinds(top_level_trace(whole))
    sw = load(artifact(whole, "summary.json"))
    ss = load(artifact(streamed, "summary.json"))
    assert ops(sw) == ops(ss) and len(ops(ss)) >= 10
    assert sw["steps"]["count"] == ss["steps"]["count"] >= 31
    assert sw["run"]["dropped_events"] == ss["run"]["dropped_events"] == 0
    assert [(s["stage"], s["count"]) for s in sw["stages"]] == \
        [(s["stage"], s["count"]) for s in ss["stages"]]
    # the summary's figures (read back from the streamed traces) are the traces' own
    ref = ref_sum(ts)
    assert ss["steps"]["count"] == ref["steps"]
    for o in ss["top_cpu_ops"]:
        assert o["calls"] == ref["ops"][o["name"]]["calls"], o["name"]
        assert abs(o["self_us"] * 1000 - ref["ops"][o["name"]]["self_ns"]) <= o["calls"], o
    r = subprocess.run([TPROF, "analyze", "--json", ts[0]], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"]["count"] == 30


def test_sigterm_mid_streamed_window_leaves_a_valid_trace(tmp_path):
    # 120 steps: well past the first buffers, the trace is being written
    run_dir = sigterm_mid_window(tmp_path, "--profiling.wait=2", "--profiling.stream=true",
                                 after=120)
    [path] = traces(str(run_dir))
    t = load(path)
    assert t["tprof"]["partial"] is True
    assert t["traceEvents"][0]["ph"] == "X"
    steps = sorted(int(e["name"].split("#")[1]) for e in t["traceEvents"]
                   if e["ph"] == "X" and e["name"].startswith("ProfilerStep#"))
    assert steps[0] == 2 and steps == list(range(2, 2 + len(steps))) and len(steps) >= 117
    assert not [p for d in (run_dir, files_dir(run_dir)) for p in os.listdir(d) if ".tmp." in p]
    assert x_events(top_level_trace(run_dir)) == x_events(t)
    r = subprocess.run([TPROF, "analyze", "--json", path], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["steps"]["count"] == len(steps)
    summary = load(artifact(run_dir, "summary.json"))
    assert summary["run"]["interrupted"] is True
    assert summary["steps"]["count"] == len(steps)


def analyze(paths, *args):
    """`tprof analyze` of the traces: an independent reading of what the window wrote."""
    r = subprocess.run([TPROF, "analyze", *args, *paths], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def csv_rows(text, kind=None):
    rows = list(csv.DictReader(io.StringIO(text)))
    return [{k: v for k, v in r.items() if k not in ("kind", "pct")} for r in rows
            if kind is None or r["kind"] == kind]


def test_window_past_the_read_back_bound_is_in_the_summary_as_its_trace_says(tmp_path):
    # max_events 8192 records, two buffers: the first window (60 steps, about 6,000 events)
    # streams through them without a drop and is more than a window's model the summary may
    # hold (max_events / 2 = 4,096 events): the summary takes it in pieces cut at steps
    # (sink/artifacts.c), and its figures are those `tprof analyze` finds in the traces.
    run = profile(tmp_path, "true", "--profiling.max_events=8192", "--steps", "80",
                  "--profiling.active=60", "--profiling.top_k=1000")
    first, second = traces(run)
    t = load(first)
    assert t["tprof"]["dropped_events"] == 0
    steps = [e for e in t["traceEvents"] if e["name"].startswith("ProfilerStep#")]
    assert len(steps) == 60 and len(t["traceEvents"]) > 4096
    s = load(artifact(run, "summary.json"))
    assert s["run"]["dropped_events"] == 0 and s["run"]["errors"] == []
    assert s["windows"]["count"] == 2
    whole = json.loads(analyze([first, second], "--json", "--top", "1000"))
    for key in ("run", "rank_summary", "input", "windows"):  # where the figures came from
        s.pop(key, None)
        whole.pop(key, None)
    assert s == whole
    assert s["steps"]["count"] == 60 + len([e for e in load(second)["traceEvents"]
                                            if e["name"].startswith("ProfilerStep#")])
    assert len(s["top_cpu_ops"]) >= 10 and len(s["stages"]) >= 4
    table = analyze([first, second], "--csv", "--top", "1000")
    with open(artifact(run, "op_stats.csv"), encoding="utf-8") as f:
        assert csv_rows(f.read()) == csv_rows(table, "op")
    times = load(artifact(run, "stage_times.json"))
    assert times["stages"] == whole["stages"]
    # each step's stage times, other time, lead and FLOPs: the pieces kept every step whole
    ref = [s for p in (first, second) for s in tprof_ref.analyze(p)["steps"]["list"]]
    assert [(s["name"], s["dur_us"], s["stages"], s["other_us"], s["lead_us"], s["flops"])
            for s in times["steps"]] == \
        [(s["name"], s["dur_us"], s["stages"], s["other_us"], s["lead_us"], s["flops"])
         for s in ref]
