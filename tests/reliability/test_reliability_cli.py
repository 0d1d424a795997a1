"""Hostile inputs to the tprof command (issue 22, items 4, 5, 9, 10, 11, 12): file names that
would forge log lines, the same trace given twice, a rank in a file's name, and traces whose
events would take more memory than the command may use. Each failed before its fix."""

import json
import os
import resource
import shutil
import time

import pytest

from hostile import FIXTURES, error_line, load, tprof

TRACE = FIXTURES / "torch2" / "cnn_cpu_3steps.pt.trace.json.gz"


def small_trace(path, name="op", rank=None):
    doc = {"traceEvents": [
        {"ph": "X", "name": "ProfilerStep#1", "ts": 0, "dur": 100, "pid": 1, "tid": 1},
        {"ph": "X", "name": name, "ts": 10, "dur": 50, "pid": 1, "tid": 1}]}
    if rank is not None:
        doc["distributedInfo"] = {"rank": rank, "world_size": 8}
    path.write_text(json.dumps(doc))
    return path


# ---- 9: a file name never forges a line ----

FORGED = "x.json\ntprof: forged.json: byte 0: planted"


def no_forged_line(p):
    for stream in (p.stdout, p.stderr):
        for line in stream.decode(errors="replace").splitlines():
            assert not line.startswith("tprof: forged.json"), (p.stdout, p.stderr)
            assert not line.startswith("forged.json"), (p.stdout, p.stderr)


def test_check_quotes_a_file_name_with_a_line_break(tmp_path):
    """Before: check printed the planted name raw, its second half a line of its own."""
    run = tmp_path / "run"
    run.mkdir()
    (run / ("trace_" + FORGED.replace("x.json", "1") + ".json")).write_text("{broken")
    p = tprof("check", run, rc=1)
    no_forged_line(p)
    lines = [line for line in p.stdout.decode().splitlines() if "trace_1" in line]
    assert lines and all(line.startswith('"') for line in lines), p.stdout  # a JSON string


@pytest.mark.parametrize("verb", ["analyze", "report", "merge"])
def test_errors_about_a_name_with_a_line_break_are_one_line(tmp_path, verb):
    """Before: the error for a missing or broken file of such a name spanned two lines."""
    bad = tmp_path / FORGED
    bad.write_text("{broken")
    args = [verb, bad] + (["-o", tmp_path / "out.json"] if verb == "merge" else [])
    p = tprof(*args, rc=2, env=dict(os.environ, TMPDIR=str(tmp_path)))
    line = error_line(p)
    assert "\\n" in line, line
    no_forged_line(p)


def test_warnings_about_a_name_with_a_line_break_are_one_line(tmp_path):
    """A warning of the reader names the file too (events left out)."""
    bad = tmp_path / FORGED
    bad.write_text('{"traceEvents": [{"ph": "X", "name": "a", "pid": 1, "tid": 1}]}')
    p = tprof("analyze", bad, rc=0)
    no_forged_line(p)
    assert len(p.stderr.decode().splitlines()) == 1, p.stderr


# ---- 11: the same trace twice ----

@pytest.mark.parametrize("spelling", ["same", "hardlink", "symlink", "dotted"])
@pytest.mark.parametrize("verb", ["merge", "analyze"])
def test_the_same_trace_twice_is_refused(tmp_path, verb, spelling):
    """Before: `tprof merge T T` exited 0 with a second, invented rank (and analyze counted every
    step twice)."""
    t = tmp_path / "t.json.gz"
    shutil.copy(TRACE, t)
    other = {"same": t, "hardlink": tmp_path / "h.json.gz", "symlink": tmp_path / "s.json.gz",
             "dotted": tmp_path / "." / "t.json.gz"}[spelling]
    if spelling == "hardlink":
        os.link(t, other)
    elif spelling == "symlink":
        os.symlink(t, other)
    args = [verb, t, other] + (["-o", tmp_path / "out.json"] if verb == "merge" else [])
    line = error_line(tprof(*args, rc=2))
    assert "twice" in line and str(t) in line, line
    assert not (tmp_path / "out.json").exists()


def test_a_run_directory_and_its_own_trace_are_refused(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    t = small_trace(run / "trace_0001.json")
    line = error_line(tprof("analyze", run, t, rc=2))
    assert "twice" in line, line


# ---- 12: ".rank<N>" in a file argument's name ----

def ranks_of(*inputs):
    got = json.loads(tprof("analyze", "--json", *inputs, rc=0).stdout)
    return sorted(r["rank"] for r in got["ranks"]["per_rank"]) if got.get("ranks") else None


def test_rank_in_a_file_name_counts_as_in_a_directory(tmp_path):
    """Before: analyze run/ saw ranks 3 and 5 (the names), analyze run/trace_* ranks 0 and 1
    (the contents)."""
    run = tmp_path / "run"
    run.mkdir()
    a = small_trace(run / "trace_0001.rank3.json", rank=0)
    b = small_trace(run / "trace_0001.rank5.json", rank=1)
    assert ranks_of(run) == ranks_of(a, b) == [3, 5]
    one = json.loads(tprof("analyze", "--json", "--rank", "3", run, rc=0).stdout)
    file_one = json.loads(tprof("analyze", "--json", "--rank", "3", a, rc=0).stdout)
    assert one["steps"] == file_one["steps"]


def test_merge_takes_the_rank_of_a_file_name(tmp_path):
    """Before: merge said it took ".rank<N>" from the name, and took the contents' rank."""
    a = small_trace(tmp_path / "trace_0001.rank3.json", rank=0)
    b = small_trace(tmp_path / "trace_0001.rank5.json", rank=1)
    out = tmp_path / "merged.json"
    tprof("merge", a, b, "-o", out, rc=0)
    ranks = [r["rank"] for r in load(out)["tprof"]["merged"]["ranks"]]
    assert ranks == [3, 5]
