"""`trace_format: perfetto`: the example training loop's traces in Perfetto's protobuf format.

The files are decoded with the Perfetto project's own definitions (perfetto_trace_pb2 of the
`perfetto` package from PyPI, requirements-dev.txt), not with tprof's reader: every packet parses,
every slice begins and ends on its track in nesting order, interned names resolve, and the ops'
calls and times in that decoding are those of op_stats.csv, which the library computed from the
window in memory. `tprof analyze`, `check`, `report` and `merge` read the files; the analysis of a
.pftrace equals the run's summary.json and the analysis of its JSON (written by `tprof merge`),
and tprof_ref (the independent Python reference) agrees on that JSON. SIGTERM mid-window leaves a
valid partial .pftrace that summary.json describes. `tprof merge -o FILE.pftrace` writes the
merged ranks (or one converted trace: CPU, GPU, two ranks) as Perfetto's format: Perfetto's
definitions decode the same slices, counters and instants as the JSON `merge` writes of the same
inputs, and `tprof analyze` gives the same analysis of both."""

import collections
import csv
import gzip
import json

import pytest
from cli_helpers import ALL, FIXTURES, check_sum, profiled_run, ref_sum, sigterm_mid_window, tprof

from run_files import files_dir

pb = pytest.importorskip("perfetto.protos.perfetto.trace.perfetto_trace_pb2")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("pftrace")
    return profiled_run(out, "run", "--profiling.trace_format", "perfetto",
                        "--profiling.profile_memory", "true", "--profiling.active", "6")


def pftraces(run_dir):
    return sorted(files_dir(run_dir).glob("trace_*.pftrace"))


def decode(path):
    """The slices of a trace as Perfetto's definitions read it: (name, category, ts, dur), and
    the counter values and instants seen."""
    trace = pb.Trace()
    trace.ParseFromString(path.read_bytes())
    names, cats = {}, {}
    stacks = collections.defaultdict(list)
    described = set()
    slices, counters, instants = [], 0, 0
    for p in trace.packet:
        assert p.trusted_packet_sequence_id == 1
        if p.sequence_flags & 1:  # SEQ_INCREMENTAL_STATE_CLEARED
            names.clear(), cats.clear()
        for e in p.interned_data.event_names:
            names[e.iid] = e.name
        for e in p.interned_data.event_categories:
            cats[e.iid] = e.name
        if p.HasField("track_descriptor"):
            assert p.track_descriptor.uuid not in described
            described.add(p.track_descriptor.uuid)
        if not p.HasField("track_event"):
            continue
        te = p.track_event
        assert te.track_uuid in described
        if te.type == pb.TrackEvent.TYPE_SLICE_BEGIN:
            stacks[te.track_uuid].append((names[te.name_iid],
                                          [cats[c] for c in te.category_iids], p.timestamp))
        elif te.type == pb.TrackEvent.TYPE_SLICE_END:
            name, cat, ts = stacks[te.track_uuid].pop()
            assert p.timestamp >= ts
            slices.append((name, cat, ts, p.timestamp - ts))
        elif te.type == pb.TrackEvent.TYPE_COUNTER:
            counters += 1
        else:
            instants += 1
    assert not any(stacks.values()), "slices begun and never ended"
    header = [m for p in trace.packet for m in p.chrome_events.metadata]
    assert [m.name for m in header] == ["tprof_header"]
    return slices, counters, instants, json.loads(header[0].json_value)


def test_decoded_by_perfettos_definitions(run):
    paths = pftraces(run)
    assert len(paths) == 3  # steps 0-5, 6-11 and the partial 12-12
    calls, total = collections.Counter(), collections.Counter()
    counters = instants = 0
    for path in paths:
        slices, c, i, header = decode(path)
        counters, instants = counters + c, instants + i
        assert header["tprof"]["window"].startswith("steps_")
        assert header["traceEvents"] == []
        for name, _, _, dur in slices:
            calls[name] += 1
            total[name] += dur
    assert counters > 0 and instants > 0  # profile_memory: the memory counter and its events
    with open(files_dir(run) / "op_stats.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows
    for row in rows:
        assert calls[row["name"]] == int(row["calls"]), row["name"]
        # the file holds ns; op_stats.csv µs with 3 decimals
        assert total[row["name"]] == round(float(row["total_us"]) * 1000), row["name"]


def test_commands_read_it(run, tmp_path):
    assert tprof("check", run, rc=0).stdout.decode().startswith(f"{run}: ok: 3 traces")
    got = json.loads(tprof("analyze", "--json", "--top", ALL, run, rc=0).stdout)
    summary = json.loads((files_dir(run) / "summary.json").read_text())
    for k in ("count", "total_us", "mean_us", "p50_us", "p95_us", "max_us", "list"):
        assert got["steps"][k] == summary["steps"][k], k
    assert got["stages"] == summary["stages"]
    # the same window as JSON, through tprof merge: the same analysis, and tprof_ref's figures
    for path in pftraces(run):
        as_json = tmp_path / (path.stem + ".json")
        tprof("merge", path, "-o", as_json, rc=0)
        a = json.loads(tprof("analyze", "--json", "--top", ALL, path, rc=0).stdout)
        b = json.loads(tprof("analyze", "--json", "--top", ALL, as_json, rc=0).stdout)
        check_sum(ref_sum([as_json]), a)
        # merge writes a tprof object of its own, without the window's partial mark
        for k in ("input", "windows", "warnings"):
            del a[k], b[k]
        assert a == b
    tprof("report", run, "-o", tmp_path / "r.html", rc=0)
    assert (tmp_path / "r.html").stat().st_size > 0


def test_bad_file_is_one_line(tmp_path):
    bad = tmp_path / "bad.pftrace"
    bad.write_bytes(b"\x0a\x06\x5a\x04\x48\x02\x58\x01")  # an END on an undescribed track
    p = tprof("analyze", bad, rc=2)
    text = p.stderr.decode()
    assert text.count("\n") == 1 and "bad.pftrace: packet 1: " in text


def test_sigterm_mid_window(tmp_path):
    """A signal's flush writes the open window as a valid partial .pftrace, and the run's
    summary describes what it holds."""
    run_dir = sigterm_mid_window(tmp_path, "--profiling.trace_format=perfetto")
    [path] = pftraces(run_dir)
    slices, _, _, header = decode(path)
    assert header["tprof"]["partial"] is True
    steps = sorted(int(n.split("#")[1]) for n, _, _, _ in slices if n.startswith("ProfilerStep#"))
    assert steps == list(range(len(steps))) and len(steps) >= 19
    got = json.loads(tprof("analyze", "--json", path, rc=0).stdout)
    summary = json.loads((files_dir(run_dir) / "summary.json").read_text())
    assert got["steps"]["count"] == summary["steps"]["count"] == len(steps)


# tprof's copy of each dataloader range for TensorBoard's plugin: in the JSON trace only
DATALOADER_TWIN = "enumerate(DataLoader)#dataloader.__next__"


def json_events(path):
    """The slices (name, categories, absolute ns, ns), the count of counters and of instants of
    a JSON trace tprof wrote, as decode() gives them for a Perfetto trace."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    base = doc["baseTimeNanoseconds"]
    slices, counters, instants = [], 0, 0
    for e in doc["traceEvents"]:
        if e["ph"] == "X" and e["name"] != DATALOADER_TWIN:
            slices.append((e["name"], [e["cat"]] if "cat" in e else [],
                           base + round(e["ts"] * 1000), round(e["dur"] * 1000)))
        counters += e["ph"] == "C"
        instants += e["ph"] == "i"
    return slices, counters, instants


@pytest.mark.parametrize("inputs", [
    ["torch2/cnn_cpu_3steps.pt.trace.json.gz"],
    ["gpu-h200/torch_mlp.tprof.json.gz"],
    ["gpu-h200/train_mlp_cuda.tprof.json.gz"],
    ["gpu-h200/torch_mlp.torch_profiler.pt.trace.json.gz"],
    ["kineto/sampled_rank-0.json.gz", "kineto/sampled_rank-1.json.gz"],
], ids=["cpu", "gpu-tprof", "gpu-cuda", "gpu-torch", "ranks"])
def test_merge_writes_perfetto(tmp_path, inputs):
    paths = [FIXTURES / i for i in inputs]
    pf, js = tmp_path / "m.pftrace", tmp_path / "m.json"
    tprof("merge", *paths, "-o", pf, rc=0)
    tprof("merge", *paths, "-o", js, rc=0)
    assert pf.read_bytes()[:1] == b"\x0a"  # a TracePacket, not JSON
    slices, counters, instants, header = decode(pf)
    want_slices, want_counters, want_instants = json_events(js)
    assert slices and sorted(slices) == sorted(want_slices)
    assert (counters, instants) == (want_counters, want_instants)
    assert header["traceName"] == "tprof merge"
    assert [r["rank"] for r in header["tprof"]["merged"]["ranks"]] == list(range(len(inputs)))
    a = json.loads(tprof("analyze", "--json", "--top", ALL, pf, rc=0).stdout)
    b = json.loads(tprof("analyze", "--json", "--top", ALL, js, rc=0).stdout)
    for k in ("input", "windows", "warnings"):
        del a[k], b[k]
    assert a == b
    if len(inputs) > 1:
        return  # merged again, the ranks would become one
    # and back: the Perfetto trace converted to JSON analyses the same
    back = tmp_path / "back.json"
    tprof("merge", pf, "-o", back, rc=0)
    c = json.loads(tprof("analyze", "--json", "--top", ALL, back, rc=0).stdout)
    for k in ("input", "windows", "warnings"):
        del c[k]
    assert c == a


def sdk_like_trace():
    """A trace as the Perfetto SDK writes one, built with Perfetto's own classes, without tprof's
    header: a process, a thread track under it and one standing alone, two packet sequences whose
    interned iid 1 names different events, a sequence's default track, names, categories and
    annotation names inline, an annotation of a kind tprof does not read."""
    trace = pb.Trace()

    def packet(seq=None, ts=None):
        p = trace.packet.add()
        if seq is not None:
            p.trusted_packet_sequence_id = seq
        if ts is not None:
            p.timestamp = ts
        return p

    d = packet().track_descriptor
    d.uuid, d.process.pid, d.process.process_name = 10, 42, "trainer"
    d = packet().track_descriptor
    d.uuid, d.parent_uuid, d.thread.pid, d.thread.tid, d.thread.thread_name = 11, 10, 42, 43, "main"
    d = packet().track_descriptor
    d.uuid, d.thread.pid, d.thread.tid = 12, 42, 44  # no parent: SDK threads stand alone

    def begin(p, **fields):
        p.track_event.type = pb.TrackEvent.TYPE_SLICE_BEGIN
        for k, v in fields.items():
            if k in ("category_iids", "categories"):
                getattr(p.track_event, k).extend(v)
            else:
                setattr(p.track_event, k, v)
        return p.track_event

    p = packet(1, 1_000_000)
    p.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    p.trace_packet_defaults.track_event_defaults.track_uuid = 11
    p.interned_data.event_names.add(iid=1, name="forward")
    p.interned_data.event_categories.add(iid=1, name="user_annotation")
    begin(p, name_iid=1, category_iids=[1])
    te = begin(packet(1, 2_000_000), name="aten::mm", categories=["cpu_op"])
    te.debug_annotations.add(name="flops", int_value=123456)
    te.debug_annotations.add(name="note", pointer_value=7)  # a kind tprof skips
    packet(1, 3_500_000).track_event.type = pb.TrackEvent.TYPE_SLICE_END
    packet(1, 5_000_000).track_event.type = pb.TrackEvent.TYPE_SLICE_END
    p = packet(2, 6_000_000)
    p.sequence_flags = pb.TracePacket.SEQ_INCREMENTAL_STATE_CLEARED
    p.interned_data.event_names.add(iid=1, name="backward")
    begin(p, name_iid=1, track_uuid=12, categories=["user_annotation"])
    p = packet(2, 9_000_000)
    p.track_event.type, p.track_event.track_uuid = pb.TrackEvent.TYPE_SLICE_END, 12
    return trace


def test_other_producers_track_events(tmp_path):
    path = tmp_path / "sdk.pftrace"
    path.write_bytes(sdk_like_trace().SerializeToString())
    got = json.loads(tprof("analyze", "--json", "--top", ALL, path, rc=0).stdout)
    ops = {o["name"]: o for o in got["top_cpu_ops"]}
    assert ops["aten::mm"]["calls"] == 1 and ops["aten::mm"]["total_us"] == 1500
    assert ops["aten::mm"]["flops"] == 123456
    assert ops["forward"]["total_us"] == 4000 and ops["backward"]["total_us"] == 3000
    # what tprof cannot use is one line naming the packet: timestamps of a sequence's own clock
    trace = sdk_like_trace()
    trace.packet[-1].timestamp_clock_id = 64
    path.write_bytes(trace.SerializeToString())
    text = tprof("analyze", path, rc=2).stderr.decode()
    assert text.count("\n") == 1 and f"sdk.pftrace: packet {len(trace.packet)}: " in text
    assert "incremental timestamps" in text
