"""Streamed windows (`stream: true`, docs/CONFIG.md) on the C example.

The same training loop (same seed, same schedule) profiled with and without streaming gives traces
that hold the same events (names, categories, threads' share, args, steps) and summary files
that agree (ops and their calls and FLOPs, steps, stages); the streamed trace was written while
the window recorded (its first entries are events, its metadata comes at the end); its figures
are what an independent reading of the trace (tprof_ref) finds; SIGTERM in the middle of a
streamed window leaves a valid partial trace that `tprof analyze` reads; and so does SIGKILL,
which leaves no time to flush: the trace is valid after each segment the writer appended, under
a name that says it is unfinished (trace_0001_streaming.partial.json), which a later run with the
same run_id removes.
"""

import collections
import glob
import gzip
import json
import os
import signal
import subprocess
import zlib

import pytest
from cli_helpers import ref_sum, sigterm_mid_window

from run_files import artifact, files_dir
from summary_files import check_summary_files

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
    with (gzip.open if str(path).endswith(".gz") else open)(path, "rt", encoding="utf-8") as f:
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


def step_numbers(trace):
    return sorted(int(e["name"].split("#")[1]) for e in trace["traceEvents"]
                  if e["ph"] == "X" and e["name"].startswith("ProfilerStep#"))


def tensorboard_plugin_lists_its_steps(tmp_path, trace, steps):
    """TensorBoard's PyTorch profiler plugin lists the unfinished top-level trace (its name
    matches the plugin's pattern) and parses the steps it holds."""
    pytest.importorskip("torch_tb_profiler", reason="torch-tb-profiler is not installed")
    from torch_tb_profiler import consts
    from torch_tb_profiler.profiler.data import RunProfileData

    match = consts.WORKER_PATTERN.match(os.path.basename(trace))
    assert match and match.group(1).endswith(".partial")
    data = RunProfileData.parse(match.group(1), match.group(2), trace, str(tmp_path / "tb"))
    assert data.steps_names == [str(s) for s in steps]


def inflate_members(data):
    """The text of gzip members one after another, the last perhaps cut short (zlib)."""
    text = b""
    while data:
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        text += d.decompress(data)
        data = d.unused_data
    return text


def inside_an_event(text):
    """Whether text ends inside an event: its last line begun and not yet a whole event."""
    last = text.rsplit(b"\n", 1)[-1]
    return last.startswith(b'{"ph"') and not last.endswith((b"}", b"},"))


def torn_write_is_read_up_to_its_last_whole_event(tmp_path, path, compress):
    """A kill inside the writer's one write of a segment leaves the file cut short inside an
    event (with gzip, inside the segment's member): `tprof analyze` keeps the events before the
    cut (each on its line; with gzip, the text zlib inflates before it), and says so."""
    with open(path, "rb") as f:
        data = f.read()
    text = inflate_members if compress else (lambda d: d)
    cut = len(data) * 2 // 3
    while not inside_an_event(text(data[:cut])):
        cut -= 1
    name = "trace_0001_streaming.partial.json" + (".gz" if compress else "")
    torn = tmp_path / "torn" / name
    torn.parent.mkdir()
    torn.write_bytes(data[:cut])
    # one event a line, each but the last followed by a comma; the cut line is no event
    whole = [json.loads(line.rstrip(b",")) for line in text(data[:cut]).split(b"\n")[:-1]
             if line.startswith(b'{"ph"')]
    steps = len([e for e in whole if e["name"].startswith("ProfilerStep#")])
    r = subprocess.run([TPROF, "analyze", "--json", str(torn.parent)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    a = json.loads(r.stdout)
    assert a["input"]["events"] == len(whole) and a["steps"]["count"] == steps > 0
    assert [w for w in a["warnings"] if "cut short" in w]
    # the same bytes under a finished trace's name are an error naming the cut
    finished = tmp_path / "torn" / ("t.json.gz" if compress else "t.json")
    finished.write_bytes(data[:cut])
    r = subprocess.run([TPROF, "analyze", str(finished)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode != 0
    assert ("truncated gzip data" if compress else "end of input") in r.stderr, r.stderr


@pytest.mark.parametrize("compress", ["false", "true"])
def test_sigkill_mid_streamed_window_leaves_a_valid_unfinished_trace(tmp_path, compress):
    # 120 steps, then half a second more (the writer appends a segment every few ms): no flush.
    # The process is stopped first, its writer between two writes: the file must be whole there
    # (a SIGKILL landing inside the writer's write cuts it short, which the reader takes below)
    run_dir = sigterm_mid_window(tmp_path, "--profiling.wait=2", "--profiling.stream=true",
                                 f"--profiling.gzip={compress}", after=120,
                                 signum=signal.SIGKILL, settle=0.5, stop_first=True)
    ext = ".json.gz" if compress == "true" else ".json"
    names = sorted(os.listdir(files_dir(run_dir)))
    assert names == ["config.json", "trace_0001_streaming.partial" + ext]  # no summary files
    path = os.path.join(files_dir(run_dir), names[1])
    t = load(path)  # json.load: the whole document, closed
    assert t["tprof"]["partial"] is True and t["tprof"]["interrupted"] is True
    steps = step_numbers(t)
    assert steps[0] == 2 and steps == list(range(2, 2 + len(steps))) and len(steps) >= 118
    # an independent reading of the trace finds the same steps
    assert ref_sum([path])["steps"] == len(steps)
    # the run directory's top-level trace, for TensorBoard and traceinsight, holds the same
    # segments, but perhaps the last, if the kill came between the two files' writes
    [top] = glob.glob(os.path.join(str(run_dir), "*.partial.pt.trace" + ext))
    top_t = load(top)
    assert not x_events(top_t) - x_events(t)
    top_steps = step_numbers(top_t)
    assert top_steps == steps[:len(top_steps)] and len(top_steps) >= 118
    if compress == "false":
        tensorboard_plugin_lists_its_steps(tmp_path, top, top_steps)
    r = subprocess.run([TPROF, "analyze", "--json", str(run_dir)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    a = json.loads(r.stdout)
    assert a["steps"]["count"] == len(steps)
    unfinished = [w for w in a["warnings"] if "unfinished trace" in w]
    assert len(unfinished) == 1 and names[1] in unfinished[0]
    torn_write_is_read_up_to_its_last_whole_event(tmp_path, path, compress == "true")
    # a later run with the run_id removes it with the rest of the earlier run
    again = profile(tmp_path, "true", f"--profiling.gzip={compress}")
    assert again == str(run_dir)
    left = os.listdir(files_dir(again)) + os.listdir(again)
    assert not [n for n in left if ".partial." in n]
    assert len([n for n in left if n.startswith("trace_") and n.endswith(ext)]) == 2


def test_sigkill_between_whole_windows_leaves_the_top_level_trace_of_those_written(tmp_path):
    # without streaming, windows of 5 steps every 6, written whole as each ends; the run
    # directory's top-level trace is valid after each (it is not renamed into place before the
    # run's end, which never comes)
    run_dir = sigterm_mid_window(tmp_path, "--profiling.wait=1", "--profiling.active=5",
                                 after=120, signum=signal.SIGKILL, settle=0.3, stop_first=True)
    windows = traces(str(run_dir))
    assert len(windows) >= 15 and not [p for p in windows if ".partial." in p]
    per_window = [step_numbers(load(p)) for p in windows]
    assert all(len(s) == 5 for s in per_window)
    [top] = glob.glob(os.path.join(str(run_dir), "*.partial.pt.trace.json"))
    t = load(top)
    assert t["tprof"]["interrupted"] is True
    # every window, but perhaps the last, which the kill may have caught between the two files
    whole = [n for s in per_window for n in s]
    assert step_numbers(t) in (whole, whole[:-5])


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
    s = check_summary_files(run, [first, second])
    assert s["run"]["dropped_events"] == 0 and s["run"]["errors"] == []
    assert s["windows"]["count"] == 2
    assert s["steps"]["count"] == 60 + len([e for e in load(second)["traceEvents"]
                                            if e["name"].startswith("ProfilerStep#")])
    assert len(s["top_cpu_ops"]) >= 10 and len(s["stages"]) >= 4
