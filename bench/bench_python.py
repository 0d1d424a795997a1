"""bench/bench_python.py [BUILD]: the cost of tprof from Python, as ratios to baselines measured in
the same run.

1. A range: `with tprof.range(name): pass` while a window records, against an empty `with` of a
   trivial Python context manager (the floor of any Python range) and torch.profiler's
   `record_function` while torch.profiler records. Also a range kept in a variable, a decorated
   function call, and ranges with no session.
2. A training step: a small CPU MLP trained unprofiled, under tprof.profile (stages, module
   ranges), under tprof.profile(record_ops=True), and under torch.profiler.

Times are medians over repetitions; per-range figures include the loop (the baseline has the same
loop). Run with the project's interpreter: .venv/bin/python bench/bench_python.py build
"""
import os
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build")
sys.path.insert(0, os.path.join(BUILD, "python"))

import tprof  # noqa: E402

N = 100_000  # ranges per repetition
REPEAT = 7


class Trivial:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def per_call_ns(fn, n=N):
    """Median over REPEAT runs of fn(n)'s time per iteration, in ns."""
    times = []
    for _ in range(REPEAT):
        t = time.perf_counter_ns()
        fn(n)
        times.append((time.perf_counter_ns() - t) / n)
    return statistics.median(times)


def loop_empty(n):
    for _ in range(n):
        pass


def loop_trivial(n):
    for _ in range(n):
        with Trivial():
            pass


def loop_range(n):
    r = tprof.range
    for _ in range(n):
        with r("forward"):
            pass


def loop_range_kept(n):
    rng = tprof.range("forward")
    for _ in range(n):
        with rng:
            pass


@tprof.range("decorated")
def decorated():
    pass


def plain():
    pass


def loop_decorated(n):
    for _ in range(n):
        decorated()


def loop_plain(n):
    for _ in range(n):
        plain()


def ranges(out):
    import torch
    from torch.profiler import profile, record_function

    def loop_record_function(n):
        for _ in range(n):
            with record_function("forward"):
                pass

    empty = per_call_ns(loop_empty)
    base = per_call_ns(loop_trivial)
    idle = per_call_ns(loop_range)
    with tprof.profile(output_dir=out, summary=False, max_events=1 << 26):
        rec = per_call_ns(loop_range)
        kept = per_call_ns(loop_range_kept)
        deco = per_call_ns(loop_decorated)
        call = per_call_ns(loop_plain)
    # torch.profiler turns every event into a Python object when it stops: fewer of them.
    with profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        torch_ns = per_call_ns(loop_record_function, N // 20)
    print("== a range from Python (ns per `with`, loop included; median of %d x %d)" % (REPEAT, N))
    print("baseline: empty with of a Python context manager  %8.1f ns  1.00x" % base)
    print("tprof.range(name), recording                      %8.1f ns  %.2fx" % (rec, rec / base))
    print("tprof.range kept in a variable, recording         %8.1f ns  %.2fx" % (kept, kept / base))
    print("tprof.range(name), no session                     %8.1f ns  %.2fx" % (idle, idle / base))
    print("torch.profiler.record_function, recording         %8.1f ns  %.2fx" %
          (torch_ns, torch_ns / base))
    print("@tprof.range function call vs plain call          %8.1f ns  vs %.1f ns (+%.1f ns)" %
          (deco, call, deco - call))
    print("without the loop (%.1f ns): tprof.range %.0f ns, baseline %.0f ns, record_function "
          "%.0f ns" % (empty, rec - empty, base - empty, torch_ns - empty))


def training(out):
    import torch
    from torch import nn
    from torch.profiler import profile, schedule

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                          nn.Linear(128, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    data = [(torch.randn(32, 64), torch.randint(0, 10, (32,))) for _ in range(8)]
    steps = 100

    def train(step=lambda: None, stage=None):
        stage = stage or (lambda name: Trivial())
        t = time.perf_counter()
        for i in range(steps):
            with stage("dataloader"):
                x, y = data[i % len(data)]
            with stage("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            with stage("backward"):
                opt.zero_grad()
                loss.backward()
            with stage("optimizer"):
                opt.step()
            step()
        return (time.perf_counter() - t) / steps * 1e6

    def tprof_run(**opts):
        with tprof.profile(output_dir=out, summary=False, model=model, **opts) as p:
            return train(p.step, tprof.stage)

    def torch_run():
        with profile(activities=[torch.profiler.ProfilerActivity.CPU],
                     schedule=schedule(wait=0, warmup=1, active=steps)) as p:
            return train(p.step)

    train()  # warm up the allocator and the kernels
    results = {"none": [], "tprof": [], "tprof_ops": [], "torch": []}
    for _ in range(3):  # interleaved, so drift hits every variant alike
        results["none"].append(train())
        results["tprof"].append(tprof_run())
        results["tprof_ops"].append(tprof_run(record_ops=True))
        results["torch"].append(torch_run())
    med = {k: statistics.median(v) for k, v in results.items()}
    print("== a training step: MLP 64-128-128-10, batch 32, CPU, 1 thread (us per step, median)")
    print("unprofiled                                   %8.1f us  1.000x" % med["none"])
    for key, label in (("tprof", "tprof.profile: stages + module ranges"),
                       ("tprof_ops", "tprof.profile(record_ops=True)"),
                       ("torch", "torch.profiler.profile (CPU)")):
        print("%-44s %8.1f us  %.3fx" % (label, med[key], med[key] / med["none"]))


def main():
    with tempfile.TemporaryDirectory() as out:
        ranges(out)
        training(out)


if __name__ == "__main__":
    main()
