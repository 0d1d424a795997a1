"""tprof report and the library's report.html (docs/REPORT.md), without a browser: the file is
self-contained (no network, nothing beside it), its embedded report data is exactly what
tprof analyze --json (and tprof compare --json) give for the same input, its timeline and memory
curve agree with an independent reading of the trace (tests/lib/tprof_ref.py), it stays under
5 MB, and bad input gets one line and exit 2. The browser tests are test_report_browser.py."""

import json
import pathlib
import re

import pytest
from cli_helpers import FIXTURES, TRACES, error_line, profiled_run, tprof

import tprof_ref

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


def trace_bytes(html_bytes):
    """The bytes of the data's "trace" member (the Trace view: bounded on its own, docs/REPORT.md,
    "Trace view"), its last member; 0 without it."""
    data = DATA_RE.search(html_bytes).group(1)
    if "trace" not in report_data(html_bytes):
        return 0
    return len(data) - data.rindex(b'"trace":')


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
    assert len(page) - trace_bytes(page) < LIMIT


@pytest.mark.parametrize("trace", TRACES, ids=lambda p: p.name)
def test_report_data_is_analyze_json(tmp_path, trace):
    page = write_report(tmp_path, trace)
    data = report_data(page)
    assert data["analysis"] == analyze_json(trace)
    assert data["top_rows"] == int(TOP)
    assert len(page) - trace_bytes(page) < LIMIT, "%s: report of %d bytes" % (trace.name, len(page))


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
    lib_page = (run / "tprof" / "report.html").read_bytes()
    tprof("check", run, rc=0)
    lib = report_data(lib_page)
    assert lib["analysis"]["steps"] == analyze_json(run)["steps"]
    names = {a["name"]: a["bytes"] for a in lib["artifacts"]}
    for f in ("config.json", "summary.json", "stage_times.json", "op_stats.csv"):
        assert names[f] == (run / "tprof" / f).stat().st_size
    assert lib["artifacts_href"] == ""
    # tprof report of the directory, written elsewhere, links the files by absolute path
    data = report_data(write_report(tmp_path, run))
    assert data["analysis"] == analyze_json(run)
    assert data["artifacts_href"] == str(run.resolve()) + "/tprof/"
    assert "report.html" in {a["name"] for a in data["artifacts"]}


def test_console_summary_names_the_report(tmp_path):
    import subprocess

    from cli_helpers import TRAIN
    p = subprocess.run([str(TRAIN), "--steps", "8", "--epochs", "1", "--profile",
                        "--profiling.output_dir", str(tmp_path), "--profiling.run_id", "s"],
                       capture_output=True, timeout=120)
    assert p.returncode == 0
    assert ("Report: %s/s/tprof/report.html" % tmp_path) in p.stderr.decode()
    assert (tmp_path / "s" / "tprof" / "report.html").exists()


def test_html_report_off(tmp_path):
    run = profiled_run(tmp_path, "off", "--profiling.html_report", "false")
    assert not (run / "tprof" / "report.html").exists()
    assert (run / "tprof" / "summary.json").exists()


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


# ---- the page stays under 5 MB whatever the input (docs/REPORT.md, "Size"; issue 22, 10) ----

ELLIPSIS = "\u2026"


def shown_name(shown, name, name_max):
    """A name as the page shows it: whole, or its beginning and an ellipsis within name_max."""
    if shown == name:
        return True
    return (shown.endswith(ELLIPSIS) and name.startswith(shown[:-1])
            and len(json.dumps(shown, ensure_ascii=False).encode()) - 2 <= name_max)


def test_names_of_a_megabyte_keep_the_report_small(tmp_path):
    """20 ranges named by 1 MB strings made a 42 MB page: names are cut, the figures stay."""
    names = [chr(ord("a") + i) * (1 << 20) for i in range(20)]
    events = [{"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1,
               "tid": 1, "ts": 0, "dur": 10000}]
    events += [{"ph": "X", "name": n, "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10 + 100 * i,
                "dur": 50 + i} for i, n in enumerate(names)]
    trace = tmp_path / "long_names.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    page = write_report(tmp_path, trace)
    assert len(page) - trace_bytes(page) < LIMIT, "report of %d bytes" % len(page)
    data = report_data(page)
    want = analyze_json(trace)
    got = data["analysis"]
    assert data["name_max"] == 4096
    assert len(got["top_cpu_ops"]) == len(want["top_cpu_ops"]) == 20
    for g, w in zip(got["top_cpu_ops"], want["top_cpu_ops"]):
        assert g["name"] != w["name"] and shown_name(g["name"], w["name"], data["name_max"])
        assert {k: v for k, v in g.items() if k != "name"} == \
            {k: v for k, v in w.items() if k != "name"}
    assert got["steps"] == want["steps"]
    # the timeline keeps every range, its names cut alike
    series = data["series"]
    assert len(series["ranges"]) == series["ranges_total"] == 20
    for r in series["ranges"]:
        assert any(shown_name(series["names"][r[3]], n, data["name_max"]) for n in names)
    # the Trace view keeps every range, its names cut to 256 bytes (TP_TRACE_VIEW_NAME_MAX)
    trace = data["trace"]
    assert trace["ranges"] == trace["ranges_total"] == 21
    shown = [trace["names"][i] for i in trace["name"]]
    for n in names:
        assert sum(1 for t in shown if shown_name(t, n, 256) and t != n) == 1
    assert trace_bytes(page) < 64 * 1024


def test_no_trace_leaves_the_rest_alone(tmp_path):
    """--no-trace drops the Trace view's member, and only it."""
    full = report_data(write_report(tmp_path, GPU_TRACE))
    page = write_report(tmp_path, "--no-trace", GPU_TRACE, name="n.html")
    assert trace_bytes(page) == 0
    assert "trace" in full and {k: v for k, v in full.items() if k != "trace"} == report_data(page)


def rank_trace(k, n):
    """Rank k of n: three steps of its own length (ranks differ), on a process of its own."""
    dur = 900 + (k * 7919) % 10007
    events = []
    for s in range(3):
        t = s * 20000
        events.append({"ph": "X", "name": "ProfilerStep#%d" % (s + 1), "cat": "user_annotation",
                       "pid": k + 1, "tid": 1, "ts": t, "dur": dur})
        events.append({"ph": "X", "name": "aten::mm", "cat": "cpu_op", "pid": k + 1, "tid": 1,
                       "ts": t + 10, "dur": 300})
    return {"distributedInfo": {"rank": k, "world_size": n}, "traceEvents": events}


def test_ten_thousand_ranks_keep_the_report_small(tmp_path):
    """10,000 ranks made a 12.6 MB page: the per-rank table keeps the fastest and slowest ranks
    with a summary, the step list every k-th step, each row as tprof analyze --json has it."""
    n = 10000
    runs = tmp_path / "ranks"
    runs.mkdir()
    for k in range(n):
        (runs / ("w.rank%d.json" % k)).write_text(json.dumps(rank_trace(k, n)))
    page = write_report(tmp_path, runs)
    assert len(page) - trace_bytes(page) < LIMIT, "report of %d bytes" % len(page)
    data = report_data(page)
    got, want = data["analysis"], analyze_json(runs)
    list_max = data["list_max"]
    assert list_max == 1000
    # steps: the figures whole, the list one step in `stride`
    assert {k: v for k, v in got["steps"].items() if k != "list"} == \
        {k: v for k, v in want["steps"].items() if k != "list"}
    stride = -(-len(want["steps"]["list"]) // list_max)
    assert got["steps"]["list"] == want["steps"]["list"][::stride]
    assert len(got["steps"]["list"]) <= list_max
    # ranks: the fastest and slowest by mean step, in rank order, rows as analyze has them
    ranks, all_rows = got["ranks"], want["ranks"]["per_rank"]
    assert ranks["count"] == want["ranks"]["count"] == n
    by_mean = sorted(all_rows, key=lambda r: (r["step_mean_ns"], r["rank"]))
    kept = by_mean[:list_max // 2] + by_mean[-(list_max - list_max // 2):]
    assert ranks["per_rank"] == sorted(kept, key=lambda r: r["rank"])
    cut = ranks["per_rank_cut"]
    means = sorted(r["step_mean_ns"] for r in all_rows)
    assert (cut["shown"], cut["fastest"], cut["slowest"], cut["with_steps"]) == \
        (list_max, list_max // 2, list_max // 2, n)
    assert (cut["step_mean_min_ns"], cut["step_mean_median_ns"], cut["step_mean_max_ns"]) == \
        (means[0], means[n // 2], means[-1])
    assert ranks["straggler"] == want["ranks"]["straggler"]
    for s in ranks["step_spread"]:
        assert s in want["ranks"]["step_spread"]
    # the input's paths and the directory's files: the first of them, with their count
    assert got["input"]["count"] == want["input"]["count"]
    assert got["input"]["paths"] == want["input"]["paths"][:list_max]
    assert data["artifacts_total"] == n and len(data["artifacts"]) == list_max
    # the timeline: the longest steps, and only the lanes of what it keeps
    series = data["series"]
    assert series["steps_total"] == 3 * n and len(series["steps"]) == 4000
    used = {r[0] for r in series["steps"] + series["ranges"]}
    assert used == set(range(len(series["lanes"])))
    for key in ("top_cpu_ops", "stages", "gpu", "warnings", "recommendations"):
        assert got[key] == want[key], key


def test_many_long_names_fall_back_to_tighter_bounds(tmp_path):
    """Thousands of distinct names that each take 4 KB in the page (every '<' is written as
    \\u003c there) would pass 4 MB of data even cut at 4096 bytes: the data is rendered again
    with 100 rows per table and names of 256 bytes, as tprof analyze --json --top 100 has it."""
    events = [{"ph": "X", "name": "ProfilerStep#1", "cat": "user_annotation", "pid": 1,
               "tid": 1, "ts": 0, "dur": 10 ** 7}]
    for i in range(1500):
        name = "%d%s" % (i, "<" * 1000)
        events.append({"ph": "X", "name": name, "cat": "cpu_op", "pid": 1, "tid": 1,
                       "ts": 10 + 2000 * i, "dur": 1000 + i})
        events.append({"ph": "X", "name": "k" + name, "cat": "kernel", "pid": 0, "tid": 7,
                       "ts": 10 + 2000 * i, "dur": 500 + i})
    trace = tmp_path / "many_names.json"
    trace.write_text(json.dumps({"traceEvents": events}))
    page = write_report(tmp_path, trace)
    assert len(page) - trace_bytes(page) < LIMIT, "report of %d bytes" % len(page)
    data = report_data(page)
    assert (data["top_rows"], data["name_max"]) == (100, 256)
    want = json.loads(tprof("analyze", "--json", "--top", "100", trace, rc=0).stdout)
    for key in ("top_cpu_ops", "top_gpu_kernels"):
        assert len(data["analysis"][key]) == len(want[key]) == 100
        for g, w in zip(data["analysis"][key], want[key]):
            assert shown_name(g["name"], w["name"], 256)
            assert {k: v for k, v in g.items() if k != "name"} == \
                {k: v for k, v in w.items() if k != "name"}
    assert data["analysis"]["steps"] == want["steps"]
