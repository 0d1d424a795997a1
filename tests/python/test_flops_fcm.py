"""FLOPs by FlopCounterMode's convention (docs/METRICS.md, "FLOPs by two conventions"): the
`flops_fcm` figures equal torch.utils.flop_counter.FlopCounterMode's count of the same training
step (forward and backward), in total and op by op, on a CNN, a transformer layer and an LSTM,
both from a torch.profiler Kineto trace read by `tprof analyze` (the FLOPs from its shapes) and
from tprof's own recording (the live summary.json and `tprof analyze` of its run directory),
while `flops` stays torch.profiler's (key_averages()). Then the formulas one by one against
torch's own: convolutions of every kind with their backward under every output_mask, and the
scaled dot-product attention ops, which no CPU run executes, against flop_counter's functions."""
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402
from torch.nn import functional as F  # noqa: E402
from torch.profiler import ProfilerActivity, profile  # noqa: E402
from torch.utils import flop_counter  # noqa: E402
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

import tprof  # noqa: E402
from run_files import artifact  # noqa: E402
from tprof.torch import observer  # noqa: E402

SOURCE = os.environ.get("TPROF_SOURCE_DIR",
                        os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

needs_observer = pytest.mark.skipif(not observer.available(),
                                    reason="tprof._observer not built: " + observer.why_not())


def tprof_cli():
    return os.path.join(os.environ.get("TPROF_BUILD_DIR", os.path.join(SOURCE, "build")), "tprof")


def analyze(path, *args):
    out = subprocess.run([tprof_cli(), "analyze", "--json", "--top", "1000000", *args, path],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


class CNN(nn.Module):
    """Padding, stride, groups, a bias-free layer: every term of the convolution formulas."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, stride=2, groups=2, bias=False)
        self.head = nn.Linear(16 * 7 * 7, 5)

    def forward(self, x):
        return self.head(torch.relu(self.c2(torch.relu(self.c1(x)))).flatten(1))


class Transformer(nn.Module):
    """With dropout, training runs attention as batched products (aten::bmm, counted by both
    conventions); without, as the CPU's fused kernel, which neither counts (UNCOUNTED)."""

    def __init__(self, dropout=0.1):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=dropout,
                                                batch_first=True)
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
          "transformer_fused": (lambda: Transformer(dropout=0.0), (4, 6, 32)),
          "lstm": (LSTM, (4, 7, 8))}

# Ops that do work FlopCounterMode counts nothing for on the CPU, and tprof neither: it has no
# formula for the CPU's fused attention kernel nor for oneDNN's LSTM layer, and sees no op
# inside them (their kernels call none through the dispatcher).
UNCOUNTED = {"transformer_fused": ["aten::_scaled_dot_product_flash_attention_for_cpu",
                             "aten::_scaled_dot_product_flash_attention_for_cpu_backward"],
             "lstm": ["aten::mkldnn_rnn_layer", "aten::mkldnn_rnn_layer_backward"]}


def make(name):
    """A training step of the model (forward, backward, SGD), run once before (lazy state)."""
    torch.manual_seed(0)
    cls, shape = MODELS[name]
    model = cls()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(*shape, generator=g), torch.randint(0, 5, (shape[0],), generator=g)

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), y).backward()
        opt.step()

    step()
    return step


def flop_counter_mode(fn):
    """FlopCounterMode's total and per-op counts of fn() (its "Global" module), keyed by the
    trace's op names (aten.mm -> aten::mm), zeros left out."""
    with FlopCounterMode(display=False) as fc:
        fn()
    per_op = {str(op).replace(".", "::", 1): n
              for op, n in fc.get_flop_counts()["Global"].items() if n}
    return fc.get_total_flops(), per_op


def per_op_fcm(j):
    return {r["name"]: r["flops_fcm"] for r in j["top_cpu_ops"] if r["flops_fcm"]}


def kineto_trace(fn, path, **kw):
    """fn() as one step of a torch.profiler trace written to path (the step's range named as
    torch.profiler's schedule names it, which needs more steps than one)."""
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, **kw) as p:
        with torch.profiler.record_function("ProfilerStep#1"):
            fn()
    p.export_chrome_trace(path)
    return p


def tprof_recording(fn, out_dir):
    with tprof.profile(record_ops=True, record_shapes=True, with_flops=True,
                       output_dir=str(out_dir), run_id="tprof", summary=False) as prof:
        fn()
        prof.step()
    run_dir = prof.run_dir
    with open(artifact(run_dir, "summary.json"), encoding="utf-8") as f:
        return run_dir, json.load(f)


def check_fcm(j, total, per_op, where, every_op=True):
    """j's FlopCounterMode figures against FlopCounterMode's total and per-op counts; the op
    table holds every op unless it is summary.json's (its top rows)."""
    assert j["flops_fcm"]["total"] == total, where
    if every_op:
        assert per_op_fcm(j) == per_op, where
    else:
        assert per_op_fcm(j).items() <= per_op.items(), where  # the top rows may hold none
    # every counted op starts inside a step
    assert sum(s["flops_fcm"] for s in j["steps"]["list"]) == total, where
    assert j["flops_fcm"]["step_flops"] == total, where
    assert j["flops_fcm"]["convention"].startswith("FlopCounterMode's"), where
    assert j["flops"]["convention"].startswith("torch.profiler's"), where


@pytest.mark.parametrize("name", sorted(MODELS))
def test_kineto_trace_equals_flop_counter_mode(name, tmp_path):
    step = make(name)
    total, per_op = flop_counter_mode(step)
    assert total > 0 and per_op
    path = str(tmp_path / "trace.json")
    p = kineto_trace(step, path, with_flops=True)
    j = analyze(path)
    check_fcm(j, total, per_op, name)
    # torch.profiler's convention is still key_averages()'s, op for op
    averages = {e.key: e.flops for e in p.key_averages() if e.flops}
    assert "aten::conv2d" in averages or name != "cnn"
    assert {r["name"]: r["flops"] for r in j["top_cpu_ops"] if r["flops"]} == averages, name
    assert j["flops"]["total"] == sum(averages.values())
    if name == "cnn":  # the two conventions differ: the backward convolution, the elementwise ops
        assert per_op["aten::convolution_backward"] > 0
        assert "aten::convolution_backward" not in averages
        assert j["flops"]["total"] < total
    if name == "transformer":  # attention's products, forward and backward
        assert per_op["aten::bmm"] > 0
    rows = {r["name"]: r for r in j["top_cpu_ops"]}
    for op in UNCOUNTED.get(name, []):
        assert rows[op]["calls"] > 0 and rows[op]["flops_fcm"] == 0, (name, op)
        assert op not in per_op


def test_a_written_count_is_kept(tmp_path):
    """A trace tprof wrote (`tprof merge` of the CNN's Kineto trace) carries each op's
    flops_fcm arg, but no "Concrete Inputs" (the model keeps none): read back, the args are the
    count, the same as from the shapes."""
    step = make("cnn")
    total, per_op = flop_counter_mode(step)
    path, merged = str(tmp_path / "trace.json"), str(tmp_path / "merged.json")
    kineto_trace(step, path)
    subprocess.run([tprof_cli(), "merge", path, "-o", merged], capture_output=True, check=True)
    with open(merged, encoding="utf-8") as f:
        ops = [e for e in json.load(f)["traceEvents"] if e.get("name") == "aten::convolution"]
    assert ops and all("flops_fcm" in e["args"] and "Concrete Inputs" not in e["args"]
                       for e in ops)
    j = analyze(merged)
    assert j["flops_fcm"]["total"] == total and per_op_fcm(j) == per_op


@needs_observer
@pytest.mark.parametrize("name", sorted(MODELS))
def test_own_recording_equals_flop_counter_mode(name, tmp_path):
    step = make(name)
    total, per_op = flop_counter_mode(step)
    run_dir, live = tprof_recording(step, tmp_path)
    check_fcm(live, total, per_op, (name, "summary.json"), every_op=False)
    check_fcm(analyze(run_dir), total, per_op, (name, "tprof analyze"))


def test_mfu_from_both_conventions(tmp_path):
    step = make("cnn")
    total, _ = flop_counter_mode(step)
    path = str(tmp_path / "trace.json")
    kineto_trace(step, path)
    j = analyze(path, "--peak-tflops", "0.001")
    step_s = j["steps"]["list"][0]["dur_us"] * 1e-6
    assert j["flops_fcm"]["achieved_tflops"] == pytest.approx(total / step_s / 1e12, rel=1e-6)
    assert j["flops_fcm"]["mfu_pct"] == pytest.approx(100 * total / step_s / 1e9, rel=1e-6)
    assert j["steps"]["list"][0]["mfu_fcm_pct"] == pytest.approx(j["flops_fcm"]["mfu_pct"])
    assert j["mfu"]["pct"] == pytest.approx(100 * j["flops"]["total"] / step_s / 1e9, rel=1e-6)
    text = subprocess.run([tprof_cli(), "analyze", path], capture_output=True, text=True,
                          check=True).stdout
    assert "convention: torch.profiler's" in text and "convention: FlopCounterMode's" in text


def convolutions():
    """Convolutions of every kind and their backward: input and weight gradients together,
    the weight's alone, the input's alone; transposed; 1-d, 2-d and 3-d; groups, stride,
    padding, dilation; and the batched products."""
    x = torch.randn(2, 4, 9, 9, requires_grad=True)
    F.conv2d(x, torch.randn(6, 2, 3, 3, requires_grad=True), torch.randn(6), stride=2,
             padding=1, dilation=2, groups=2).sum().backward()
    F.conv_transpose2d(torch.randn(2, 6, 5, 5, requires_grad=True),
                       torch.randn(6, 1, 3, 3, requires_grad=True), stride=2, padding=1,
                       output_padding=1, groups=3).sum().backward()
    F.conv_transpose1d(torch.randn(2, 3, 7), torch.randn(3, 4, 2, requires_grad=True),
                       stride=3).sum().backward()
    F.conv1d(torch.randn(3, 4, 20), torch.randn(5, 4, 3, requires_grad=True)).sum().backward()
    F.conv3d(torch.randn(1, 2, 5, 6, 7, requires_grad=True), torch.randn(3, 2, 2, 2, 2),
             padding=(1, 0, 1)).sum().backward()
    torch.baddbmm(torch.randn(3, 4, 6), torch.randn(3, 4, 5), torch.randn(3, 5, 6))
    torch.bmm(torch.randn(2, 3, 4), torch.randn(2, 4, 5))


def test_convolution_formulas_equal_flop_counter_mode(tmp_path):
    total, per_op = flop_counter_mode(convolutions)
    assert per_op.keys() >= {"aten::convolution", "aten::convolution_backward", "aten::bmm",
                             "aten::baddbmm"}
    path = str(tmp_path / "trace.json")
    kineto_trace(convolutions, path)
    j = analyze(path)
    assert j["flops_fcm"]["total"] == total
    assert per_op_fcm(j) == per_op
    # aten::_convolution runs inside each aten::convolution: counted once, at the outer op
    rows = {r["name"]: r for r in j["top_cpu_ops"]}
    assert rows["aten::_convolution"]["calls"] > 0 and rows["aten::_convolution"]["flops_fcm"] == 0


@needs_observer
def test_convolution_formulas_in_own_recording(tmp_path):
    total, per_op = flop_counter_mode(convolutions)
    run_dir, live = tprof_recording(convolutions, tmp_path)
    check_fcm(live, total, per_op, "summary.json", every_op=False)
    check_fcm(analyze(run_dir), total, per_op, "tprof analyze")


def attention_trace(path, cases):
    """A Kineto-like trace of attention ops, each an X event with its input shapes."""
    events = [{"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": 10 * i,
               "dur": 5, "args": {"Input Dims": dims}} for i, (name, dims, _) in enumerate(cases)]
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": events}, f)


def test_attention_formulas_equal_flop_counters(tmp_path):
    """The GPU's attention ops (no CPU run executes them) against flop_counter's functions of
    the same shapes: standard and grouped-query heads, forward and backward."""
    q, k, v = [2, 8, 16, 64], [2, 2, 24, 64], [2, 2, 24, 32]
    q1, kv1 = [1, 4, 10, 8], [1, 4, 12, 8]
    go = [2, 8, 16, 32]
    cases = []
    for kind in ("efficient", "flash", "cudnn"):
        fwd = f"aten::_scaled_dot_product_{kind}_attention"
        cases.append((fwd, [q, k, v, []], flop_counter.sdpa_flop_count(q, k, v)))
        cases.append((fwd, [q1, kv1, kv1], flop_counter.sdpa_flop_count(q1, kv1, kv1)))
        cases.append((fwd + "_backward", [go, q, k, v, go, [2, 8, 16]],
                      flop_counter.sdpa_backward_flop_count(go, q, k, v)))
    cases.append(("aten::_scaled_dot_product_flash_attention", [q, [2, 3, 24, 64], v], 0))  # bad
    path = str(tmp_path / "attention.json")
    attention_trace(path, cases)
    j = analyze(path)
    want = {}
    for name, _, n in cases:
        want[name] = want.get(name, 0) + n
    assert {r["name"]: r["flops_fcm"] for r in j["top_cpu_ops"]} == want
    assert j["flops_fcm"]["total"] == sum(want.values())
    assert j["flops"]["total"] == 0  # torch.profiler's formulas know none of these ops
