"""A streamed window (`stream: true`, docs/CONFIG.md) with the GPU source on, through a whole
session with the fake libcupti (tests/tools/gpu/cupti_stream.c: every step launches kernels, run
in launch order on their stream as a GPU runs them, some of which complete late, the last one after
the window's end).

The GPU's records go out with the window's segments as it records (source.h: collect_settled),
not all at its end: the streamed trace holds kernels before its metadata (which comes with the
last segment), and the same events, each kernel once, as the same program's window written
whole; the GPU stream is named as a GPU in both; and the summary, computed in pieces cut at steps
the GPU has settled, is what `tprof analyze` finds in the trace, with max_events small enough that
a window the GPU kept from settling would leave the summary incomplete.
"""

import collections
import decimal
import glob
import json
import os
import subprocess

import pytest

import tprof_ref
from run_files import files_dir
from summary_files import check_summary_files

BUILD = os.environ["TPROF_BUILD_DIR"]
TOOLS = os.path.join(BUILD, "tests", "gpu")
PROGRAM = os.path.join(TOOLS, "cupti_stream")

pytestmark = pytest.mark.skipif(not os.path.exists(PROGRAM),
                                reason="built without CUDA's CUPTI headers")

STEPS, ACTIVE, LAUNCHES = 430, 400, 4


def profile(out, stream, *args, behind=False, give_up=False, steps=STEPS, active=ACTIVE):
    """Runs the program into out/run (behind: its GPU a step behind; give_up: one kernel's record
    comes after the GPU source has given up waiting for it); returns the run directory and its
    one trace."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPROF_")}
    env.update(CUDA_HOME=os.path.join(TOOLS, "fake_cuda_home"),
               LD_LIBRARY_PATH=os.path.join(TOOLS, "fake_driver"),
               CUPTI_STREAM_BEHIND="1" if behind else "0",
               CUPTI_STREAM_GIVE_UP="1" if give_up else "0")
    r = subprocess.run(
        [PROGRAM, str(steps), "--profile", "--profiling.gpu=on", "--profiling.output_dir",
         str(out), "--profiling.run_id=run", "--profiling.wait=0", "--profiling.warmup=2",
         f"--profiling.active={active}", "--profiling.repeat=1", "--profiling.summary=false",
         "--profiling.top_k=1000", f"--profiling.stream={stream}", *args],
        capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "leaves" not in r.stderr, r.stderr  # the summary left nothing out
    run = os.path.join(str(out), "run")
    [trace] = glob.glob(os.path.join(files_dir(run), "trace_*.json"))
    return run, trace


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def events(trace):
    """Each event by what does not depend on the run's timing (its args: correlation ids, grids,
    names), metadata apart."""
    return collections.Counter(
        (e["ph"], e["name"], e.get("cat"), json.dumps(e.get("args", {}), sort_keys=True))
        for e in trace["traceEvents"] if e["ph"] not in ("M", "C"))


def gpu_metadata(trace):
    return sorted((e["name"], json.dumps(e["args"])) for e in trace["traceEvents"]
                  if e["ph"] == "M" and e["pid"] == 0)


def kernels(trace):
    return [e for e in trace["traceEvents"] if e.get("cat") == "kernel"]


def test_streamed_gpu_window_matches_the_whole_one_and_its_summary(tmp_path):
    run, path = profile(tmp_path / "streamed", "true", "--profiling.max_events=65536")
    _, whole_path = profile(tmp_path / "whole", "false")
    t, whole = load(path), load(whole_path)
    assert t["tprof"]["dropped_events"] == 0 and whole["tprof"]["dropped_events"] == 0
    # every launch of the window, each kernel once, late ones and the one after its end too
    corrs = [e["args"]["correlation"] for e in kernels(t)]
    assert len(corrs) == len(set(corrs)) == ACTIVE * LAUNCHES
    assert events(t) == events(whole)
    assert gpu_metadata(t) == gpu_metadata(whole) != []
    # the kernels went out with the segments while the window recorded: most come before the
    # metadata, which the last segment brings
    first_meta = next(i for i, e in enumerate(t["traceEvents"]) if e["ph"] == "M")
    early = sum(1 for e in t["traceEvents"][:first_meta] if e.get("cat") == "kernel")
    assert early > len(corrs) / 2
    # the window (84,000 events) is more than max_events: its summary was cut into pieces at
    # steps, which the GPU did not hold back, and says what the trace says
    assert len(t["traceEvents"]) > 65536
    s = check_summary_files(run, [path])
    assert s["run"]["errors"] == [] and s["run"]["dropped_events"] == 0
    assert s["steps"]["count"] == ACTIVE
    assert s["gpu"]["kernel_count"] == ACTIVE * LAUNCHES


def union_ns(intervals):
    total, end = 0, None
    for a, b in sorted(intervals):
        if end is None or a > end:
            total, end = total + (b - a), b
        elif b > end:
            total, end = total + (b - end), b
    return total


def gpu_split(trace):
    """The trace's GPU split as summary.json's rank_summary gives it (docs/ANALYZE_JSON.md,
    ranks.per_rank), computed here: one device, its kernels none of them communication."""
    work = [(tprof_ref.to_ns(e["ts"]), tprof_ref.to_ns(e["ts"]) + tprof_ref.to_ns(e["dur"]))
            for e in trace["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    busy = union_ns(work)
    return {"compute_ns": busy, "communication_ns": 0,
            "idle_ns": max(b for _, b in work) - min(a for a, _ in work) - busy}


def test_gpu_a_step_behind_its_host_is_summarised_in_pieces(tmp_path):
    # Every kernel runs in the step after its launch's, so every step start falls between a
    # launch and its work; the pieces are cut there all the same, each kernel analysed with its
    # launch, and what runs past a cut carried to the next piece: the summary is the trace's.
    run, path = profile(tmp_path / "streamed", "true", "--profiling.max_events=65536",
                        behind=True)
    with open(path, encoding="utf-8") as f:
        t = json.load(f, parse_float=decimal.Decimal)  # exact nanoseconds for the split
    assert t["tprof"]["dropped_events"] == 0
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in t["traceEvents"]
                   if e.get("name", "").startswith("ProfilerStep#"))
    launched = {e["args"]["correlation"]: e["ts"] for e in t["traceEvents"]
                if e.get("cat") == "cuda_runtime"}
    later = sum(1 for e in kernels(t)
                if not any(a <= launched[e["args"]["correlation"]] < b and e["ts"] < b
                           for a, b in steps))
    # (the last step's may be missing: the fake makes their records as the next step begins,
    # when the window may have turned its kinds off, and records nothing for a kind that is off)
    assert len(kernels(t)) >= (ACTIVE - 1) * LAUNCHES and later > 0.9 * len(kernels(t))
    s = check_summary_files(run, [path])
    assert s["steps"]["count"] == ACTIVE and s["gpu"]["kernel_count"] == len(kernels(t))
    split = {k: s["rank_summary"][k] for k in ("compute_ns", "communication_ns", "idle_ns")}
    assert split == gpu_split(t)


def test_work_come_after_its_launch_was_given_up_on_joins_it_in_the_summary(tmp_path):
    # One kernel's record comes 2.5 s after its launch (the program holds it; under load a
    # buffer can come that late): the GPU source has written the launch into a segment without
    # it by then (cupti.c's STREAM_WAIT_MS, 2 s), and the kernel goes into a later one. The
    # summary's pieces (65536 events, ~300 steps) must not be cut between the two: the kernel is
    # analysed with its launch (its op, the idle gap before it), as `tprof analyze` does. (While
    # the launch waits its 2 s, no piece is cut after it: max_events is large enough for that.)
    steps = 800
    run, path = profile(tmp_path / "streamed", "true", "--profiling.max_events=524288",
                        give_up=True, steps=steps + 30, active=steps)
    t = load(path)
    assert t["tprof"]["dropped_events"] == 0
    order = t["traceEvents"]
    launched = {e["args"]["correlation"]: (i, e["ts"]) for i, e in enumerate(order)
                if e.get("cat") == "cuda_runtime"}
    # the held kernel: written after events that began 2 s past its launch (a later segment)
    late = []
    for i, e in enumerate(order):
        if e.get("cat") != "kernel":
            continue
        li, lts = launched[e["args"]["correlation"]]
        if any(o.get("ph") == "X" and o["ts"] > lts + 2e6 for o in order[li:i]):
            late.append(e)
    assert len(late) == 1
    assert len(kernels(t)) == len(launched) >= (steps - 1) * LAUNCHES
    s = check_summary_files(run, [path])
    assert s["steps"]["count"] == steps and s["gpu"]["kernel_count"] == len(kernels(t))
