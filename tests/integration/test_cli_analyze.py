"""`tprof analyze` on every real trace in TPROF_FIXTURES, cross-checked against
tests/lib/tprof_ref.py (Python's json module and its own arithmetic, sharing nothing with the C
code): JSON figures (exact for integers and times, 1e-6 relative for percentages), CSV through
the csv module, Markdown table shape, the text report's key figures, --top, --stage, several
inputs as one analysis, standard input (plain and gzip), -o, and the progress line on a terminal."""

import csv
import gzip
import io
import json
import os
import pty
import re
import select
import subprocess

import pytest
from cli_helpers import ALL, FIXTURES, TPROF, TRACES, check_sum, close, ref_sum, tprof

import tprof_ref


@pytest.fixture(scope="module")
def refs():
    assert TRACES, "no fixtures"
    return {p: tprof_ref.analyze(str(p)) for p in TRACES}


def analyze_json(*args, stdin=None):
    return json.loads(tprof("analyze", "--json", *args, stdin=stdin, rc=0).stdout)


def check_rows(where, want, got, keys):
    assert len(got) == len(want), "%s: %d rows, the reference has %d" % (where, len(got), len(want))
    for i, (w, g) in enumerate(zip(want, got)):
        for k in keys:
            assert close(w[k], g[k]), "%s[%d].%s: reference %r, tprof %r" % (where, i, k, w[k],
                                                                              g[k])


def check_figures(want, got):
    """Every figure the task names: steps, top ops, top kernels, GPU, memory, stages."""
    assert got["input"]["events"] == want["input"]["events"]
    assert got["input"]["bytes"] == want["input"]["bytes"]
    for k in ("count", "total_us", "mean_us", "p50_us", "p95_us", "max_us"):
        assert close(want["steps"][k], got["steps"][k]), "steps.%s" % k
    check_rows("top_cpu_ops", want["top_cpu_ops"][:len(got["top_cpu_ops"])], got["top_cpu_ops"],
               ["name", "calls", "total_us", "self_us", "self_pct"])
    check_rows("top_gpu_kernels", want["top_gpu_kernels"][:len(got["top_gpu_kernels"])],
               got["top_gpu_kernels"], ["name", "calls", "total_us", "pct"])
    for k in ("busy_us", "utilization_pct", "kernel_count"):
        assert close(want["gpu"][k], got["gpu"][k]), "gpu.%s" % k
    check_rows("memory", want["memory"], got["memory"],
               ["device_type", "device_id", "peak_bytes", "peak_ts_us"])
    check_rows("stages", want["stages"], got["stages"], ["stage", "total_us", "pct"])
    assert close(want["dataloader_pct"], got["dataloader_pct"])
    assert [r["id"] for r in got["recommendations"]] == [r["id"] for r in want["recommendations"]]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_json_matches_reference(path, refs):
    got = analyze_json("--top", ALL, path)
    want = refs[path]
    assert len(got["top_cpu_ops"]) == len(want["top_cpu_ops"])
    assert len(got["top_gpu_kernels"]) == len(want["top_gpu_kernels"])
    check_figures(want, got)
    assert got["input"]["path"] == str(path)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_top_k(k, refs):
    path = max(TRACES, key=lambda p: len(refs[p]["top_gpu_kernels"]))
    got = analyze_json("--top", k, path)
    want = refs[path]
    assert len(got["top_cpu_ops"]) == min(k, len(want["top_cpu_ops"]))
    assert len(got["top_gpu_kernels"]) == min(k, len(want["top_gpu_kernels"]))
    check_figures(want, got)
    default = analyze_json(path)  # no --top: ten rows
    assert len(default["top_cpu_ops"]) == min(10, len(want["top_cpu_ops"]))


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_csv(path, refs):
    out = tprof("analyze", "--csv", path, rc=0).stdout.decode("utf-8")
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    want = refs[path]
    ops = [r for r in rows if r["kind"] == "op"]
    kernels = [r for r in rows if r["kind"] == "kernel"]
    stages = [r for r in rows if r["kind"] == "stage"]
    other = [r for r in rows if r["kind"] == "other"]
    assert len(ops) == min(10, len(want["top_cpu_ops"]))
    assert len(kernels) == min(10, len(want["top_gpu_kernels"]))
    assert len(ops) + len(kernels) + len(stages) + len(other) == len(rows)
    assert [(o["name"], int(o["calls"]), float(o["total_us"])) for o in other] == [
        ("other", want["other"]["count"], want["other"]["total_us"])]
    for w, g in zip(want["top_cpu_ops"], ops):
        assert (g["name"], int(g["calls"])) == (w["name"], w["calls"])
        assert (float(g["total_us"]), float(g["self_us"])) == (w["total_us"], w["self_us"])
    for w, g in zip(want["top_gpu_kernels"], kernels):
        assert (g["name"], int(g["calls"]), float(g["total_us"])) == (
            w["name"], w["calls"], w["total_us"])
    assert [(s["name"], int(s["calls"]), float(s["total_us"])) for s in stages] == [
        (s["stage"], s["count"], s["total_us"]) for s in want["stages"]]


CNN = FIXTURES / "torch2" / "cnn_cpu_3steps.pt.trace.json.gz"


def test_csv_flops_fcm_last_column():
    """flops_fcm (FlopCounterMode's convention, forward and backward) is the last column of both
    CSVs, each op's as --json has it (nonzero on a CNN with shapes), empty for kernels and
    stages; the columns before it are unchanged, for readers by position."""
    j = json.loads(tprof("analyze", "--json", "--top", "500", CNN, rc=0).stdout)
    fcm = {o["name"]: o["flops_fcm"] for o in j["top_cpu_ops"]}
    total = j["flops_fcm"]["total"]
    assert sum(fcm.values()) == pytest.approx(total) and total > 0
    out = tprof("analyze", "--csv", "--top", "500", CNN, rc=0).stdout.decode("utf-8")
    assert out.startswith("kind,name,calls,total_us,self_us,mean_us,min_us,max_us,pct,flops,"
                          "flops_fcm\r\n")
    rows = list(csv.DictReader(io.StringIO(out, newline="")))
    ops = [r for r in rows if r["kind"] == "op"]
    assert {r["name"]: float(r["flops_fcm"]) for r in ops} == fcm
    assert all(r["flops_fcm"] == "" for r in rows if r["kind"] != "op")


def markdown_tables(md):
    """Each table: a header, a |---| separator, rows with as many cells as the header."""
    blocks = re.findall(r"(?:^\|.*\|\n)+", md, re.M)
    for block in blocks:
        lines = block.splitlines()
        cells = [len(re.findall(r"(?<!\\)\|", line)) for line in lines]
        assert len(set(cells)) == 1, block
        assert re.fullmatch(r"(\|---:?)+\|", lines[1]), lines[1]
    return [b.splitlines() for b in blocks]


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_markdown(path, refs):
    md = tprof("analyze", "--markdown", "--top", 3, path, rc=0).stdout.decode("utf-8")
    tables = markdown_tables(md)
    want = refs[path]
    ops = [t for t in tables if t[0].startswith("| op |") and "self" in t[0] and "calls" in t[0]]
    assert len(ops) == 1 and len(ops[0]) == 2 + min(3, len(want["top_cpu_ops"]))
    for w in want["top_cpu_ops"][:3]:
        if len(w["name"]) < 30 and "|" not in w["name"]:
            assert w["name"] in md


def human(us):
    """The text report's durations."""
    ns = round(us * 1000)
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if abs(ns) >= scale:
            return "%.3f %s" % (ns / scale, unit)
    return "%d ns" % ns


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_text_shows_key_figures(path, refs):
    text = tprof("analyze", path, rc=0).stdout.decode("utf-8")
    want = refs[path]
    assert "steps: %d" % want["steps"]["count"] in text
    if want["steps"]["count"]:
        assert human(want["steps"]["mean_us"]) in text
    if want["gpu"]["utilization_pct"] is not None:
        assert "utilization %.1f%%" % want["gpu"]["utilization_pct"] in text
    for w in want["top_cpu_ops"][:10]:
        if len(w["name"]) < 30:
            assert w["name"] in text
            assert human(w["self_us"]) in text
    # the text prints the first 3 recommendations (by saving), and says how many more
    for r in want["recommendations"][:3]:
        assert "[%s]" % r["id"] in text
    for r in want["recommendations"][3:]:
        assert "[%s]" % r["id"] not in text
    if len(want["recommendations"]) > 3:
        assert "%d more, each saving less" % (len(want["recommendations"]) - 3) in text


def test_several_inputs_are_one_analysis():
    paths = [p for p in TRACES if "sampled_rank" in p.name or "mi250" in p.name]
    assert len(paths) == 3
    got = analyze_json("--top", ALL, *paths)
    check_sum(ref_sum(paths), got)
    assert got["input"]["paths"] == [str(p) for p in paths]
    assert got["input"]["events"] == sum(tprof_ref.load(str(p)).input_events for p in paths)
    # two ranks of one job mixed: said so
    assert any("ranks" in w for w in got["warnings"])


def test_rank_from_trace_contents(tmp_path):
    """--rank picks a trace by the rank its distributedInfo states (no rank in the names)."""
    for p in TRACES:
        if "sampled_rank" in p.name:
            (tmp_path / p.name.replace("sampled_rank-", "part")).symlink_to(p)
    for rank in (0, 1):
        got = analyze_json("--top", ALL, "--rank", rank, tmp_path)
        src = [p for p in TRACES if p.name == "sampled_rank-%d.json.gz" % rank]
        check_sum(ref_sum(src), got)
        assert got["warnings"] == []
    p = tprof("analyze", "--rank", 5, tmp_path, rc=2)
    assert "rank 5" in p.stderr.decode()


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.name)
def test_stdin(path, refs):
    raw = path.read_bytes()
    for data in (raw, gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else gzip.compress(raw)):
        got = analyze_json("--top", ALL, "-", stdin=data)
        assert got["input"]["path"] == "-"
        check_figures(refs[path], got)


def test_output_file(tmp_path):
    path = TRACES[0]
    out = tmp_path / "report.json"
    p = tprof("analyze", "--json", path, "-o", out, rc=0)
    assert p.stdout == b""
    assert out.read_bytes() == tprof("analyze", "--json", path, rc=0).stdout
    # an output in a directory that does not exist: one line, exit 2, nothing left behind
    bad = tmp_path / "no" / "such" / "dir" / "r.json"
    p = tprof("analyze", path, "--output=%s" % bad, rc=2)
    assert str(bad) in p.stderr.decode()
    assert not (tmp_path / "no").exists()


def test_stages_option():
    path = next(p for p in TRACES if "nccl_data" in p.name)
    stages = [("fwd", ["*forward*"]), ("opt", ["Optimizer.*", "*zero_grad*"]),
              ("aten::empty", ["aten::empty"])]
    got = analyze_json("--stage", "fwd=*forward*", "--stage=opt=Optimizer.*|*zero_grad*",
                       "--stage", "aten::empty", path)
    want = tprof_ref.analyze(str(path), stages=stages)
    assert [s["stage"] for s in got["stages"]] == ["fwd", "opt", "aten::empty"]
    check_rows("stages", want["stages"], got["stages"], ["stage", "count", "total_us", "pct"])
    assert got["dataloader_pct"] is None
    assert want["stages"][0]["total_us"] > 0 and want["stages"][2]["count"] > 0
    for bad in ("=x", "a=", "a=x||y", ""):
        p = tprof("analyze", "--stage", bad, path, rc=2)
        assert "invalid stage" in p.stderr.decode()


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory):
    """A trace of 110 MB (the progress line shows for inputs over 100 MB)."""
    path = tmp_path_factory.mktemp("big") / "big.json"
    event = ('{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, '
             '"ts": %d, "dur": 3, "args": {"pad": "' + "x" * 60 + '"}}')
    with open(path, "w") as f:
        f.write('{"traceEvents": [\n')
        n = 110 * 1024 * 1024 // 120
        f.write(",\n".join(event % (i * 5) for i in range(n)))
        f.write("\n]}\n")
    yield path
    path.unlink()  # pytest keeps the temporary folders of the last runs


def stderr_on_terminal(args):
    """tprof's stderr when it is a terminal (a pseudo-terminal)."""
    master, slave = pty.openpty()
    p = subprocess.Popen([str(TPROF)] + [str(a) for a in args], stdin=subprocess.DEVNULL,
                         stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    data = b""
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        data += chunk
    os.close(master)
    assert p.wait(timeout=60) == 0
    return data


def test_progress_on_a_terminal(big_trace):
    shown = stderr_on_terminal(["analyze", "--json", "-o", os.devnull, big_trace])
    assert b"tprof: reading" in shown and b"%" in shown
    assert b"tprof: reading" not in stderr_on_terminal(
        ["analyze", "--no-progress", "-o", os.devnull, big_trace])
    # not a terminal: nothing by default
    assert b"tprof: reading" not in tprof("analyze", "-o", os.devnull, big_trace, rc=0).stderr


def test_progress_forced(big_trace):
    p = tprof("analyze", "--progress", "-o", os.devnull, big_trace, rc=0)
    assert b"tprof: reading" in p.stderr


def shapes_trace(path, events):
    path.write_text(json.dumps({"traceEvents": events}, separators=(",", ":")))
    return path


def op(name, ts, dur, dims=None, **more):
    args = {} if dims is None else {"Input Dims": dims}
    args.update(more)
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": 1, "ts": ts, "dur": dur,
            "args": args}


def test_ops_by_shape_without_shapes(tmp_path):
    """No op with an "Input Dims" array: top_cpu_ops_by_shape is [] (documented), also when the
    words are a name, a string arg's value, or a non-array value."""
    plain = shapes_trace(tmp_path / "plain.json", [op("aten::mm", 0, 5), op("aten::add", 6, 2)])
    assert analyze_json(plain)["top_cpu_ops_by_shape"] == []
    odd = shapes_trace(tmp_path / "odd.json", [
        op("Input Dims", 0, 5, note="Input Dims"), op("aten::add", 6, 2, dims="[[2, 3]]"),
        op("aten::mul", 9, 2, dims=7)])
    got = analyze_json(odd)
    assert got["top_cpu_ops_by_shape"] == [] and len(got["top_cpu_ops"]) == 3


def test_ops_by_shape_groups_as_torch_keys(tmp_path):
    """Shapes written with or without spaces are one row, keyed as torch's str() of the list;
    B/E ranges keep theirs; ranges without shapes get ""; each name's rows count exactly its
    op row's ranges; self time and FLOPs go to the (name, shapes) row."""
    events = [
        op("aten::mm", 0, 10, [[2, 3], [3, 4]], flops=48),
        op("aten::mm", 20, 30, [[2, 3], [3, 4]], flops=48),
        op("aten::mm", 60, 7, [[5, 3], [3, 4]]),
        op("aten::add", 61, 2, [[5, 4], [5, 4], []]),  # inside the last mm: not its self time
        {"ph": "X", "cat": "python_function", "name": "fwd", "pid": 1, "tid": 1, "ts": 100,
         "dur": 50},
        {"ph": "B", "cat": "cpu_op", "name": "aten::relu", "pid": 1, "tid": 1, "ts": 110,
         "args": {"Input Dims": [[5, 4]]}},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 114},
        op("aten::empty", 120, 1, []),
    ]
    path = tmp_path / "shapes.json"
    # the first event as Kineto writes ("[[2, 3], [3, 4]]"), the others compact ("[[2,3],[3,4]]")
    path.write_text('{"traceEvents": [%s]}' % ",\n".join(
        json.dumps(e, separators=(", ", ": ") if i == 0 else (",", ":"))
        for i, e in enumerate(events)))
    assert '[[2,3],[3,4]]' in path.read_text() and '[[2, 3], [3, 4]]' in path.read_text()
    got = analyze_json(path, "--top", "100")
    rows = {(r["name"], r["input_shapes"]): r for r in got["top_cpu_ops_by_shape"]}
    assert set(rows) == {("aten::mm", "[[2, 3], [3, 4]]"), ("aten::mm", "[[5, 3], [3, 4]]"),
                         ("aten::add", "[[5, 4], [5, 4], []]"), ("fwd", ""),
                         ("aten::relu", "[[5, 4]]"), ("aten::empty", "[]")}
    mm = rows[("aten::mm", "[[2, 3], [3, 4]]")]
    assert (mm["calls"], mm["total_us"], mm["self_us"], mm["flops"]) == (2, 40, 40, 96)
    small = rows[("aten::mm", "[[5, 3], [3, 4]]")]
    # no flops arg: torch's formula over its shapes, 2 x 5 x 3 x 4 (src/model/flops.c)
    assert (small["calls"], small["self_us"], small["flops"]) == (1, 5, 120)
    assert rows[("fwd", "")]["self_us"] == 45  # relu and empty are its children
    for r in got["top_cpu_ops"]:
        mine = [s for (n, _), s in rows.items() if n == r["name"]]
        assert sum(s["calls"] for s in mine) == r["calls"]
        assert sum(s["self_us"] for s in mine) == r["self_us"]
    order = [(-r["self_us"], r["name"], r["input_shapes"]) for r in got["top_cpu_ops_by_shape"]]
    assert order == sorted(order)
    assert len(analyze_json(path, "--top", "2")["top_cpu_ops_by_shape"]) == 2


def test_by_shape_rows_carry_their_dtypes():
    """Kineto's Input type is kept and shown beside the shapes: each row's input_types is the
    Input type of a call with its (name, shapes), from the trace read by Python's json module;
    the BERT trace's matrix ops ran in bf16 on its H100."""
    path = os.path.join(os.environ["TPROF_FIXTURES"], "kineto",
                        "gaunernst_bert-small-uncased__1016001.json.gz")
    with gzip.open(path) as f:
        events = json.load(f)["traceEvents"]
    seen = {}
    for e in events:
        a = e.get("args", {})
        if e.get("ph") == "X" and "Input Dims" in a and "Input type" in a:
            seen.setdefault((e["name"], tprof_ref.shapes_key(a["Input Dims"])), []).append(
                a["Input type"])
    rows = analyze_json(path, "--top", "100000")["top_cpu_ops_by_shape"]
    typed = [r for r in rows if r["input_types"] is not None]
    assert len(typed) == len(seen) and len(typed) > 10
    for r in typed:
        assert r["input_types"] in seen[(r["name"], r["input_shapes"])], r
    addmm = [r for r in typed if r["name"] == "aten::addmm"]
    assert addmm and all(r["input_types"][:3] == ["c10::BFloat16"] * 3 for r in addmm)
    assert all(r["input_types"] is None for r in rows if (r["name"], r["input_shapes"])
               not in seen)
