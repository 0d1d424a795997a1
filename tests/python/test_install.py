"""The package installs with pip into a virtual environment (Debian's python3-venv, system site
packages for torch), compiled from a copy of the checkout, and works from there: the install
docs/PYTHON.md describes. Nothing is downloaded (--no-index)."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import PYTHON, run_traces, step_numbers, trace_events

SOURCE = os.environ.get("TPROF_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))

SCRIPT = r"""
import json, sys
import tprof
with tprof.profile(output_dir=sys.argv[1], run_id="venv", wait=1, active=2, summary=False) as p:
    for i in range(3):
        with tprof.stage("forward"):
            tprof.flops(10)
        p.step()
print(json.dumps({"file": tprof.__file__, "version": tprof.__version__,
                  "windows": p.summary()["run"]["windows"]}))
"""


def test_pip_install_into_a_venv(tmp_path):
    if subprocess.run([PYTHON, "-c", "import ensurepip, venv"]).returncode != 0:
        pytest.skip("python3-venv is not installed")
    tree = tmp_path / "tprof"
    for part in ("src", "include", "python"):
        shutil.copytree(os.path.join(SOURCE, part), tree / part,
                        ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "--no-build-isolation",
                          "--no-index", "--no-deps", str(tree / "python")],
                         capture_output=True, text=True, timeout=600)
    assert pip.returncode == 0, pip.stdout + pip.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # not the build tree's
    run = subprocess.run([str(venv / "bin" / "python"), "-c", SCRIPT, str(tmp_path / "out")],
                         capture_output=True, text=True, env=env, cwd=str(tmp_path), timeout=120)
    assert run.returncode == 0, run.stderr
    got = json.loads(run.stdout)
    assert got["file"].startswith(str(venv)) and got["windows"] == 1
    with open(os.path.join(SOURCE, "include", "tprof.h"), encoding="utf-8") as f:
        assert '#define TPROF_VERSION       "%s"' % got["version"] in f.read()
    traces = run_traces(str(tmp_path / "out" / "venv"))
    assert [step_numbers(trace_events(t)) for t in traces] == [[1, 2]]
