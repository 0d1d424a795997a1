"""The run's setup and Python's garbage collections as tprof.torch records them
(python/tprof/torch/setup.py), read back from the written trace, and the advice that uses them.

Each recorded value is compared with what the program itself sees (os, the DataLoader, the ops
the optimizer actually ran); the program is unchanged (its losses, gc.callbacks and torch's
optimizer hooks are those of an unprofiled run)."""
import gc
import json
import os

import pytest

torch = pytest.importorskip("torch")

import tprof  # noqa: E402
import tprof.torch  # noqa: E402
from conftest import ranges, run_python, run_traces, trace_events  # noqa: E402


def setups(events):
    """The merged key=value pairs of every tprof.setup range."""
    out = {}
    for e in ranges(events):
        if e["name"] == "tprof.setup":
            for pair in e["args"]["tprof.setup"].split(";"):
                k, v = pair.split("=", 1)
                out[k] = v
    return out


def train(profile, collect_at=None, steps=6):
    """A tiny regression loop; returns its losses."""
    torch.manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    batches = tprof.torch.dataloader(loader) if profile else loader
    for i, (x, y) in enumerate(batches):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
        if i == collect_at:
            gc.collect()
        if profile:
            profile.step()
        if i + 1 == steps:
            break
    return model, losses


def test_setup_and_gc_ranges(tmp_path):
    from torch.optim.optimizer import _global_optimizer_pre_hooks
    callbacks_before = list(gc.callbacks)
    hooks_before = dict(_global_optimizer_pre_hooks)
    _, plain = train(None)
    seen = []  # collections while a window records, by a callback of the test's own

    def count(phase, info):
        if phase == "stop" and tprof._tprof.is_recording():
            seen.append(info["generation"])

    gc.callbacks.append(count)
    try:
        with tprof.profile(record_ops=True, output_dir=str(tmp_path), run_id="r", wait=1,
                           active=4, summary=False) as prof:
            _, profiled = train(prof, collect_at=2)
    finally:
        gc.callbacks.remove(count)
    assert profiled == plain  # the program is unchanged
    assert gc.callbacks == callbacks_before and dict(_global_optimizer_pre_hooks) == hooks_before

    events = [e for tr in run_traces(prof.run_dir) for e in trace_events(tr)]
    got = setups(events)
    assert int(got["cpu_count"]) == len(os.sched_getaffinity(0))
    assert (got["num_workers"], got["batch_size"], got["pin_memory"]) == ("0", "4", "0")
    assert got["optimizer"] == "Adam" and got["param_dtype"] == "float32"
    # foreach as the optimizer resolved it: on the CPU torch picks the per-parameter loop, and
    # the ops it ran say so (none _foreach_)
    ops = {e["name"] for e in ranges(events)}
    assert got["foreach"] == ("1" if any("_foreach_" in n for n in ops) else "0")
    assert got["fused"] == "0"

    gcs = [e for e in ranges(events) if e["name"] == "gc"]
    assert len(gcs) == len(seen) and len(gcs) >= 1
    assert sorted(e["args"]["generation"] for e in gcs) == sorted(seen)
    assert 2 in seen  # the explicit gc.collect() inside a recorded step


@pytest.mark.parametrize("load", ["spin", "sleep"])
def test_workers_at_the_cpus_busy_or_waiting(tmp_path, load):
    """num_workers equal to the CPUs the process may use (pinned to one), a Dataset that works on
    the CPU (spin) or waits (sleep, as on storage): the first must not be told "more workers"
    (the CPU is the limit), the second must (the CPU idles). tprof's readings of the worker's CPU
    time (loader_cpu.py) are checked against the kernel's own account of the reaped worker
    (RUSAGE_CHILDREN), and the batches against an unprofiled pass."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no sched_setaffinity")
    code = """
        import json, os, resource, sys, time
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        import torch, tprof, tprof.torch

        class Slow(torch.utils.data.Dataset):
            def __len__(self):
                return 256

            def __getitem__(self, i):
                t = time.perf_counter()
                if sys.argv[2] == "sleep":
                    time.sleep(0.004)
                while time.perf_counter() - t < 0.004:
                    pass
                return torch.full((8,), float(i)), torch.ones(1)

        def epoch(batches, prof):
            sums = []
            for x, y in batches:
                sums.append(float(x.sum()))
                if prof is not None:
                    prof.step()
            return sums

        loader = torch.utils.data.DataLoader(Slow(), batch_size=4, num_workers=1)
        plain = epoch(loader, None)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with tprof.profile(output_dir=sys.argv[1], run_id="w", wait=1, active=62,
                           summary=False) as prof:
            profiled = epoch(tprof.torch.dataloader(loader), prof)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the epoch's worker, reaped
        worker_s = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        print(json.dumps({"same": plain == profiled, "worker_s": worker_s,
                          "process_s": time.process_time(),
                          "recos": prof.summary()["recommendations"]}))
    """
    out = run_python(code, args=(str(tmp_path), load))
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["same"]  # the program is unchanged
    readings = [e["args"]["tprof.setup"] for tr in run_traces(os.path.join(str(tmp_path), "w"))
                for e in ranges(trace_events(tr))
                if e["name"] == "tprof.setup" and "reading_ns" in e["args"]["tprof.setup"]]
    assert len(readings) >= 3  # a window of about 1 s, read at most every 0.2 s
    sums = {k: 0 for k in ("loader_cpu_ns", "process_cpu_ns", "reading_ns")}
    for text in readings:
        pairs = dict(p.split("=", 1) for p in text.split(";"))
        assert pairs["loader_workers"] == "1"
        for k in sums:
            sums[k] += int(pairs[k])
    tick = 1e9 / os.sysconf("SC_CLK_TCK")
    # what tprof read of the worker, a part of the window, is within the worker's whole time
    assert sums["loader_cpu_ns"] <= res["worker_s"] * 1e9 + 2 * tick
    assert sums["process_cpu_ns"] <= res["process_s"] * 1e9
    busy = (sums["loader_cpu_ns"] + sums["process_cpu_ns"]) / sums["reading_ns"]
    msg = {r["id"]: r["message"] for r in res["recos"]}["dataloader"]
    if load == "spin":
        assert sums["loader_cpu_ns"] >= 0.5 * res["worker_s"] * 1e9  # most of the epoch read
        assert busy > 0.8
        assert "1 workers already use all 1 CPUs" in msg and "CPU is the limit" in msg
        assert "raise" not in msg.lower()
    else:
        assert busy < 0.5
        assert "yet %.1f of the CPUs sat idle" % (1 - busy) in msg
        assert "Raise num_workers to 2" in msg


def test_worker_starts_and_stops(tmp_path):
    """A loader with workers, two epochs in one window: the fetches that started the workers
    (iter()) and stopped them (StopIteration) are recorded as setup pairs equal to those fetches'
    ranges in the trace, and the advice weighs persistent_workers against them."""
    code = """
        import json, sys, time
        import torch, tprof, tprof.torch

        class Slow(torch.utils.data.Dataset):
            def __len__(self):
                return 24

            def __getitem__(self, i):
                time.sleep(0.002)
                return torch.full((8,), float(i))

        loader = torch.utils.data.DataLoader(Slow(), batch_size=4, num_workers=1)
        with tprof.profile(output_dir=sys.argv[1], run_id="c", summary=False) as prof:
            for epoch in range(2):
                for x in tprof.torch.dataloader(loader):
                    prof.step()
        print(json.dumps(prof.summary()["recommendations"]))
    """
    out = run_python(code, args=(str(tmp_path),))
    assert out.returncode == 0, out.stderr
    events = [e for tr in run_traces(os.path.join(str(tmp_path), "c")) for e in trace_events(tr)]
    fetches = sorted((e for e in ranges(events) if e["name"] == "dataloader"),
                     key=lambda e: e["ts"])
    assert len(fetches) == 2 * (6 + 1)  # six batches and the StopIteration, twice
    got = setups(events)  # the last of each key
    pairs = [dict(p.split("=", 1) for p in e["args"]["tprof.setup"].split(";"))
             for e in ranges(events) if e["name"] == "tprof.setup"]
    starts = [int(p["loader_start_ns"]) for p in pairs if "loader_start_ns" in p]
    stops = [int(p["loader_stop_ns"]) for p in pairs if "loader_stop_ns" in p]
    assert got["num_workers"] == "1" and len(starts) == 2 and len(stops) == 2
    for ns, fetch in zip(starts + stops, [fetches[0], fetches[7], fetches[6], fetches[13]]):
        # timed in Python around the range's own begin and end
        assert ns / 1e3 == pytest.approx(fetch["dur"], rel=0.1, abs=200)
    msg = {r["id"]: r["message"] for r in json.loads(out.stdout.strip().splitlines()[-1])}
    cycle = (sum(starts) + sum(stops)) / 1e6
    assert "persistent_workers=True: starting the workers (2 times" in msg["dataloader"]
    assert "took %.1f ms of the loading" % cycle in msg["dataloader"]


def test_worker_cpu_interval_with_an_exited_worker_is_left_out(monkeypatch):
    """An interval in which a worker exited (an epoch's end without persistent_workers) lost that
    worker's CPU time since the last reading, so it is not recorded (it would read as idle CPUs);
    a worker started within an interval counts from zero, and the next interval is recorded."""
    from tprof.torch import loader_cpu

    readings = iter([{1: 100}, {1: 300, 2: 50}, {2: 80}, {2: 100, 3: 10}])
    recorded = []
    monkeypatch.setattr(loader_cpu, "workers_cpu_ns", lambda: next(readings))
    monkeypatch.setattr(loader_cpu, "record_setup", recorded.append)
    monkeypatch.setattr(loader_cpu._tprof, "is_recording", lambda: True)
    part = loader_cpu.LoaderCpu()
    for _ in range(4):
        part._read(0)
    assert [r["loader_cpu_ns"] for r in recorded] == [250, 30]  # 200 + 50; worker 1's exit; 20 + 10
    assert [r["loader_workers"] for r in recorded] == [2, 2]


def test_worker_cpu_reading_parses_any_process_name():
    """A worker's CPU time is read from /proc/<pid>/stat, whose second field is the process's
    name in parentheses, which may itself hold spaces and parentheses: a child named so, that
    spins 0.3 s of CPU, then sleeps, reads as about 0.3 s (at least 0.25, at most its wall)."""
    if not os.path.exists("/proc/self/stat"):
        pytest.skip("no /proc")
    import multiprocessing
    import time

    from tprof.torch.loader_cpu import workers_cpu_ns

    ready = multiprocessing.Event()
    child = multiprocessing.Process(target=_spin_then_sleep, args=(ready,), daemon=True)
    t0 = time.monotonic()
    child.start()
    try:
        assert ready.wait(30)
        wall = time.monotonic() - t0
        with open("/proc/%d/comm" % child.pid) as f:
            assert f.read().strip() == ") x (y) "[:15].strip()
        ns = (workers_cpu_ns() or {})[child.pid]
        assert 0.25e9 <= ns <= wall * 1e9 + 2e7
    finally:
        child.kill()
        child.join()


def _spin_then_sleep(ready):
    import ctypes
    import time

    libc = ctypes.CDLL(None)
    libc.prctl(15, b") x (y) ", 0, 0, 0)  # PR_SET_NAME
    t = time.process_time()
    while time.process_time() - t < 0.3:
        pass
    ready.set()
    time.sleep(60)
