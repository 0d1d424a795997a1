"""bench/bench_lightning.py [BUILD]: what profiling costs a Lightning fit, as ratios to the same
fit unprofiled, measured in one run.

A small CPU MLP is fit for STEPS batches with: no profiler; tprof.torch.Callback (the whole run
recorded: stages, module ranges), without module ranges, and with enabled=False; Trainer(
profiler=tprof.torch.LightningProfiler()), with and without module ranges; Lightning's
SimpleProfiler; Lightning's PyTorchProfiler. The
configurations take turns, ROUNDS times, and each figure is the median over the rounds of the
training loop's time (on_train_start to on_train_end, taken by a callback every configuration
has), so the set-up and the profilers' final reports are left out. The loop's time is the
process's CPU time (time.process_time: one training thread, no DataLoader workers), which a
shared, loaded machine disturbs far less than wall time; the wall time's median is printed
beside it, and the ratio of the least CPU times (the noise of a shared machine only adds).
Run with the project's venv:

    /work/venv/bin/python bench/bench_lightning.py build

The machine is shared: read the ratios, not the absolute times, and run it twice.
"""
import logging
import os
import statistics
import sys
import tempfile
import time
import warnings

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
sys.path.insert(0, os.path.join(BUILD, "python"))

import lightning.pytorch as pl  # noqa: E402
import torch  # noqa: E402
from lightning.pytorch.profilers import PyTorchProfiler, SimpleProfiler  # noqa: E402

import tprof.torch  # noqa: E402

STEPS = 300
ROUNDS = int(os.environ.get("ROUNDS", 7))
torch.set_num_threads(1)
warnings.filterwarnings("ignore")
logging.getLogger("lightning.pytorch").setLevel(logging.ERROR)


class Net(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, 10))

    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.cross_entropy(self.net(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


class LoopTimer(pl.Callback):
    """The training loop's wall time; first in the callback list, so its on_train_end runs
    before a profiling callback ends its session."""

    def on_train_start(self, trainer, pl_module):
        self.start = (time.process_time(), time.perf_counter())

    def on_train_end(self, trainer, pl_module):
        self.seconds = (time.process_time() - self.start[0], time.perf_counter() - self.start[1])


def configurations(out):
    return {
        "no profiler": lambda: ([], None),
        "tprof Callback": lambda: ([tprof.torch.Callback(output_dir=out, summary=False)], None),
        "tprof Callback, with_modules=False": lambda: (
            [tprof.torch.Callback(output_dir=out, summary=False, with_modules=False)], None),
        "tprof Callback, enabled=False": lambda: ([tprof.torch.Callback(enabled=False)], None),
        "tprof LightningProfiler": lambda: (
            [], tprof.torch.LightningProfiler(output_dir=out, summary=False)),
        "tprof LightningProfiler, no modules": lambda: (
            [], tprof.torch.LightningProfiler(output_dir=out, summary=False,
                                              with_modules=False)),
        "Lightning SimpleProfiler": lambda: (
            [], SimpleProfiler(dirpath=out, filename="simple")),
        "Lightning PyTorchProfiler": lambda: (
            [], PyTorchProfiler(dirpath=out, filename="torch", export_to_chrome=True)),
    }


def fit_seconds(make, data):
    callbacks, profiler = make()
    timer = LoopTimer()
    trainer = pl.Trainer(max_epochs=1, limit_train_batches=STEPS, callbacks=[timer] + callbacks,
                         profiler=profiler, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu", num_sanity_val_steps=0)
    trainer.fit(Net(), data)
    return timer.seconds


ACTIONS = ["[LightningModule]Net.on_train_batch_start", "[Callback]Timer.on_train_batch_end",
           "[Strategy]SingleDeviceStrategy.batch_to_device",
           "[LightningModule]Net.on_before_backward"]


def per_action_ns(profiler, n=50_000):
    """CPU ns per start(action) + stop(action) pair, the median of 5 runs of n pairs."""
    runs = []
    for _ in range(5):
        t = time.process_time_ns()
        for i in range(n):
            action = ACTIONS[i & 3]
            profiler.start(action)
            profiler.stop(action)
        runs.append((time.process_time_ns() - t) / n)
    return statistics.median(runs)


def per_step_hooks_ns(n=50_000):
    """CPU ns per training step of the callback's own hooks (no Lightning, no module ranges),
    called in Lightning 2.6's order while the whole run records."""
    class Trainer:
        current_epoch, optimizers, global_rank, world_size, max_epochs = 0, [], 0, 1, 1

    with tempfile.TemporaryDirectory() as out:
        cb = tprof.torch.CallbackLogic(output_dir=out, summary=False, with_modules=False)
        trainer, module = Trainer(), Net()
        cb.on_train_start(trainer, module)
        cb.on_train_epoch_start(trainer, module)
        t = time.process_time_ns()
        for i in range(n):
            cb.on_train_batch_start(trainer, module, None, i)
            cb.on_before_zero_grad(trainer, module, None)
            cb.on_before_backward(trainer, module, None)
            cb.on_after_backward(trainer, module)
            cb.on_before_optimizer_step(trainer, module, None)
            cb._after_optimizer_step()
            cb.on_train_batch_end(trainer, module, None, None, i)
        ns = (time.process_time_ns() - t) / n
        cb.on_train_end(trainer, module)
    return ns


def micro():
    with tempfile.TemporaryDirectory() as out:
        ours = tprof.torch.LightningProfiler(output_dir=out, summary=False, with_modules=False)
        ours.setup(stage="fit")
        tprof_ns = per_action_ns(ours)
        ours.teardown(stage="fit")
    simple_ns = per_action_ns(SimpleProfiler())
    print("per action (start + stop, CPU ns): tprof LightningProfiler %.0f, SimpleProfiler %.0f "
          "(ratio %.2f)" % (tprof_ns, simple_ns, tprof_ns / simple_ns))
    print("callback hooks per step (CPU ns, recording): %.0f" % per_step_hooks_ns())


def main():
    g = torch.Generator().manual_seed(0)
    samples = [(torch.randn(64, generator=g), i % 10) for i in range(STEPS * 32)]
    data = torch.utils.data.DataLoader(samples, batch_size=32)
    times = {}
    with tempfile.TemporaryDirectory() as out:
        configs = configurations(out)
        fit_seconds(configs["no profiler"], data)  # warm-up: imports, allocator, caches
        for _ in range(ROUNDS):
            for name, make in configs.items():
                times.setdefault(name, []).append(fit_seconds(make, data))
    def median(name, which):
        return statistics.median(t[which] for t in times[name])

    def least(name):
        return min(t[0] for t in times[name])

    print("Lightning fit, %d steps of a 64-256-256-10 MLP (batch 32, CPU, 1 thread), %d rounds"
          % (STEPS, ROUNDS))
    print("%-36s %12s %8s %9s %12s %8s" % ("configuration", "CPU/step", "ratio", "min ratio",
                                            "wall/step", "ratio"))
    for name in times:
        cpu, wall = median(name, 0), median(name, 1)
        print("%-36s %9.1f us %8.3f %9.3f %9.1f us %8.3f"
              % (name, cpu / STEPS * 1e6, cpu / median("no profiler", 0),
                 least(name) / least("no profiler"), wall / STEPS * 1e6,
                 wall / median("no profiler", 1)))

if __name__ == "__main__":
    micro()
    main()
