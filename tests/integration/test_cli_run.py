"""Real run directories, written by the example training loop (build/examples/train_mlp --profile)
under several schedules: `tprof check` passes; `tprof analyze RUN` equals `tprof analyze
RUN/<traces>`, agrees with tprof_ref summed over the run's traces, and with the summary the
library wrote at the end of the run; --rank picks one rank of a two-rank run."""

import json

import pytest
from cli_helpers import ALL, check_sum, profiled_run, ref_sum, tprof

from run_files import files_dir

SCHEDULES = {
    "one_window": [],
    "step_schedule": ["--profiling.wait", "1", "--profiling.warmup", "1", "--profiling.active",
                      "2", "--profiling.repeat", "3"],
    "gzip_tensorboard": ["--profiling.gzip", "true", "--profiling.tensorboard_names", "true",
                         "--profiling.active", "3"],
    "epochs": ["--profiling.epochs", "0,1", "--profiling.epoch_steps", "4", "--profiling.warmup",
               "1"],
}
STAGES = ["dataloader", "fwd=forward|linear?", "learn=*backward*|optimizer"]


def traces(run):
    return sorted(p for p in files_dir(run).iterdir() if p.name.endswith((".json", ".json.gz")) and
                  not p.name.startswith(("config", "summary", "stage_times")))


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("runs")
    made = {}
    for name, options in SCHEDULES.items():
        extra = ["--epochs", "2"] if name == "epochs" else []
        made[name] = profiled_run(out, name, *options, *extra)
    made["stages"] = profiled_run(out, "stages", "--profiling.stages", ",".join(STAGES))
    for rank in (0, 1):
        made["ranks"] = profiled_run(out, "ranks", "--profiling.active", "4",
                                     env={"RANK": str(rank), "WORLD_SIZE": "2"})
    return made


@pytest.mark.parametrize("name", list(SCHEDULES) + ["stages", "ranks"])
def test_check_passes(runs, name):
    p = tprof("check", runs[name], rc=0)
    line = p.stdout.decode()
    assert line.startswith("%s: ok: %d trace" % (runs[name], len(traces(runs[name]))))
    assert p.stderr == b""


@pytest.mark.parametrize("name", list(SCHEDULES) + ["stages", "ranks"])
def test_analyze_matches_reference(runs, name):
    run = runs[name]
    paths = traces(run)
    assert paths
    if name == "step_schedule":
        assert len(paths) == 3
    if name == "epochs":
        assert len(paths) == 2
    got = json.loads(tprof("analyze", "--json", "--top", ALL, run, rc=0).stdout)
    check_sum(ref_sum(paths), got)
    assert got["steps"]["count"] > 0 and got["top_cpu_ops"]
    # the directory means its traces, in order
    assert tprof("analyze", "--json", run, rc=0).stdout == tprof(
        "analyze", "--json", *paths, rc=0).stdout


@pytest.mark.parametrize("name", list(SCHEDULES))
def test_analyze_agrees_with_the_run_summary(runs, name):
    """The library's summary.json and `tprof analyze` of its traces: the same figures."""
    run = runs[name]
    summary = json.loads((files_dir(run) / "summary.json").read_text())
    got = json.loads(tprof("analyze", "--json", run, rc=0).stdout)
    for k in ("count", "total_us", "mean_us", "p50_us", "p95_us", "max_us"):
        assert got["steps"][k] == summary["steps"][k], k
    assert got["top_cpu_ops"] == summary["top_cpu_ops"]
    assert got["stages"] == summary["stages"]
    assert got["steps"]["list"] == summary["steps"]["list"]


def test_configured_stages(runs):
    """A run with stages configured: its stage_times.json and `tprof analyze --stage` agree."""
    run = runs["stages"]
    stage_times = json.loads((files_dir(run) / "stage_times.json").read_text())
    assert [s["stage"] for s in stage_times["stages"]] == ["dataloader", "fwd", "learn"]
    args = []
    for s in STAGES:
        args += ["--stage", s]
    got = json.loads(tprof("analyze", "--json", *args, run, rc=0).stdout)
    assert got["stages"] == stage_times["stages"]
    assert all(s["count"] > 0 for s in got["stages"])


def test_ranks(runs):
    run = runs["ranks"]
    names = [p.name for p in files_dir(run).iterdir()]
    for rank in (0, 1):
        for artifact in ("config.rank%d.json", "stage_times.rank%d.json", "op_stats.rank%d.csv",
                         "summary.rank%d.json"):
            assert artifact % rank in names
    every = json.loads(tprof("analyze", "--json", "--top", ALL, run, rc=0).stdout)
    check_sum(ref_sum(traces(run)), every)
    assert any("ranks" in w for w in every["warnings"])
    for rank in (0, 1):
        mine = [p for p in traces(run) if ".rank%d." % rank in p.name]
        got = json.loads(tprof("analyze", "--json", "--top", ALL, "--rank", rank, run,
                               rc=0).stdout)
        check_sum(ref_sum(mine), got)
        assert got["input"]["paths"] == [str(p) for p in mine]
        # the only warning: the windows that were cut short (the trace's "tprof" object says so)
        partial = sum(json.loads(p.read_text())["tprof"]["partial"] for p in mine)
        assert got["warnings"] == (["%d window%s closed early (shutdown or signal)" % (
            partial, "" if partial == 1 else "s")] if partial else [])
        summary = json.loads((files_dir(run) / ("summary.rank%d.json" % rank)).read_text())
        assert got["steps"]["count"] == summary["steps"]["count"]
    assert "rank 2" in tprof("analyze", "--rank", 2, run, rc=2).stderr.decode()
