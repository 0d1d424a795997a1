"""`tprof check RUN_DIR`: a clean run passes; each kind of damage (a missing artifact, corrupt JSON,
a changed, missing or extra op_stats.csv row, a step removed from or changed in stage_times.json,
a stage there that is not the run's or whose time differs, a truncated trace, a summary that
disagrees) exits 1 with one line naming the file and the problem; a directory that cannot be read
exits 2. op_stats.csv is RFC 4180: a run whose op names
hold commas, quotes and line breaks passes, and a damaged quoted row is found."""

import csv
import io
import json
import shutil
import subprocess

import pytest
from cli_helpers import BUILD, profiled_run, tprof

from run_files import files_dir

FEED_TOOL = BUILD / "tests" / "tp_analyze_feed"


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    out = tmp_path_factory.mktemp("clean")
    return profiled_run(out, "run", "--profiling.active", "3", "--profiling.repeat", "2")


@pytest.fixture
def run(clean, tmp_path):
    """A fresh copy of the clean run, to damage."""
    return shutil.copytree(clean, tmp_path / "run")


def problems(run_dir, count=None):
    """tprof check's problem lines (it must exit 1, each line naming a file of the run)."""
    p = tprof("check", run_dir, rc=1)
    lines = p.stdout.decode("utf-8").splitlines()
    assert lines
    for line in lines:
        assert line.startswith(str(run_dir)), line
    err = p.stderr.decode()
    assert err == "tprof: check: %d problem%s in %s\n" % (
        len(lines), "" if len(lines) == 1 else "s", run_dir)
    if count is not None:
        assert len(lines) == count, lines
    return lines


def trace_files(run_dir):
    return sorted(p for p in files_dir(run_dir).iterdir() if p.name.startswith("trace_"))


def test_clean_run_passes(clean):
    p = tprof("check", clean, rc=0)
    assert p.stdout.decode().startswith("%s: ok: 2 traces, 6 steps" % clean)


@pytest.mark.parametrize("artifact", ["config.json", "stage_times.json", "op_stats.csv",
                                      "summary.json"])
def test_missing_artifact(run, artifact):
    (files_dir(run) / artifact).unlink()
    assert problems(run, 1) == ["%s/%s: missing" % (files_dir(run), artifact)]


def test_no_trace(run):
    for p in trace_files(run):
        p.unlink()
    lines = problems(run)
    assert "%s: no trace" % files_dir(run) in lines
    assert any("is not in the directory" in line for line in lines)  # summary.json lists them


@pytest.mark.parametrize("artifact", ["config.json", "stage_times.json", "summary.json"])
def test_corrupt_json(run, artifact):
    path = files_dir(run) / artifact
    text = path.read_bytes()
    path.write_bytes(text[:len(text) // 2])
    (line,) = problems(run, 1)
    assert line.startswith("%s: byte " % path) and "invalid JSON" in line


def test_config_not_an_object(run):
    (files_dir(run) / "config.json").write_text("[1, 2, 3]\n")
    assert problems(run, 1) == ["%s/config.json: not a JSON object" % files_dir(run)]


def read_op_stats(run):
    text = (files_dir(run) / "op_stats.csv").read_bytes().decode("utf-8")
    return list(csv.reader(io.StringIO(text, newline="")))


def write_op_stats(run, rows):
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\r\n").writerows(rows)
    (files_dir(run) / "op_stats.csv").write_bytes(buf.getvalue().encode("utf-8"))


def test_changed_op_stats_row(run):
    rows = read_op_stats(run)
    header, first = rows[0], rows[1]
    col = {name: i for i, name in enumerate(header)}
    first[col["calls"]] = str(int(first[col["calls"]]) + 1)
    rows[2][col["self_us"]] = "%.3f" % (float(rows[2][col["self_us"]]) + 0.001)
    write_op_stats(run, rows)
    lines = problems(run, 2)
    assert lines[0].startswith("%s/op_stats.csv: line 2: op \"%s\": calls %s (the traces: %d)"
                               % (files_dir(run), first[0], first[col["calls"]],
                                  int(first[col["calls"]]) - 1))
    assert "line 3: op \"%s\": self_us" % rows[2][0] in lines[1]


def test_missing_extra_and_repeated_op_stats_rows(run):
    rows = read_op_stats(run)
    removed = rows.pop(3)
    rows.append(["not an op"] + rows[1][1:])
    rows.append(list(rows[1]))
    write_op_stats(run, rows)
    lines = problems(run, 3)
    assert any("op \"not an op\" is not in the traces" in line for line in lines)
    assert any("a second row for op \"%s\"" % rows[1][0] in line for line in lines)
    assert any("op \"%s\" of the traces" % removed[0] in line and "has no row" in line
               for line in lines)


def test_broken_csv(run):
    path = files_dir(run) / "op_stats.csv"
    path.write_bytes(path.read_bytes() + b'"unclosed,1,2,3,4,5,6,7\r\n')
    (line,) = problems(run, 1)
    assert "invalid CSV: a quoted field is not closed" in line


def test_step_removed_from_stage_times(run):
    path = files_dir(run) / "stage_times.json"
    doc = json.loads(path.read_text())
    removed = doc["steps"].pop(1)
    doc["steps"][0]["dur_us"] = round(doc["steps"][0]["dur_us"] + 0.001, 3)
    path.write_text(json.dumps(doc))
    lines = problems(run, 2)
    assert "%s: step %d: dur_us" % (path, doc["steps"][0]["number"]) in lines[0]
    assert lines[1] == "%s: step %d of the traces is missing" % (path, removed["number"])


def test_stage_changed_in_stage_times(run):
    path = files_dir(run) / "stage_times.json"
    doc = json.loads(path.read_text())
    doc["stages"][1]["total_us"] = round(doc["stages"][1]["total_us"] + 0.001, 3)
    doc["stages"][2]["stage"] = "fwd"
    path.write_text(json.dumps(doc))
    lines = problems(run, 2)
    assert "%s: stage \"%s\": count" % (path, doc["stages"][1]["stage"]) in lines[0]
    assert lines[1] == ("%s: stages[2] is \"fwd\", the run's stages (its config.json) say %s"
                        % (path, "backward"))


def test_a_run_of_its_own_stages_is_checked_with_them(tmp_path):
    """stage_times.json holds the run's own stages (the stages key): check takes them from its
    config.json, as `tprof analyze RUN` does; stages there that do not read are a problem."""
    run = profiled_run(tmp_path, "own", "--profiling.stages",
                       "layers=linear?|relu?,grad=*.backward")
    assert tprof("check", run, rc=0).stdout.decode().startswith("%s: ok" % run)
    config = files_dir(run) / "config.json"
    doc = json.loads(config.read_text())
    doc["stages"] = ["layers=linear?|relu?"]
    config.write_text(json.dumps(doc))
    (line,) = problems(run, 1)
    assert line.startswith("%s: 2 stages; the run's stages (its config.json) are 1" % (
        files_dir(run) / "stage_times.json")), line
    doc["stages"] = ["layers="]
    config.write_text(json.dumps(doc))
    (line,) = problems(run, 1)
    assert line.startswith('%s: invalid value "[layers=]" for profiling.stages' % config), line


def test_truncated_trace(run):
    path = trace_files(run)[1]
    text = path.read_bytes()
    path.write_bytes(text[:len(text) * 2 // 3])
    (line,) = problems(run, 1)
    assert line.startswith("%s: byte " % path)


def test_summary_disagrees(run):
    path = files_dir(run) / "summary.json"
    doc = json.loads(path.read_text())
    doc["steps"]["count"] += 1
    doc["top_cpu_ops"][0]["total_us"] += 1
    doc["top_cpu_ops"][1], doc["top_cpu_ops"][2] = doc["top_cpu_ops"][2], doc["top_cpu_ops"][1]
    doc["run"]["traces"].pop()
    path.write_text(json.dumps(doc))
    lines = problems(run, 5)
    assert any("steps.count %d, the traces have %d steps" % (
        doc["steps"]["count"], doc["steps"]["count"] - 1) in line for line in lines)
    assert any("top_cpu_ops[0]" in line and "total_us" in line for line in lines)
    assert sum("top_cpu_ops[1] is" in line or "top_cpu_ops[2] is" in line for line in lines) == 2
    assert any("is not listed in run.traces" in line for line in lines)


def test_unreadable(tmp_path):
    line = tprof("check", tmp_path / "nope", rc=2).stderr.decode()
    assert line == "tprof: %s: not a directory (check takes a run directory)\n" % (
        tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    tprof("check", tmp_path / "file", rc=2)
    tprof("check", rc=2)
    tprof("check", "--analysis", "--report", rc=2)  # options, no run directory
    # an empty directory can be read: a run with nothing in it
    empty = tmp_path / "empty"
    empty.mkdir()
    assert problems(empty, 1) == ["%s: no tprof artifacts and no traces" % empty]


HOSTILE = ["plain", "comma, inside", 'say "hi"', "line\nbreak", 'all, "of"\r\nthem', "\u00e9\u4e2d"]


def test_quoted_names(tmp_path):
    """A run directory whose op names need RFC 4180 quoting; its artifacts are made by the
    renderers from the trace (tests/tools/tp_analyze_feed --trace), its CSV checked as read."""
    run = tmp_path / "run"
    run.mkdir()
    events, ts = [], 0
    for step in range(3):
        events.append({"ph": "X", "name": "ProfilerStep#%d" % step, "cat": "user_annotation",
                       "pid": 1, "tid": 1, "ts": ts, "dur": 100 + step})
        for i, name in enumerate(HOSTILE):
            events.append({"ph": "X", "name": name, "cat": "cpu_op", "pid": 1, "tid": 1,
                           "ts": ts + 1 + 10 * i, "dur": 5 + i + step})
        ts += 200
    trace = run / "trace_0001_steps_0-2.json"
    trace.write_text(json.dumps({"traceEvents": events}))

    def render(fmt):
        return subprocess.run([str(FEED_TOOL), "--trace", "--format", fmt, str(trace)],
                              capture_output=True, check=True, timeout=60).stdout

    (run / "op_stats.csv").write_bytes(render("op_stats"))
    (run / "stage_times.json").write_bytes(render("stage_times"))
    summary = json.loads(render("json"))
    summary["run"] = {"traces": [trace.name]}
    (run / "summary.json").write_text(json.dumps(summary))
    (run / "config.json").write_text("{}")
    rows = read_op_stats(run)
    assert sorted(r[0] for r in rows[1:]) == sorted(HOSTILE)
    tprof("check", run, rc=0)

    col = rows[0].index("max_us")
    for row in rows[1:]:
        if row[0] == 'all, "of"\r\nthem':
            row[col] = "%.3f" % (float(row[col]) + 1)
    write_op_stats(run, rows)
    (line,) = problems(run, 1)
    assert line.startswith('%s/op_stats.csv: line ' % run)  # a run without tprof/: as before
    assert 'op "all, \\"of\\"\\r\\nthem": max_us' in line
