"""`tprof compare A B`: a real trace against a copy whose times are scaled by 1.2 (every step 20%
slower) and one op and one kernel renamed. The expected figures come from tprof_ref on each file;
--fail-above gates at the right threshold; ops and kernels on one side are added or removed; the
JSON output has exactly the documented keys; text and Markdown carry the change."""

import decimal
import gzip
import json
import re

import pytest
from cli_helpers import ALL, SOURCE, TRACES, close, error_line, tprof

import tprof_ref

SOURCE_TRACE = next(p for p in TRACES if "nccl_data" in p.name)
OP = "aten::empty"
KERNEL = "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"
TIME = re.compile(rb'"(ts|dur)": (-?[0-9]+(?:\.[0-9]+)?)')


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """A (the fixture) and B: times x 1.2 to the nanosecond, OP and KERNEL renamed."""
    raw = gzip.decompress(SOURCE_TRACE.read_bytes())

    def scale(m):
        v = (decimal.Decimal(m.group(2).decode()) * decimal.Decimal("1.2")).quantize(
            decimal.Decimal("0.001"))
        return b'"%s": %s' % (m.group(1), str(v).encode())

    scaled = TIME.sub(scale, raw)
    assert scaled.count(b'"name": "%s"' % OP.encode()) > 0
    assert scaled.count(KERNEL.encode()) > 0
    scaled = scaled.replace(b'"name": "%s"' % OP.encode(), b'"name": "%s_v2"' % OP.encode())
    scaled = scaled.replace(KERNEL.encode(), b"renamed_" + KERNEL.encode())
    b = tmp_path_factory.mktemp("compare") / "scaled.json"
    b.write_bytes(scaled)
    return SOURCE_TRACE, b


def compare_json(*args, rc=0):
    return json.loads(tprof("compare", "--json", *args, rc=rc).stdout)


def test_step_change(pair):
    a, b = pair
    ra, rb = tprof_ref.analyze(str(a)), tprof_ref.analyze(str(b))
    got = compare_json("--top", ALL, a, b)
    assert got["a"]["steps"] == ra["steps"]["count"] and got["b"]["steps"] == rb["steps"]["count"]
    assert got["a"]["mean_step_us"] == ra["steps"]["mean_us"]
    assert got["b"]["mean_step_us"] == rb["steps"]["mean_us"]
    want = (rb["steps"]["mean_us"] - ra["steps"]["mean_us"]) / ra["steps"]["mean_us"] * 100
    assert close(want, got["step_change_pct"])
    assert abs(got["step_change_pct"] - 20) < 0.001


def test_ops_and_kernels(pair):
    a, b = pair
    ra, rb = tprof_ref.analyze(str(a)), tprof_ref.analyze(str(b))
    got = compare_json("--top", ALL, a, b)
    for kind, key, measure, renamed in (("ops", "top_cpu_ops", "self_us", OP),
                                        ("kernels", "top_gpu_kernels", "total_us", KERNEL)):
        wa = {r["name"]: r for r in ra[key]}
        wb = {r["name"]: r for r in rb[key]}
        rows = {r["name"]: r for r in got[kind]}
        assert set(rows) == set(wa) | set(wb)
        for name, r in rows.items():
            status = ("changed" if name in wa and name in wb
                      else "added" if name in wb else "removed")
            assert r["status"] == status, name
            a_us = wa[name][measure] if name in wa else 0
            b_us = wb[name][measure] if name in wb else 0
            assert (r["a_us"], r["b_us"]) == (a_us, b_us), name
            assert round(r["delta_us"] * 1000) == round(b_us * 1000) - round(a_us * 1000)
            assert r["a_calls"] == (wa[name]["calls"] if name in wa else 0)
        assert rows[renamed]["status"] == "removed"
        added = [n for n, r in rows.items() if r["status"] == "added"]
        assert added == [renamed + "_v2"] if kind == "ops" else added == ["renamed_" + renamed]
        assert got[kind + "_added"] == 1 and got[kind + "_removed"] == 1
        # sorted by absolute change, descending
        deltas = [abs(r["delta_us"]) for r in got[kind]]
        assert deltas == sorted(deltas, reverse=True)


def test_fail_above(pair):
    a, b = pair
    p = tprof("compare", a, b, "--fail-above", "10", rc=1)
    assert p.stdout.startswith(b"tprof compare")
    assert "mean step time up 20.00% (more than 10%)" in error_line(p)
    assert tprof("compare", a, b, "--fail-above=30", rc=0).stderr == b""
    # B 16.7% faster than A: more than -20% ("at most 20% faster"), not more than -10%
    tprof("compare", b, a, "--fail-above", "-10", rc=0)
    tprof("compare", b, a, "--fail-above", "-20", rc=1)
    tprof("compare", a, b, rc=0)  # no gate


def test_side_without_steps(pair, tmp_path):
    no_steps = tmp_path / "no_steps.json"
    no_steps.write_text(json.dumps({"traceEvents": [
        {"ph": "X", "name": "op", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 0, "dur": 5}]}))
    got = compare_json(pair[0], no_steps)
    assert got["step_change_pct"] is None and got["b"]["mean_step_us"] is None
    p = tprof("compare", pair[0], no_steps, "--fail-above", "5", rc=2)
    assert "B has no ProfilerStep" in error_line(p)


def documented_keys():
    text = (SOURCE / "docs" / "ANALYZE_JSON.md").read_text(encoding="utf-8")
    section = text.split("## `tprof compare A B --json`")[1].split("\n## ")[0]
    keys = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            keys |= set(re.findall(r"`([^`]+)`", line.split(" | ")[0]))
    # "kernels[]: as ops[]"
    return keys | {k.replace("ops[]", "kernels[]") for k in keys if k.startswith("ops[]")}


def key_paths(value, prefix=""):
    if isinstance(value, dict):
        return set().union(*(key_paths(v, prefix + k + ".") for k, v in value.items()))
    if isinstance(value, list):
        return {prefix[:-1] + "[]"}.union(*(key_paths(v, prefix[:-1] + "[].") for v in value))
    return {prefix[:-1]}


def test_json_keys_are_documented(pair):
    got = key_paths(compare_json(*pair))
    assert got == documented_keys()


def test_text_and_markdown(pair):
    a, b = pair
    text = tprof("compare", "--top", 3, a, b, rc=0).stdout.decode()
    assert "change +20.0%" in text
    assert "removed" in text or "added" in text or "(top 3 of" in text
    md = tprof("compare", "--markdown", a, b, rc=0).stdout.decode()
    assert "+20.0%" in md and re.search(r"^\|---", md, re.M)
    with pytest.raises(AssertionError):
        tprof("compare", "--json", "--markdown", a, b, rc=0)


def test_sides_of_several_inputs():
    r0, r1 = (p for p in TRACES if "sampled_rank" in p.name)
    got = compare_json("--a", r0, "--b", r0, "--b", r1)
    ra0, ra1 = tprof_ref.analyze(str(r0)), tprof_ref.analyze(str(r1))
    assert got["a"]["steps"] == 2 and got["b"]["steps"] == 4
    mean_b = (ra0["steps"]["total_us"] + ra1["steps"]["total_us"]) / 4
    assert abs(got["b"]["mean_step_us"] - mean_b) < 0.001


@pytest.mark.parametrize("args", [[], ["one"], ["a", "b", "c"], ["--a", "x", "y", "z"],
                                  ["--a", "x"], ["--fail-above", "abc", "a", "b"]])
def test_usage_errors(args):
    error_line(tprof("compare", *args, rc=2))


def test_unreadable_side(pair, tmp_path):
    p = tprof("compare", pair[0], tmp_path / "missing.json", rc=2)
    assert "missing.json: cannot open" in error_line(p)
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1,')
    assert re.match(r"tprof: .*bad\.json: byte \d+: ", error_line(
        tprof("compare", bad, pair[0], "--fail-above", "1", rc=2)))


def test_stages_compared(pair):
    """Stage times per step, other included: B is A at 1.2x, so each changes by +20%."""
    a, b = pair
    ra, rb = tprof_ref.analyze(str(a)), tprof_ref.analyze(str(b))
    got = compare_json(a, b)["stages"]
    assert [r["name"] for r in got] == [s["stage"] for s in ra["stages"]] + ["other"]
    for row, sa, sb in zip(got, ra["stages"] + [ra["other"]], rb["stages"] + [rb["other"]]):
        assert row["status"] == "changed"
        assert row["a_calls"] == sa["count"] and row["b_calls"] == sb["count"]
        assert abs(row["a_us"] - sa["total_us"] / ra["steps"]["count"]) <= 0.001
        if sa["total_us"] > 0:
            assert abs(row["delta_pct"] - 20) < 0.01, row
        else:
            assert row["delta_pct"] is None
    assert any(r["a_us"] > 0 for r in got)
    assert b"Stages (time per step)" in tprof("compare", a, b, rc=0).stdout


def test_fail_above_targets(pair):
    """--fail-above names what it gates: step, stage:NAME, op:NAME; several gates combine."""
    a, b = pair
    busy = [s["stage"] for s in tprof_ref.analyze(str(a))["stages"] if s["total_us"] > 0][0]
    assert "mean step time up 20.00%" in error_line(
        tprof("compare", a, b, "--fail-above", "step=10", rc=1))
    p = tprof("compare", a, b, "--fail-above", "stage:%s=10" % busy, rc=1)
    assert "stage:%s up 20.00%% (more than 10%%)" % busy in error_line(p)
    tprof("compare", a, b, "--fail-above", "stage:%s=30" % busy, rc=0)
    tprof("compare", a, b, "--fail-above", "stage:other=30", rc=0)
    # OP is only in A (removed: -100%), OP_v2 only in B (added: no limit holds)
    tprof("compare", a, b, "--fail-above", "op:%s=0" % OP, rc=0)
    tprof("compare", a, b, "--fail-above", "op:%s_v2=1000" % OP, rc=1)
    # the worst gate decides
    tprof("compare", a, b, "--fail-above", "30", "--fail-above", "stage:%s=10" % busy, rc=1)
    for bad in ("op:no_such_op=1", "stage:no_such_stage=1"):
        assert "no such" in error_line(tprof("compare", a, b, "--fail-above", bad, rc=2))
    tprof("compare", a, b, "--fail-above", "kernel:x=1", rc=2)
    tprof("compare", a, b, "--fail-above", "stage:forward=abc", rc=2)
