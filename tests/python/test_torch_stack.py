"""with_stack: Python calls as python_function ranges (python/ext/stack.c), against
torch.profiler(with_stack=True) on the same training step: the same names for the same functions,
called as often; nested with module ranges and ops; only while a window records; the hook gone
after the profile. Traces are read with Python's json module."""
import collections
import os

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import tprof  # noqa: E402
import tprof.torch  # noqa: E402
from conftest import inside, ranges, run_python, run_traces, trace_events  # noqa: E402


def make_step():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 8), torch.randint(0, 2, (4,))

    def train_step():
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return model, train_step


def python_ranges(events):
    return [e for e in ranges(events) if e.get("cat") == "python_function"]


def tprof_events(run_dir):
    return [e for t in run_traces(run_dir) for e in trace_events(t)]


def test_names_and_calls_match_torch_profiler(out_dir, tmp_path):
    _, train_step = make_step()
    train_step()  # first-call work (lazy imports, caches) out of both profiles
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as p:
        train_step()
    path = str(tmp_path / "torch.json")
    p.export_chrome_trace(path)
    with tprof.profile(output_dir=out_dir, summary=False, with_stack=True) as prof:
        train_step()
    got = collections.Counter(e["name"] for e in python_ranges(tprof_events(prof.run_dir)))
    theirs = python_ranges(trace_events(path))
    want = collections.Counter(e["name"] for e in theirs)
    # torch also records the frames that were open when it started (this test, pytest's); tprof
    # records calls that begin while it records
    enter = [e for e in theirs if e["name"].startswith("torch/profiler/profiler.py(")
             and e["name"].endswith(": __enter__")][0]
    enclosing = {e["name"] for e in theirs if inside(enter, e)}
    # the functions of the step, named as torch names them ("<file>(<first line>): <name>")
    for fragment in ("test_torch_stack.py(", "torch/nn/modules/linear.py(",
                     "torch/nn/modules/activation.py(", "torch/nn/functional.py(",
                     "torch/optim/sgd.py(", "torch/autograd/__init__.py("):
        names = [n for n in want if n.startswith(fragment) or ("/" + fragment) in n]
        assert names, fragment
        for n in names:
            if n not in enclosing:
                assert got[n] == want[n], n
    # every name both record has the same call count, except the frames torch's profiler adds
    # of itself (its __enter__/__exit__, the frame enclosing it)
    common = [n for n in got if n in want and n not in enclosing]
    assert len(common) >= 10
    assert {n: got[n] for n in common} == {n: want[n] for n in common}
    assert all(e.get("args", {}).get("tprof truncated") is None
               for e in python_ranges(tprof_events(prof.run_dir)))


def test_ranges_nest_with_modules_and_ops(out_dir):
    model, train_step = make_step()
    with tprof.profile(output_dir=out_dir, summary=False, with_stack=True, model=model,
                       record_ops=True) as prof:
        with tprof.stage("forward"):
            train_step()
    events = ranges(tprof_events(prof.run_dir))
    py = python_ranges(events)
    fwd = [e for e in py if e["name"].startswith("torch/nn/modules/linear.py(")
           and e["name"].endswith(": forward")]
    assert len(fwd) == 2
    mods = {e["name"]: e for e in events if e["name"].startswith("Sequential")}
    addmm = [e for e in events if e["name"] == "aten::addmm"]
    stage = [e for e in events if e["name"] == "forward"][0]
    for f in fwd:
        assert inside(f, stage)
        # each Linear.forward frame lies in its module's range and holds its addmm
        assert sum(inside(f, mods[m]) for m in ("Sequential.0", "Sequential.2")) == 1
        assert sum(inside(a, f) for a in addmm) == 1
    # ranges on the thread nest properly: no two overlap without one holding the other. torch's
    # own record_function ranges ("Optimizer.step#SGD.step", recorded by the op observer) begin
    # in one Python frame and end in another, as in torch.profiler's traces: left out
    spans = sorted(((e["ts"], e["ts"] + e["dur"]) for e in events if e["tid"] == fwd[0]["tid"]
                    and not e["name"].startswith("ProfilerStep") and "#" not in e["name"]),
                   key=lambda s: (s[0], -s[1]))
    stack = []
    for s, t in spans:
        while stack and s >= stack[-1] - 0.002:
            stack.pop()
        assert not stack or t <= stack[-1] + 0.002
        stack.append(t)


def test_only_recorded_steps_have_stacks(out_dir):
    _, train_step = make_step()
    with tprof.profile(output_dir=out_dir, summary=False, with_stack=True, wait=2, active=1,
                       repeat=1) as prof:
        for _ in range(5):
            train_step()
            prof.step()
    events = ranges(tprof_events(prof.run_dir))
    steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
    assert [e["name"] for e in steps] == ["ProfilerStep#2"]
    py = python_ranges(events)
    assert py and all(inside(e, steps[0]) for e in py)
    # tprof's own frames (step, stop) are not recorded
    assert not any("tprof/" in e["name"] for e in py)


def test_hook_removed_and_torch_stack_still_works(out_dir, tmp_path):
    _, train_step = make_step()
    with tprof.profile(output_dir=out_dir, summary=False, with_stack=True):
        train_step()
    with profile(activities=[ProfilerActivity.CPU], with_stack=True) as p:
        train_step()
    path = str(tmp_path / "after.json")
    p.export_chrome_trace(path)
    assert python_ranges(trace_events(path))


def test_another_hook_wins_with_one_warning():
    """Inside torch.profiler(with_stack=True) the thread's profiling hook is torch's: tprof says
    so once and records no stacks, and torch's are unharmed."""
    r = run_python("""
        import json, os, sys, tempfile, torch, tprof
        from torch.profiler import profile, ProfilerActivity
        out = tempfile.mkdtemp()
        def f():
            return torch.ones(2) + 1
        with profile(activities=[ProfilerActivity.CPU], with_stack=True) as p:
            with tprof.profile(output_dir=out, summary=False, with_stack=True) as prof:
                f()
        p.export_chrome_trace(os.path.join(out, "t.json"))
        names = [e["name"] for e in json.load(open(os.path.join(out, "t.json")))["traceEvents"]
                 if e.get("cat") == "python_function"]
        print("TORCH", any(n.endswith(": f") for n in names))
        files = os.path.join(prof.run_dir, "tprof")
        ours = [e for n in os.listdir(files) if n.startswith("trace_")
                for e in json.load(open(os.path.join(files, n)))["traceEvents"]
                if e.get("cat") == "python_function"]
        print("OURS", len(ours))
    """)
    assert r.returncode == 0, r.stderr
    assert "TORCH True" in r.stdout and "OURS 0" in r.stdout
    assert r.stderr.count("another profiler hook") == 1


def test_torch_profiler_beside_tprof_gets_the_stacks(out_dir):
    """torch_profiler=True with with_stack=True: torch.profiler records the stacks (one hook per
    thread), in its own trace; tprof's trace has the steps and stages."""
    _, train_step = make_step()
    with tprof.profile(output_dir=out_dir, summary=False, with_stack=True, torch_profiler=True,
                       profile_memory=True, record_shapes=True, active=2, repeat=1) as prof:
        for _ in range(2):
            with tprof.stage("forward"):
                train_step()
            prof.step()
    assert len(prof.torch_traces) == 1
    theirs = trace_events(prof.torch_traces[0])
    assert python_ranges(theirs)
    assert any(e.get("name") == "[memory]" for e in theirs)
    assert not python_ranges(tprof_events(prof.run_dir))
    got = tprof.analyze(prof.torch_traces[0])
    assert got["steps"]["count"] == 2 and got["memory"]
    stages = {s["stage"]: s for s in tprof.analyze(prof.run_dir)["stages"]}
    assert stages["forward"]["count"] == 2
    assert os.path.dirname(prof.torch_traces[0]) == os.path.join(prof.run_dir, "torch")


def test_exceptions_generators_and_deep_recursion_stay_balanced():
    """Frames that raise, generators that yield and resume, recursion past the hook's tracked
    depth (4096), and a profile started inside a function and stopped outside it: every range
    closes, nested, and the library reports no unmatched end."""
    r = run_python("""
        import json, os, sys, tempfile, tprof
        sys.setrecursionlimit(20000)
        out = tempfile.mkdtemp()

        def boom(n):
            if n == 0:
                raise ValueError("x")
            boom(n - 1)

        def gen():
            for i in range(3):
                yield i

        def deep(n):
            return 0 if n == 0 else 1 + deep(n - 1)

        def begin():
            return tprof.profile(output_dir=out, summary=False, with_stack=True,
                                 max_events=1 << 20).start()

        prof = begin()
        try:
            boom(3)
        except ValueError:
            pass
        list(gen())
        deep(5000)
        prof.stop()
        files = os.path.join(prof.run_dir, "tprof")
        evs = [e for n in os.listdir(files) if n.startswith("trace_")
               for e in json.load(open(os.path.join(files, n)))["traceEvents"]
               if e.get("ph") == "X" and e.get("cat") == "python_function"]
        names = [e["name"].split(": ")[1] for e in evs]
        print("BOOM", names.count("boom"), "GEN", names.count("gen"), "DEEP", names.count("deep"))
        print("TRUNC", sum(1 for e in evs if e.get("args", {}).get("tprof truncated")))
    """)
    assert r.returncode == 0, r.stderr
    assert "BOOM 4 GEN 4 " in r.stdout, r.stdout
    deep = int(r.stdout.split("DEEP ")[1].split()[0])
    assert 4000 <= deep <= 5001  # calls deeper than the tracked depth are not ranges
    assert "TRUNC 0" in r.stdout
    assert "matching tprof_begin" not in r.stderr and "truncated" not in r.stderr, r.stderr


def test_forked_child_drops_the_hook():
    """A child forked while with_stack records (a DataLoader worker) runs without the hook."""
    r = run_python("""
        import os, tempfile, tprof
        from tprof import _tprof
        with tprof.profile(output_dir=tempfile.mkdtemp(), summary=False, with_stack=True):
            print("PARENT", _tprof.stack_installed())
            rd, wr = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.write(wr, b"1" if _tprof.stack_installed() else b"0")
                os._exit(0)
            os.waitpid(pid, 0)
            print("CHILD", os.read(rd, 1).decode())
        print("AFTER", _tprof.stack_installed())
    """)
    assert r.returncode == 0, r.stderr
    assert "PARENT True" in r.stdout and "CHILD 0" in r.stdout and "AFTER False" in r.stdout
