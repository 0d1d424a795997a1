"""A streamed window (`stream: true`, docs/CONFIG.md) with the GPU source on, through a whole
session with the fake libcupti (tests/tools/gpu/cupti_stream.c: every step launches kernels, some
of which complete late, the last one after the window's end).

The GPU's records go out with the window's segments as it records (source.h: collect_settled),
not all at its end: the streamed trace holds kernels before its metadata (which comes with the
last segment), and the same events, each kernel once, as the same program's window written
whole; the GPU stream is named as a GPU in both; and the summary, computed in pieces cut at steps
the GPU has settled, is what `tprof analyze` finds in the trace, with max_events small enough that
a window the GPU kept from settling would leave the summary incomplete.
"""

import collections
import glob
import json
import os
import subprocess

import pytest

from run_files import files_dir
from summary_files import check_summary_files

BUILD = os.environ["TPROF_BUILD_DIR"]
TOOLS = os.path.join(BUILD, "tests", "gpu")
PROGRAM = os.path.join(TOOLS, "cupti_stream")

pytestmark = pytest.mark.skipif(not os.path.exists(PROGRAM),
                                reason="built without CUDA's CUPTI headers")

STEPS, ACTIVE, LAUNCHES = 430, 400, 4


def profile(out, stream, *args):
    """Runs the program into out/run; returns the run directory and its one trace."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPROF_")}
    env.update(CUDA_HOME=os.path.join(TOOLS, "fake_cuda_home"),
               LD_LIBRARY_PATH=os.path.join(TOOLS, "fake_driver"))
    r = subprocess.run(
        [PROGRAM, str(STEPS), "--profile", "--profiling.gpu=on", "--profiling.output_dir",
         str(out), "--profiling.run_id=run", "--profiling.wait=0", "--profiling.warmup=2",
         f"--profiling.active={ACTIVE}", "--profiling.repeat=1", "--profiling.summary=false",
         "--profiling.top_k=1000", f"--profiling.stream={stream}", *args],
        capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
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
