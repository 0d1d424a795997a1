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


def test_saturated_workers_say_the_cpu_is_the_limit(tmp_path):
    """The issue's case, live: a slow Dataset, num_workers equal to the CPUs the process may
    use (pinned to one): the advice must not be "more workers"."""
    if not hasattr(os, "sched_setaffinity"):
        pytest.skip("no sched_setaffinity")
    code = """
        import json, os, sys, time
        os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[0]})
        import torch, tprof, tprof.torch

        class Slow(torch.utils.data.Dataset):
            def __len__(self):
                return 256

            def __getitem__(self, i):
                time.sleep(0.004)
                return torch.randn(8), torch.randn(1)

        loader = torch.utils.data.DataLoader(Slow(), batch_size=4, num_workers=1)
        model = torch.nn.Linear(8, 1)
        opt = torch.optim.SGD(model.parameters(), lr=0.01)
        with tprof.profile(output_dir=sys.argv[1], run_id="w", wait=1, active=6,
                           summary=False) as prof:
            for i, (x, y) in enumerate(tprof.torch.dataloader(loader)):
                torch.nn.functional.mse_loss(model(x), y).backward()
                opt.step()
                prof.step()
                if i == 7:
                    break
        print(json.dumps(prof.summary()["recommendations"]))
    """
    out = run_python(code, args=(str(tmp_path),))
    assert out.returncode == 0, out.stderr
    recos = {r["id"]: r["message"] for r in json.loads(out.stdout.strip().splitlines()[-1])}
    msg = recos["dataloader"]
    assert "1 workers already use all 1 CPUs" in msg and "CPU is the limit" in msg
    assert "raise" not in msg
