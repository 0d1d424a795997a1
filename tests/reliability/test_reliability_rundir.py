"""A reused run_id (issue 10, item 6). Before: the earlier run's traces stayed in the folder and
`tprof analyze` of it silently merged both runs. Now a run first removes the earlier run's files
of its rank (docs/RELIABILITY.md), so a run directory holds one run and analyze reads exactly it."""

import json

from hostile import clean_env, load, profiled, tprof, traces


def analyzed_steps(run_dir):
    report = json.loads(tprof("analyze", "--json", run_dir, rc=0).stdout)
    return report["steps"]["count"], report["input"]["paths"]


def test_reused_run_id_leaves_one_run_in_the_directory(tmp_path):
    run = tmp_path / "run"
    # first run: two windows of 2 steps; second: one window of 1 step, gzip'ed
    profiled("steps", 12, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "2",
             "--profiling.repeat", "2")
    assert len(traces(run)) == 2
    (run / "notes.txt").write_text("mine")  # not tprof's: stays
    p = profiled("steps", 6, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "1",
                 "--profiling.repeat", "1", "--profiling.gzip", "true")
    assert "file" in p.stderr and "earlier run" in p.stderr
    names = sorted(f.name for f in run.iterdir())
    assert names == ["config.json", "notes.txt", "op_stats.csv", "report.html",
                     "stage_times.json", "summary.json", "trace_0001_steps_1-1.json.gz"], names
    assert load(run / "config.json")["gzip"] is True
    summary = load(run / "summary.json")
    steps, paths = analyzed_steps(run)
    assert steps == summary["steps"]["count"] == 1
    assert [p.rsplit("/", 1)[1] for p in paths] == summary["run"]["traces"]
    assert tprof("check", run, rc=0).stdout.decode().startswith("%s: ok" % run)


def test_ranks_replace_only_their_own_files(tmp_path):
    run = tmp_path / "run"
    profiled("steps", 4, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "1")
    # a two-rank run with the same run_id: rank 1 first, then rank 0
    for rank in (1, 0):
        profiled("steps", 4, tmp_path, "run", "--profiling.wait", "1",
                 "--profiling.active", "2", env=clean_env(RANK=str(rank), WORLD_SIZE="2"))
    names = sorted(f.name for f in run.iterdir())
    assert not [n for n in names if ".rank" not in n], names  # the one-rank run is gone
    for rank in (0, 1):  # and neither rank removed the other's files
        assert "summary.rank%d.json" % rank in names
        assert [n for n in names if n.startswith("trace_") and ".rank%d." % rank in n]
    assert tprof("check", run, rc=0).returncode == 0
