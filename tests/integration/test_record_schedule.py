"""The recorder's step schedule against torch.profiler.schedule itself.

build/tests/test_sched_schedule --actions prints tprof's action for each step; torch's schedule
function gives its own. torch 1.13 has no skip_first_wait (added in torch 2.5): for those cases
the step is shifted by `wait` after skip_first, as torch 2.5 does, and torch 1.13's function
computes the rest.
"""
import itertools
import os
import subprocess

import pytest

torch_profiler = pytest.importorskip("torch.profiler")

TOOL = os.path.join(os.environ.get("TPROF_BUILD_DIR", "build"), "tests", "test_sched_schedule")
STEPS = 60


def tprof_actions(skip_first, wait, warmup, active, repeat, skip_first_wait):
    out = subprocess.run(
        [TOOL, "--actions", str(skip_first), str(wait), str(warmup), str(active), str(repeat),
         str(skip_first_wait), str(STEPS)],
        check=True, capture_output=True, text=True).stdout
    return out.split()


def torch_actions(skip_first, wait, warmup, active, repeat, skip_first_wait):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Profiler won't be using warmup"
        fn = torch_profiler.schedule(wait=wait, warmup=warmup, active=active, repeat=repeat,
                                     skip_first=0 if skip_first_wait else skip_first)
    names = []
    for step in range(STEPS):
        if skip_first_wait:
            action = (torch_profiler.ProfilerAction.NONE if step < skip_first
                      else fn(step - skip_first + wait))
        else:
            action = fn(step)
        names.append(action.name)
    return names


TUPLES = list(itertools.product([0, 1, 3], [0, 1, 2], [0, 1, 2], [1, 2, 4], [0, 1, 2], [0, 1]))


@pytest.mark.parametrize("params", TUPLES, ids=lambda p: "sf%d-w%d-wu%d-a%d-r%d-sfw%d" % p)
def test_matches_torch(params):
    assert tprof_actions(*params) == torch_actions(*params)


def test_semantics_example_with_torch():
    # docs/SEMANTICS.md §1: steps 4-5 and 8-9 saved.
    got = tprof_actions(2, 1, 1, 2, 2, 0)
    saves = [k for k, a in enumerate(got) if a == "RECORD_AND_SAVE"]
    assert saves == [5, 9]
    assert got == torch_actions(2, 1, 1, 2, 2, 0)
