"""Ranges nested deeper than one record chunk holds (issue 10, item 4). Before: past 4095 open
ranges a thread dropped every later range of the window, later steps included, and the warning
blamed max_events. Now only the ranges deeper than the limit (4095, docs/RELIABILITY.md) are
dropped and counted, and the warning names the nesting."""

import collections

import pytest
from hostile import load, profiled, traces

from run_files import files_dir

LIMIT = 4095


def names(trace):
    return collections.Counter(e["name"] for e in trace["traceEvents"] if e.get("ph") == "X")


@pytest.mark.parametrize("depth", [LIMIT, LIMIT + 1, 5000, 20000])
def test_deep_nesting_loses_only_the_too_deep_ranges(tmp_path, depth):
    p = profiled("deep", depth, tmp_path, "run", "--profiling.wait", "1",
                 "--profiling.active", "2")
    [path] = traces(tmp_path / "run")
    trace = load(path)
    got = names(trace)
    too_deep = max(0, depth - LIMIT)
    assert got["deep"] == depth - too_deep
    # what follows the deep ranges, in the same step and the next, is all there
    assert (got["outer"], got["after"], got["later"]) == (1, 10, 10)
    assert got["ProfilerStep#1"] == got["ProfilerStep#2"] == 1
    assert trace["tprof"]["dropped_events"] == too_deep
    if too_deep:
        [line] = [line for line in p.stderr.splitlines() if "dropped" in line]
        assert "%d events dropped: ranges nested more than %d deep" % (too_deep, LIMIT) in line
        assert "max_events" not in line
    else:
        assert "dropped" not in p.stderr
    summary = load(files_dir(tmp_path / "run") / "summary.json")
    assert summary["windows"]["dropped_events"] == too_deep
