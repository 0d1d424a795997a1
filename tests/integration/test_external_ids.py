"""External correlation ids in a trace (Kineto's, and tprof's with its CUPTI source and torch's
observer): a launch made outside every op on its thread is charged to the op its `External id`
names, wherever that op ran; a launch inside an op stays that op's (torch's nesting rule);
Kineto's launches outside ops carry their own correlation id as External id, which names no
op. Checked against hand-computed values and tests/lib/tprof_ref.py. The ids' way from an op
through CUPTI to the launch and its kernel: tests/unit/test_gpu_e2e.c (test_external_ids)."""

import json

from cli_helpers import ALL, tprof

import tprof_ref


def _op(tid, name, ts, dur, ext):
    return {"ph": "X", "pid": 1, "tid": tid, "name": name, "cat": "cpu_op", "ts": ts, "dur": dur,
            "args": {"External id": ext, "Sequence number": 3}}


def _launch(tid, ts, corr, ext, dur_us, kernel):
    return [{"ph": "X", "pid": 1, "tid": tid, "name": "cudaLaunchKernel", "cat": "cuda_runtime",
             "ts": ts, "dur": 2, "args": {"External id": ext, "cbid": 211, "correlation": corr}},
            {"ph": "X", "pid": 0, "tid": 7, "name": kernel, "cat": "kernel", "ts": ts + 10,
             "dur": dur_us, "args": {"External id": ext, "correlation": corr}}]


def test_external_id_charges_launches_outside_ops(tmp_path):
    ev = [_op(1, "aten::addmm", 0, 100, 5), _op(1, "aten::relu", 200, 100, 11)]
    ev += _launch(2, 50, 9, 5, 7, "gemm")         # thread 2, no op: the External id decides
    ev += [_op(2, "aten::copy_", 400, 100, 6)]
    ev += _launch(2, 450, 10, 5, 3, "copy")       # inside aten::copy_: nesting decides
    ev += _launch(2, 600, 11, 11, 4, "loose")     # Kineto's unlinked launch: External id = corr
    path = tmp_path / "ext.json"
    path.write_text(json.dumps({"traceEvents": ev}))
    got = json.loads(tprof("analyze", "--json", "--top", ALL, path, rc=0).stdout)
    rows = {r["name"]: (r["gpu_us"], r["kernels"]) for r in got["top_ops_by_gpu_time"]}
    assert rows == {"aten::addmm": (7, 1), "aten::copy_": (3, 1)}
    assert got["gpu"]["attributed_us"] == 10 and got["gpu"]["work_us"] == 14
    want = tprof_ref.analyze(tprof_ref.load(str(path)))
    assert [(r["name"], r["gpu_us"], r["kernels"]) for r in want["top_ops_by_gpu_time"]] == \
        [(r["name"], r["gpu_us"], r["kernels"]) for r in got["top_ops_by_gpu_time"]]
