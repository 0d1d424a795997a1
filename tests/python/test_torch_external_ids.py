"""Issue 21, item 5, on the CPU: torch's op observer with tprof's CUPTI source on (the fake libcupti
of tests/tools/gpu, found through CUDA_HOME, and the fake driver): while CUPTI records, every op
gets an External id, its first arg as in Kineto's traces, unique in the process, pushed to CUPTI
on its thread and popped at its end (the fake's stack of ids is empty again afterwards); with
the GPU source off, ops carry none. How CUPTI then ties launches and kernels to the id:
tests/unit/test_gpu_e2e.c (test_external_ids)."""
import os

import pytest

from conftest import ranges, run_python, run_traces, trace_events

BUILD = os.environ["TPROF_BUILD_DIR"]
FAKE_HOME = os.path.join(BUILD, "tests", "gpu", "fake_cuda_home")
FAKE_CUPTI = os.path.join(FAKE_HOME, "lib64", "libcupti.so")
FAKE_DRIVER = os.path.join(BUILD, "tests", "gpu", "fake_driver")

SCRIPT = """
import ctypes, sys
import torch, tprof
model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
prof = tprof.profile(model=model, record_ops=True, wait=1, warmup=1, active=2, repeat=1,
                     gpu=sys.argv[1], output_dir=sys.argv[2], run_id="ext", summary=False)
prof.start()
for _ in range(5):
    loss = model(torch.randn(4, 8)).sum()
    opt.zero_grad()
    loss.backward()
    opt.step()
    prof.step()
prof.stop()
if sys.argv[1] == "on":
    print("depth", ctypes.CDLL(sys.argv[3]).fake_cupti_ext_depth())
"""


def _ops(gpu, tmp_path):
    if not os.path.exists(FAKE_CUPTI):
        pytest.skip("built without CUDA's CUPTI headers: no fake libcupti")
    out = str(tmp_path / "runs")
    env = {"CUDA_HOME": FAKE_HOME,
           "LD_LIBRARY_PATH": FAKE_DRIVER + ":" + os.environ.get("LD_LIBRARY_PATH", "")}
    p = run_python(SCRIPT, env=env, args=(gpu, out, FAKE_CUPTI))
    assert p.returncode == 0, p.stderr
    assert "tprof:" not in p.stderr, p.stderr  # the fake CUPTI started, nothing to warn about
    traces = run_traces(os.path.join(out, "ext"))
    assert traces
    ops = [e for e in ranges(trace_events(traces[-1])) if e.get("cat") == "cpu_op"]
    assert len(ops) > 20
    return ops, p.stdout


def test_ops_push_external_ids(tmp_path):
    ops, out = _ops("on", tmp_path)
    firsts = [next(iter(e["args"]), None) for e in ops]
    assert set(firsts) == {"External id"}, firsts[:5]
    ids = [e["args"]["External id"] for e in ops]
    assert len(set(ids)) == len(ids) and min(ids) > 0
    assert "aten::addmm" in {e["name"] for e in ops}
    assert "depth 0" in out  # every id pushed on the main thread was popped


def test_no_external_ids_without_cupti(tmp_path):
    ops, _ = _ops("off", tmp_path)
    assert not any("External id" in e.get("args", {}) for e in ops)
