"""Call stacks from tprof's own with_stack traces (python/ext/stack.c and the op observer): what
`tprof analyze --folded` and `--json` say of a recorded training loop equals the independent
reference of tests/lib/stacks_ref.py computed from the run's trace with Python's json module,
and names this file's functions as the callers of the model's ops."""
import json
import os
import pathlib
import subprocess

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

import stacks_ref  # noqa: E402
import tprof  # noqa: E402
import tprof.torch  # noqa: E402
import tprof_ref  # noqa: E402
from conftest import run_traces  # noqa: E402

TPROF = pathlib.Path(os.environ["TPROF_BUILD_DIR"]) / "tprof"


def analyze(*args):
    p = subprocess.run([str(TPROF), "analyze", *map(str, args)], capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout


def forward_and_backward(model, opt, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


def test_tprof_trace_stacks_equal_reference(out_dir):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(8, 16), torch.randint(0, 4, (8,))
    forward_and_backward(model, opt, x, y)  # first-call work out of the profile
    with tprof.profile(output_dir=out_dir, summary=False, with_stack=True, model=model,
                       record_ops=True, wait=0, warmup=0, active=3, repeat=1) as prof:
        for _ in range(3):
            forward_and_backward(model, opt, x, y)
            prof.step()
    traces = run_traces(prof.run_dir)
    assert len(traces) == 1
    ref = stacks_ref.compute(tprof_ref.load(str(traces[0])))

    folded = stacks_ref.parse_folded(analyze("--folded", prof.run_dir).decode())
    assert folded == stacks_ref.folded_lines(ref)
    mine = [s for s in folded if "forward_and_backward" in s]
    assert mine and any(s.endswith("aten::addmm") for s in mine)

    j = json.loads(analyze("--json", "--top", "1000000", prof.run_dir))
    rows = {r["name"]: r for r in j["call_stacks"]["ops"]}
    addmm = rows["aten::addmm"]
    assert addmm["stacks"] == len(ref.ops["aten::addmm"])
    for c in addmm["callers"]:
        calls, ns = ref.ops["aten::addmm"][tuple(c["stack"])]
        assert (c["calls"], round(c["time_us"] * 1000)) == (calls, ns)
        assert any("forward_and_backward" in f for f in c["stack"])
    # every addmm of the loop ran under this file's frames: all of its time has a caller
    assert addmm["python_pct"] == pytest.approx(100.0)
    text = analyze(prof.run_dir).decode()
    assert "aten::addmm: 100.0% from " in text
    assert "test_call_stacks_torch.py(" in text.split("Call stacks")[1]
