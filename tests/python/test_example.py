"""examples/train_torch.py: it trains (the loss falls), and tprof's summary flags its slow data
loader, the figure checked against tests/lib/tprof_ref.py on the written traces."""
import os

import pytest

import tprof_ref
from conftest import PYTHON, read_json, run_traces
from run_files import artifact

pytest.importorskip("torch")
SOURCE = os.environ.get("TPROF_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
EXAMPLE = os.path.join(SOURCE, "examples", "train_torch.py")


def run_example(*args):
    import subprocess
    return subprocess.run([PYTHON, EXAMPLE, *args], capture_output=True, text=True, timeout=300)


def test_example_flags_the_slow_loader(out_dir):
    r = run_example("--profile", "--profiling.output_dir", out_dir, "--profiling.run_id", "demo",
                    "--profiling.wait", "2", "--profiling.active", "6", "--profiling.repeat", "1",
                    "--steps", "16",
                    "--epochs", "1", "--log-every", "1", "--decode-ms", "2")
    assert r.returncode == 0, r.stderr
    losses = [float(line.split()[-1]) for line in r.stdout.splitlines()]
    assert len(losses) == 16 and min(losses[-4:]) < losses[0]
    assert "[dataloader] (could save up to " in r.stderr and ") Data loading takes" in r.stderr
    run_dir = os.path.join(out_dir, "demo")
    summary = read_json(artifact(run_dir, "summary.json"))
    # data loading leads (the most time to save); what else fires depends on the machine's speed
    # (the optimizer's share of a step, near its 5% threshold, crosses it on a loaded machine)
    ids = [x["id"] for x in summary["recommendations"]]
    assert ids and ids[0] == "dataloader", ids
    ref = tprof_ref.analyze(run_traces(run_dir)[0])  # one window: steps 2-7
    assert summary["dataloader_pct"] == pytest.approx(ref["dataloader_pct"], abs=1e-6)
    assert ref["dataloader_pct"] > 5.0
    names = {op["name"] for op in ref["top_cpu_ops"]}
    assert {"Net.features.0", "Net.classifier.1"} <= names  # module ranges


def test_example_with_workers_and_ops(out_dir):
    """Worker processes fork while the session runs: the children record nothing and the parent
    goes on; op recording adds FLOPs."""
    r = run_example("--profile", "--profiling.output_dir", out_dir, "--profiling.run_id", "w",
                    "--workers", "2", "--record-ops", "--steps", "6", "--epochs", "1")
    assert r.returncode == 0, r.stderr
    summary = read_json(artifact(os.path.join(out_dir, "w"), "summary.json"))
    assert summary["steps"]["count"] == 7 and summary["flops"]["total"] > 0
    assert summary["run"]["errors"] == []


def test_example_bad_option_one_line(out_dir):
    r = run_example("--profile", "--profiling.top_k", "0")
    assert r.returncode == 2
    assert r.stderr == ('tprof: invalid value "0" for profiling.top_k (from --profiling.top_k): '
                        "must be an integer from 1 to 100000\n")
