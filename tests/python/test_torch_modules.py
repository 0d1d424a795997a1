"""The module tree of tprof's own recording (tprof.profile(model=..., record_ops=True): module
paths from tprof.torch's hooks, ops and autograd's links from the op observer) against the
independent reference (tests/lib/tprof_ref.py's modules()) and against torch.profiler's own
trace of the same model (with_stack's "nn.Module: X_n" ranges), read by the same analysis: the
same tree, node for node, with the same calls and the same backward nodes joined to each
module. A module called twice under one parent is one node of two calls."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import tprof  # noqa: E402
import tprof_ref  # noqa: E402
from conftest import run_traces  # noqa: E402
from run_files import artifact  # noqa: E402
from tprof.torch import observer  # noqa: E402

pytestmark = pytest.mark.skipif(not observer.available(),
                                reason="tprof._observer not built: " + observer.why_not())
STEPS = 3


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(16, 16)
        self.act = nn.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)) + x


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(Block(), Block())
        self.norm = nn.LayerNorm(16)
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        x = self.norm(self.body(x))
        return self.head(self.norm(x))  # norm twice: one node, two calls


def train(model, opt, step):
    torch.manual_seed(1)
    for _ in range(STEPS):
        loss = model(torch.randn(8, 16)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        step()


def tprof_cli():
    return os.path.join(os.environ["TPROF_BUILD_DIR"], "tprof")


def modules_of(path):
    out = subprocess.run([tprof_cli(), "analyze", "--json", str(path)], capture_output=True,
                         check=True)
    return json.loads(out.stdout)["modules"]


def shape(modules):
    """The tree depth first: (depth, calls, the names of the backward nodes joined to it)."""
    return [(n["depth"], n["calls"],
             sorted(o["name"] for o in n["ops"] if o["pass"] == "backward"))
            for n in modules["nodes"]]


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    train(model, opt, lambda: None)  # warm
    out = tmp_path_factory.mktemp("tprof")
    with tprof.profile(model=model, record_ops=True, output_dir=str(out), run_id="own",
                       wait=0, warmup=0, active=STEPS, repeat=1, summary=False) as prof:
        train(model, opt, prof.step)
    own = run_traces(str(out / "own"))
    assert len(own) == 1
    kineto = tmp_path_factory.mktemp("kineto") / "trace.json"
    with profile(activities=[ProfilerActivity.CPU], with_stack=True, with_modules=True) as tp:
        train(model, opt, lambda: None)
    tp.export_chrome_trace(str(kineto))
    return own[0], kineto


def test_own_trace_matches_reference(traces):
    own, _ = traces
    got, ref = modules_of(own), tprof_ref.modules(own)
    paths = []
    for n in got["nodes"]:
        paths.append((paths[n["parent"]] if n["parent"] is not None else ()) + (n["name"],))
    assert paths[:3] == [("Net",), ("Net", "Net.body"), ("Net", "Net.body", "Net.body.0")]
    assert set(paths) == set(ref["nodes"])
    for p, n in zip(paths, got["nodes"]):
        want = ref["nodes"][p]
        assert (n["calls"], n["backward_calls"]) == (want["calls"], want["backward_calls"])
        assert (n["forward_us"], n["forward_self_us"]) == (want["forward"] / 1000,
                                                           want["forward_self"] / 1000)
        assert (n["backward_us"], n["backward_self_us"]) == (want["backward"] / 1000,
                                                             want["backward_self"] / 1000)
        assert n["flops"] == pytest.approx(want["flops"])
    assert (got["unlinked_backward_calls"], got["unlinked_backward_us"]) == (
        ref["unlinked"][0], ref["unlinked"][1] / 1000)
    norm = got["nodes"][paths.index(("Net", "Net.norm"))]
    assert norm["calls"] == 2 * STEPS  # called twice a step, under one parent
    fc = got["nodes"][paths.index(("Net", "Net.body", "Net.body.0", "Net.body.0.fc"))]
    assert {o["name"] for o in fc["ops"] if o["pass"] == "backward"} == {
        "autograd::engine::evaluate_function: AddmmBackward0",
        "autograd::engine::evaluate_function: TBackward0"}
    assert fc["backward_calls"] == 2 * STEPS and fc["flops"] > 0


def test_own_tree_is_torch_profilers_tree(traces):
    """The same model's tree from torch.profiler's trace: node for node the same calls and the
    same backward nodes (tprof names a module by its path, Kineto by its class and number)."""
    own, kineto = traces
    got, theirs = modules_of(own), modules_of(kineto)
    assert [n["name"] for n in theirs["nodes"]][:3] == ["Net_0", "Sequential_0", "Block_0"]
    assert shape(got) == shape(theirs)
    assert got["unlinked_backward_calls"] == theirs["unlinked_backward_calls"]


def test_dominant_op_names_its_module_path(tmp_path):
    """tprof's own recording, where one op takes most of each step (a custom op sleeping 4 ms in
    Net.enc.0): dominant_op names it and the module path around it, which only the module
    tree knows (path ranges, unlike Kineto's "nn.Module: X", carry no marker in their names).
    The trace itself says the op runs inside that range, and what share of the steps it takes;
    the must-not-fire case is tests/integration/test_advice.py's."""
    import time

    @torch.library.custom_op("tprof_test_modules::slow_mix", mutates_args=())
    def slow_mix(x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.004)
        return x.clone()

    class Mix(nn.Module):
        def forward(self, x):
            return slow_mix(x)

    class Small(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(Mix(), nn.Linear(16, 16))  # the input needs no gradient
            self.head = nn.Linear(16, 4)

        def forward(self, x):
            return self.head(self.enc(x))

    model = Small()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    train(model, opt, lambda: None)
    with tprof.profile(model=model, record_ops=True, output_dir=str(tmp_path), run_id="dom",
                       wait=0, warmup=0, active=STEPS, repeat=1, summary=False) as prof:
        train(model, opt, prof.step)
    (trace,) = run_traces(str(tmp_path / "dom"))
    out = subprocess.run([tprof_cli(), "analyze", "--json", trace], capture_output=True,
                         check=True)
    found = [r for r in json.loads(out.stdout)["recommendations"] if r["id"] == "dominant_op"]
    assert found, json.loads(out.stdout)["recommendations"]
    msg = found[0]["message"]
    with open(trace) as f:
        events = [e for e in json.load(f)["traceEvents"] if e.get("ph") == "X"]
    ops = [e for e in events if e["name"] == "tprof_test_modules::slow_mix"]
    mods = [e for e in events if e["name"] == "Small.enc.0"]
    assert len(ops) == STEPS and all(any(m["ts"] <= o["ts"] and o["ts"] + o["dur"] <=
                                         m["ts"] + m["dur"] for m in mods) for o in ops)
    assert msg.startswith("One op dominates: tprof_test_modules::slow_mix (in Small.enc.0) "
                          "takes "), msg
    steps = sum(e["dur"] for e in events if e["name"].startswith("ProfilerStep#"))
    inner = sum(e["dur"] for e in events if e["name"] == "aten::clone"
                and any(o["ts"] <= e["ts"] <= o["ts"] + o["dur"] for o in ops))
    share = float(msg.split(" takes ")[1].split("%")[0])
    assert share == pytest.approx(100 * (sum(o["dur"] for o in ops) - inner) / steps, abs=0.5)


def test_op_stats_csv_has_flops_fcm(tmp_path):
    """The run's op_stats.csv ends with flops_fcm, each op's FlopCounterMode FLOPs as
    `tprof analyze --json` of the run has them (nonzero with shapes recorded: Linear forward and
    backward)."""
    import csv
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    with tprof.profile(model=model, record_ops=True, record_shapes=True, output_dir=str(tmp_path),
                       run_id="fcm", wait=0, warmup=0, active=STEPS, repeat=1,
                       summary=False) as prof:
        train(model, opt, prof.step)
    run = str(tmp_path / "fcm")
    with open(artifact(run, "op_stats.csv"), newline="") as f:
        reader = csv.reader(f)
        head = next(reader)
        rows = {r[0]: r for r in reader}
    assert head[-2:] == ["flops", "flops_fcm"]
    out = subprocess.run([tprof_cli(), "analyze", "--json", "--top", "100000", run],
                         capture_output=True, check=True)
    want = {o["name"]: o["flops_fcm"] for o in json.loads(out.stdout)["top_cpu_ops"]}
    assert {n: float(r[-1]) for n, r in rows.items()} == want
    assert sum(want.values()) > 0
