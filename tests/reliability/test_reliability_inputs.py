"""Bad input to the tprof command and bad names in a run (issue 10, items 7, 8, 9, 11, 12 and the
reader's part of 13): each is one clear line and exit 2, or a warning that every output carries,
and every artifact spells a name the same way."""

import json
import os

import pytest
from hostile import error_line, load, profiled, tprof, traces

from run_files import files_dir


def write(path, data):
    path.write_bytes(data if isinstance(data, bytes) else data.encode())
    return path


def report(*args):
    return json.loads(tprof("analyze", "--json", *args, rc=0).stdout)


# ---- 7: invalid UTF-8 names, one spelling in every artifact ----

def test_invalid_utf8_names_are_spelled_the_same_in_every_artifact(tmp_path):
    """Before: tprof check found 8 problems: the trace said U+FFFD, op_stats.csv the raw bytes."""
    profiled("utf8", 0, tmp_path, "run", "--profiling.wait", "1", "--profiling.active", "2")
    run = tmp_path / "run"
    p = tprof("check", run, rc=0)
    assert p.stdout.decode().startswith("%s: ok" % run), p.stdout
    want = {n.decode("utf-8", errors="replace") for n in
            (b"bad\xff name", b"half \xc3", b"ok \xc3\xa9", b"\xed\xa0\x80")}
    csv_names = {line.split(",")[0] for line in
                 (files_dir(run) / "op_stats.csv").read_bytes().decode("utf-8").splitlines()[1:]}
    assert csv_names == want  # valid UTF-8, U+FFFD for each bad byte, as Python decodes it
    [trace] = traces(run)
    assert {e["name"] for e in load(trace)["traceEvents"]
            if e.get("ph") == "X" and not e["name"].startswith("ProfilerStep")} == want
    summary = load(files_dir(run) / "summary.json")
    assert {r["name"] for r in summary["top_cpu_ops"]} == want


# ---- 8: a dur that is no number ----

@pytest.mark.parametrize("dur", ["NaN", "null", '"12"', "[1]"])
def test_non_numeric_dur_is_left_out_and_counted(tmp_path, dur):
    """Before: such a dur silently read as 0 and the event counted as a call."""
    t = write(tmp_path / "t.json",
              '{"traceEvents": [{"ph": "X", "name": "good", "ts": 1, "dur": 5, "pid": 1, '
              '"tid": 1}, {"ph": "X", "name": "bad", "ts": 2, "dur": %s, "pid": 1, "tid": 1}]}'
              % dur)
    p = tprof("analyze", "--json", t, rc=0)
    got = json.loads(p.stdout)
    assert [r["name"] for r in got["top_cpu_ops"]] == ["good"]
    err = p.stderr.decode()
    assert "1 events left out" in err and "dur not a number" in err, err


def test_missing_dur_still_reads_as_zero(tmp_path):
    t = write(tmp_path / "t.json",
              '{"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "pid": 1, "tid": 1}]}')
    p = tprof("analyze", "--json", t, rc=0)
    assert [r["name"] for r in json.loads(p.stdout)["top_cpu_ops"]] == ["x"]
    assert p.stderr == b""


# ---- 9: JSON that is no trace ----

@pytest.mark.parametrize("text,why", [
    ('{"foo": 1}', 'no "traceEvents" array'),
    ('{"traceEvents": {"ph": "X"}}', 'no "traceEvents" array'),
    ('[{"directory": "/src", "command": "cc -c a.c", "file": "a.c"}]', "no entry is a trace event"),
    ('[1, 2, 3]', "no entry is a trace event"),
])
def test_json_that_is_no_trace_exits_2(tmp_path, text, why):
    """Before: an empty report and exit 0."""
    t = write(tmp_path / "compile_commands.json", text)
    line = error_line(tprof("analyze", t, rc=2))
    assert line == "tprof: %s: byte 0: not a valid trace: %s" % (t, why) or (
        line.startswith("tprof: %s: byte 0: not a valid trace: %s" % (t, why))), line


@pytest.mark.parametrize("text", ['{"traceEvents": []}', "[]", '{"traceEvents": [], "x": 1}'])
def test_empty_traces_stay_valid(tmp_path, text):
    t = write(tmp_path / "t.json", text)
    assert report(t)["steps"]["count"] == 0


# ---- 11: the same warnings in the text and the JSON report ----

def test_json_report_carries_the_text_reports_warnings(tmp_path):
    """Before: --json had "warnings": [] where the text listed dropped events and partial
    windows."""
    t = write(tmp_path / "t.json",
              '{"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 5, "pid": 1, "tid": 1}],'
              ' "tprof": {"partial": true, "dropped_events": 7}}')
    warnings = report(t)["warnings"]
    assert warnings == ["7 events were dropped (buffers full): figures undercount",
                        "1 window closed early (shutdown or signal)"]
    text = tprof("analyze", t, rc=0).stdout.decode()
    section = text.split("\nWarnings\n", 1)[1].split("\n\n", 1)[0]
    assert [line.strip() for line in section.splitlines()] == warnings


# ---- 12: an output that is an input ----

def test_output_that_is_an_input_is_refused(tmp_path):
    """Before: tprof analyze t.json --json -o t.json replaced its own input."""
    t = write(tmp_path / "t.json",
              '{"traceEvents": [{"ph": "X", "name": "x", "ts": 1, "dur": 5, "pid": 1, "tid": 1}]}')
    before = t.read_bytes()
    os.symlink(t, tmp_path / "link.json")
    for out in (t, tmp_path / "link.json", tmp_path / "." / "t.json"):
        line = error_line(tprof("analyze", t, "--json", "-o", out, rc=2))
        assert "the output is also an input" in line and str(out) in line
    line = error_line(tprof("compare", t, tmp_path / "link.json", "-o", t, rc=2))
    assert "the output is also an input" in line
    assert t.read_bytes() == before
    tprof("analyze", t, "--json", "-o", tmp_path / "report.json", rc=0)
    assert load(tmp_path / "report.json")["top_cpu_ops"][0]["name"] == "x"


def test_output_into_an_input_run_directory_is_refused(tmp_path):
    profiled("steps", 3, tmp_path, "run")
    run = tmp_path / "run"
    line = error_line(tprof("analyze", run, "--json", "-o", run / "report.json", rc=2))
    assert "input run directory" in line
    assert not (run / "report.json").exists()


# ---- 13: a raw NUL inside a JSON string ----

@pytest.mark.parametrize("where", ["name", "cat", "args"])
def test_raw_nul_in_a_string_is_an_error_with_its_offset(tmp_path, where):
    """Before: the name was cut at the NUL without a word."""
    event = {"ph": "X", "name": "ab", "cat": "c", "ts": 1, "dur": 2, "pid": 1, "tid": 1}
    text = json.dumps({"traceEvents": [event]})
    if where == "args":
        text = text.replace('"ab"', '"ab", "args": {"k": "v\\u0000"}')  # escaped: fine
        data = text.encode()
    else:
        data = text.replace('"%s"' % event[where], '"%s\x00z"' % event[where], 1).encode()
    t = write(tmp_path / "t.json", data)
    if where == "args":
        assert report(t)["top_cpu_ops"][0]["name"] == "ab"
        return
    line = error_line(tprof("analyze", t, rc=2))
    assert line == "tprof: %s: byte %d: raw NUL byte inside a string" % (t, data.index(b"\0")), line


def test_raw_nul_in_a_name_the_name_cache_has_seen_the_like_of(tmp_path):
    """The name cache skips the NUL search on a hit: a name of the same length, first sixteen
    and last eight bytes as a cached one (the same cache slot) must still be searched."""
    name = "abcdefghijklmnopqrstuvwxyz"
    events = [{"ph": "X", "name": name, "cat": "c", "ts": t, "dur": 1, "pid": 1, "tid": 1}
              for t in (1, 5)]
    text = json.dumps({"traceEvents": events})
    at = text.rindex(name) + 17
    data = (text[:at] + "\x00" + text[at + 1:]).encode()
    t = write(tmp_path / "t.json", data)
    line = error_line(tprof("analyze", t, rc=2))
    assert line == "tprof: %s: byte %d: raw NUL byte inside a string" % (t, data.index(b"\0")), line
