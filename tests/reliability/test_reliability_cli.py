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


# ---- 4, 5: traces of millions of tiny events ----

TINY = b'{"ph":"X","name":"a","ts":1,"dur":1,"pid":1,"tid":1}'


def tiny_events(path, n):
    """A gzip trace of n identical tiny events: ~150 bytes of gzip per 1000 events, ~130 bytes
    of memory per event once analysed (issue 22: 50 M events in 7.7 MB took 7.2 GB)."""
    import gzip
    chunk = b",".join([TINY] * 10000)
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(b'{"traceEvents":[')
        for i in range(n // 10000):
            f.write(b"," if i else b"")
            f.write(chunk)
        f.write(b"]}")
    return path


@pytest.fixture(scope="module")
def tiny4m(tmp_path_factory):
    return tiny_events(tmp_path_factory.mktemp("tiny") / "tiny.json.gz", 4_000_000)


def peak_rss_mb(*args):
    """tprof's exit status, stderr and peak RSS (MB), run from a Python of its own so that
    RUSAGE_CHILDREN holds this one child only."""
    import subprocess
    import sys
    code = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], "
            "capture_output=True); sys.stderr.buffer.write(p.stderr); "
            "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    from hostile import BUILD
    p = subprocess.run([sys.executable, "-c", code, str(BUILD / "tprof")] + [str(a) for a in args],
                       capture_output=True, timeout=300)
    rc, kb = p.stdout.split()
    return int(rc), p.stderr.decode(errors="replace"), int(kb) / 1024


def test_max_memory_refuses_a_trace_past_it_in_one_line(tiny4m):
    """Before: no option, no refusal: 4 M tiny events took ~500 MB, 50 M took 7.2 GB."""
    rc, err, mb = peak_rss_mb("analyze", "--max-memory", "100M", tiny4m)
    assert rc == 2, err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tprof: %s: byte " % tiny4m), err
    assert "over the memory budget" in lines[0] and "--max-memory 100 MB" in lines[0], err
    assert mb < 200, "peak %.0f MB under --max-memory 100M" % mb


def test_max_memory_counts_every_input_together(tmp_path, tiny4m):
    """The budget is the analysis', not each file's: the second file starts from the first's."""
    other = tmp_path / "other.json.gz"
    shutil.copy(tiny4m, other)
    p = tprof("analyze", "--max-memory", "700M", tiny4m, rc=0)  # one fits
    p = tprof("analyze", "--max-memory", "700M", tiny4m, other, rc=2)
    assert "other.json.gz" in error_line(p)


@pytest.mark.parametrize("value", ["0", "2G", "1.5GiB"])
def test_max_memory_zero_or_enough_reads_it(tiny4m, value):
    got = json.loads(tprof("analyze", "--json", "--max-memory", value, tiny4m, rc=0).stdout)
    assert got["input"]["events"] == 4_000_000
    # 4 M identical ranges nest, each the only child of the one before, all named "a": as in
    # torch's tables they merge into the outermost (docs/METRICS.md, op table)
    assert [(r["name"], r["calls"]) for r in got["top_cpu_ops"]] == [("a", 1)]


@pytest.mark.parametrize("value", ["-1", "12Q", "", "1e30"])
def test_max_memory_bad_values_are_usage_errors(tiny4m, value):
    line = error_line(tprof("analyze", "--max-memory", value, tiny4m, rc=2))
    assert "--max-memory" in line, line


@pytest.mark.skipif(os.environ.get("TPROF_SANITIZE") == "1",
                    reason="AddressSanitizer reserves terabytes of address space")
def test_out_of_memory_stops_the_read_at_once(tmp_path):
    """Before: under a memory limit every event after the first failed allocation retried a
    realloc of the whole array: 13.6 s for 8 M events (95-120 s for 50 M), against 0.8 s."""
    big = tiny_events(tmp_path / "big.json.gz", 8_000_000)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (600 << 20, 600 << 20))
    import subprocess

    from hostile import BUILD
    start = time.monotonic()
    p = subprocess.run([str(BUILD / "tprof"), "analyze", str(big)],
                       capture_output=True, timeout=300, preexec_fn=limit)
    took = time.monotonic() - start
    assert p.returncode == 2, p.stderr
    line = error_line(p)
    assert "out of memory" in line and str(big) in line, line
    assert took < 5, "out of memory reported after %.1f s" % took
