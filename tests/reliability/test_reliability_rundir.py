"""A reused run_id (issue 10, item 6). Before: the earlier run's traces stayed in the folder and
`tprof analyze` of it silently merged both runs. Now a run first removes the earlier run's files
of its rank (docs/RELIABILITY.md), so a run directory holds one run and analyze reads exactly it."""

import json
import signal
import subprocess

import pytest
from hostile import HOSTILE, TIMEOUT, clean_env, load, profiled, tprof, traces


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
    # the earlier run's top-level trace went with its files: this run's alone
    top = sorted(f.name for f in run.iterdir())
    assert [n for n in top if not n.endswith(".pt.trace.json.gz")] == [
        ".tprof", "notes.txt", "tprof"] and len(top) == 4, top
    names = sorted(f.name for f in (run / "tprof").iterdir())
    assert names == ["config.json", "op_stats.csv", "report.html", "stage_times.json",
                     "summary.json", "trace_0001_steps_1-1.json.gz"], names
    assert load(run / "tprof" / "config.json")["gzip"] is True
    summary = load(run / "tprof" / "summary.json")
    steps, paths = analyzed_steps(run)
    assert steps == summary["steps"]["count"] == 1
    assert [p.rsplit("/", 1)[1] for p in paths] == summary["run"]["traces"]
    assert tprof("check", run, rc=0).stdout.decode().startswith("%s: ok" % run)


def test_reused_run_id_of_an_older_tprof_leaves_one_run(tmp_path):
    """A run directory as tprof wrote it before the tprof/ folder (its files at the top level,
    TensorBoard's links in tensorboard/), its run_id used again: its files go, the user's stay,
    and the directory is read as the new run only."""
    run = tmp_path / "run"
    profiled("steps", 12, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "2",
             "--profiling.repeat", "2")
    for f in run.iterdir():  # the older layout, made from this run's files
        if f.name.endswith(".pt.trace.json"):
            f.unlink()
    for f in sorted((run / "tprof").iterdir()):
        f.rename(run / f.name)
    (run / "tprof").rmdir()
    (run / "tensorboard").mkdir()
    (run / "tensorboard" / "host_1.000001.pt.trace.json").symlink_to(
        "../" + traces(run)[0].name)
    (run / "notes.txt").write_text("mine")
    assert analyzed_steps(run)[0] == 4  # an older run directory is read as it is
    p = profiled("steps", 6, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "1",
                 "--profiling.repeat", "1")
    assert "earlier run" in p.stderr
    top = sorted(f.name for f in run.iterdir())
    assert [n for n in top if not n.endswith(".pt.trace.json")] == [
        ".tprof", "notes.txt", "tensorboard", "tprof"], top
    assert list((run / "tensorboard").iterdir()) == []
    steps, paths = analyzed_steps(run)
    assert steps == 1 and [p.rsplit("/", 1)[1] for p in paths] == ["trace_0001_steps_1-1.json"]


def test_ranks_replace_only_their_own_files(tmp_path):
    run = tmp_path / "run"
    profiled("steps", 4, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "1")
    # a two-rank run with the same run_id: rank 1 first, then rank 0
    for rank in (1, 0):
        profiled("steps", 4, tmp_path, "run", "--profiling.wait", "1",
                 "--profiling.active", "2", env=clean_env(RANK=str(rank), WORLD_SIZE="2"))
    top = sorted(f.name for f in run.iterdir())
    assert top[0] == ".tprof"  # the marker: tprof made the folder (run/claim.h)
    # the one-rank run is gone, its top-level trace too: one per rank
    assert sorted(n.rsplit(".rank", 1)[1] for n in top if n.endswith(".pt.trace.json")) == [
        "0.pt.trace.json", "1.pt.trace.json"], top
    names = sorted(f.name for f in (run / "tprof").iterdir())
    assert not [n for n in names if ".rank" not in n], names
    for rank in (0, 1):  # and neither rank removed the other's files
        assert "summary.rank%d.json" % rank in names
        assert [n for n in names if n.startswith("trace_") and ".rank%d." % rank in n]
    assert tprof("check", run, rc=0).returncode == 0


# ---- a run directory tprof did not make (issue 22, findings 1, 6, 7) ----

USERS_FILES = {"config.json": '{"mine": 1}\n', "summary.json": "{}\n", "report.html": "<p>mine",
               "op_stats.csv": "a,b\n", "trace_0001_x.json": "[]", "notes.txt": "mine"}


def plant(folder):
    folder.mkdir()
    for name, text in USERS_FILES.items():
        (folder / name).write_text(text)


def untouched(folder):
    return {f.name: f.read_text() for f in folder.iterdir()} == USERS_FILES


def written_to(run_dir, stderr):
    """The run went to run_dir, said so in one line, and is a whole run."""
    lines = [line for line in stderr.splitlines() if "this run is written to" in line]
    assert len(lines) == 1 and lines[0].endswith(str(run_dir)), stderr
    assert tprof("check", run_dir, rc=0).stdout.decode().startswith("%s: ok" % run_dir)
    assert load(run_dir / "tprof" / "summary.json")["run"]["dir"] == str(run_dir)


def test_planted_symlink_at_the_run_directory_is_not_followed(tmp_path):
    victim = tmp_path / "victim"
    plant(victim)
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "run1").symlink_to(victim)
    p = profiled("steps", 4, tmp_path / "shared", "run1", "--profiling.wait", "1")
    assert untouched(victim)
    assert "symbolic link" in p.stderr
    written_to(tmp_path / "shared" / "run1-2", p.stderr)


@pytest.mark.parametrize("run_id", ["src", "configs"])
def test_folder_tprof_did_not_make_keeps_the_users_files(tmp_path, run_id):
    plant(tmp_path / run_id)
    p = profiled("steps", 4, tmp_path, run_id, "--profiling.wait", "1")
    assert untouched(tmp_path / run_id)
    assert "not made by tprof" in p.stderr
    written_to(tmp_path / (run_id + "-2"), p.stderr)
    # the next run with this run_id replaces that run, as a reused run_id does
    p = profiled("steps", 4, tmp_path, run_id, "--profiling.wait", "1")
    assert untouched(tmp_path / run_id)
    written_to(tmp_path / (run_id + "-2"), p.stderr)
    assert not (tmp_path / (run_id + "-3")).exists()


def test_two_processes_with_one_run_id_write_apart(tmp_path):
    args = [str(HOSTILE), "big", "100", "--profile", "--profiling.output_dir", str(tmp_path),
            "--profiling.run_id", "run", "--profiling.summary", "false",
            "--profiling.wait", "1", "--profiling.active", "1"]
    procs = []
    for _ in range(2):  # the second starts while the first records into run/
        procs.append(subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      text=True, env=clean_env()))
        assert procs[-1].stdout.readline() == "ready\n"
    errs = []
    for p in procs:
        p.send_signal(signal.SIGTERM)
        errs.append(p.communicate(timeout=TIMEOUT)[1])
    assert "in use by another process" in errs[1]
    for run_dir in (tmp_path / "run", tmp_path / "run-2"):
        assert len(traces(run_dir)) == 1
        assert tprof("check", run_dir, rc=0).returncode == 0
    assert sorted(f.name for f in tmp_path.iterdir()) == ["run", "run-2"]


def test_flight_recorder_run_without_a_trigger_passes_check(tmp_path):
    """A healthy flight-recorder run whose triggers never fired has no trace by design (issue 22,
    finding 15). Before: `tprof check` (and so `make profile-check`) said "no trace"."""
    profiled("steps", 5, tmp_path, "run", "--profiling.flight_recorder", "true")
    run = tmp_path / "run"
    assert traces(run) == [] and load(run / "tprof" / "summary.json")["run"]["traces"] == []
    assert tprof("check", run, rc=0).stdout.decode().startswith("%s: ok" % run)
    # a run that should have traces and has none still fails
    profiled("steps", 5, tmp_path, "plain")
    for t in traces(tmp_path / "plain"):
        t.unlink()
    tprof("check", tmp_path / "plain", rc=1)
