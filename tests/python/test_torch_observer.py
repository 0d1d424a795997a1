"""tprof's op observer (python/observer/observer.cpp, tprof.torch.observer) against torch's own
profiler on the same training steps of three models (a CNN with a custom autograd.Function, a
transformer layer, an LSTM): tprof's op table equals key_averages() op for op (calls and
FLOPs), each op's "Input Dims", "Input type" and "Concrete Inputs" equal the Kineto trace's,
the allocation events equal torch.profiler's in number and the peak per device agrees. Then
torch.compile: a compiled model keeps its graphs and dynamo's counters under every tprof
option, compiled before, during or after the session. And the fallback: with the observer
absent, record_ops goes through the dispatch mode and says why in one line."""
import collections
import json
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402

import tprof  # noqa: E402
from conftest import run_traces, trace_events  # noqa: E402
from tprof.torch import observer  # noqa: E402

SOURCE = os.environ.get("TPROF_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
STEPS = 3

pytestmark = pytest.mark.skipif(not observer.available(),
                                reason="tprof._observer not built: " + observer.why_not())


def tprof_cli():
    return os.path.join(os.environ.get("TPROF_BUILD_DIR", os.path.join(SOURCE, "build")), "tprof")


class Scale(torch.autograd.Function):
    """A custom autograd.Function: torch.profiler records it by its class name."""

    @staticmethod
    def forward(ctx, x):
        return x * 2.0

    @staticmethod
    def backward(ctx, grad):
        return grad * 2.0


class CNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.head = nn.Linear(8 * 8 * 8, 5)

    def forward(self, x):
        x = nn.functional.max_pool2d(torch.relu(self.bn(self.conv(x))), 2)
        return self.head(Scale.apply(x).flatten(1))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, batch_first=True)
        self.head = nn.Linear(32, 5)

    def forward(self, x):
        return self.head(self.layer(x).mean(1))


class LSTM(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.LSTM(8, 16, batch_first=True)
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


MODELS = {"cnn": (CNN, (4, 3, 16, 16)), "transformer": (Transformer, (4, 6, 32)),
          "lstm": (LSTM, (4, 7, 8))}


def make(name):
    torch.manual_seed(0)
    cls, shape = MODELS[name]
    model = cls()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(*shape, generator=g), torch.randint(0, 5, (shape[0],), generator=g)

    def step():
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(2):  # lazy initialisation (optimizer state) happens before either profiler
        step()
    return model, step


def analyze(path):
    out = subprocess.run([tprof_cli(), "analyze", "--json", "--top", "1000000", path],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def torch_run(step, out_dir):
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True,
                 with_flops=True) as p:
        for _ in range(STEPS):
            step()
    path = os.path.join(out_dir, "torch.pt.trace.json")
    p.export_chrome_trace(path)
    # key_averages() has a row for the [memory] events; tprof counts them in its memory table
    averages = {e.key: (e.count, e.flops) for e in p.key_averages() if e.key != "[memory]"}
    with open(os.path.join(out_dir, "averages.json"), "w", encoding="utf-8") as f:
        json.dump(averages, f)


def tprof_run(step, out_dir):
    with tprof.profile(record_ops=True, record_shapes=True, profile_memory=True, with_flops=True,
                       output_dir=out_dir, run_id="tprof", summary=False) as prof:
        for _ in range(STEPS):
            step()
            prof.step()


def run_in_a_process(kind, name, out_dir):
    """Each profiler in a process of its own: the allocator's running totals (the [memory]
    events' Total Allocated) then start from the same state for both."""
    subprocess.run([sys.executable, __file__, kind, name, str(out_dir)], check=True, timeout=600)


@pytest.fixture(scope="module", params=sorted(MODELS))
def runs(request, tmp_path_factory):
    tmp = tmp_path_factory.mktemp(request.param)
    run_in_a_process("torch", request.param, tmp)
    run_in_a_process("tprof", request.param, tmp)
    with open(tmp / "averages.json", encoding="utf-8") as f:
        averages = {k: tuple(v) for k, v in json.load(f).items()}
    torch_path = str(tmp / "torch.pt.trace.json")
    run_dir = str(tmp / "tprof")
    traces = run_traces(run_dir)
    assert len(traces) == 1
    return (request.param, (averages, trace_events(torch_path), torch_path), run_dir,
            trace_events(traces[0]))


def merged_duplicates(events):
    """Per name, the ranges key_averages() leaves out: torch's EventList._remove_dup_nodes merges
    a range into its parent when the parent has the same name and no other child (an aten::mul of
    a Python scalar calls aten::mul), and so does tprof's op table (docs/METRICS.md,
    "torch.profiler's tables"). Computed here from a trace by the nesting rule of
    docs/SEMANTICS.md §3."""
    ranges = sorted((e for e in events if e.get("ph") == "X" and e.get("cat") in
                     ("cpu_op", "user_annotation")), key=lambda e: (e["tid"], e["ts"], -e["dur"]))
    children = collections.defaultdict(list)
    stack, tid = [], None
    for e in ranges:
        if e["tid"] != tid:
            stack, tid = [], e["tid"]
        while stack and (e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]
                         or e["ts"] + e["dur"] > stack[-1]["ts"] + stack[-1]["dur"]):
            stack.pop()
        if stack:
            children[id(stack[-1])].append(e)
        stack.append(e)
    return collections.Counter(e["name"] for e in ranges if len(children[id(e)]) == 1
                               and children[id(e)][0]["name"] == e["name"])


def test_op_table_equals_key_averages(runs):
    name, (averages, torch_events, _), run_dir, events = runs
    rows = {r["name"]: r for r in analyze(run_dir)["top_cpu_ops"]}
    rows.pop("gc", None)  # Python's garbage collections, which tprof.torch records and torch not
    assert set(rows) == set(averages), name
    assert merged_duplicates(torch_events) == merged_duplicates(events), name
    for op, (count, flops) in averages.items():
        assert rows[op]["calls"] == count, (name, op)
        assert (rows[op]["flops"] or 0) == flops, (name, op)
    assert sum(f for _, f in averages.values()) > 0  # some FLOPs were compared
    if name == "transformer":  # the merge was exercised: aten::mul of a Python scalar
        assert merged_duplicates(events)["aten::mul"] > 0
    if name == "cnn":
        assert "Scale" in rows and "ScaleBackward" in rows  # the custom autograd.Function


def op_args(events):
    """Per op name, the multiset of its (Input Dims, Input type, Concrete Inputs)."""
    out = collections.defaultdict(collections.Counter)
    for e in events:
        if e.get("ph") == "X" and e.get("cat") == "cpu_op" and "Input Dims" in e.get("args", {}):
            a = e["args"]
            out[e["name"]][json.dumps([a["Input Dims"], a.get("Input type"),
                                       a.get("Concrete Inputs")])] += 1
    return out


def test_inputs_as_kineto_writes_them(runs):
    name, (_, torch_events, _), _, events = runs
    want, got = op_args(torch_events), op_args(events)
    assert set(got) == set(want), name
    for op in want:
        assert got[op] == want[op], (name, op)


def test_backward_ops_link_to_forward_ops(runs):
    """Kineto's Sequence number and Fwd thread id: every backward node's sequence number is
    one a forward op of the same step carries."""
    name, _, _, events = runs
    ops = [e for e in events if e.get("cat") == "cpu_op"]
    forward = {e["args"]["Sequence number"] for e in ops
               if e.get("args", {}).get("Fwd thread id") == 0}
    backward = [e for e in ops if e["name"].endswith("Backward0")
                and not e["name"].startswith("autograd::")]
    assert backward, name
    for e in backward:
        assert e["args"]["Fwd thread id"] != 0 and e["args"]["Sequence number"] in forward, e
    # autograd's evaluate_function range carries its node's link, as Kineto's trace does
    evaluate = [e for e in ops if e["name"] == "autograd::engine::evaluate_function: "
                + backward[0]["name"]]
    assert evaluate and all(e["args"]["Sequence number"] in forward for e in evaluate), evaluate


def memory_events(events):
    return [e for e in events if e.get("ph") == "i" and e.get("name") == "[memory]"]


def test_allocations_equal_torch_profiler(runs):
    name, (_, torch_events, torch_path), run_dir, events = runs
    want, got = memory_events(torch_events), memory_events(events)
    assert len(want) > 50 and len(got) == len(want), name
    assert sorted(e["args"]["Bytes"] for e in got) == sorted(e["args"]["Bytes"] for e in want)
    peaks = {(m["device_type"], m["device_id"]): m["peak_bytes"]
             for m in analyze(run_dir)["memory"]}
    torch_peaks = {(m["device_type"], m["device_id"]): m["peak_bytes"]
                   for m in analyze(torch_path)["memory"]}
    assert peaks == torch_peaks and peaks.get((0, -1), 0) > 0, name


# ---- torch.compile ----

def compile_counters():
    from torch._dynamo.utils import counters

    # An empty entry is no count: dynamo's counters are defaultdicts, and a first compile in a
    # fresh process (no inductor cache yet) reads counters["graph_break"] without adding to it.
    return {k: dict(v) for k, v in counters.items()
            if k in ("stats", "graph_break", "frames") and v}


def compiled_run(when, **options):
    """A small CNN compiled and trained for a few steps, profiled per `when`: the steps run
    unprofiled ('none'), the model compiled before the session, during it, or the session
    before it is compiled ('after'). Returns dynamo's counters and the profile's trace."""
    torch._dynamo.reset()
    from torch._dynamo.utils import counters

    counters.clear()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.ReLU(), nn.Flatten(), nn.Linear(4 * 6 * 6, 5))
    x = torch.randn(2, 3, 8, 8)
    results = []

    def steps(fn, n=3):
        for _ in range(n):
            results.append(fn(x).detach())

    compiled = torch.compile(model) if when in ("none", "before") else None
    if compiled is not None:
        steps(compiled)
    prof = None
    if when != "none":
        prof = tprof.profile(model=model, summary=False, **options).start()
        if compiled is None and when == "during":
            compiled = torch.compile(model)
        steps(compiled or model)
        prof.stop()
    if compiled is None:
        compiled = torch.compile(model)
    steps(compiled)
    return compile_counters(), prof, results


OPTIONS = [{}, {"record_ops": True}, {"record_ops": True, "record_shapes": True,
                                     "profile_memory": True, "with_flops": True},
           {"with_modules": False, "record_ops": True}, {"with_stack": True}]


@pytest.mark.parametrize("when", ["before", "during", "after"])
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(o) or "defaults")
def test_compiled_code_stays_compiled(tmp_path, when, options):
    baseline, _, want = compiled_run("none")
    assert baseline["stats"].get("unique_graphs") == 1 and not baseline.get("graph_break")
    got, prof, results = compiled_run(when, output_dir=str(tmp_path), **options)
    assert got == baseline
    for a, b in zip(want, results):
        assert torch.equal(a, b)
    if when != "after":  # the session saw compiled code run: torch's own range for it
        names = {e["name"] for path in run_traces(prof.run_dir)
                 for e in trace_events(path)}
        assert any(n.startswith("Torch-Compiled Region") for n in names), sorted(names)[:40]


def test_module_ranges_skip_compiled_code_but_not_eager(tmp_path):
    torch._dynamo.reset()
    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU())
    compiled = torch.compile(model)
    x = torch.randn(2, 4)
    with tprof.profile(model=model, output_dir=str(tmp_path), summary=False) as prof:
        compiled(x)
        model(x)
    names = collections.Counter(e["name"] for path in run_traces(prof.run_dir)
                                for e in trace_events(path) if e.get("ph") == "X")
    assert names["Sequential.0"] == 1  # the eager call only


# ---- the fallback ----

FALLBACK = r"""
import json, sys, types
if sys.argv[2] == "absent":
    sys.modules["tprof._observer"] = None  # its import fails, as where it was never built
else:
    sys.modules["tprof._observer"] = types.SimpleNamespace(built_for_torch="1.13.0")
import torch, tprof
from torch import nn
model = nn.Linear(4, 3)
compiled = torch.compile(model)
x = torch.randn(2, 4)
compiled(x)
from torch._dynamo.utils import counters
before = {k: dict(v) for k, v in counters.items()}
with tprof.profile(model=model, record_ops=True, record_shapes=True, output_dir=sys.argv[1],
                   summary=False) as prof:
    model(x).sum().backward()
    compiled(x)
after = {k: dict(v) for k, v in counters.items()}
print(json.dumps({"run_dir": prof.run_dir, "same": before == after}))
"""


@pytest.mark.parametrize("why", ["absent", "other-torch"])
def test_fallback_to_the_dispatch_mode_says_why(tmp_path, why):
    out = subprocess.run([sys.executable, "-c", FALLBACK, str(tmp_path), why],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stderr.splitlines() if "dispatch mode" in line]
    reason = "built for torch 1.13.0" if why == "other-torch" else "not available"
    assert len(lines) == 1 and reason in lines[0], out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["same"]
    names = collections.Counter(e["name"] for path in run_traces(result["run_dir"])
                                for e in trace_events(path) if e.get("ph") == "X")
    assert names["aten::addmm"] >= 1 and names["aten::linear"] == 0  # below autograd only
    assert names["Linear"] == 1  # the eager call only: the compiled one ran compiled


if __name__ == "__main__":  # run_in_a_process: python test_torch_observer.py KIND MODEL DIR
    _, kind, model_name, out = sys.argv
    (torch_run if kind == "torch" else tprof_run)(make(model_name)[1], out)


def test_plain_loader_is_a_stage_through_the_observer(tmp_path):
    """A plain DataLoader loop, no tprof.stage: torch's own "enumerate(DataLoader)#..." range,
    which the observer records, is the dataloader stage of every step."""
    model = nn.Linear(4, 2)
    data = torch.utils.data.TensorDataset(torch.randn(24, 4), torch.randn(24, 2))
    loader = torch.utils.data.DataLoader(data, batch_size=8)
    with tprof.profile(model=model, output_dir=str(tmp_path), summary=False) as prof:
        for x, y in loader:
            nn.functional.mse_loss(model(x), y).backward()
            prof.step()
    stages = {s["stage"]: s for s in prof.summary()["stages"]}
    assert stages["dataloader"]["count"] == 4  # three batches and the fetch that ends the loop
