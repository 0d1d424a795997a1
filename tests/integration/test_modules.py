"""The module tree (docs/METRICS.md, "Module tree"; `modules` of tprof analyze --json) against
tests/lib/tprof_ref.py's modules(), which computes it from the raw events by each range's chain
of ancestors (the C walk keeps a stack of frames): every node of every fixture with module
ranges (Kineto's with_modules and with_stack, tprof's own module paths with GPU kernels), its
forward, backward, self, calls, FLOPs and GPU time, and its ops. A small hand-written trace pins
the rules themselves: a backward node on autograd's thread joins the module of the forward op
with its sequence number, its GPU work and FLOPs follow it, the loss's backward stays unlinked,
a module called from two parents is two nodes; the text report has the section."""

import json
import math

import pytest
from cli_helpers import FIXTURES, tprof

import tprof_ref

TRACES = sorted(p for p in FIXTURES.rglob("*")
                if p.name.endswith((".json", ".json.gz")) and "expected" not in p.parts)
WITH_MODULES = ["cnn_cpu_3steps.pt.trace.json.gz", "torch_python_stack.json.gz",
                "gaunernst_bert-small-uncased__1016001.json.gz", "torch_mlp.tprof.json.gz"]
NODE_KEYS = [("calls", "calls", 1), ("forward_us", "forward", 1000),
             ("forward_self_us", "forward_self", 1000), ("backward_calls", "backward_calls", 1),
             ("backward_us", "backward", 1000), ("backward_self_us", "backward_self", 1000),
             ("flops", "flops", 1), ("flops_self", "flops_self", 1), ("gpu_us", "gpu", 1000),
             ("gpu_self_us", "gpu_self", 1000), ("kernels", "kernels", 1)]
OP_KEYS = [("calls", "calls", 1), ("total_us", "total", 1000), ("flops", "flops", 1),
           ("gpu_us", "gpu", 1000), ("kernels", "kernels", 1)]


def analyze(path):
    return json.loads(tprof("analyze", "--json", path, rc=0).stdout)


def by_path(modules):
    """{path from the root: node} of the JSON's depth-first nodes."""
    paths, out = [], {}
    for i, n in enumerate(modules["nodes"]):
        assert n["parent"] is None or n["parent"] < i  # a parent comes before its children
        p = (paths[n["parent"]] if n["parent"] is not None else ()) + (n["name"],)
        assert n["depth"] == len(p) - 1
        paths.append(p)
        out[p] = n
    return out


def same(key, got, want):
    if key == "flops":  # sums of doubles, in another order
        return math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-9)
    return got == want


def check_against_reference(got, ref):
    nodes = by_path(got)
    assert set(nodes) == set(ref["nodes"])
    assert (got["unlinked_backward_calls"], got["unlinked_backward_us"]) == \
        (ref["unlinked"][0], ref["unlinked"][1] / 1000)
    assert got["nodes_total"] == len(nodes)
    for path, n in nodes.items():
        want = ref["nodes"][path]
        for key, rkey, scale in NODE_KEYS:
            assert same(key.split("_")[0], n[key], want[rkey] / scale), (path, key)
        ops = {(o["pass"], o["name"]): o for o in n["ops"]}
        assert set(ops) == set(want["ops"]), path
        for k, o in ops.items():
            for key, rkey, scale in OP_KEYS:
                assert same(key.split("_")[0], o[key], want["ops"][k][rkey] / scale), (path, k, key)
        # totals hold their subtree: forward at least its children's, backward their sum
        kids = [m for p, m in nodes.items() if p[:-1] == path]
        assert n["forward_us"] >= sum(m["forward_us"] for m in kids)
        assert n["backward_us"] == pytest.approx(
            n["backward_self_us"] + sum(m["backward_us"] for m in kids), abs=1e-9)
    return nodes


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_fixture_tree_matches_reference(path):
    got = analyze(path).get("modules")
    ref = tprof_ref.modules(str(path))
    assert (got is not None) == bool(ref["nodes"])
    assert got is not None or path.name not in WITH_MODULES
    if got is not None:
        check_against_reference(got, ref)


def test_kineto_backward_joins_its_module():
    """torch.profiler's CNN (with_stack, with_modules): each layer's backward node is its own."""
    nodes = by_path(analyze(FIXTURES / "torch2" / "cnn_cpu_3steps.pt.trace.json.gz")["modules"])
    back = {p[-1]: {o["name"].rsplit(": ", 1)[-1] for o in n["ops"] if o["pass"] == "backward"}
            for p, n in nodes.items()}
    assert back["Conv2d_0"] == {"ConvolutionBackward0"}
    assert back["Linear_0"] == back["Linear_1"] == {"AddmmBackward0", "TBackward0"}
    assert back["ReLU_0"] == {"ReluBackward0"} and back["Flatten_0"] == {"ViewBackward0"}
    root = nodes[("Sequential_0",)]
    assert root["calls"] == 3 and root["backward_self_us"] == 0 and root["backward_us"] > 0


def test_tprof_module_paths_with_kernels():
    """tprof's own trace on an H200 (module paths, no ops recorded): GPU time per module. The C
    example's trace names ranges "linear3" and "linear3.backward", one after the other: no
    module paths (a path "P.c" is one only inside a range named P)."""
    assert "modules" not in analyze(FIXTURES / "gpu-h200" / "train_mlp_cuda.tprof.json.gz")
    path = FIXTURES / "gpu-h200" / "torch_mlp.tprof.json.gz"
    got = analyze(path)
    nodes = by_path(got["modules"])
    assert set(nodes) == {("Sequential",)} | {("Sequential", "Sequential.%d" % i) for i in range(5)}
    root = nodes[("Sequential",)]
    assert root["calls"] == 10 and root["kernels"] > 0
    assert root["gpu_us"] == pytest.approx(sum(n["gpu_us"] for p, n in nodes.items() if len(p) == 2)
                                           + root["gpu_self_us"], abs=1e-9)
    assert root["gpu_us"] <= got["gpu"]["busy_us"] * 1.0001 + sum(
        k["total_us"] for k in got["top_gpu_kernels"])


def x(name, ts, dur, tid=1, cat="cpu_op", **args):
    return {"ph": "X", "name": name, "cat": cat, "pid": 1, "tid": tid, "ts": ts, "dur": dur,
            "args": args}


# A step: Net (tprof module path) calls Net.enc twice through Net.a and Net.b... the shared
# module "Net.enc" under two parents; the loss outside the model; backward on autograd's
# thread (tid 2), one node launching GPU work; a module range inside backward is no node.
HAND = {"traceEvents": [
    x("ProfilerStep#1", 0, 1000, cat="user_annotation"),
    x("Net", 10, 400, cat="user_annotation"),
    x("Net.a", 20, 100, cat="user_annotation"),
    x("Net.enc", 30, 80, cat="user_annotation"),
    x("aten::linear", 40, 60, **{"Sequence number": 5, "Fwd thread id": 0}),
    x("aten::addmm", 45, 50, flops=1000, **{"Sequence number": 5, "Fwd thread id": 0}),
    x("Net.b", 200, 150, cat="user_annotation"),
    x("Net.enc", 210, 100, cat="user_annotation"),
    x("aten::relu", 220, 30, **{"Sequence number": 6, "Fwd thread id": 0}),
    x("aten::mul", 360, 20, **{"Sequence number": 7, "Fwd thread id": 0}),
    x("aten::mse_loss", 420, 30, **{"Sequence number": 8, "Fwd thread id": 0}),
    x("autograd::engine::evaluate_function: MseLossBackward0", 500, 40, tid=2,
      **{"Sequence number": 8, "Fwd thread id": 1}),
    x("autograd::engine::evaluate_function: ReluBackward0", 550, 50, tid=2,
      **{"Sequence number": 6, "Fwd thread id": 1}),
    x("ReluBackward0", 555, 40, tid=2, **{"Sequence number": 6, "Fwd thread id": 1}),
    x("Net.enc", 560, 10, tid=2, cat="user_annotation"),
    x("cudaLaunchKernel", 575, 5, tid=2, cat="cuda_runtime", correlation=77),
    x("autograd::engine::evaluate_function: AddmmBackward0", 620, 100, tid=2,
      **{"Sequence number": 5, "Fwd thread id": 1}),
    x("aten::mm", 630, 60, tid=2, flops=2000),
    {"ph": "X", "name": "relu_grad_kernel", "cat": "kernel", "pid": 0, "tid": 7, "ts": 590,
     "dur": 12, "args": {"correlation": 77}},
]}


def test_hand_written_rules(tmp_path):
    path = tmp_path / "hand.json"
    path.write_text(json.dumps(HAND), encoding="utf-8")
    got = analyze(path)["modules"]
    nodes = check_against_reference(got, tprof_ref.modules(str(path)))
    assert list(nodes) == [("Net",), ("Net", "Net.a"), ("Net", "Net.a", "Net.enc"),
                           ("Net", "Net.b"), ("Net", "Net.b", "Net.enc")]
    net, a_enc, b_enc = nodes[("Net",)], nodes[("Net", "Net.a", "Net.enc")], \
        nodes[("Net", "Net.b", "Net.enc")]
    assert (net["forward_us"], net["forward_self_us"]) == (400, 150)  # 400 - 100 - 150 µs
    assert (a_enc["backward_calls"], a_enc["backward_self_us"]) == (1, 100)  # AddmmBackward0
    assert a_enc["flops_self"] == 3000  # its forward addmm and its backward mm
    assert (b_enc["backward_self_us"], b_enc["gpu_self_us"], b_enc["kernels"]) == (50, 12, 1)
    assert [(o["pass"], o["name"], o["calls"]) for o in b_enc["ops"]] == [
        ("forward", "aten::relu", 1),
        ("backward", "autograd::engine::evaluate_function: ReluBackward0", 1)]
    assert net["ops"] == [{"name": "aten::mul", "pass": "forward", "calls": 1, "total_us": 20,
                           "flops": 0, "gpu_us": 0, "kernels": 0}]
    assert (net["backward_us"], net["gpu_us"], net["flops"]) == (150, 12, 3000)
    assert (got["unlinked_backward_calls"], got["unlinked_backward_us"]) == (1, 40)  # the loss
    text = tprof("analyze", path, rc=0).stdout.decode()
    section = text[text.index("Modules"):]
    assert "\u00a0\u00a0\u00a0\u00a0Net.enc" in section  # two no-break spaces a level
    assert "1 backward calls (40.000 us) have no forward op inside a module" in section
