"""CUDA graphs in a trace, as Kineto and tprof write them: the kernels, copies and sets a graph
launch runs carry the cudaGraphLaunch's correlation id (and `graph id`, `graph node id`), so the
analysis charges them to the op around the launch, counts them in the kernel table and GPU busy,
and does not call the gaps between one launch's nodes launch overhead. Checked against hand
computed values and tests/lib/tprof_ref.py; tprof's own CUPTI path to such events is
tests/unit/test_gpu_e2e.c (test_graph_nodes, test_graph_level)."""

import json

from cli_helpers import ALL, tprof

import tprof_ref


def _trace(path, graph_level=False):
    """One step: an op launching one kernel, then two replays of a graph (kernel, copy, kernel),
    all on stream 7; with graph_level, each replay is one `CUDA graph 1` event instead."""
    host = {"ph": "X", "pid": 1, "tid": 10}
    gpu = {"ph": "X", "pid": 0, "tid": 7}
    ev = [dict(host, name="ProfilerStep#1", cat="user_annotation", ts=0, dur=1000),
          dict(host, name="aten::mm", cat="cpu_op", ts=10, dur=10, args={"External id": 1}),
          dict(host, name="cudaLaunchKernel", cat="cuda_runtime", ts=12, dur=3,
               args={"correlation": 1, "cbid": 211}),
          dict(gpu, name="gemm", cat="kernel", ts=30, dur=10, args={"correlation": 1})]
    for t0, corr in [(100, 2), (300, 3)]:
        ev += [dict(host, name="CUDAGraph.replay", cat="user_annotation", ts=t0, dur=20),
               dict(host, name="cudaGraphLaunch", cat="cuda_runtime", ts=t0 + 2, dur=5,
                    args={"correlation": corr, "cbid": 311})]
        if graph_level:
            ev.append(dict(gpu, name="CUDA graph 1", cat="kernel", ts=t0 + 10, dur=40,
                           args={"correlation": corr, "graph id": 1}))
            continue
        nodes = [("node_a", "kernel", 10, 10), ("Memcpy DtoD (Device -> Device)", "gpu_memcpy",
                                                25, 2), ("node_b", "kernel", 30, 20)]
        for i, (name, cat, at, dur) in enumerate(nodes):
            ev.append(dict(gpu, name=name, cat=cat, ts=t0 + at, dur=dur,
                           args={"correlation": corr, "graph id": 1, "graph node id": 11 + i}))
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def _analyze(path):
    return json.loads(tprof("analyze", "--json", "--top", ALL, path, rc=0).stdout)


def test_graph_nodes_charged_to_the_launching_op(tmp_path):
    path = _trace(tmp_path / "graph.json")
    got, want = _analyze(path), tprof_ref.analyze(tprof_ref.load(str(path)))
    ops = {r["name"]: r for r in got["top_ops_by_gpu_time"]}
    assert ops["CUDAGraph.replay"]["kernels"] == 6
    assert ops["CUDAGraph.replay"]["gpu_us"] == 2 * (10 + 2 + 20)
    assert ops["aten::mm"]["kernels"] == 1
    assert got["gpu"]["attributed_us"] == got["gpu"]["work_us"] == 10 + 2 * 32
    kernels = {r["name"]: r for r in got["top_gpu_kernels"]}
    assert kernels["node_a"]["calls"] == kernels["node_b"]["calls"] == 2
    assert kernels["node_b"]["total_us"] == 40
    # stream 7: gemm ends at 40 and the first replay is launched at 102, after: the gap to
    # node_a (40 -> 110) is host-bound, as is 150 -> 310 before the second; inside a replay,
    # 120 -> 125 and 127 -> 130 are the graph's own (other), not launch overhead
    (idle,) = got["gpu"]["idle"]
    assert idle["launch_us"] == 0
    assert idle["other_us"] == 2 * (5 + 3)
    assert idle["host_us"] == 70 + 160
    for key in ("idle_us", "host_us", "sync_us", "launch_us", "other_us"):
        assert idle[key] == want["gpu"]["idle"][0][key], key
    assert got["gpu"]["busy_us"] == want["gpu"]["busy_us"] == 10 + 2 * 32
    assert [(r["name"], r["gpu_us"], r["kernels"]) for r in got["top_ops_by_gpu_time"]] == \
        [(r["name"], r["gpu_us"], r["kernels"]) for r in want["top_ops_by_gpu_time"]]


def test_graph_level_trace(tmp_path):
    """cuda_graphs: graph: one event per replay, charged the same way."""
    got = _analyze(_trace(tmp_path / "graph_level.json", graph_level=True))
    ops = {r["name"]: r for r in got["top_ops_by_gpu_time"]}
    assert (ops["CUDAGraph.replay"]["kernels"], ops["CUDAGraph.replay"]["gpu_us"]) == (2, 80)
    kernels = {r["name"]: r for r in got["top_gpu_kernels"]}
    assert kernels["CUDA graph 1"]["calls"] == 2
    assert got["gpu"]["attributed_us"] == got["gpu"]["work_us"] == 90
