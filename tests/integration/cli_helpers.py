"""What the tests of the tprof command (tests/integration/test_cli*.py) share: running the command
with a time limit, the real traces, profiled runs of the example, and sums of tprof_ref's
figures over several traces (the independent value of one analysis of several inputs)."""

import math
import os
import pathlib
import signal
import subprocess
import time

import tprof_ref

BUILD = pathlib.Path(os.environ["TPROF_BUILD_DIR"])
SOURCE = pathlib.Path(os.environ["TPROF_SOURCE_DIR"])
FIXTURES = pathlib.Path(os.environ["TPROF_FIXTURES"])
TPROF = BUILD / "tprof"
TRAIN = BUILD / "examples" / "train_mlp"
# every trace among the fixtures (expected/ folders hold expected figures, not traces)
TRACES = sorted(p for p in FIXTURES.rglob("*")
                if p.name.endswith((".json", ".json.gz")) and "expected" not in p.parts)
TIMEOUT = 120
ALL = "1000000"  # --top that keeps every row


def tprof(*args, stdin=None, rc=None, timeout=TIMEOUT, env=None):
    """Runs tprof; never a signal, never past the time limit; rc, when given, must match."""
    p = subprocess.run([str(TPROF)] + [str(a) for a in args], input=stdin, capture_output=True,
                       timeout=timeout, env=env)
    assert p.returncode >= 0, "tprof %s: killed by signal %d" % (args, -p.returncode)
    if rc is not None:
        assert p.returncode == rc, "tprof %s: exit %d, not %d; stderr: %s" % (
            " ".join(map(str, args)), p.returncode, rc, p.stderr.decode(errors="replace"))
    return p


def error_line(p):
    """The one line a failing tprof prints on stderr."""
    text = p.stderr.decode("utf-8", errors="replace")
    lines = text.splitlines()
    assert len(lines) == 1 and text.endswith("\n"), "not one line: %r" % text
    assert lines[0].startswith("tprof: "), lines[0]
    return lines[0]


def close(want, got, rel=1e-6):
    """Integers, strings and times exactly; other floats within rel."""
    if want is None or got is None:
        return want is None and got is None
    if isinstance(want, float) and isinstance(got, (int, float)):
        return math.isclose(want, got, rel_tol=rel, abs_tol=1e-9)
    return want == got


def profiled_run(out_dir, run_id, *options, env=None, steps=12):
    """Runs the example training loop profiled into out_dir/run_id and returns that path."""
    args = [str(TRAIN), "--steps", str(steps), "--epochs", "1", "--batch", "32", "--profile",
            "--profiling.output_dir", str(out_dir), "--profiling.run_id", run_id,
            "--profiling.summary", "false"] + list(options)
    full_env = dict(os.environ, **(env or {}))
    p = subprocess.run(args, capture_output=True, timeout=TIMEOUT, env=full_env)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return pathlib.Path(out_dir) / run_id


def sigterm_mid_window(out_dir, *options, after=20, signum=signal.SIGTERM, settle=0.0,
                       stop_first=False):
    """Runs the example profiled into out_dir/run, its window open for the whole run, and stops
    it with SIGTERM after its `after`th step (well inside the window): tprof's flush must write
    the window, then the signal's default action end the process. Another `signum` (SIGKILL: no
    flush) is sent `settle` seconds after that step; with stop_first, to the process stopped by
    SIGSTOP first, so that each of its threads is between two system calls (a write to a file
    is not cut by SIGSTOP; SIGKILL may cut it). Returns out_dir/run."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TPROF_")}
    proc = subprocess.Popen(
        [str(TRAIN), "--steps", "100000", "--batch", "8", "--log-every", "1", "--profile",
         "--profiling.output_dir", str(out_dir), "--profiling.run_id", "run",
         "--profiling.active=100000"] + list(options),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    seen = 0
    while seen < after:
        line = proc.stdout.readline()
        assert line, proc.stderr.read()
        seen += "step" in line
    time.sleep(settle)
    if stop_first:
        proc.send_signal(signal.SIGSTOP)
        time.sleep(0.1)
    proc.send_signal(signum)
    proc.communicate(timeout=60)
    assert proc.returncode == -signum
    return pathlib.Path(out_dir) / "run"


def ref_sum(paths):
    """tprof_ref's additive figures over several traces, each analysed alone, summed: what one
    analysis of all of them must report."""
    out = {"steps": 0, "step_total": 0.0, "ops": {}, "kernels": {}, "busy": 0.0, "step_ns": []}
    for path in paths:
        r = tprof_ref.analyze(str(path))
        out["steps"] += r["steps"]["count"]
        out["step_total"] += r["steps"]["total_us"]
        out["busy"] += r["gpu"]["busy_us"]
        out["step_ns"] += [round(s["dur_us"] * 1000) for s in r["steps"]["list"]]
        for row in r["top_cpu_ops"]:
            o = out["ops"].setdefault(row["name"], {"calls": 0, "total_ns": 0, "self_ns": 0})
            o["calls"] += row["calls"]
            o["total_ns"] += round(row["total_us"] * 1000)
            o["self_ns"] += round(row["self_us"] * 1000)
        for row in r["top_gpu_kernels"]:
            k = out["kernels"].setdefault(row["name"], {"calls": 0, "total_ns": 0})
            k["calls"] += row["calls"]
            k["total_ns"] += round(row["total_us"] * 1000)
    return out


def check_sum(want, got):
    """tprof's JSON of several inputs (every row kept) against ref_sum of the same inputs."""
    assert got["steps"]["count"] == want["steps"]
    assert math.isclose(got["steps"]["total_us"], want["step_total"], rel_tol=1e-12)
    assert math.isclose(got["gpu"]["busy_us"], want["busy"], rel_tol=1e-12, abs_tol=1e-9)
    ops = {r["name"]: r for r in got["top_cpu_ops"]}
    assert set(ops) == set(want["ops"])
    for name, w in want["ops"].items():
        g = ops[name]
        assert (g["calls"], round(g["total_us"] * 1000), round(g["self_us"] * 1000)) == (
            w["calls"], w["total_ns"], w["self_ns"]), name
    kernels = {r["name"]: r for r in got["top_gpu_kernels"]}
    assert set(kernels) == set(want["kernels"])
    for name, w in want["kernels"].items():
        assert (kernels[name]["calls"], round(kernels[name]["total_us"] * 1000)) == (
            w["calls"], w["total_ns"]), name
