"""Helpers shared by the Python binding's tests: traces read with Python's json module (nothing of
tprof's), and Python snippets run in a fresh interpreter (the library's session and its
once-per-process warnings are process-wide)."""
import glob
import gzip
import json
import os
import socket
import subprocess
import sys
import textwrap

import pytest

from run_files import artifact

PYTHON = os.environ.get("TPROF_PYTHON", sys.executable)


def read_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def trace_events(path):
    """The event list of a trace in object or array form."""
    doc = read_json(path)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


def run_traces(run_dir):
    """A run directory's tprof traces, in window order (their names sort so)."""
    return sorted(glob.glob(artifact(run_dir, "trace_*.json*")))


def ranges(events, ph="X"):
    return [e for e in events if e.get("ph") == ph]


def step_numbers(events):
    """The k of every ProfilerStep#k range."""
    return sorted(int(e["name"].split("#")[1]) for e in ranges(events)
                  if e["name"].startswith("ProfilerStep#"))


def inside(child, parent):
    """child's interval lies within parent's (times in µs; a few ns of rounding allowed)."""
    eps = 0.002
    return (parent["ts"] - eps <= child["ts"]
            and child["ts"] + child["dur"] <= parent["ts"] + parent["dur"] + eps)


def free_port():
    """A TCP port free on 127.0.0.1 now (for torch.distributed's MASTER_PORT)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


def run_python(code, env=None, args=(), timeout=300):
    """Runs code in a fresh interpreter with the test environment (PYTHONPATH finds tprof)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run([PYTHON, "-c", textwrap.dedent(code), *args], env=full_env,
                          capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def out_dir(tmp_path):
    """An output_dir of its own for each test."""
    return str(tmp_path / "runs")


@pytest.fixture(autouse=True)
def no_tprof_environment(monkeypatch):
    """TPROF_<KEY> variables of the caller's shell would change what the tests configure."""
    for name in list(os.environ):
        if name.startswith("TPROF_") and name not in ("TPROF_SOURCE_DIR", "TPROF_BUILD_DIR",
                                                      "TPROF_FIXTURES", "TPROF_PYTHON"):
            monkeypatch.delenv(name)
