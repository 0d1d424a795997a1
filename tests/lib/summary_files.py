"""A run's summary files against independent readings of its traces, for the tests of streamed
windows (whose summary is computed in pieces while the window records): summary.json as `tprof
analyze --json` of the traces finds it, op_stats.csv as its `--csv` op rows, stage_times.json's
stages as the analysis's and its steps as the reference reader's (tprof_ref)."""
import csv
import io
import json
import os
import subprocess

import tprof_ref
from run_files import artifact

__all__ = ["analyze", "check_summary_files"]

_TPROF = os.path.join(os.environ["TPROF_BUILD_DIR"], "tprof")
_SOURCE_KEYS = ("run", "rank_summary", "input", "windows")  # where the figures came from


def analyze(paths, *args):
    """The output of `tprof analyze ARGS PATHS`, which must succeed."""
    r = subprocess.run([_TPROF, "analyze", *args, *paths], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _op_rows(text, kind=None):
    return [{k: v for k, v in r.items() if k not in ("kind", "pct")}
            for r in csv.DictReader(io.StringIO(text)) if kind is None or r["kind"] == kind]


def _step_rows(steps):
    return [(s["name"], s["dur_us"], s["stages"], s["other_us"], s["lead_us"], s["flops"])
            for s in steps]


def _load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def check_summary_files(run, traces):
    """Asserts that run's summary files say what its traces (all of its windows) say; returns
    its summary.json."""
    summary = _load(artifact(run, "summary.json"))
    whole = json.loads(analyze(traces, "--json", "--top", "1000"))
    assert {k: v for k, v in summary.items() if k not in _SOURCE_KEYS} == \
        {k: v for k, v in whole.items() if k not in _SOURCE_KEYS}
    with open(artifact(run, "op_stats.csv"), encoding="utf-8") as f:
        assert _op_rows(f.read()) == _op_rows(analyze(traces, "--csv", "--top", "1000"), "op")
    times = _load(artifact(run, "stage_times.json"))
    assert times["stages"] == whole["stages"]
    # each step's stage times, other time, lead and FLOPs: the pieces kept every step whole
    ref = [s for p in traces for s in tprof_ref.analyze(p)["steps"]["list"]]
    assert _step_rows(times["steps"]) == _step_rows(ref)
    return summary
