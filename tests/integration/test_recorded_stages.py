"""A run recorded with its own stages (the stages key, kept in its config.json) is analysed with
them, without --stage: `tprof analyze` of the run directory, of a window's trace and of the run's
top-level trace give the stage table of the run's summary.json, which tests/lib/tprof_ref.py
computes from the trace with those stages. --stage still replaces them; inputs recorded with
other stages, and a config.json that does not read, fall back to the default stages with one
warning naming why; a run recorded without the key is analysed as before. `tprof compare`
analyses both sides with the same stages: those both were recorded with, else the default ones."""

import glob
import json
import os
import subprocess

import pytest
from cli_helpers import TPROF, profiled_run, tprof

import tprof_ref
from run_files import artifact, files_dir

STAGES = ["layers=linear?|relu?", "grad=*.backward", "loading=load_sample"]
PARSED = [("layers", ["linear?", "relu?"]), ("grad", ["*.backward"]),
          ("loading", ["load_sample"])]
DEFAULT = [name for name, _ in tprof_ref.DEFAULT_STAGES]


def analyze_json(*args):
    return json.loads(tprof("analyze", "--json", *args, rc=0).stdout)


def stage_rows(report):
    return [(s["stage"], s["count"], s["total_us"]) for s in report["stages"]]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Two runs of the example: one with STAGES, one without the key."""
    out = tmp_path_factory.mktemp("runs")
    return {"own": profiled_run(out, "own", "--profiling.stages", ",".join(STAGES)),
            "own2": profiled_run(out, "own2", "--profiling.stages", ",".join(STAGES)),
            "default": profiled_run(out, "default")}


def window_trace(run):
    [trace] = glob.glob(os.path.join(files_dir(str(run)), "trace_*.json"))
    return trace


def test_the_run_and_its_traces_are_analysed_with_its_stages(runs):
    run = runs["own"]
    with open(artifact(str(run), "config.json"), encoding="utf-8") as f:
        assert json.load(f)["stages"] == STAGES
    with open(artifact(str(run), "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    trace = window_trace(run)
    want = tprof_ref.analyze(trace, stages=PARSED)["stages"]
    assert [s["stage"] for s in want] == ["layers", "grad", "loading"]
    assert all(s["total_us"] > 0 for s in want)
    [top_level] = glob.glob(os.path.join(str(run), "*.pt.trace.json"))
    for given in (run, trace, top_level):
        got = analyze_json(given)
        assert stage_rows(got) == [(s["stage"], s["count"], s["total_us"]) for s in want], given
        assert got["stages"] == summary["stages"], given
        assert not got["warnings"], given
    # a trace named from inside its folder
    p = subprocess.run([str(TPROF), "analyze", "--json", os.path.basename(trace)],
                       cwd=os.path.dirname(trace), capture_output=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["stages"] == summary["stages"]


def test_stage_replaces_the_runs_own(runs):
    got = analyze_json("--stage", "grad=*.backward", runs["own"])
    assert [s["stage"] for s in got["stages"]] == ["grad"]


def test_a_run_without_the_key_and_a_foreign_trace_take_the_default_stages(runs, tmp_path):
    default = analyze_json(runs["default"])
    assert default["stages"] == analyze_json(window_trace(runs["default"]))["stages"]
    want = tprof_ref.analyze(window_trace(runs["default"]))["stages"]
    assert stage_rows(default) == [(s["stage"], s["count"], s["total_us"]) for s in want]
    # a copy of the trace outside any run: no config.json beside it
    foreign = tmp_path / "foreign.json"
    with open(window_trace(runs["default"]), "rb") as src:
        foreign.write_bytes(src.read())
    assert analyze_json(foreign)["stages"] == default["stages"]


def test_inputs_of_different_stages_take_the_default_ones_with_a_warning(runs):
    both = analyze_json(runs["own"], runs["default"])
    assert [s["stage"] for s in both["stages"]] == DEFAULT
    assert ["were recorded with different stages: the default stages are taken (--stage sets "
            "them)" in w for w in both["warnings"]].count(True) == 1
    # with --stage, nothing to say
    assert not analyze_json("--stage", "grad=*.backward", runs["own"], runs["default"])["warnings"]


def test_an_unreadable_config_takes_the_default_stages_with_its_line(runs, tmp_path):
    run = tmp_path / "run"
    os.makedirs(run / "tprof")
    trace = window_trace(runs["own"])
    with open(trace, "rb") as src:
        (run / "tprof" / os.path.basename(trace)).write_bytes(src.read())
    config = run / "tprof" / "config.json"
    config.write_text('{"active": 2,\n "stages": ["ok", "bad="]}\n')
    got = analyze_json(run)
    assert [s["stage"] for s in got["stages"]] == DEFAULT
    [warning] = got["warnings"]
    assert warning.startswith('invalid value "[ok, bad=]" for profiling.stages (from '), warning
    assert warning.endswith("the default stages are taken (--stage sets them)"), warning
    config.write_text('{"stages": ["ok",')  # cut short
    [warning] = analyze_json(run)["warnings"]
    assert "config.json:" in warning and "invalid YAML" in warning, warning


def compared_stages(a, b):
    report = json.loads(tprof("compare", "--json", a, b, rc=0).stdout)
    return [r["name"] for r in report["stages"]]


def test_a_comparison_takes_the_stages_both_sides_were_recorded_with(runs):
    assert compared_stages(runs["own"], runs["own2"]) == ["layers", "grad", "loading", "other"]
    # sides of different stages: both the default ones, so that their rows pair up
    assert compared_stages(runs["own"], runs["default"]) == DEFAULT + ["other"]
    assert compared_stages(window_trace(runs["default"]), runs["own"]) == DEFAULT + ["other"]
    # which each side's warnings say, once in the text report
    report = json.loads(tprof("compare", "--json", runs["own"], runs["default"], rc=0).stdout)
    [said] = report["a"]["warnings"]
    assert said.endswith("were recorded with different stages: the default stages are taken "
                         "(--stage sets them)") and report["b"]["warnings"] == [said]
    assert not json.loads(tprof("compare", "--json", runs["own"], runs["own2"],
                                rc=0).stdout)["a"]["warnings"]
    text = tprof("compare", "--markdown", runs["own"], runs["default"], rc=0).stdout.decode()
    assert text.count("were recorded with different stages") == 1
    assert "\n- A, B: %s\n" % said in text

