"""bench/bench_observer.py [BUILD] [ROUNDS]: tprof's op observer against torch.profiler on a
realistic CPU training step, as ratios to the unprofiled step measured in the same run.

The model: convolutions with batch norm, a transformer encoder layer (attention), a linear head,
AdamW over all parameters. Modes, interleaved round by round so drifts of the machine hit all
alike: unprofiled; torch.profiler(record_shapes, profile_memory); tprof with the observer (the
same options, model= for module ranges); tprof with the observer and no module ranges; tprof
with the dispatch mode (the observer switched off, as where it cannot load). Each profiler
records every step in one window; each profiled run starts with 3 untimed steps (its tables and
buffers filled), so the figures are the steady state of a long window. Printed: the median step
time per mode, the time each adds to a step, that time per op (ops counted by torch.profiler's
key_averages()), and tprof's added time as a fraction of torch.profiler's.

Run with the project's interpreter: .venv/bin/python bench/bench_observer.py build
"""
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 7
STEPS = 20
WARM = 3
sys.path.insert(0, os.path.join(BUILD, "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import tprof  # noqa: E402
from tprof.torch import observer  # noqa: E402


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, stride=2, padding=1),
                                  nn.BatchNorm2d(32), nn.ReLU())
        self.attn = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        x = self.conv(x).flatten(2).transpose(1, 2)  # (batch, 64 positions, 32 channels)
        return self.head(self.attn(x).mean(1))


def setup():
    torch.manual_seed(0)
    model = Model()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 10, (8,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    for _ in range(3):
        step()
    return model, step


def timed(step, after_step=lambda: None):
    for _ in range(WARM):  # inside the profile: its first steps fill its tables and buffers
        step()
        after_step()
    t = time.perf_counter()
    for _ in range(STEPS):
        step()
        after_step()
    return (time.perf_counter() - t) / STEPS


def unprofiled(model, step, out):
    return timed(step)


def torch_profiler(model, step, out):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                 profile_memory=True) as p:
        return timed(step, p.step)


def tprof_run(with_model, record_ops=True):
    def run(model, step, out):
        with tprof.profile(model=model if with_model else None, record_ops=record_ops,
                           record_shapes=True, profile_memory=True, output_dir=out,
                           summary=False) as prof:
            return timed(step, prof.step)
    return run


def dispatch_mode(model, step, out):
    available, observer._module = observer._module, None  # as where it cannot load
    observer._why_not = "switched off by the benchmark"
    try:
        return tprof_run(True)(model, step, out)
    finally:
        observer._module, observer._why_not = available, None


def ops_per_step(step):
    with profile(activities=[ProfilerActivity.CPU]) as p:
        step()
    return sum(e.count for e in p.key_averages())


def main():
    if not observer.available():
        sys.exit("bench_observer: " + observer.why_not())
    model, step = setup()
    modes = {"unprofiled": unprofiled, "torch.profiler": torch_profiler,
             "tprof observer": tprof_run(True), "tprof observer, no modules": tprof_run(False),
             "tprof dispatch mode": dispatch_mode}
    times = {name: [] for name in modes}
    with tempfile.TemporaryDirectory() as out:
        for _ in range(ROUNDS):
            for name, run in modes.items():
                times[name].append(run(model, step, out))
    ops = ops_per_step(step)
    base = statistics.median(times["unprofiled"])
    added_torch = statistics.median(times["torch.profiler"]) - base
    print("torch %s, %d threads, %d rounds x %d steps, %d ops per step (key_averages)"
          % (torch.__version__, torch.get_num_threads(), ROUNDS, STEPS, ops))
    print("%-28s %10s %10s %12s %10s" % ("mode", "step ms", "added ms", "ns per op",
                                         "vs torch"))
    for name in modes:
        t = statistics.median(times[name])
        added = t - base
        print("%-28s %10.3f %10.3f %12.0f %10s" % (
            name, t * 1e3, added * 1e3, added / ops * 1e9,
            "%.2f" % (added / added_torch) if name != "unprofiled" else "-"))


if __name__ == "__main__":
    main()
