"""tprof report and the library's report.html (docs/REPORT.md), without a browser: the file is
self-contained (no network, nothing beside it), its embedded report data is exactly what
tprof analyze --json (and tprof compare --json) give for the same input, its timeline and memory
curve agree with an independent reading of the trace (tests/lib/tprof_ref.py), it stays under
5 MB, and bad input gets one line and exit 2. The browser tests are test_report_browser.py."""

import json
import pathlib
import re

import pytest

import tprof_ref
from cli_helpers import FIXTURES, TRACES, error_line, profiled_run, tprof

GPU_TRACE = FIXTURES / "kineto" / "gaunernst_bert-small-uncased__1016001.json.gz"
TOP = "500"  # TP_HTML_TOP_ROWS: the rows the report's analysis keeps
DATA_RE = re.compile(rb'<script id="tprof-data" type="application/json">(.*?)</script>', re.S)
LIMIT = 5 * 1024 * 1024


def report_data(html_bytes):
    """The report data embedded in a report page."""
    m = DATA_RE.search(html_bytes)
    assert m, "no tprof-data element"
    return json.loads(m.group(1))


def analyze_json(*inputs):
    return json.loads(tprof("analyze", "--json", "--top", TOP, *inputs, rc=0).stdout)


def write_report(tmp_path, *args, name="r.html"):
    out = tmp_path / name
    tprof("report", *args, "-o", out, rc=0)
    return out.read_bytes()


def test_report_is_one_offline_file(tmp_path):
    page = write_report(tmp_path, GPU_TRACE)
    text = page.decode("utf-8")
    # nothing is loaded from anywhere: no element with a src or a stylesheet link
    assert not re.search(r"<(script|img|iframe)[^>]*\ssrc=", text, re.I)
    assert not re.search(r"<link[^>]*stylesheet", text, re.I)
    assert "Content-Security-Policy" in text and "default-src 'none'" in text
    # Debian's Chart.js is embedded, the template's markers are all replaced
    chartjs = pathlib.Path("/usr/share/javascript/chart.js/chart.min.js")
    if chartjs.exists():
        assert chartjs.read_bytes() in page
    for marker in ("{{STYLE}}", "{{CHARTJS}}", "{{DATA}}", "{{APP}}"):
        assert marker not in text
    assert len(page) < LIMIT


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_report_data_is_analyze_json(tmp_path, trace):
    page = write_report(tmp_path, trace)
    data = report_data(page)
    assert data["analysis"] == analyze_json(trace)
    assert data["top_rows"] == int(TOP)
    assert len(page) < LIMIT, "%s: report of %d bytes" % (trace.name, len(page))


def test_timeline_and_memory_curve_match_the_trace(tmp_path):
    data = report_data(write_report(tmp_path, GPU_TRACE))
    ref = tprof_ref.load(str(GPU_TRACE))
    series = data["series"]
    work = (tprof_ref.KERNEL, tprof_ref.MEMCPY, tprof_ref.MEMSET)
    steps = [e for e in ref.events if e.kind == tprof_ref.HOST and e.step]
    others = [e for e in ref.events
              if (e.kind == tprof_ref.HOST and not e.step) or e.kind in work]
    assert len(series["steps"]) == len(steps)
    assert series["ranges_total"] == len(others)
    kept = min(len(others), 4000)
    assert len(series["ranges"]) == kept
    # the ranges kept are the longest ones: the shortest kept is at least any range dropped
    durations = sorted(round(r[2] * 1000) for r in series["ranges"])
    want = sorted(e.dur for e in others)[-kept:]
    assert durations == want
    # every device with [memory] events has a curve whose highest point is the analysis' peak
    peaks = {(m["device_type"], m["device_id"]): m["peak_bytes"]
             for m in data["analysis"]["memory"]}
    curves = {(c["device_type"], c["device_id"]): c for c in series["memory"]}
    assert set(curves) == set(peaks)
    for key, curve in curves.items():
        assert 0 < len(curve["points"]) <= 1500
        assert max(p[1] for p in curve["points"]) == peaks[key]
        times = [p[0] for p in curve["points"]]
        assert times == sorted(times)


def test_names_cannot_close_the_data_element(tmp_path):
    """A name holding </script> (or <!--) stays inside the JSON: every '<' is written \\u003c."""
    evil = "</script><script>alert(1)</script><!--"
    trace = tmp_path / "evil.json"
    trace.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1, "tid": 1,
         "ts": 0, "dur": 100},
        {"ph": "X", "name": evil, "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10, "dur": 50}]}))
    page = write_report(tmp_path, trace)
    data = report_data(page)
    assert data["analysis"] == analyze_json(trace)
    assert data["analysis"]["top_cpu_ops"][0]["name"] == evil
    assert evil in data["series"]["names"]
    body = page[page.index(b'id="tprof-data"'):]
    assert body.index(b"</script>") > body.index(b"\\u003c/script>")
    assert b"alert(1)</script>" not in page


def test_run_directory_report_and_artifacts(tmp_path):
    run = profiled_run(tmp_path / "runs", "r1", "--profiling.profile_memory", "true")
    # the library wrote report.html; tprof check accepts the directory with it
    lib_page = (run / "report.html").read_bytes()
    tprof("check", run, rc=0)
    lib = report_data(lib_page)
    assert lib["analysis"]["steps"] == analyze_json(run)["steps"]
    names = {a["name"]: a["bytes"] for a in lib["artifacts"]}
    for f in ("config.json", "summary.json", "stage_times.json", "op_stats.csv"):
        assert names[f] == (run / f).stat().st_size
    assert lib["artifacts_href"] == ""
    # tprof report of the directory, written elsewhere, links the files by absolute path
    data = report_data(write_report(tmp_path, run))
    assert data["analysis"] == analyze_json(run)
    assert data["artifacts_href"] == str(run.resolve()) + "/"
    assert "report.html" in {a["name"] for a in data["artifacts"]}


def test_console_summary_names_the_report(tmp_path):
    import subprocess
    from cli_helpers import TRAIN
    p = subprocess.run([str(TRAIN), "--steps", "8", "--epochs", "1", "--profile",
                        "--profiling.output_dir", str(tmp_path), "--profiling.run_id", "s"],
                       capture_output=True, timeout=120)
    assert p.returncode == 0
    assert ("Report: %s/s/report.html" % tmp_path) in p.stderr.decode()
    assert (tmp_path / "s" / "report.html").exists()


def test_html_report_off(tmp_path):
    run = profiled_run(tmp_path, "off", "--profiling.html_report", "false")
    assert not (run / "report.html").exists()
    assert (run / "summary.json").exists()


def test_compare_view_is_tprof_compare(tmp_path):
    a = profiled_run(tmp_path / "runs", "a", steps=12)
    b = profiled_run(tmp_path / "runs", "b", steps=16)
    data = report_data(write_report(tmp_path, "--compare", a, b))
    want = json.loads(tprof("compare", "--json", "--top", TOP, a, b, rc=0).stdout)
    assert data["compare"] == want
    assert data["analysis"] == analyze_json(a)
    assert data["analysis_b"] == analyze_json(b)


def test_bad_input_one_line(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [ {"ph": "X", "ts": ')
    out = tmp_path / "out.html"
    p = tprof("report", bad, "-o", out, rc=2)
    assert str(bad) in error_line(p)
    assert not out.exists()
    p = tprof("report", "--compare", bad, rc=2)
    assert "--compare takes two inputs" in error_line(p)
    p = tprof("report", rc=2)
    assert "no input" in error_line(p)


def test_help_lists_report():
    assert b"report" in tprof("help", rc=0).stdout
    assert b"--compare" in tprof("report", "--help", rc=0).stdout
