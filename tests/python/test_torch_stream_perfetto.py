"""A streamed window (`stream: true`) of a PyTorch loop through tprof.torch written in Perfetto's
format (`trace_format: perfetto`): the .pftrace is appended as the window records (each range's
begin and end together, as the ranges end: the observer's ops, module ranges, with_stack's
Python frames, record_function's ranges written whole at their end), Perfetto's own definitions
(the `perfetto` package's perfetto_trace_pb2) decode it with every slice paired and the ops'
calls of op_stats.csv, and `tprof analyze` reads it back to the run's summary files, computed in
memory in pieces while it recorded."""
import collections
import csv
import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")

from pftrace_layout import begins_end_at_once, lanes_nest_by_time, packets  # noqa: E402
from run_files import artifact, files_dir  # noqa: E402
from summary_files import analyze  # noqa: E402
from test_torch_stream import LOOP, MAX_EVENTS, STEPS  # noqa: E402

SOURCE_KEYS = ("run", "rank_summary", "input", "windows")  # where the figures came from


def slice_names(path):
    """The name of each slice (its begin's), as Perfetto's definitions decode them."""
    names, out = {}, []
    for p in packets(path):
        if p.sequence_flags & 1:  # SEQ_INCREMENTAL_STATE_CLEARED
            names.clear()
        for e in p.interned_data.event_names:
            names[e.iid] = e.name
        if p.HasField("track_event") and p.track_event.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            out.append(names[p.track_event.name_iid])
    return out


def test_a_streamed_pftrace_has_the_figures_of_the_summary(tmp_path):
    loop = LOOP.replace("stream=True,", "stream=True, trace_format='perfetto',")
    assert loop != LOOP
    r = subprocess.run([sys.executable, "-c", loop, str(tmp_path), str(MAX_EVENTS), str(STEPS),
                        "1"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    run = str(tmp_path / "run")
    [trace] = sorted(str(p) for p in files_dir(tmp_path / "run").glob("trace_*.pftrace"))
    assert begins_end_at_once(trace) and lanes_nest_by_time(trace)
    names = slice_names(trace)
    assert len(names) > 2 * (MAX_EVENTS // 8)
    calls = collections.Counter(names)
    with open(artifact(run, "op_stats.csv"), encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 10
    for row in rows:
        assert calls[row["name"]] == int(row["calls"]), row["name"]
    with open(artifact(run, "summary.json"), encoding="utf-8") as f:
        summary = json.load(f)
    assert summary["run"]["errors"] == [] and summary["run"]["dropped_events"] == 0
    assert summary["steps"]["count"] == STEPS and "call_stacks" in summary
    whole = json.loads(analyze([trace], "--json", "--top", "1000"))
    assert {k: v for k, v in summary.items() if k not in SOURCE_KEYS} == \
        {k: v for k, v in whole.items() if k not in SOURCE_KEYS}
