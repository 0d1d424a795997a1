"""Peak RSS against window length for a PyTorch loop: tprof streamed, tprof whole, torch.profiler.

Issue 25's measurement on a real PyTorch loop (bench/bench_stream.c does it on a C loop): one
window recording every step of a training loop of tiny ops (a small MLP at batch 1, many
elementwise ops per layer, plain SGD; about 770 ops per step, each a few microseconds), long
enough for about EVENTS op events, recorded by

  unprofiled      the loop alone (the baseline)
  tprof-stream    tprof.profile(record_ops=True, stream=True): ops through torch's RecordFunction
                  observer, the trace written while the window records (docs/CONFIG.md, `stream`)
  tprof-whole     the same, the window held in memory and written at its end (`max_events` raised
                  to hold the whole window: an op takes 2 records, 4 with autograd's
                  Sequence number and Fwd thread id args; 5 per op leaves a margin)
  torch.profiler  torch.profiler.profile(activities=[CPU], record_shapes=False), then
                  export_chrome_trace (the trace on disk, as tprof writes one)

Each configuration runs in its own child process (this script with --child); its peak RSS is the
child's ru_maxrss from os.wait4 (the whole process: interpreter, torch, model, profiler). A child
past --rss-limit-gb or --timeout-s is killed and reported as such ("killed at N GB"). Printed per
configuration: the op events the trace holds (`"cat":"cpu_op"` events counted in the file, against
steps x ops per step counted by torch.profiler on the same model in a separate child), tprof's
dropped_events (from the trace), the steps tprof's summary.json analysed (0: the window was left
out of it), peak RSS, wall time per step inside the window, the time the
window's end takes (tprof's stop, torch.profiler's stop + export), the window's trace's size on
disk and that of all the files the run left (tprof's run directory holds each window twice:
tprof/trace_*.json and the top-level <worker>.pt.trace.json), and the ratios of RSS and step
time to the unprofiled loop measured in the same run. Several --runs are interleaved mode by mode
(drifts of a shared machine hit all alike); the table gives medians.
Nothing is asserted about speed.

Run with the project's interpreter (the build's python/ folder on the path):
  .venv/bin/python bench/torch_window_rss.py --build build --events 1e6,1e7 --runs 3
  .venv/bin/python bench/torch_window_rss.py --events 5e7 --modes tprof-stream --runs 1 --gzip
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

__all__ = ["main"]

MODES = ("unprofiled", "tprof-stream", "tprof-whole", "torch.profiler")
WARM_STEPS = 20  # before the window: the optimizer's and allocator's first steps
_CPU_OP = re.compile(rb'"cat":\s*"cpu_op"')
_DROPPED = re.compile(rb'"dropped_events":\s*(\d+)')


# ---------------------------------------------------------------- the child: one configuration


def _loop(width: int, depth: int) -> Callable[[], None]:
    """Return one training step of a small MLP at batch 1: many tiny ops, each a RecordFunction."""
    import torch
    from torch import nn

    torch.manual_seed(0)
    torch.set_num_threads(1)
    layers = nn.ModuleList(nn.Linear(width, width) for _ in range(depth))
    opt = torch.optim.SGD(layers.parameters(), lr=1e-3)
    x = torch.randn(1, width)

    def step() -> None:
        opt.zero_grad()
        h = x
        for layer in layers:
            h = layer(h)
            h = torch.tanh(h) * 0.5 + torch.sigmoid(h) - h.relu() * 0.1
        h.square().mean().backward()
        opt.step()

    for _ in range(WARM_STEPS):
        step()
    return step


def _hwm_kb() -> int:
    """Return this process's peak resident set (VmHWM), in KiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return -1


def _timed(step: Callable[[], None], steps: int, after: Callable[[], None]) -> float:
    """Run `steps` steps, calling `after` after each; return the wall seconds per step."""
    t = time.perf_counter()
    for _ in range(steps):
        step()
        after()
    return (time.perf_counter() - t) / steps


def _recorded(step_s: float) -> None:
    """Print the loop's figures before the window ends: all a child killed in its end leaves."""
    print(json.dumps({"step_s": step_s, "loop_hwm_kb": _hwm_kb()}), flush=True)


def _child(args: argparse.Namespace) -> None:
    """Run one configuration and print JSON lines: step_s, loop_hwm_kb, then end_s, hwm_kb."""
    step = _loop(args.width, args.depth)
    mode, out = args.child, args.out
    end_s = 0.0
    if mode == "unprofiled":
        step_s = _timed(step, args.steps, lambda: None)
    elif mode.startswith("tprof"):
        import tprof

        keys: dict[str, Any] = {"record_ops": True, "with_modules": False, "with_flops": False,
                                "output_dir": out, "summary": False, "gpu": "off"}
        if args.gzip:
            keys["gzip"] = True
        if mode == "tprof-stream":
            keys["stream"] = True
        else:
            keys["max_events"] = args.max_events
        prof = tprof.profile(**keys)
        prof.start()
        step_s = _timed(step, args.steps, prof.step)
        _recorded(step_s)
        t = time.perf_counter()
        prof.stop()
        end_s = time.perf_counter() - t
    elif mode in ("torch.profiler", "count"):
        from torch.profiler import ProfilerActivity, profile

        p = profile(activities=[ProfilerActivity.CPU], record_shapes=False)
        p.start()
        step_s = _timed(step, args.steps, p.step)
        _recorded(step_s)
        t = time.perf_counter()
        p.stop()
        p.export_chrome_trace(os.path.join(out, "torch_trace.json"))
        end_s = time.perf_counter() - t
    else:
        raise SystemExit(f"torch_window_rss: unknown mode {mode!r}")
    print(json.dumps({"step_s": step_s, "end_s": end_s, "hwm_kb": _hwm_kb()}), flush=True)


# ---------------------------------------------------------------- the parent: launch and measure


def _rss_kb(pid: int) -> int:
    """Return a running process's resident set (VmRSS) in KiB, 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _launch(args: argparse.Namespace, mode: str, steps: int, out: str,
            max_events: int) -> dict[str, Any]:
    """Run one child; return its JSON line plus maxrss_kb, or why it was killed."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", mode, "--steps", str(steps),
           "--out", out, "--build", args.build, "--width", str(args.width),
           "--depth", str(args.depth), "--max-events", str(max_events)]
    cmd += ["--gzip"] if args.gzip else []
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"))
    log = os.path.join(out, "child.log")
    with open(log, "wb") as err, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err,
                                                  env=env) as proc:
        # wait4 reaps the child with its own rusage (RUSAGE_CHILDREN would be the maximum over
        # all children so far); Popen's poll() must not reap it first
        start, killed, peak = time.monotonic(), "", 0
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid == proc.pid:
                break
            peak = max(peak, _rss_kb(proc.pid))
            elapsed = time.monotonic() - start
            if not killed and (peak > args.rss_limit_gb * 1e6 or elapsed > args.timeout_s):
                killed = f"killed at {peak / 1e6:.1f} GB after {elapsed:.0f} s"
                os.kill(proc.pid, signal.SIGKILL)
            time.sleep(0.1)
        proc.returncode = os.waitstatus_to_exitcode(status)
        stdout = proc.stdout.read().decode() if proc.stdout else ""
    result: dict[str, Any] = {"maxrss_kb": usage.ru_maxrss, "killed": killed}
    lines = [ln for ln in stdout.splitlines() if ln.startswith("{")]
    for line in lines:  # a killed child's loop figures, if it got past its loop
        result.update(json.loads(line))
    if not killed:
        if proc.returncode != 0 or "end_s" not in result:
            with open(log, errors="replace") as f:
                tail = f.read()[-2000:]
            raise SystemExit(f"torch_window_rss: {mode} exited {proc.returncode}:\n{tail}")
    return result


def _scan(path: str) -> tuple[int, int]:
    """Return the `cpu_op` events of a JSON trace and its dropped_events (-1: none said)."""
    ops, dropped, buf, overlap = 0, -1, b"", 64  # overlap: longer than any match
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        while True:
            chunk = f.read(1 << 24)
            buf += chunk
            # a match starting in the last `overlap` bytes may go on in the next chunk: it is
            # counted next round, from the start of its own bytes
            cut = len(buf) - overlap if chunk else len(buf)
            ops += sum(1 for m in _CPU_OP.finditer(buf) if m.start() < cut)
            for m in _DROPPED.finditer(buf):
                if m.start() < cut:
                    dropped = max(dropped, int(m.group(1)))
            if not chunk:
                return ops, dropped
            buf = buf[cut:]


def _traces(out: str, mode: str) -> list[str]:
    """Return the window's trace files: tprof's trace_* in tprof/, torch.profiler's export."""
    if mode in ("torch.profiler", "count"):
        return [os.path.join(out, "torch_trace.json")]
    found = []
    for root, _, files in os.walk(out):
        if os.path.basename(root) == "tprof":
            found += [os.path.join(root, f) for f in files
                      if f.startswith("trace_") and f.endswith((".json", ".json.gz"))]
    return found


def _summary_steps(out: str) -> int:
    """The steps tprof's summary.json analysed (a window it left out has none), -1 without one."""
    for root, _, files in os.walk(out):
        if "summary.json" in files:
            with open(os.path.join(root, "summary.json")) as f:
                return int(json.load(f).get("steps", {}).get("count", 0))
    return -1


def _measure(args: argparse.Namespace, mode: str, steps: int, max_events: int) -> dict[str, Any]:
    """Run one configuration in a fresh folder; add its trace's events, drops and size."""
    out = tempfile.mkdtemp(prefix="tprof_rss_", dir=args.tmp)
    try:
        r = _launch(args, mode, steps, out, max_events)
        r.update(ops=0, dropped=-1, trace_bytes=0, files=[])
        for path in [] if r["killed"] or mode == "unprofiled" else _traces(out, mode):
            ops, dropped = _scan(path)
            r["ops"] += ops
            r["dropped"] = max(r["dropped"], dropped)
            r["trace_bytes"] += os.path.getsize(path)
            r["files"].append(os.path.relpath(path, out))
        r["summary_steps"] = _summary_steps(out) if mode.startswith("tprof") else -1
        r["disk_bytes"] = sum(os.path.getsize(os.path.join(root, f))
                              for root, _, files in os.walk(out) for f in files
                              if f != "child.log")
        return r
    finally:
        shutil.rmtree(out, ignore_errors=True)


def _mb(kb: float) -> str:
    """Format KiB as MB."""
    return f"{kb * 1024 / 1e6:.1f}"


def _row(events: int, mode: str, steps: int, expected: int, runs: list[dict[str, Any]],
         base: dict[str, float]) -> str:
    """Format one table row from a configuration's runs (medians)."""
    done = [r for r in runs if not r["killed"]]
    if not done:  # killed every time: what the first run got to
        r = runs[0]
        why = r["killed"] + (f", in its stop (at the loop's end {_mb(r['loop_hwm_kb'])} MB, "
                             f"{r['step_s'] * 1e3:.2f} ms per step)" if "step_s" in r
                             else ", in its loop")
        return f"| {events:,} | {mode} | {steps} | {why} |||||||||||"
    rss = statistics.median(r["maxrss_kb"] for r in done)
    step = statistics.median(r["step_s"] for r in done)
    end = statistics.median(r["end_s"] for r in done)
    ops = sorted({r["ops"] for r in done})
    drops = sorted({r["dropped"] for r in done})
    size = statistics.median(r["trace_bytes"] for r in done)
    disk = statistics.median(r["disk_bytes"] for r in done)
    note = f" ({len(runs) - len(done)} killed)" if len(done) < len(runs) else ""
    cells = [f"{events:,}", mode + note, str(steps),
             "/".join(f"{o:,}" for o in ops) if mode != "unprofiled" else "",
             f"{expected:,}",
             "/".join(str(d) for d in drops) if mode.startswith("tprof") else "",
             "/".join(str(n) for n in sorted({r["summary_steps"] for r in done}))
             if mode.startswith("tprof") else "",
             _mb(rss), f"{rss / base['rss']:.2f}", f"{step * 1e3:.2f}",
             f"{step / base['step']:.2f}", f"{end:.1f}",
             f"{size / 1e6:.0f}" if size else "", f"{disk / 1e6:.0f}" if disk else ""]
    return "| " + " | ".join(cells) + " |"


def _parse_args() -> argparse.Namespace:
    """Parse the command line (the parent's and the child's options)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))), "build"), help="tprof's build folder (its python/)")
    ap.add_argument("--events", default="1e6,1e7",
                    help="window lengths in op events, comma-separated (default 1e6,1e7)")
    ap.add_argument("--modes", default=",".join(MODES), help="configurations, comma-separated")
    ap.add_argument("--runs", type=int, default=3, help="runs per configuration (median)")
    ap.add_argument("--width", type=int, default=16, help="the MLP's width")
    ap.add_argument("--depth", type=int, default=8, help="the MLP's layers")
    ap.add_argument("--rss-limit-gb", type=float, default=8.0, help="kill a child past this RSS")
    ap.add_argument("--timeout-s", type=float, default=1800, help="kill a child after this long")
    ap.add_argument("--tmp", default=None, help="where the traces go (removed after each run)")
    ap.add_argument("--max-events", type=int, default=0,
                    help="tprof-whole's max_events (default: 5 records per expected event)")
    ap.add_argument("--gzip", action="store_true",
                    help="tprof writes .json.gz traces (`gzip: true`): a 50 M window's JSON is "
                    "6 GB, and tprof's run directory holds it twice")
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--steps", type=int, default=10, help=argparse.SUPPRESS)
    ap.add_argument("--out", default=None, help=argparse.SUPPRESS)
    return ap.parse_args()


def main() -> None:
    """Measure every (window length, mode) and print the table."""
    args = _parse_args()
    if args.child:
        sys.path.insert(0, os.path.join(args.build, "python"))
        _child(args)
        return
    modes = [m for m in args.modes.split(",") if m]
    for m in modes:
        if m not in MODES:
            sys.exit(f"torch_window_rss: unknown mode {m!r} (one of {', '.join(MODES)})")
    if "unprofiled" not in modes:
        modes.insert(0, "unprofiled")  # the ratios' baseline, measured in the same run
    count_steps = 20
    per_step = _measure(args, "count", count_steps, 0)["ops"] / count_steps
    print(f"# {per_step:g} cpu_op events per step (torch.profiler's trace of {count_steps} "
          f"steps); width {args.width}, depth {args.depth}, batch 1; {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.1f}", flush=True)
    header = ("| events | mode | steps | cpu_op events in the trace | expected | dropped "
              "| summary's steps | peak RSS MB | RSS ratio | ms per step | step ratio | end s "
              "| trace MB | all files MB |")
    rows = [header, "|" + "---|" * 14]
    for events in (int(float(e)) for e in args.events.split(",")):
        steps = math.ceil(events / per_step)
        expected = round(steps * per_step)
        max_events = args.max_events or max(4194304, int(expected * 5))
        runs: dict[str, list[dict[str, Any]]] = {m: [] for m in modes}
        for k in range(args.runs):
            for m in modes:
                r = _measure(args, m, steps, max_events)
                runs[m].append(r)
                print(f"# {events:,} events, run {k + 1}, {m}: {json.dumps(r)}", flush=True)
        ok = [r for r in runs["unprofiled"] if not r["killed"]]
        base = {"rss": statistics.median(r["maxrss_kb"] for r in ok),
                "step": statistics.median(r["step_s"] for r in ok)}
        rows += [_row(events, m, steps, expected, runs[m], base) for m in modes]
    print("\n".join(rows))


if __name__ == "__main__":
    main()
