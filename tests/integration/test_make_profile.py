"""The use case's own commands, as a user types them: `make profile-train` trains the PyTorch
example profiled into PROFILE_DIR/train (a few steps: STEPS; ARGS reaches tprof), prints the
summary and names the report; `make profile-check`, `profile-dashboard` and `profile-clean` cover
that run; `tprof check RUN... --analysis --report` validates it, prints its analysis and writes
its report.html (the run's step count inside), and on a broken copy (a truncated trace) exits 1
yet prints the problem and the analysis of the trace that reads, leaving report.html as it was.

make runs with `-o build`: ctest's build is the one under test, and reconfiguring it while other
tests run from it would race them; the targets' own recipes run as a user's would."""

import json
import os
import pathlib
import re
import shutil
import signal
import subprocess
import urllib.request

import pytest
from cli_helpers import BUILD, SOURCE, tprof

from run_files import files_dir
from served import has_serve

TIMEOUT = 300
STAGES = ("dataloader", "forward", "backward", "optimizer")
DATA_RE = re.compile(rb'<script id="tprof-data" type="application/json">(.*?)</script>', re.S)

# the extension of a sanitizer build cannot load into an uninstrumented Python (a mark, not a
# module-level skip: pytest exits 5, "no tests collected", for a module skipped whole)
pytestmark = pytest.mark.skipif(os.environ.get("TPROF_SANITIZE") == "1",
                                reason="the Python package of a sanitizer build")
pytest.importorskip("torch")


def make_env():
    """The environment without the make that may run ctest (its jobserver is not ours)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    env.pop("ARGS", None)
    return env


def make(target, runs, *variables, **popen):
    """make TARGET in the source tree with the build under test and PROFILE_DIR=runs."""
    args = ["make", "-s", "-o", "build", target, "BUILD=%s" % BUILD, "PROFILE_DIR=%s" % runs,
            "PYTHON=%s" % os.environ["TPROF_PYTHON"]] + list(variables)
    if popen:
        return subprocess.Popen(args, cwd=SOURCE, env=make_env(), **popen)
    return subprocess.run(args, cwd=SOURCE, env=make_env(), capture_output=True, text=True,
                          timeout=TIMEOUT)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """make profile-train STEPS=3 ARGS=--profiling.record_shapes=true: (process, runs folder)."""
    runs = tmp_path_factory.mktemp("runs")
    p = make("profile-train", runs, "STEPS=3", "ARGS=--profiling.record_shapes=true")
    assert p.returncode == 0, p.stdout + p.stderr
    return p, runs


@pytest.fixture
def run(trained, tmp_path):
    """A fresh copy of the trained run."""
    return pathlib.Path(shutil.copytree(trained[1] / "train", tmp_path / "train"))


def report_steps(path):
    m = DATA_RE.search(path.read_bytes())
    assert m, "no report data in %s" % path
    return json.loads(m.group(1))["analysis"]["steps"]["count"]


def words(text):
    """text with its line breaks and runs of spaces as one space (long paths wrap)."""
    return " ".join(text.split())


def summary_steps(run_dir):
    return json.loads((files_dir(run_dir) / "summary.json").read_text())["steps"]["count"]


def test_profile_train(trained):
    p, runs = trained
    run_dir = runs / "train"
    out = p.stdout + p.stderr
    assert "tprof summary: 2 windows of %s" % run_dir in out  # the library's summary
    assert "Report: %s/report.html" % files_dir(run_dir) in out
    assert "%s: ok: 2 traces" % run_dir in p.stdout  # the script's check
    names = sorted(f.name for f in files_dir(run_dir).iterdir())
    assert [n for n in names if n.startswith("trace_")] == ["trace_0001_epoch_0.json",
                                                            "trace_0002_epoch_1.json"]
    config = json.loads((files_dir(run_dir) / "config.json").read_text())
    assert config["record_shapes"] is True  # ARGS reached tprof
    assert report_steps(files_dir(run_dir) / "report.html") == summary_steps(run_dir) >= 4


def test_check_analysis_report(run):
    (files_dir(run) / "report.html").unlink()
    p = tprof("check", run, "--analysis", "--report", rc=0)
    out = p.stdout.decode()
    steps = summary_steps(run)
    assert out.startswith("%s: ok: 2 traces, %d steps" % (run, steps))
    analysis = out[out.index("tprof report\n"):]
    assert "inputs: 2 files, first %s/trace_0001_epoch_0.json" % files_dir(run) in words(analysis)
    for stage in STAGES:
        assert re.search(r"^  %s +\d" % stage, analysis, re.M), stage
    assert out.endswith("Report: %s/report.html\n" % files_dir(run))
    assert report_steps(files_dir(run) / "report.html") == steps
    assert not [f for f in os.listdir(run) if ".tmp" in f]
    assert p.stderr == b""


def test_check_broken_run(run, tmp_path):
    good = pathlib.Path(shutil.copytree(run, tmp_path / "good"))
    trace = files_dir(run) / "trace_0002_epoch_1.json"
    trace.write_bytes(trace.read_bytes()[:trace.stat().st_size // 2])
    (files_dir(run) / "report.html").write_text("the earlier report")
    p = tprof("check", run, good, "--analysis", "--report", rc=1)
    out, err = p.stdout.decode(), p.stderr.decode()
    assert out.startswith("%s: byte " % trace)
    assert "%s: ok: 2 traces" % good in out
    # the broken run's analysis: its readable trace, every stage named
    first = out[out.index("tprof report\n"):out.index("%s: ok" % good)]
    assert "input: %s/trace_0001_epoch_0.json" % files_dir(run) in words(first)
    for stage in STAGES:
        assert re.search(r"^  %s +\d" % stage, first, re.M), stage
    assert err.splitlines() == [
        "tprof: check: 1 problem in %s" % run,
        "tprof: check: %s: the analysis of 1 trace, without the 1 that cannot be read; "
        "report.html not written" % run]
    assert (files_dir(run) / "report.html").read_text() == "the earlier report"
    assert report_steps(files_dir(good) / "report.html") == summary_steps(good)

    p = tprof("check", run, "--report", rc=1)
    assert p.stderr.decode().splitlines()[-1] == (
        "tprof: check: %s: no report: 1 trace cannot be read" % run)


def test_check_exit_status_is_the_worst(run, tmp_path):
    assert tprof("check", run, run, rc=0).stdout.decode().count(": ok: ") == 2
    p = tprof("check", run, tmp_path / "missing", "--analysis", rc=2)
    assert p.stderr.decode() == "tprof: %s: not a directory (check takes a run directory)\n" % (
        tmp_path / "missing")
    assert "%s: ok" % run in p.stdout.decode() and "tprof report" in p.stdout.decode()
    empty = tmp_path / "empty"
    empty.mkdir()
    p = tprof("check", empty, "--analysis", rc=1)
    assert p.stderr.decode().splitlines()[-1] == (
        "tprof: check: %s: no analysis or report: no trace" % empty)


def test_make_profile_check_and_clean(trained, tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(trained[1], runs)
    (runs / "train" / "tprof" / "report.html").unlink()
    p = make("profile-check", runs, "ARGS=--analysis --report")
    assert p.returncode == 0, p.stderr
    assert "%s/train/: ok: 2 traces" % runs in p.stdout and "tprof report" in p.stdout
    assert (runs / "train" / "tprof" / "report.html").is_file()
    p = make("profile-clean", runs)
    assert p.returncode == 0 and not runs.exists()
    p = make("profile-check", runs)
    assert p.returncode != 0
    assert "no run directories in %s: run make profile or make profile-train" % runs in p.stderr


@pytest.mark.skipif(not has_serve(), reason="tprof built without libmicrohttpd")
def test_make_profile_dashboard(trained):
    """make profile-dashboard serves PROFILE_DIR: the trained run is listed; Ctrl-C stops it."""
    proc = make("profile-dashboard", trained[1], "PORT=0", stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()
        m = re.search(r"(http://\S+/)", line)
        assert m, line + proc.stderr.read()
        with urllib.request.urlopen(m.group(1) + "api/runs", timeout=30) as r:
            runs = json.loads(r.read())["runs"]
        assert [x["name"] for x in runs] == ["train"] and runs[0]["windows"] == 2
    finally:
        os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C: make and tprof serve
        proc.communicate(timeout=30)
    assert proc.returncode in (0, 2, -signal.SIGINT), proc.returncode
