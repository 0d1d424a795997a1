"""bench/callgrind_observer.py BUILD MODE [STEPS]: bench_observer.py's model and optimizer, for
instruction counts under callgrind, which the machine's load cannot skew. MODE: none,
torch (torch.profiler), tprof (the observer, no module ranges); the profilers with
record_shapes, profile_memory and with_flops, one thread. After 3 untimed steps inside the
profile, STEPS steps (default 5) run inside one operator.call, so that callgrind counts only them:

    TPROF_CALLGRIND_LATE=1 valgrind --tool=callgrind --toggle-collect=_operator_call \\
        --instr-atstart=no .venv/bin/python bench/callgrind_observer.py build tprof

then callgrind_annotate --inclusive=yes on the output (on_start, onFunctionEnter, ...). With
--instr-atstart=no and TPROF_CALLGRIND_LATE=1 (importing torch instrumented takes most of a run)
the script turns callgrind's instrumentation on itself (callgrind_control -i on) just before the
counted steps; without them, it counts the same steps.
"""
import operator
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD, MODE = sys.argv[1], sys.argv[2]
STEPS = int(sys.argv[3]) if len(sys.argv) > 3 else 5
sys.path.insert(0, os.path.join(BUILD, "python"))
sys.path.insert(0, os.path.join(ROOT, "bench"))
del sys.argv[2:]  # bench_observer reads its own arguments (BUILD, ROUNDS) when imported

import torch  # noqa: E402
from bench_observer import setup  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import tprof  # noqa: E402


def counted(step, after_step):
    """The counted steps: instrumentation on first, where callgrind started without it."""
    if os.environ.get("TPROF_CALLGRIND_LATE"):
        subprocess.run(["callgrind_control", "-i", "on", str(os.getpid())], check=True,
                       stdout=subprocess.DEVNULL)
    operator.call(steps, step, after_step)


def steps(step, after_step):
    for _ in range(STEPS):
        step()
        after_step()


def main():
    torch.set_num_threads(1)
    _, step = setup()
    if MODE == "none":
        for _ in range(3):
            step()
        counted(step, lambda: None)
    elif MODE == "torch":
        with profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                     profile_memory=True, with_flops=True) as p:
            for _ in range(3):
                step()
                p.step()
            counted(step, p.step)
    elif MODE == "tprof":
        with tempfile.TemporaryDirectory() as out, \
                tprof.profile(record_ops=True, record_shapes=True, profile_memory=True,
                              with_flops=True, output_dir=out, summary=False) as prof:
            for _ in range(3):
                step()
                prof.step()
            counted(step, prof.step)
    else:
        sys.exit("callgrind_observer: MODE is none, torch or tprof")


if __name__ == "__main__":
    main()
