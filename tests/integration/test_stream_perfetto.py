"""Streamed windows in Perfetto's format (`stream: true` with `trace_format: perfetto`).

The window's .pftrace is appended segment by segment while it records (each range's begin and
end one after the other, as the ranges end), where the whole-window writer sorts each track's
ranges at the window's end. The files are decoded with the Perfetto project's own definitions
(test_perfetto_format's decode: perfetto_trace_pb2 of the `perfetto` package), not tprof's
reader: every packet parses, slices pair on their tracks, interned names resolve across the
segments. The streamed trace holds the same slices, counters and instants as the whole-window
trace of the same loop; the ops' calls and times Perfetto's definitions find in it are
op_stats.csv's, which the library computed in memory; `tprof analyze` of it gives the run's
summary.json, the figures of the whole-window .pftrace and of the streamed JSON trace of the same
loop (those that do not depend on the run's timing), and tprof_ref's on its JSON conversion. A
SIGKILL mid-window leaves trace_0001_streaming.partial.pftrace, a whole trace of the segments
written, which Perfetto's definitions and `tprof analyze` read; one cut inside a packet (a kill
inside a write) `tprof analyze` reads up to its last whole packet."""

import collections
import csv
import json
import pathlib
import signal

from cli_helpers import ALL, check_sum, ref_sum, sigterm_mid_window, tprof
from test_perfetto_format import decode, pb
from test_stream import ops, profile

from pftrace_layout import begins_end_at_once, lanes_nest_by_time, packets
from run_files import files_dir

PERFETTO = "--profiling.trace_format=perfetto"
MEMORY = "--profiling.profile_memory=true"


def run(out, stream, *args):
    """test_stream's run of the example (40 steps, 30 in the first window), as a Path."""
    return pathlib.Path(profile(out, stream, *args))


def pftraces(run_dir):
    return sorted(files_dir(run_dir).glob("trace_*.pftrace"))


def varint(data, i):
    value = shift = 0
    while True:
        value |= (data[i] & 0x7F) << shift
        shift += 7
        i += 1
        if not data[i - 1] & 0x80:
            return value, i


def torn_write_is_read_up_to_its_last_whole_packet(tmp_path, path):
    """A kill inside the writer's one write of a segment leaves the file cut inside a packet:
    `tprof analyze` keeps the slices whole before the cut (the protocol's own framing finds
    them), and says so."""
    data = path.read_bytes()
    cut = len(data) * 2 // 3 + 3
    whole = 0  # the end of the last whole packet before the cut
    while True:
        tag, i = varint(data, whole)
        assert tag == 0x0A  # Trace.packet, length-delimited
        size, i = varint(data, i)
        if i + size > cut:
            break
        whole = i + size
    if whole == cut:  # (the sizes vary with the run's timing) a cut inside a packet, not after
        cut += 1
    assert whole < cut
    torn = tmp_path / "torn" / path.name
    torn.parent.mkdir()
    torn.write_bytes(data[:cut])
    prefix = tmp_path / "prefix.pftrace"
    prefix.write_bytes(data[:whole])
    ps = packets(prefix)
    names, begun, steps = {}, {}, 0
    for p in ps:
        for e in p.interned_data.event_names:
            names[e.iid] = e.name
        te = p.track_event
        if p.HasField("track_event") and te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            begun[te.track_uuid] = names[te.name_iid]
        elif p.HasField("track_event") and te.type == pb.TrackEvent.TYPE_SLICE_END:
            steps += begun.pop(te.track_uuid).startswith("ProfilerStep#")
    a = analysis(torn.parent)
    assert a["steps"]["count"] == steps > 0
    assert [w for w in a["warnings"] if "cut short" in w]


def analysis(path):
    return json.loads(tprof("analyze", "--json", "--top", ALL, path, rc=0).stdout)


def stages(a):
    return [(s["stage"], s["count"]) for s in a["stages"]]


def test_streamed_perfetto_reads_as_the_whole_window_and_the_json(tmp_path):
    streamed = run(tmp_path / "s", "true", "--profiling.top_k=1000", PERFETTO, MEMORY)
    whole = run(tmp_path / "w", "false", "--profiling.top_k=1000", PERFETTO, MEMORY)
    as_json = run(tmp_path / "j", "true", "--profiling.top_k=1000", MEMORY)
    ts, tw = pftraces(streamed), pftraces(whole)
    assert [p.name for p in ts] == [p.name for p in tw]
    assert len(ts) == 2  # steps 2-31, and the window the end of the run cuts
    calls, total = collections.Counter(), collections.Counter()
    for a, b in zip(ts, tw):
        assert begins_end_at_once(a) and not begins_end_at_once(b)
        assert lanes_nest_by_time(a)
        sa, ca, ia, ha = decode(a)
        sb, cb, ib, hb = decode(b)
        # the same slices (by what does not depend on the run's timing), counters, instants
        assert collections.Counter((n, tuple(c)) for n, c, _, _ in sa) == \
            collections.Counter((n, tuple(c)) for n, c, _, _ in sb)
        assert (ca, ia) == (cb, ib) and ca > 0 and ia > 0
        assert {k: v for k, v in ha["tprof"].items() if k != "config"} == \
            {k: v for k, v in hb["tprof"].items() if k != "config"}
        assert "interrupted" not in ha["tprof"]
        for name, _, _, dur in sa:
            calls[name] += 1
            total[name] += dur
    # Perfetto's definitions find op_stats.csv's calls and times (computed in memory)
    with open(files_dir(streamed) / "op_stats.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) >= 10
    for row in rows:
        assert calls[row["name"]] == int(row["calls"]), row["name"]
        assert total[row["name"]] == round(float(row["total_us"]) * 1000), row["name"]
    # tprof reads the streamed traces back to the run's summary, computed in memory
    a = analysis(streamed)
    summary = json.loads((files_dir(streamed) / "summary.json").read_text())
    for k in ("count", "total_us", "mean_us", "p50_us", "p95_us", "max_us", "list"):
        assert a["steps"][k] == summary["steps"][k], k
    assert a["stages"] == summary["stages"]
    assert a["top_cpu_ops"] == summary["top_cpu_ops"]
    # and to the figures of the same loop's whole-window .pftrace and streamed JSON trace
    for other in (analysis(whole), analysis(as_json)):
        assert ops(a) == ops(other) and len(ops(a)) >= 10
        assert a["steps"]["count"] == other["steps"]["count"] >= 31
        assert stages(a) == stages(other)
    # each streamed trace as JSON (tprof merge): the same analysis, and tprof_ref's figures
    for path in ts:
        converted = tmp_path / (path.stem + ".json")
        tprof("merge", path, "-o", converted, rc=0)
        x, y = analysis(path), analysis(converted)
        check_sum(ref_sum([converted]), x)
        for k in ("input", "windows", "warnings"):
            del x[k], y[k]
        assert x == y


def test_sigkill_mid_streamed_perfetto_window_leaves_a_valid_unfinished_trace(tmp_path):
    # 120 steps, then half a second more (a segment every few ms): no flush. Stopped first, so
    # that the writer is between two writes (each segment and its provisional header is one)
    run_dir = sigterm_mid_window(tmp_path, "--profiling.wait=2", "--profiling.stream=true",
                                 PERFETTO, MEMORY, after=120, signum=signal.SIGKILL, settle=0.5,
                                 stop_first=True)
    names = sorted(p.name for p in files_dir(run_dir).iterdir())
    assert names == ["config.json", "trace_0001_streaming.partial.pftrace"]  # no summary files
    path = files_dir(run_dir) / names[1]
    slices, counters, instants, header = decode(path)
    assert header["tprof"]["partial"] is True and header["tprof"]["interrupted"] is True
    assert counters > 0 and instants > 0
    steps = sorted(int(n.split("#")[1]) for n, _, _, _ in slices if n.startswith("ProfilerStep#"))
    assert steps[0] == 2 and steps == list(range(2, 2 + len(steps))) and len(steps) >= 118
    a = analysis(run_dir)
    assert a["steps"]["count"] == len(steps)
    unfinished = [w for w in a["warnings"] if "unfinished trace" in w]
    assert len(unfinished) == 1 and names[1] in unfinished[0]
    torn_write_is_read_up_to_its_last_whole_packet(tmp_path, path)
    # a later run with the run_id removes it with the rest of the earlier run
    again = run(tmp_path, "true", PERFETTO)
    assert again == run_dir
    left = sorted(p.name for p in files_dir(run_dir).iterdir())
    assert not [n for n in left if ".partial." in n]
    assert len([n for n in left if n.endswith(".pftrace")]) == 2


def test_sigterm_mid_streamed_window_flushes_a_valid_trace(tmp_path):
    """A signal's flush ends the streamed .pftrace as a whole window's: partial, under the
    window's name, described by summary.json."""
    run_dir = sigterm_mid_window(tmp_path, "--profiling.wait=2", "--profiling.stream=true",
                                 PERFETTO, after=60)
    [path] = pftraces(run_dir)
    assert ".partial." not in path.name and begins_end_at_once(path)
    slices, _, _, header = decode(path)
    assert header["tprof"]["partial"] is True and "interrupted" not in header["tprof"]
    steps = [n for n, _, _, _ in slices if n.startswith("ProfilerStep#")]
    summary = json.loads((files_dir(run_dir) / "summary.json").read_text())
    assert summary["run"]["interrupted"] is True
    assert summary["steps"]["count"] == len(steps) >= 57
    assert analysis(path)["steps"]["count"] == len(steps)
