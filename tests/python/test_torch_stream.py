"""A streamed window (`stream: true`) of a PyTorch loop through tprof.torch (ops by the observer
with shapes, memory and FLOPs, module ranges, and with_stack's Python frames), too big for the
summary to hold whole (max_events / 2 events): the summary takes it in pieces cut at steps
(src/sink/artifacts.c), and summary.json, op_stats.csv and stage_times.json say what `tprof
analyze` and the independent reference (tprof_ref) find in its trace."""
import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from conftest import run_traces  # noqa: E402
from run_files import artifact  # noqa: E402
from summary_files import analyze, check_summary_files  # noqa: E402

STEPS = 200
# a piece is cut once max_events / 8 events wait (src/sink/artifacts.c): the window (about 74 events
# a step) makes several; a smaller budget (16,384 records, 4 chunks) dropped records on a loaded
# 2-core machine, the writer thread behind a Python loop that records twice as fast as it runs
MAX_EVENTS = 65536

LOOP = """
import sys
import torch
import tprof
from torch import nn
torch.manual_seed(0)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
steps = int(sys.argv[3])
with tprof.profile(model=model, record_ops=True, record_shapes=True, profile_memory=True,
                   with_flops=True, output_dir=sys.argv[1], run_id="run", summary=False,
                   stream=True, max_events=int(sys.argv[2]), wait=1, warmup=1, active=steps,
                   top_k=1000, with_stack=sys.argv[4] == "1") as prof:
    for _ in range(steps + 2):
        with tprof.range("forward"):
            loss = nn.functional.cross_entropy(model(x), y)
        with tprof.range("backward"):
            loss.backward()
        with tprof.range("optimizer"):
            opt.step()
            opt.zero_grad()
        prof.step()
"""


def trace_events(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)["traceEvents"]


@pytest.mark.parametrize("with_stack", [False, True])
def test_a_window_in_pieces_has_the_figures_of_its_trace(tmp_path, with_stack):
    r = subprocess.run([sys.executable, "-c", LOOP, str(tmp_path), str(MAX_EVENTS), str(STEPS),
                        "1" if with_stack else "0"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    run = str(tmp_path / "run")
    [trace] = run_traces(run)
    events = trace_events(trace)
    assert len(events) > 2 * (MAX_EVENTS // 8)  # three pieces at least
    s = check_summary_files(run, [trace])
    assert s["run"]["errors"] == [] and s["run"]["dropped_events"] == 0
    assert s["windows"]["count"] == 1 and s["steps"]["count"] == STEPS
    assert len(s["modules"]) >= 3 and ("call_stacks" in s) == with_stack


AROUND = """
import sys
import torch
import tprof
from torch import nn
model = nn.Linear(16, 4)
x = torch.randn(8, 16)
steps = int(sys.argv[2])
with tprof.profile(model=model, record_ops=True, output_dir=sys.argv[1], run_id="run",
                   summary=False, stream=True, max_events=int(sys.argv[3]), wait=0, warmup=0,
                   active=steps, repeat=1, top_k=1000) as prof:
    with tprof.range("epoch"):  # around every step, as Lightning's run_training_epoch
        with tprof.range("loop"):  # nested in it, the same
            for _ in range(steps):
                with tprof.range("forward"):
                    model(x).sum().backward()
                prof.step()
"""


def test_ranges_open_around_the_steps_are_cut_into_parts(tmp_path):
    """Ranges open on the stack around every step (an epoch range, Lightning's
    run_training_epoch) leave no step start to cut at: the summary cuts them into parts, one per
    piece (src/sink/artifacts.c), each counting its own time, the last one the call; so the
    window, twice the events the summary may hold uncut, keeps its summary, which is the trace's
    to the nanosecond (the epoch range's self time, calls, min and max)."""
    steps = 4 * STEPS
    r = subprocess.run([sys.executable, "-c", AROUND, str(tmp_path), str(steps), str(MAX_EVENTS)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "leaves" not in r.stderr, r.stderr
    run = str(tmp_path / "run")
    [trace] = run_traces(run)
    events = trace_events(trace)
    assert len(events) > MAX_EVENTS // 2  # more than a window the summary holds uncut
    epoch = [e for e in events if e.get("name") == "epoch"]
    assert len(epoch) == 1 and epoch[0]["args"].get("tprof truncated")  # open at the end
    s = check_summary_files(run, [trace])
    assert s["run"]["errors"] == ["window steps_0-%d: 2 ranges still open at its end were closed "
                                  'there and flagged truncated (first: "loop")' % (steps - 1)]
    assert s["steps"]["count"] == steps
    ops = {o["name"]: o for o in s["top_cpu_ops"]}
    assert ops["epoch"]["calls"] == ops["loop"]["calls"] == 1


EARLY = """
import sys
import torch
import tprof
from torch import nn
model = nn.Linear(16, 4)
x = torch.randn(8, 16)
steps = int(sys.argv[2])
with tprof.profile(model=model, record_ops=True, output_dir=sys.argv[1], run_id="run",
                   summary=False, stream=True, max_events=int(sys.argv[3]), wait=1, warmup=1,
                   active=steps,
                   top_k=1000) as prof:
    outer = tprof.range("outer")
    outer.__enter__()  # open across the window's start, ended by name inside it
    for i in range(steps + 2):
        if i == steps - 10:  # long after the first pieces
            outer.__exit__(None, None, None)
        with tprof.range("forward"):
            model(x).sum().backward()
        prof.step()
"""


def test_a_range_begun_before_the_window_and_cut_off_is_said(tmp_path):
    """The documented exception (docs/CONFIG.md, stream): a range begun before the window (written
    whole at its end) and ended after the first pieces comes with a later piece; its self time
    then also counts its children of the earlier pieces, the summary says so, and every other
    figure is the trace's."""
    r = subprocess.run([sys.executable, "-c", EARLY, str(tmp_path), str(3 * STEPS),
                        str(MAX_EVENTS)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    run = str(tmp_path / "run")
    [trace] = run_traces(run)
    s = json.loads(open(artifact(run, "summary.json"), encoding="utf-8").read())
    assert s["run"]["dropped_events"] == 0 and len(trace_events(trace)) > 2 * (MAX_EVENTS // 8)
    [said] = s["run"]["errors"]
    assert "1 range written whole at its end came after" in said
    whole = json.loads(analyze([trace], "--json", "--top", "1000"))
    ops = {o["name"]: o for o in s["top_cpu_ops"]}
    want = {o["name"]: o for o in whole["top_cpu_ops"]}
    outer, outer_whole = ops.pop("outer"), want.pop("outer")
    assert (outer["calls"], outer["total_us"]) == (outer_whole["calls"], outer_whole["total_us"])
    assert outer["self_us"] > outer_whole["self_us"]  # its children of earlier pieces
    assert {n: (o["calls"], o["self_us"]) for n, o in ops.items()} == \
        {n: (o["calls"], o["self_us"]) for n, o in want.items()}
    assert s["steps"] == whole["steps"]
