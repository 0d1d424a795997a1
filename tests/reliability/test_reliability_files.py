"""Files under attack (issue 10, items 2 and 5): tprof's temporary files cannot be redirected by a
name planted in a shared output folder, and a file-size limit costs files, never the host."""

import os
import resource
import signal
import stat

from hostile import leftovers, load, profiled, tprof, traces

ARTIFACTS = ("config.json", "summary.json", "stage_times.json", "op_stats.csv",
             "trace_0001_steps_1-1.json")


def test_planted_symlinks_at_temporary_names_are_not_followed(tmp_path):
    """Before: "<file>.tmp.<pid>" opened with fopen("wb") wrote through a symlink planted there."""
    run_dir = tmp_path / "run" / "tprof"  # where tprof's files are
    profiled("steps", 2, tmp_path, "run")  # an earlier run: a folder tprof made (claim.h)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")

    def plant():  # in the child, whose pid the old temporary names used
        os.umask(0o027)
        for name in ARTIFACTS:
            os.symlink(victim, run_dir / ("%s.tmp.%d" % (name, os.getpid())))

    profiled("steps", 3, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "1",
             preexec_fn=plant)
    assert victim.read_text() == "precious\n"
    for name in ARTIFACTS:
        st = os.lstat(run_dir / name)
        assert stat.S_ISREG(st.st_mode), name  # the file itself, not a link to the victim
        assert stat.S_IMODE(st.st_mode) == 0o640, (name, oct(st.st_mode))  # 0666 less the umask
    load(run_dir / "summary.json")
    # the planted links are left alone: tprof never created, followed or removed them
    assert sorted(p.name for p in run_dir.iterdir() if ".tmp." in p.name) == sorted(
        p.name for p in run_dir.iterdir() if p.is_symlink())


def test_files_at_the_old_temporary_names_are_left_alone(tmp_path):
    """Before: a file at "<file>.tmp.<pid>" was truncated, written and renamed away. Now the
    temporary names are unpredictable and created O_EXCL: such a file is never touched."""
    run_dir = tmp_path / "run" / "tprof"  # where tprof's files are
    profiled("steps", 2, tmp_path, "run")  # an earlier run: a folder tprof made (claim.h)

    def plant():
        for name in ARTIFACTS:
            (run_dir / ("%s.tmp.%d" % (name, os.getpid()))).write_text("squatter")

    p = profiled("steps", 3, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "1",
                 preexec_fn=plant)
    assert "cannot write" not in p.stderr, p.stderr
    squatters = [p for p in run_dir.iterdir() if ".tmp." in p.name]
    assert len(squatters) == len(ARTIFACTS)
    assert all(p.read_text() == "squatter" for p in squatters)
    for name in ARTIFACTS:
        assert (run_dir / name).is_file()


def test_file_size_limit_never_kills_the_host(tmp_path):
    """Before: SIGXFSZ (default action: die) killed the program inside tprof_shutdown (exit 153 in
    a shell) and left stage_times.json.tmp.<pid>."""
    def limit():  # SIGXFSZ keeps its default action; files stop at 1000 bytes
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1000, 1000))

    p = profiled("steps", 200, tmp_path, "run", "--profiling.wait", "1",
                 "--profiling.active", "100", preexec_fn=limit, rc=None)
    assert p.returncode == 0, "exit %d; stderr: %s" % (p.returncode, p.stderr)
    run_dir = tmp_path / "run" / "tprof"
    assert load(run_dir / "config.json")["run_id"] == "run"  # it fit: it is whole
    assert not (run_dir / "summary.json").exists() and not traces(run_dir)  # too big: not there
    lines = p.stderr.splitlines()
    for name in ("summary.json", "trace_0001"):
        mine = [line for line in lines if name in line]
        assert len(mine) == 1 and "File too large" in mine[0], (name, p.stderr)
    assert leftovers(tmp_path) == []


# ---- -o FILE over an existing file or a link (issue 22, finding 13) ----

def test_output_keeps_the_files_mode_and_writes_through_a_link(tmp_path):
    """Before: -o over a 0600 file left 0644, and an -o symlink was replaced by a regular file.
    Now the file keeps its mode, and a link is written through: its target gets the report."""
    profiled("steps", 3, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "1",
             "--profiling.repeat", "1")
    run = tmp_path / "run"
    private = tmp_path / "private.json"
    private.write_text("old")
    private.chmod(0o600)
    tprof("analyze", "--json", run, "-o", private, rc=0)
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o600
    assert load(private)["steps"]["count"] >= 1
    target = tmp_path / "reports" / "latest.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    tprof("analyze", "--json", run, "-o", link, rc=0)
    assert link.is_symlink() and load(target)["steps"]["count"] >= 1
    [trace] = traces(run)
    merged = tmp_path / "merged.json"
    merged.symlink_to(target)
    tprof("merge", trace, "-o", merged, rc=0)
    assert merged.is_symlink() and "traceEvents" in load(target)
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to(tmp_path / "nowhere" / "x.json")
    p = tprof("analyze", "--json", run, "-o", dangling, rc=2)
    assert b"symbolic link to a missing file" in p.stderr
    assert leftovers(tmp_path) == []
