"""`tprof run`: training scripts tprof never saw, profiled without a change to them. Each script
is run twice, plainly and under `tprof run`: its stdout and exit status must be the same, its
stderr the same plus tprof's lines; the run directory it names passes `tprof check`, and its
steps are the script's optimizer steps (counted by the script itself), each holding one
optimizer range and its batch's dataloader range (traces read with Python's json module)."""
import json
import os
import re
import subprocess
import textwrap

import pytest

pytest.importorskip("torch")

from conftest import PYTHON, ranges, run_python, run_traces, step_numbers, trace_events  # noqa: E402
from lightning_jobs import lightning_script
from run_files import artifact, files_dir  # noqa: E402

TPROF = os.path.join(os.environ["TPROF_BUILD_DIR"], "tprof")

PLAIN = """
import os, sys
import torch
from torch import nn

print("argv", sys.argv[1:], __name__, os.path.basename(__file__))
torch.manual_seed(0)
data = torch.utils.data.TensorDataset(torch.randn(40, 8), torch.randint(0, 3, (40,)))
loader = torch.utils.data.DataLoader(data, batch_size=4, num_workers=int(sys.argv[1]))
model = nn.Linear(8, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
steps = 0
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        if steps == int(sys.argv[2]):
            raise RuntimeError("diverged at step %d" % steps)
print("optimizer steps", steps, "loss %.6f" % loss.item())
"""

LIGHTNING = lightning_script("""
    torch.manual_seed(0)
    data = [(torch.randn(8), i % 3) for i in range(24)]
    callbacks = []
    trainer = pl.Trainer(accelerator="cpu", devices=1, max_epochs=2, callbacks=callbacks,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    trainer.fit(Net(), torch.utils.data.DataLoader(data, batch_size=4))
    print("callbacks passed", len(callbacks), "global steps", trainer.global_step)
""")


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def run(cmd, tmp_path, env=None):
    full = dict(os.environ, OMP_NUM_THREADS="1")
    full.update(env or {})
    return subprocess.run(cmd, env=full, capture_output=True, text=True, timeout=400,
                          cwd=str(tmp_path))


def profiled(tmp_path, cmd, *options, env=None):
    """The command under tprof run with its own output_dir: (process, run directory named)."""
    out = str(tmp_path / "runs")
    p = run([TPROF, "run", "--output_dir", out, *options, "--", *cmd], tmp_path, env)
    named = re.findall(r"^tprof: run directory: (.*)$", p.stderr, re.M)
    return p, named


def tprof_lines_removed(stderr):
    """stderr without tprof's summary block and lines (what the script itself wrote)."""
    start = stderr.find("tprof summary:")
    return stderr[:start] if start >= 0 else stderr


def run_summary(run_dir):
    """The run's summary.json (the sink's run-level counts)."""
    with open(artifact(run_dir, "summary.json"), encoding="utf-8") as f:
        return json.load(f)


def check_run_dir(run_dir):
    p = subprocess.run([TPROF, "check", run_dir], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    return p.stdout


def steps_and_stages(run_dir):
    """{step number: (its optimizer ranges, its dataloader ranges)} over the run's traces."""
    found = {}
    for trace in run_traces(run_dir):
        events = ranges(trace_events(trace))
        steps = [e for e in events if e["name"].startswith("ProfilerStep#")]
        for step in steps:
            n = int(step["name"].split("#")[1])
            within = [e for e in events if e["ts"] >= step["ts"]
                      and e["ts"] + e["dur"] <= step["ts"] + step["dur"] + 0.002]
            found[n] = (sum(e["name"] == "optimizer" for e in within),
                        sum(e["name"] == "dataloader" for e in within))
    return found


@pytest.mark.parametrize("workers", [0, 2], ids=["in_process", "two_workers"])
def test_plain_loop(tmp_path, workers):
    script = write(tmp_path, "train.py", PLAIN)
    cmd = [PYTHON, script, str(workers), "0"]
    plain = run(cmd, tmp_path)
    assert plain.returncode == 0, plain.stderr
    p, named = profiled(tmp_path, cmd)
    assert p.returncode == 0, p.stderr
    assert p.stdout == plain.stdout  # argv, __name__, __file__, the losses: the script's own
    assert "argv ['%d', '0'] __main__ train.py" % workers in p.stdout
    assert "optimizer steps 20" in p.stdout
    assert tprof_lines_removed(p.stderr) == plain.stderr
    # one run directory (the DataLoader workers wrote none), named at the end
    runs = os.listdir(tmp_path / "runs")
    assert len(runs) == 1 and named == [str(tmp_path / "runs" / runs[0])]
    assert p.stderr.rstrip().endswith(named[0])
    files = os.listdir(files_dir(named[0]))
    assert not [f for f in files if ".rank" in f or f.endswith(".pt.trace.json")], files
    # at the top level, the one trace of this one process (its every window)
    top = [f for f in os.listdir(named[0]) if f not in (".tprof", "tprof")]
    assert len(top) == 1 and top[0].endswith(".pt.trace.json") and ".rank" not in top[0], top
    check_run_dir(named[0])
    found = steps_and_stages(named[0])
    # steps 0..19 end at the 20 optimizer steps, each with its batch's fetch (step 10 also
    # with the first epoch's last, empty fetch); what follows the last optimizer step (the
    # loader's end, the last print) is no step: the run's one window holds the 20 steps
    assert sorted(found) == list(range(20))
    assert [found[n] for n in range(20)] == [(1, 1)] * 10 + [(1, 2)] + [(1, 1)] * 9
    assert [os.path.basename(t) for t in run_traces(named[0])] == ["trace_0001_steps_0-19.json"]
    summary = subprocess.run([TPROF, "analyze", "--json", named[0]], capture_output=True,
                             text=True, timeout=120)
    assert summary.returncode == 0 and '"count": 20' in summary.stdout
    assert run_summary(named[0])["run"]["windows"] == 1
    assert run_summary(named[0])["run"]["partial_windows"] == 0  # none cut short


@pytest.mark.parametrize("record_ops", ["auto", "off"])
def test_ops_recorded_by_default(tmp_path, record_ops):
    """`tprof run` knows no model, yet records torch's ops through the observer (the record_ops
    key's auto): the op table has the loop's aten ops, the backward stage autograd's nodes, and
    each step its ops; `--record_ops off` records none of them. The script's output is its own
    either way."""
    pytest.importorskip("tprof._observer", reason="a build without torch's observer")
    script = write(tmp_path, "train.py", PLAIN)
    cmd = [PYTHON, script, "0", "0"]
    plain = run(cmd, tmp_path)
    p, named = profiled(tmp_path, cmd, "--record_ops", record_ops)
    assert p.returncode == 0 and p.stdout == plain.stdout, p.stderr
    summary = run_summary(named[0])
    ops = {o["name"]: o["calls"] for o in json.loads(subprocess.run(
        [TPROF, "analyze", "--json", "--top", "1000", named[0]], capture_output=True,
        text=True, timeout=120, check=True).stdout)["top_cpu_ops"]}
    stages = {s["stage"]: s["count"] for s in summary["stages"]}
    if record_ops == "off":
        assert not [o for o in ops if o.startswith(("aten::", "autograd::"))], ops
        assert stages["backward"] == 0
        return
    # 20 optimizer steps, each with one nn.Linear forward (addmm) and its backward
    assert ops["aten::addmm"] == 20 and ops["Optimizer.step#SGD.step"] == 20, ops
    # the backward stage: autograd's nodes, the same ones in each of the 20 steps
    assert stages["backward"] > 0 and stages["backward"] % 20 == 0, stages


def test_loader_records_never_raise_into_the_loop():
    """What `tprof run` records beside a DataLoader fetch cannot raise into the script's loop
    (nor replace its StopIteration): an error is one warning for the run."""
    p = run_python("""
        from tprof import _autorun

        def broken(*args):
            raise ValueError("no settings")

        _autorun._beside_fetch(broken, 1)
        _autorun._beside_fetch(broken, 2)
        print("the loop goes on")
    """)
    assert p.returncode == 0 and p.stdout == "the loop goes on\n", p.stderr
    assert p.stderr.count("tprof run: the DataLoader's setup is not recorded: ValueError: "
                          "no settings") == 1, p.stderr


# As many DataLoader workers as CPUs, each sample a 10 ms wait (slow storage): the CPUs idle while
# the steps wait for batches.
WAITING_LOADER = """
import os, time
import torch
from torch import nn

class Waits(torch.utils.data.Dataset):
    def __len__(self):
        return 48

    def __getitem__(self, i):
        time.sleep(0.01)
        return torch.full((8,), float(i)), i % 3

loader = torch.utils.data.DataLoader(Waits(), batch_size=4,
                                     num_workers=len(os.sched_getaffinity(0)))
torch.manual_seed(0)
model = nn.Linear(8, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for x, y in loader:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
print("loss %.6f" % loss.item())
"""


def test_plain_loop_gets_the_measured_loader_advice(tmp_path):
    """A plain script's DataLoader under `tprof run`, as many workers as CPUs that wait on a
    Dataset: the iterators' fetches record what tprof.torch.dataloader records (the settings,
    the fetches that start and stop the workers), so the advice is the measured one (the CPUs
    sat idle: more workers), not the generic one; the start and stop figures are those fetches'
    ranges in the trace, and the script's output is its own."""
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no sched_getaffinity")
    cpus = len(os.sched_getaffinity(0))
    cmd = [PYTHON, write(tmp_path, "train.py", WAITING_LOADER)]
    plain = run(cmd, tmp_path)
    assert plain.returncode == 0, plain.stderr
    p, named = profiled(tmp_path, cmd)
    assert p.returncode == 0, p.stderr
    assert p.stdout == plain.stdout
    events = [e for tr in run_traces(named[0]) for e in trace_events(tr)]
    fetches = sorted((e for e in ranges(events) if e["name"] == "dataloader"),
                     key=lambda e: e["ts"])
    assert len(fetches) == 2 * (12 + 1)  # twelve batches and the StopIteration, twice
    pairs = [dict(kv.split("=", 1) for kv in e["args"]["tprof.setup"].split(";"))
             for e in ranges(events) if e["name"] == "tprof.setup"]
    settings = [x for x in pairs if "num_workers" in x]
    assert settings and settings[0]["num_workers"] == str(cpus)
    assert settings[0]["batch_size"] == "4" and settings[0]["persistent_workers"] == "0"
    starts = [int(x["loader_start_ns"]) for x in pairs if "loader_start_ns" in x]
    stops = [int(x["loader_stop_ns"]) for x in pairs if "loader_stop_ns" in x]
    assert len(starts) == 2 and len(stops) == 2
    for ns, fetch in zip(starts + stops, [fetches[0], fetches[13], fetches[12], fetches[25]]):
        assert ns / 1e3 == pytest.approx(fetch["dur"], rel=0.1, abs=200)  # around the range
    recos = {r["id"]: r["message"] for r in run_summary(named[0])["recommendations"]}
    assert "of the CPUs sat idle" in recos["dataloader"], recos["dataloader"]
    assert "Raise num_workers to %d" % (2 * cpus) in recos["dataloader"]
    assert "persistent_workers=True: starting the workers (2 times" in recos["dataloader"]


# A loop of 8 optimizer steps of 50 ms (sleeps: steady on a loaded machine), its first slowed by
# a lazy initialisation and its end by a teardown; argv[1] lists the steps slowed further (an
# unstable loop).
TIMED = """
import sys, time
import torch
from torch import nn

slow = {int(s) for s in sys.argv[1].split(",") if s}
loader = torch.utils.data.DataLoader(torch.randn(32, 8), batch_size=4)
model = nn.Linear(8, 3)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step, x in enumerate(loader):
    if step == 0:
        time.sleep(0.5)  # the first step's warm-up
    time.sleep(0.05 + (0.4 if step in slow else 0))
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
time.sleep(0.5)  # teardown after the last optimizer step
print("optimizer steps", step + 1)
"""


@pytest.mark.parametrize("slow", ["", "3,6"], ids=["steady", "unstable"])
def test_steps_are_the_optimizer_steps_and_advice_skips_warmup(tmp_path, slow):
    """N optimizer steps are N steps (the teardown after the last is none), and unstable_steps
    judges the steps but the first: a steady loop with a slow first step and a slow end gets no
    such advice (before, its 9 steps had a p95 of 10 times the median); one whose steps 3 and 6
    take 9 times the others does."""
    script = write(tmp_path, "train.py", TIMED)
    p, named = profiled(tmp_path, [PYTHON, script, slow], "--active", "4")
    assert p.returncode == 0 and "optimizer steps 8" in p.stdout, p.stderr
    assert len(named) == 1
    # windows of 4 steps: the third opened after the last optimizer step, held no step, and
    # was not written; none is partial
    assert [step_numbers(trace_events(t)) for t in run_traces(named[0])] == [
        [0, 1, 2, 3], [4, 5, 6, 7]]
    run = run_summary(named[0])["run"]
    assert (run["windows"], run["partial_windows"], run["no_window_reason"]) == (2, 0, None)
    q = subprocess.run([TPROF, "analyze", "--json", named[0]], capture_output=True, text=True,
                       timeout=120)
    assert q.returncode == 0, q.stderr
    report = json.loads(q.stdout)
    ids = [r["id"] for r in report["recommendations"]]
    assert ("unstable_steps" in ids) == bool(slow), ids
    if slow:  # the rule names the 7 steps it judged and a slowed one as the slowest
        msg = next(r["message"] for r in report["recommendations"] if r["id"] == "unstable_steps")
        assert "over 7 steps" in msg and re.search(r"slowest \(ProfilerStep#[36],", msg), msg


def test_a_loop_without_optimizer_steps_is_one_step(tmp_path):
    """An inference loop (DataLoader batches, no optimizer step) never ends a step: its run,
    from the first batch to the end, stays its one step, in a trace tprof check accepts."""
    script = write(tmp_path, "infer.py", """
        import torch
        for x in torch.utils.data.DataLoader(torch.randn(8, 4), batch_size=4):
            x.sum()
        print("done")
    """)
    p, named = profiled(tmp_path, [PYTHON, script])
    assert p.returncode == 0 and p.stdout == "done\n" and len(named) == 1, p.stderr
    check_run_dir(named[0])
    assert steps_and_stages(named[0]) == {0: (0, 3)}  # two batches and the loader's end


def test_a_failing_script_keeps_its_traceback_and_exit_status(tmp_path):
    script = write(tmp_path, "train.py", PLAIN)
    cmd = [PYTHON, script, "0", "7"]
    plain = run(cmd, tmp_path)
    assert plain.returncode == 1 and "RuntimeError: diverged at step 7" in plain.stderr
    p, named = profiled(tmp_path, cmd, "--active=3")
    assert p.returncode == 1
    assert p.stdout == plain.stdout
    # the traceback is the script's (paths and lines), tprof's summary follows it
    assert p.stderr.startswith(plain.stderr)
    assert len(named) == 1
    check_run_dir(named[0])
    found = steps_and_stages(named[0])
    assert sorted(found) == list(range(7))  # 7 optimizer steps; the time after them is no step
    assert [found[n] for n in range(7)] == [(1, 1)] * 7
    # --active=3 reached the profiled process (TPROF_ACTIVE): windows of 3 steps, the last one
    # cut short by the end (partial)
    assert [step_numbers(trace_events(t)) for t in run_traces(named[0])] == [
        [0, 1, 2], [3, 4, 5], [6]]
    assert run_summary(named[0])["run"]["partial_windows"] == 1


def test_module_form_and_python_m_tprof(tmp_path):
    """`-m package.module` runs as Python runs it; `python -m tprof run train.py` takes this
    interpreter for a .py command; tprof is found through the bootstrap alone (no PYTHONPATH)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    write(pkg, "train.py", PLAIN)
    cmd = [PYTHON, "-m", "pkg.train", "0", "0"]
    plain = run(cmd, tmp_path)
    p, named = profiled(tmp_path, cmd)
    assert p.returncode == 0 and p.stdout == plain.stdout, p.stderr
    assert "argv ['0', '0'] __main__ train.py" in p.stdout and len(named) == 1
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = os.path.join(os.environ["TPROF_BUILD_DIR"], "python")
    q = subprocess.run([PYTHON, "-m", "tprof", "run", "--output_dir", "runs2", "--",
                        "pkg/train.py", "0", "0"], env=env, capture_output=True, text=True,
                       timeout=400, cwd=str(tmp_path))
    assert q.returncode == 0 and q.stdout == plain.stdout, q.stderr
    assert len(os.listdir(tmp_path / "runs2")) == 1
    bare = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    r = subprocess.run([TPROF, "run", "--output_dir", "runs3", "--", PYTHON, "-c",
                        ("import sys; print(any('_bootstrap' in p for p in sys.path), "
                         "'tprof' in sys.modules)")],
                       env=bare, capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr
    # the bootstrap loaded tprof from the folder around it, and left sys.path as it was
    assert r.stdout.strip() == "False True"
    assert not (tmp_path / "runs3").exists()  # no step: no run directory


def test_lightning_fit(tmp_path):
    pytest.importorskip("lightning.pytorch")
    script = write(tmp_path, "fit.py", LIGHTNING)
    cmd = [PYTHON, script]
    p, named = profiled(tmp_path, cmd)
    assert p.returncode == 0, p.stderr[-3000:]
    # the script's list is not touched; 6 batches x 2 epochs
    assert "callbacks passed 0 global steps 12" in p.stdout
    assert len(named) == 1
    check_run_dir(named[0])
    steps = sorted(n for t in run_traces(named[0]) for n in step_numbers(trace_events(t)))
    # one step per training batch (the callback's); the fit's end after the last batch is none
    assert steps == list(range(12))
    names = {e["name"] for t in run_traces(named[0]) for e in ranges(trace_events(t))}
    assert {"forward", "backward", "optimizer", "dataloader"} <= names


def test_bad_options(tmp_path):
    cmd = ["--", PYTHON, "-c", "pass"]
    for args, message in [(["--active", "x", *cmd], "active"),
                          (["--no_such_key", "1", *cmd], "no_such_key"),
                          (["-x", *cmd], "-x"), ([], "no command")]:
        p = subprocess.run([TPROF, "run", *args], capture_output=True, text=True)
        assert p.returncode == 2 and message in p.stderr, p.stderr
        assert p.stderr.count("\n") == 1, p.stderr
    p = subprocess.run([TPROF, "run", "--", str(tmp_path / "missing")], capture_output=True,
                       text=True)
    assert p.returncode == 127 and "missing" in p.stderr
    p = subprocess.run([TPROF, "run", "--", PYTHON, "-c", "import sys; sys.exit(3)"],
                       capture_output=True, text=True)
    assert p.returncode == 3 and p.stdout == p.stderr == ""
