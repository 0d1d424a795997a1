"""The flight recorder (docs/FLIGHT.md) on a C training loop (tests/tools/tp_flight_loop.c).

Each save's trace is checked with the standard library alone: its ProfilerStep ranges, the marked
step, and the step and stage durations recomputed from the events, against which `tprof analyze
--json` is compared."""
import json
import os
import pathlib
import re
import signal
import statistics
import subprocess

import pytest

from run_files import files_dir

BUILD = pathlib.Path(os.environ.get("TPROF_BUILD_DIR", "build"))
LOOP = BUILD / "tests" / "tp_flight_loop"
TPROF = BUILD / "tprof"
FLIGHT = ["--profile", "--profiling.flight_recorder", "true", "--profiling.summary", "false"]


def run_loop(tmp_path, *args, run_id="run"):
    p = subprocess.run([str(LOOP), *map(str, args), *FLIGHT, "--profiling.output_dir",
                        str(tmp_path), "--profiling.run_id", run_id],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p, tmp_path / run_id


def flight_traces(run_dir):
    return sorted(p.name for p in files_dir(run_dir).iterdir() if "_flight_" in p.name)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def step_ranges(trace):
    """{step number: (ts, dur) in µs} of the ProfilerStep#<n> ranges."""
    return {int(e["name"].split("#")[1]): (e["ts"], e["dur"]) for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")}


def stage_in_step(trace, name, step):
    """The summed duration (µs) of the ranges named `name` starting inside step's range."""
    ts, dur = step_ranges(trace)[step]
    return sum(e["dur"] for e in trace["traceEvents"]
               if e.get("ph") == "X" and e.get("name") == name and ts <= e["ts"] < ts + dur)


def test_slow_step_saves_steps_480_to_500(tmp_path):
    # 3.5 ms steps and a 3 s data loading stall at step 500. On a loaded machine (sanitizers,
    # parallel tests) steps stretch, and the median with them; factor 50 keeps a hiccup from
    # counting as slow while the stall still does at a median up to 60 ms, and the cooldown past
    # the end keeps a hiccup after the stall from saving another
    p, run_dir = run_loop(tmp_path, "--steps", 1000, "--spin-us", 1000, "--slow-at", 500,
                          "--slow-ms", 3000, "--profiling.slow_step_factor", 50,
                          "--profiling.flight_cooldown_steps", 1000)
    assert flight_traces(run_dir) == ["trace_0001_flight_slow_step_steps_480-500.json"]
    path = files_dir(run_dir) / "trace_0001_flight_slow_step_steps_480-500.json"
    lines = [line for line in p.stderr.splitlines() if "saved steps" in line]
    assert len(lines) == 1 and lines[0].startswith("tprof: step 500 took ")
    assert lines[0].endswith("saved steps 480-500 to %s" % os.path.relpath(path, os.getcwd())) \
        or lines[0].endswith(str(path))
    trace = load(path)
    steps = step_ranges(trace)
    assert sorted(steps) == list(range(480, 501))
    assert trace["tprof"]["flight"] == {"reason": "slow_step", "step": 500}
    marked = [e for e in trace["traceEvents"] if e.get("args", {}).get("tprof flight trigger")]
    assert [e["name"] for e in marked] == ["ProfilerStep#500"]
    assert any(e.get("ph") == "i" and e["name"] == "tprof flight trigger"
               for e in trace["traceEvents"])
    # independent figures: the step's duration against the others' median, per stage
    others = [steps[k][1] for k in steps if k != 500]
    median = statistics.median(others)
    assert steps[500][1] > 50 * median
    dl = stage_in_step(trace, "dataloader", 500)
    dl_median = statistics.median(stage_in_step(trace, "dataloader", k) for k in steps if k != 500)
    assert dl >= 3000e3
    report = json.loads(subprocess.run([str(TPROF), "analyze", "--json", str(path)],
                                       capture_output=True, check=True, timeout=120).stdout)
    (flight,) = report["flight"]
    assert flight["reason"] == "slow_step" and flight["number"] == 500
    assert flight["other_steps"] == 20
    assert flight["median_us"] == pytest.approx(median, rel=1e-3, abs=0.01)
    assert flight["ratio"] == pytest.approx(steps[500][1] / median, rel=1e-3)
    assert flight["stage"] == "dataloader"
    assert flight["stage_step_us"] == pytest.approx(dl, rel=1e-3, abs=0.01)
    assert flight["stage_median_us"] == pytest.approx(dl_median, rel=1e-3, abs=0.01)
    assert flight["ops"][0]["name"] == "dataloader"
    assert flight["ops"][0]["step_us"] == pytest.approx(dl, rel=1e-3, abs=0.01)
    # every member is documented, and every documented member is there
    doc = (pathlib.Path(os.environ["TPROF_SOURCE_DIR"]) / "docs" / "ANALYZE_JSON.md").read_text()
    table = doc.split("Members of `flight[]`")[1].split("\n## ")[0]
    members = {k.strip() for row in table.splitlines() if row.startswith("| ") and "---" not in row
               for k in row.split("|")[1].split(",")} - {"member"}
    assert members == set(flight) - {"ops"} | {"ops[]"}
    recos = [r for r in report["recommendations"] if r["id"] == "flight_step"]
    assert len(recos) == 1 and "ProfilerStep#500" in recos[0]["message"]
    assert "stage dataloader" in recos[0]["message"]
    text = subprocess.run([str(TPROF), "analyze", str(path)], capture_output=True, text=True,
                          check=True, timeout=120).stdout
    assert "Flight recorder: ProfilerStep#500 (slow_step)" in text
    assert "stage that grew most: dataloader" in text


def test_memory_flat_over_100000_steps(tmp_path):
    p, _ = run_loop(tmp_path, "--steps", 100000, "--spin-us", 0, "--rss-at", "10000,100000",
                    "--open-range", "--profiling.slow_step_factor", 0)
    rss = dict(map(int, line.split()[1:]) for line in p.stdout.splitlines()
               if line.startswith("rss "))
    # the ring reuses its chunks: 90,000 more steps may not cost a page per few hundred steps
    assert rss[100000] - rss[10000] < 1 << 20, rss


def test_explicit_save_marks_the_step(tmp_path):
    p, run_dir = run_loop(tmp_path, "--steps", 300, "--spin-us", 100, "--save-at", 100,
                          "--profiling.slow_step_factor", 0)
    (name,) = flight_traces(run_dir)
    assert name.startswith("trace_0001_flight_explicit_steps_")
    trace = load(files_dir(run_dir) / name)
    assert trace["tprof"]["flight"] == {"reason": "explicit", "step": 100}
    steps = sorted(step_ranges(trace))
    # step 100, cut at the call, and the 20 before it
    assert steps == list(range(80, 101))
    assert name == "trace_0001_flight_explicit_steps_80-100.json"
    step100 = [e for e in trace["traceEvents"] if e.get("name") == "ProfilerStep#100"]
    assert step100[0]["args"].get("tprof truncated") is True
    assert 'flight save "explicit" asked at step 100' in p.stderr


def test_sigusr1_saves_the_running_step(tmp_path):
    p, run_dir = run_loop(tmp_path, "--steps", 200, "--spin-us", 100, "--usr1-at", 150,
                          "--profiling.flight_signal", "true", "--profiling.slow_step_factor", 0)
    (name,) = flight_traces(run_dir)
    trace = load(files_dir(run_dir) / name)
    # the step running when the writer served the signal: step 150, which sleeps 200 ms for it,
    # unless the loaded machine kept the writer waiting longer
    k = trace["tprof"]["flight"]["step"]
    assert trace["tprof"]["flight"]["reason"] == "signal" and 150 <= k < 200
    assert name == "trace_0001_flight_signal_steps_%d-%d.json" % (k - 20, k)
    assert sorted(step_ranges(trace)) == list(range(k - 20, k + 1))
    marked = [e for e in trace["traceEvents"] if e.get("name") == "ProfilerStep#%d" % k]
    assert marked[0]["args"].get("tprof truncated") is True  # cut while it ran
    assert "SIGUSR1 at step %d" % k in p.stderr


def test_sigusr1_without_flight_signal_is_not_ours(tmp_path):
    p = subprocess.run([str(LOOP), "--steps", "50", "--usr1-at", "10", *FLIGHT,
                        "--profiling.output_dir", str(tmp_path)], capture_output=True, timeout=60)
    assert p.returncode == -signal.SIGUSR1  # the default action, as without tprof


def test_cooldown_and_cap(tmp_path):
    # an explicit save at step 100 and SIGUSR1 at 150: the cooldown (100 steps) refuses the
    # second; with flight_max_saves 1, so would the cap
    p, run_dir = run_loop(tmp_path, "--steps", 300, "--spin-us", 50, "--save-at", 100,
                          "--usr1-at", 150, "--profiling.flight_signal", "true",
                          "--profiling.slow_step_factor", 0, run_id="cool")
    assert len(flight_traces(run_dir)) == 1
    assert re.search(r"SIGUSR1 at step 15\d not saved: within flight_cooldown_steps=100 of the "
                     r"save at step 100", p.stderr)
    p, run_dir = run_loop(tmp_path, "--steps", 300, "--spin-us", 50, "--save-at", 100,
                          "--usr1-at", 250, "--profiling.flight_signal", "true",
                          "--profiling.slow_step_factor", 0, "--profiling.flight_max_saves", 1,
                          run_id="cap")
    assert len(flight_traces(run_dir)) == 1
    assert re.search(r"SIGUSR1 at step 2[5-9]\d not saved: flight_max_saves=1 reached", p.stderr)
    p, run_dir = run_loop(tmp_path, "--steps", 300, "--spin-us", 50, "--save-at", 100,
                          "--usr1-at", 250, "--profiling.flight_signal", "true",
                          "--profiling.slow_step_factor", 0, run_id="both")
    assert [n.split("_")[3] for n in flight_traces(run_dir)] == ["explicit", "signal"]


def test_with_a_schedule_windows_are_saved_as_today(tmp_path):
    _, run_dir = run_loop(tmp_path, "--steps", 120, "--spin-us", 50, "--save-at", 60,
                          "--profiling.slow_step_factor", 0, "--profiling.wait", 5,
                          "--profiling.active", 3, "--profiling.repeat", 2)
    names = sorted(p.name for p in files_dir(run_dir).glob("trace_*"))
    assert "trace_0001_steps_5-7.json" in names and "trace_0002_steps_13-15.json" in names
    second = load(files_dir(run_dir) / "trace_0002_steps_13-15.json")
    assert sorted(step_ranges(second)) == [13, 14, 15]
    assert len([n for n in names if "_flight_explicit_" in n]) == 1


@pytest.mark.parametrize("reason", ["../x", "a.rank3", "", "x" * 33, "sp ace"])
def test_invalid_reason_is_refused(tmp_path, reason):
    p = subprocess.run([str(LOOP), "--steps", "20", "--save-at", "5", "--reason", reason, *FLIGHT,
                        "--profiling.output_dir", str(tmp_path), "--profiling.run_id", "r"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 3
    assert "tprof_flight_save: the reason must be 1 to 32 ASCII letters" in p.stderr
    assert not flight_traces(tmp_path / "r")


def test_ranges_across_steps_keep_their_end(tmp_path):
    # "cross" begins at the end of each even step and ends in the next one (flight.h, F3)
    _, run_dir = run_loop(tmp_path, "--steps", 100, "--spin-us", 50, "--save-at", 50,
                          "--cross-steps", "--profiling.slow_step_factor", 0)
    (name,) = flight_traces(run_dir)
    trace = load(files_dir(run_dir) / name)
    steps = step_ranges(trace)
    cross = [e for e in trace["traceEvents"] if e.get("name") == "cross"]
    assert cross
    for e in cross:
        # the step it begins in: the last to start before it. The trace prints microseconds to
        # the nanosecond, so a range begun at its step's very end can read as 1 ns after the
        # next step's start (ts 8444.239, the next step 8444.24): 2 ns of slack
        earlier = [k for k, (ts, _) in steps.items() if ts <= e["ts"] - 0.002]
        if not earlier:  # begun before the saved steps: it starts with the trace's first step
            assert e["ts"] >= steps[min(steps)][0] - 0.002
            continue
        begun = [max(earlier)]
        ts, dur = steps[begun[0]]
        assert begun[0] % 2 == 0 and e["ts"] <= ts + dur + 0.002
        if begun[0] + 1 in steps and not e.get("args", {}).get("tprof truncated"):
            ts, dur = steps[begun[0] + 1]
            assert ts <= e["ts"] + e["dur"] < ts + dur  # ends in the next step
    # every even step of the save whose next step is complete carries one
    full = [k for k in steps if k % 2 == 0 and k + 1 in steps and k + 1 != max(steps)]
    assert len([e for e in cross if not e.get("args", {}).get("tprof truncated")]) >= len(full)
