"""Every renderer's output parses and carries the figures: JSON and stage_times.json with
Python's json module, CSV with its csv module, Markdown tables by their pipes, text by the
numbers it must show. Inputs: the real fixtures (through tprof_ref's neutral feed) and a feed
of hostile names (invalid UTF-8, quotes, control characters, pipes, 10,000 characters).
"""

import csv
import io
import json
import os
import pathlib
import re
import subprocess

import pytest

import tprof_ref

SOURCE = pathlib.Path(os.environ["TPROF_SOURCE_DIR"])
FIXTURES = pathlib.Path(os.environ["TPROF_FIXTURES"])
TOOL = pathlib.Path(os.environ["TPROF_BUILD_DIR"]) / "tests" / "tp_analyze_feed"
TRACES = sorted(p for p in FIXTURES.rglob("*") if p.name.endswith((".json", ".json.gz")))


def run(feed_path, fmt, top=None):
    args = [str(TOOL), "--format", fmt] + (["--top", str(top)] if top else []) + [str(feed_path)]
    return subprocess.run(args, capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def feeds(tmp_path_factory):
    d = tmp_path_factory.mktemp("feeds")
    out = {}
    for p in TRACES:
        trace = tprof_ref.load(str(p))
        f = d / (p.name + ".feed")
        f.write_text(tprof_ref.feed(trace), encoding="utf-8")
        out[p.name] = (f, tprof_ref.analyze(trace))
    return out


def flatten(value, prefix, keys):
    """Key paths of a JSON value: objects by member, arrays as name[], per-stage maps as *."""
    if isinstance(value, dict):
        for k, v in value.items():
            name = "*" if prefix.endswith(".stages.") else k
            flatten(v, prefix + name + ".", keys)
    elif isinstance(value, list):
        keys.add(prefix[:-1] + "[]")
        for item in value:
            if isinstance(item, (dict, list)):
                flatten(item, prefix[:-1] + "[].", keys)
    else:
        keys.add(prefix[:-1])


def documented_keys():
    text = (SOURCE / "docs" / "ANALYZE_JSON.md").read_text(encoding="utf-8")
    section = text.split("## `tprof analyze --json`")[1].split("\n## ")[0]
    return {m.group(1) for m in re.finditer(r"^\| `([^`]+)` \|", section, re.M)}


def test_every_json_key_is_documented(feeds):
    seen = set()
    for feed, _ in feeds.values():
        flatten(json.loads(run(feed, "json")), "", seen)
    doc = documented_keys()
    assert seen - doc == set(), "keys in the output but not in docs/ANALYZE_JSON.md"
    assert doc - seen == set(), "documented keys never seen in the fixtures' output"


@pytest.mark.parametrize("name", [p.name for p in TRACES])
def test_renderers_agree_with_reference(name, feeds):
    feed, ref = feeds[name]
    top = 7
    j = json.loads(run(feed, "json", top))
    assert len(j["top_cpu_ops"]) == min(top, len(ref["top_cpu_ops"]))
    assert [r["name"] for r in j["top_cpu_ops"]] == [r["name"] for r in ref["top_cpu_ops"][:top]]

    # op_stats.csv: every op, the reference's values
    rows = list(csv.DictReader(io.StringIO(run(feed, "op_stats").decode("utf-8"))))
    assert len(rows) == len(ref["top_cpu_ops"])
    for row, want in zip(rows, ref["top_cpu_ops"]):
        assert row["name"] == want["name"]
        assert int(row["calls"]) == want["calls"]
        for k in ("total_us", "self_us", "mean_us", "min_us", "max_us"):
            assert float(row[k]) == want[k], (name, row["name"], k)

    # the combined CSV: top ops, top kernels, every stage
    rows = list(csv.DictReader(io.StringIO(run(feed, "csv", top).decode("utf-8"))))
    kinds = [r["kind"] for r in rows]
    assert kinds.count("op") == len(j["top_cpu_ops"])
    assert kinds.count("kernel") == len(j["top_gpu_kernels"])
    assert kinds.count("stage") == len(ref["stages"])
    for row, want in zip((r for r in rows if r["kind"] == "kernel"), ref["top_gpu_kernels"]):
        assert (row["name"], int(row["calls"]), float(row["total_us"])) == \
            (want["name"], want["calls"], want["total_us"])
    for row, want in zip((r for r in rows if r["kind"] == "stage"), ref["stages"]):
        assert row["name"] == want["stage"] and float(row["total_us"]) == want["total_us"]
        assert (row["pct"] == "") == (want["pct"] is None)

    # stage_times.json: the same stages and steps as the report
    st = json.loads(run(feed, "stage_times"))
    assert st["stages"] == j["stages"]
    assert st["steps"] == j["steps"]["list"]

    check_markdown_tables(run(feed, "markdown", top).decode("utf-8"))

    # text: the step figures, in the units the report promises
    text = run(feed, "text", top).decode("utf-8")
    steps = ref["steps"]
    if steps["count"]:
        for k in ("total_us", "mean_us", "p50_us", "p95_us", "max_us"):
            assert human(round(steps[k] * 1000)) in text, (k, human(round(steps[k] * 1000)))
    else:
        assert "Step time\n  n/a" in text
    for r in ref["top_cpu_ops"][:top]:
        assert r["name"][:20] in text
    # the text prints the first 3 recommendations (by saving), and says how many more
    for r in ref["recommendations"][:3]:
        assert "[%s]" % r["id"] in text
    for r in ref["recommendations"][3:]:
        assert "[%s]" % r["id"] not in text
    if len(ref["recommendations"]) > 3:
        assert "%d more, each saving less" % (len(ref["recommendations"]) - 3) in text


def check_markdown_tables(md):
    """Each table row has as many cells as its header, and a separator row follows it."""
    blocks = re.findall(r"(?:^\|.*\|\n)+", md, re.M)
    assert blocks
    for block in blocks:
        lines = block.splitlines()
        cells = [len(re.findall(r"(?<!\\)\|", line)) for line in lines]
        assert len(set(cells)) == 1, block
        assert re.fullmatch(r"(\|---:?)+\|", lines[1])


def human(ns):
    """The text report's durations: ns, us, ms or s with three decimals."""
    if abs(ns) >= 1e9:
        return "%.3f s" % (ns / 1e9)
    if abs(ns) >= 1e6:
        return "%.3f ms" % (ns / 1e6)
    if abs(ns) >= 1e3:
        return "%.3f us" % (ns / 1e3)
    return "%d ns" % ns


HOSTILE = [
    b"quote\" backslash\\ slash/",
    b"bad utf8 \xff\xfe \xc3 end",
    b"ctrl \x01\x1f bell\x07",
    b"pipe | and, comma",
    "unicode \u00e9\u4e2d\U0001F600".encode("utf-8"),
    b"L" * 10000,
    b"",
]


def esc(b):
    return b.replace(b"\\", b"\\\\").replace(b"\t", b"\\t").replace(b"\n", b"\\n")


@pytest.fixture(scope="module")
def hostile_feed(tmp_path_factory):
    lines = [b"path\tweird \"path\".json", b"input\t9\t99"]
    t = 0
    lines.append(b"ev\thost\t1\t1\t1\t0\t1000000\t0\tcpu_op\tProfilerStep#1")
    for i, name in enumerate(HOSTILE + [b"tab\there", b"newline\nthere"]):
        lines.append(b"ev\thost\t0\t1\t1\t%d\t%d\t0\tcpu_op\t%s" % (t, 1000 + i, esc(name)))
        lines.append(b"ev\tkernel\t0\t0\t7\t%d\t%d\t0\tkernel\t%s" % (t, 500 + i, esc(name)))
        t += 5000
    p = tmp_path_factory.mktemp("hostile") / "hostile.feed"
    p.write_bytes(b"\n".join(lines) + b"\n")
    return p


def test_hostile_names(hostile_feed):
    names = HOSTILE + [b"tab\there", b"newline\nthere"]
    valid = [n.decode("utf-8") for n in names if is_utf8(n)]
    for fmt in ("json", "stage_times"):
        doc = json.loads(run(hostile_feed, fmt, 100).decode("utf-8"))  # strict UTF-8
        if fmt == "json":
            got = {r["name"] for r in doc["top_cpu_ops"]}
            assert set(valid) <= got
            # invalid bytes became U+FFFD, nothing else was lost
            assert "bad utf8 \ufffd\ufffd \ufffd end" in got
            assert len(doc["top_gpu_kernels"]) == len(names)
            assert doc["input"]["path"] == "weird \"path\".json"
    rows = list(csv.reader(io.StringIO(run(hostile_feed, "op_stats").decode(
        "utf-8", errors="surrogateescape"), newline="")))
    assert len(rows) == 1 + len(names)
    assert {r[0] for r in rows[1:]} >= set(valid)
    check_markdown_tables(run(hostile_feed, "markdown", 100).decode("utf-8", errors="replace"))
    text = run(hostile_feed, "text", 100).decode("utf-8", errors="replace")
    assert max(len(line) for line in text.splitlines()) < 200
    assert "\x01" not in text and "\x07" not in text


def is_utf8(b):
    try:
        b.decode("utf-8")
        return True
    except UnicodeDecodeError:
        return False


def test_bad_feed_is_reported(tmp_path):
    p = tmp_path / "bad.feed"
    p.write_text("ev\thost\t0\t1\t1\tnot-a-number\t1\t0\tcat\tname\n")
    r = subprocess.run([str(TOOL), str(p)], capture_output=True)
    assert r.returncode == 2
    assert r.stderr.decode().startswith(str(p) + ":1: ")
