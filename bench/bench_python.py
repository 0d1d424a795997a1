"""bench/bench_python.py [BUILD]: the cost of tprof from Python, as ratios to baselines measured in
the same run.

1. A range: `with tprof.range(name): pass` while a window records, against an empty `with` of a
   trivial Python context manager (the floor of any Python range) and torch.profiler's
   `record_function` while torch.profiler records. Also a range kept in a variable, a decorated
   function call, and ranges with no session.
2. A Python call recorded by with_stack (python/ext/stack.c): a loop of plain calls while a
   window records, against the same loop unprofiled, and torch.profiler(with_stack=True).
3. An aten op recorded by record_ops (a small mm and a relu), against the same ops unprofiled,
   under a TorchDispatchMode that only calls the op (the mechanism's own floor), and under
   torch.profiler.
4. A training step: a small CPU MLP trained unprofiled, under tprof.profile (stages, module
   ranges), with record_ops=True, with with_stack=True, and under torch.profiler without and
   with with_stack. Every profiler records every step in one window (warmup 1, then all steps
   active); only the loop is timed, not the saving after it.
5. The DataLoader workers' CPU reading (python/tprof/torch/loader_cpu.py): one reading of 8
   daemonic children (sleeping processes standing for a loader's workers), against the check a
   step makes when no reading is due and against a plain range (1.).

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


def best_call_ns(fn, n, repeat=15):
    """The fastest of `repeat` runs of fn(n), per iteration in ns: on a shared machine the
    fastest run is the one least disturbed by other processes."""
    times = []
    for _ in range(repeat):
        t = time.perf_counter_ns()
        fn(n)
        times.append((time.perf_counter_ns() - t) / n)
    return min(times)


def python_calls(out):
    from torch.profiler import ProfilerActivity, profile

    n = N // 5
    base = best_call_ns(loop_plain, n)
    with tprof.profile(output_dir=out, summary=False, with_stack=True, wait=10**6):
        idle = best_call_ns(loop_plain, n)  # the hook installed, no window recording
    with tprof.profile(output_dir=out, summary=False, with_stack=True, max_events=1 << 26):
        rec = best_call_ns(loop_plain, n)
    # torch.profiler turns every event into a Python object when it stops: fewer of them.
    with profile(activities=[ProfilerActivity.CPU], with_stack=True):
        torch_ns = best_call_ns(loop_plain, n // 4, 5)
    print("== a Python call under with_stack (ns per call of an empty function, loop included; "
          "best of 15 x %d)" % n)
    for label, v in (("unprofiled call", base),
                     ("tprof with_stack, hook installed, not recording", idle),
                     ("tprof.profile(with_stack=True), recording", rec),
                     ("torch.profiler(with_stack=True), recording", torch_ns)):
        print("%-49s %8.1f ns  %.2fx  (+%.1f ns)" % (label, v, v / base, v - base))


def aten_ops(out):
    import torch
    from torch.profiler import ProfilerActivity, profile
    from torch.utils._python_dispatch import TorchDispatchMode

    class Bare(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    a, b = torch.randn(4, 4), torch.randn(4, 4)

    def two_ops(n):
        for _ in range(n):
            torch.mm(a, b)
            torch.relu(a)

    n = 2000
    base = best_call_ns(two_ops, n, 9) / 2
    with Bare():
        bare = best_call_ns(two_ops, n, 9) / 2
    with tprof.profile(output_dir=out, summary=False, record_ops=True, max_events=1 << 24):
        rec = best_call_ns(two_ops, n, 9) / 2
    with profile(activities=[ProfilerActivity.CPU]):
        torch_ns = best_call_ns(two_ops, n // 4, 5) / 2
    print("== an aten op (4x4 mm, relu; ns per op, best of 9 x %d)" % (2 * n))
    for label, v in (("unprofiled", base), ("TorchDispatchMode calling the op only", bare),
                     ("tprof.profile(record_ops=True), recording", rec),
                     ("torch.profiler, recording", torch_ns)):
        print("%-49s %8.0f ns  %.2fx  (+%.0f ns)" % (label, v, v / base, v - base))


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
        with tprof.profile(output_dir=out, summary=False, model=model, warmup=1,
                           active=steps - 1, repeat=1, max_events=1 << 24, **opts) as p:
            return train(p.step, tprof.stage)

    def torch_run(**opts):
        with profile(activities=[torch.profiler.ProfilerActivity.CPU],
                     schedule=schedule(wait=0, warmup=1, active=steps - 1), **opts) as p:
            return train(p.step)

    variants = {
        "none": ("unprofiled", train),
        "tprof": ("tprof.profile: stages + module ranges", tprof_run),
        "tprof_ops": ("tprof.profile(record_ops=True)", lambda: tprof_run(record_ops=True)),
        "tprof_stack": ("tprof.profile(with_stack=True)", lambda: tprof_run(with_stack=True)),
        "tprof_all": ("tprof.profile(record_ops, with_stack)",
                      lambda: tprof_run(record_ops=True, with_stack=True)),
        "torch": ("torch.profiler.profile (CPU)", torch_run),
        "torch_stack": ("torch.profiler.profile(with_stack=True)",
                        lambda: torch_run(with_stack=True)),
    }
    train()  # warm up the allocator and the kernels
    results = {k: [] for k in variants}
    for _ in range(REPEAT):  # interleaved, so drift hits every variant alike
        for key, (_, run) in variants.items():
            results[key].append(run())
    med = {k: statistics.median(v) for k, v in results.items()}
    low = {k: min(v) for k, v in results.items()}
    print("== a training step: MLP 64-128-128-10, batch 32, CPU, 1 thread (us per step: median "
          "and best of %d runs of %d steps)" % (REPEAT, steps))
    for key, (label, _) in variants.items():
        print("%-44s %8.1f us  %.3fx   best %8.1f us  %.3fx" %
              (label, med[key], med[key] / med["none"], low[key], low[key] / low["none"]))


def _sleeper():
    time.sleep(3600)


def loader_cpu(out):
    import multiprocessing

    from tprof.torch.loader_cpu import LoaderCpu, workers_cpu_ns
    children = [multiprocessing.Process(target=_sleeper, daemon=True) for _ in range(8)]
    for c in children:
        c.start()
    try:
        part = LoaderCpu()
        with tprof.profile(output_dir=out, run_id="loader_cpu", summary=False, html_report=False):
            part.step()  # the baseline reading: the next ones are not due for 0.2 s
            not_due = best_call_ns(lambda n: [part.step() for _ in range(n)], 10_000)
            rng = best_call_ns(loop_range, 10_000)
        assert len(workers_cpu_ns() or {}) == 8
        reading = best_call_ns(lambda n: [workers_cpu_ns() for _ in range(n)], 200)
    finally:
        for c in children:
            c.kill()
    print("\n5. DataLoader workers' CPU reading (8 children)")
    print("%-44s %8.1f ns  %.2fx a range" % ("a step, no reading due", not_due, not_due / rng))
    print("%-44s %8.1f us  %.0fx a range; %.1f us a worker" %
          ("a reading (at most every 0.2 s)", reading / 1e3, reading / rng, reading / 8e3))


def main():
    with tempfile.TemporaryDirectory() as out:
        ranges(out)
        python_calls(out)
        aten_ops(out)
        training(out)
        loader_cpu(out)


if __name__ == "__main__":
    main()
