"""test_chrome_output.py - tprof's Chrome traces, read back with Python's json and gzip modules.

Each test composes a model here (by hand, at random, or from a real Kineto or PyTorch trace in
TPROF_FIXTURES), has build/tests/tp_write_sample write it with the C writer (plain and gzip),
and checks the files independently: valid JSON; the fields each phase requires; every event's
ts/dur equal to the model's nanoseconds exactly; names and args; launch -> kernel flows paired
as Kineto writes them; metadata names and sort order; the top-level keys.
"""
import gzip
import json
import os
import random
import subprocess
from decimal import ROUND_HALF_UP, Decimal

import pytest

TOOL = os.path.join(os.environ.get("TPROF_BUILD_DIR", "build"), "tests", "tp_write_sample")
FIXTURES = os.environ.get("TPROF_FIXTURES", "")

HOST, KERNEL, MEMCPY, MEMSET, GPU_ANNOTATION, INSTANT, MEMORY, COUNTER = range(1, 9)
DEVICE_KINDS = (KERNEL, MEMCPY, MEMSET, GPU_ANNOTATION)
RANGE_KINDS = (HOST,) + DEVICE_KINDS
STEP, TRUNCATED = 1, 2
GPU_SORT_BASE = 0x1000000


# ---- the model, as the test composes it ---------------------------------------------------------

class Model:
    def __init__(self):
        self.base_ns, self.rank, self.world_size, self.partial, self.dropped = 0, -1, -1, 0, 0
        self.config = self.window = self.trace_name = None  # bytes or None
        self.devices = []  # (id, name bytes, total_mem, major, minor, sms)
        self.tracks = []  # dict: pid, tid (int or bytes), process_name, thread_name (bytes)
        self.events = []  # dict: kind, track, ts, dur, corr, flags, cat, name, args
        self.track_index = {}

    def track(self, pid, tid, process_name=b"", thread_name=b""):
        key = (pid, tid)
        if key not in self.track_index:
            self.track_index[key] = len(self.tracks)
            self.tracks.append(dict(pid=pid, tid=tid, process_name=process_name,
                                    thread_name=thread_name))
        return self.track_index[key]

    def event(self, kind, track, ts, dur=0, name=b"e", cat=b"", corr=0, flags=0, args=()):
        """args: (key bytes, type 'i'|'d'|'s'|'j', value) with value int, float or bytes."""
        self.events.append(dict(kind=kind, track=track, ts=ts, dur=dur, corr=corr, flags=flags,
                                cat=cat, name=name, args=list(args)))

    def tsv(self):
        def opt(b):
            return "-" if b is None else b.hex()

        def num_or_str(v):
            return (str(v), "") if isinstance(v, int) else ("0", v.hex())

        out = ["M\t%d\t%d\t%d\t%d\t%d" % (self.base_ns, self.rank, self.world_size, self.partial,
                                          self.dropped),
               "O\t%s\t%s\t%s" % (opt(self.config), opt(self.window), opt(self.trace_name))]
        for d in self.devices:
            out.append("D\t%d\t%s\t%d\t%d\t%d\t%d" % (d[0], d[1].hex(), *d[2:]))
        for t in self.tracks:
            pid, pid_s = num_or_str(t["pid"])
            tid, tid_s = num_or_str(t["tid"])
            out.append("\t".join(["T", pid, pid_s, tid, tid_s, t["process_name"].hex(),
                                  t["thread_name"].hex()]))
        for e in self.events:
            fields = ["E"] + [str(e[k]) for k in ("kind", "track", "ts", "dur", "corr", "flags")]
            fields += [e["cat"].hex(), e["name"].hex()]
            for key, typ, val in e["args"]:
                fields += [key.hex(), typ, val.hex() if typ in "sj" else repr(val)]
            out.append("\t".join(fields))
        return "\n".join(out) + "\n"


def write(model, tmp_path):
    """Writes model with the C writer; returns (plain bytes, gzip bytes)."""
    tsv = tmp_path / "model.tsv"
    tsv.write_text(model.tsv())
    plain, gz = tmp_path / "trace.json", tmp_path / "trace.json.gz"
    subprocess.run([TOOL, str(tsv), str(plain), str(gz)], check=True, timeout=300)
    return plain.read_bytes(), gz.read_bytes()


# ---- what the trace must say, computed from the model -------------------------------------------

def as_text(b):
    """The writer's rule for bytes: valid UTF-8 kept, each other byte one U+FFFD."""
    out, i = [], 0
    while i < len(b):
        c = b[i]
        n = 1 if c < 0x80 else 2 if 0xC2 <= c <= 0xDF else 3 if 0xE0 <= c <= 0xEF else \
            4 if 0xF0 <= c <= 0xF4 else 0
        try:
            ch = b[i:i + n].decode("utf-8") if n else ""
        except UnicodeDecodeError:  # overlong, surrogate, cut short
            ch = ""
        if len(ch) == 1:
            out.append(ch)
            i += n
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


def json_or_none(b):
    """The value of raw JSON text b, or None when the writer must keep it as a string."""
    if b"\x7f" in b:
        return None  # legal JSON, but Perfetto's tokenizer rejects a raw DEL
    try:
        def bad(name):
            raise ValueError(name)
        return (json.loads(b.decode("utf-8"), parse_float=Decimal, parse_constant=bad),)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def id_value(v):
    return v if isinstance(v, int) else as_text(v)


def expected_args(e):
    args = {}
    for key, typ, val in e["args"]:
        if typ in "id":
            args[as_text(key)] = val
        elif typ == "s":
            args[as_text(key)] = as_text(val)
        else:
            parsed = json_or_none(val)
            args[as_text(key)] = parsed[0] if parsed else as_text(val)
    if e["corr"]:
        args["correlation"] = e["corr"]
    if e["flags"] & TRUNCATED:
        args["tprof truncated"] = True
    return args


def same_value(got, want):
    """Doubles read back exactly (JSON has no NaN or infinity: those become null)."""
    if isinstance(want, float):
        return got is None if want != want or abs(want) == float("inf") else float(got) == want
    return got == want


def us(ns):
    return Decimal(ns) / 1000


def expected_flows(model):
    """(ph, id, track, ts) of every flow entry, and the event index each follows."""
    launch, linked = {}, set()
    for i, e in enumerate(model.events):
        if e["corr"] and e["kind"] == HOST:
            launch.setdefault(e["corr"], i)
        if e["corr"] and e["kind"] in DEVICE_KINDS:
            linked.add(e["corr"])
    flows = {}
    for i, e in enumerate(model.events):
        c = e["corr"]
        if not c or c not in launch or c not in linked:
            continue
        if e["kind"] in DEVICE_KINDS:
            flows[i] = ("f", c, e["track"], e["ts"])
        elif launch[c] == i:
            flows[i] = ("s", c, e["track"], e["ts"])
    return flows


def where(model, track):
    t = model.tracks[track] if 0 <= track < len(model.tracks) else dict(pid=0, tid=0)
    return id_value(t["pid"]), id_value(t["tid"])


# ---- the checks ----------------------------------------------------------------------------------

REQUIRED = {
    "X": {"ph", "name", "pid", "tid", "ts", "dur"},
    "i": {"ph", "s", "name", "pid", "tid", "ts"},
    "C": {"ph", "name", "pid", "tid", "ts"},
    "s": {"ph", "id", "pid", "tid", "ts", "cat", "name"},
    "f": {"ph", "id", "pid", "tid", "ts", "cat", "name", "bp"},
    "M": {"ph", "name", "pid", "tid", "args"},
}


def load(plain, gz):
    assert gzip.decompress(gz) == plain
    text = plain.decode("utf-8")  # the writer emits valid UTF-8 only
    assert all(ch >= " " or ch == "\n" for ch in text), "raw control character"
    assert "\x7f" not in text
    doc = json.loads(text, parse_float=Decimal)
    return text, doc


def check_shape(text, doc):
    """Fields each phase needs, and what Perfetto's streaming tokenizer needs of an entry."""
    events = doc["traceEvents"]
    for e in events:
        assert e["ph"] in REQUIRED, e
        missing = REQUIRED[e["ph"]] - e.keys()
        assert not missing, (missing, e)
        assert not any(isinstance(v, list) for v in e.values()), e
        if e["ph"] == "X":
            assert e["dur"] >= 0
        if e["ph"] == "i":
            assert e["s"] == "t"
        if e["ph"] == "f":
            assert e["bp"] == "e"
        if e["ph"] in "sf":
            assert isinstance(e["id"], int) and e["id"] > 0
            assert e["cat"] == e["name"] == "ac2g"
    # One entry per line, as Kineto writes them.
    body = text[text.index('"traceEvents":[') + len('"traceEvents":['):text.rindex("\n]")]
    lines = [ln for ln in body.split("\n") if ln]
    assert len(lines) == len(events)
    assert all(ln.startswith("{") for ln in lines)


def check_top(model, doc):
    keys = list(doc)
    assert keys[0] == "schemaVersion" and doc["schemaVersion"] == 1
    assert keys.index("traceEvents") < keys.index("displayTimeUnit")
    assert doc["displayTimeUnit"] == "ms"
    assert doc["baseTimeNanoseconds"] == model.base_ns
    if model.devices:
        want = []
        for (i, name, mem, major, minor, sms) in model.devices:
            d = {"id": i, "name": as_text(name)}
            if mem:
                d["totalGlobalMem"] = mem
            if major or minor:
                d.update(computeMajor=major, computeMinor=minor)
            if sms:
                d["numSms"] = sms
            want.append(d)
        assert doc["deviceProperties"] == want
    else:
        assert "deviceProperties" not in doc
    if model.rank >= 0:
        assert doc["distributedInfo"] == {"rank": model.rank, "world_size": model.world_size}
    else:
        assert "distributedInfo" not in doc
    assert doc.get("traceName") == (None if model.trace_name is None else as_text(model.trace_name))
    t = doc["tprof"]
    assert t["version"].count(".") == 2
    assert t["partial"] is bool(model.partial)
    assert t["dropped_events"] == model.dropped
    assert (t["rank"], t["world_size"]) == (model.rank, model.world_size)
    assert t.get("window") == (None if model.window is None else as_text(model.window))
    if model.config is None:
        assert "config" not in t
    else:
        parsed = json_or_none(model.config)
        assert t["config"] == (parsed[0] if parsed else as_text(model.config))


def check_events(model, doc):
    events = doc["traceEvents"]
    body = [(i, e) for i, e in enumerate(events) if e["ph"] != "M"]
    first_body = body[0][0] if body else len(events)
    assert all(e["ph"] == "M" for e in events[:first_body])
    assert all(e["ph"] != "M" for e in events[first_body:])
    flows = expected_flows(model)
    want_entries = sum(1 for e in model.events) + len(flows)
    assert len(body) == want_entries
    pos = 0
    for index, e in enumerate(model.events):
        got = body[pos][1]
        pos += 1
        pid, tid = where(model, e["track"])
        assert (got["pid"], got["tid"]) == (pid, tid), (got, e)
        assert got["ts"] == us(e["ts"]), (got, e)
        if e["kind"] in RANGE_KINDS:
            assert got["ph"] == "X"
            assert got["dur"] == us(max(e["dur"], 0)), (got, e)
        elif e["kind"] == COUNTER:
            assert got["ph"] == "C"
        else:
            assert got["ph"] == "i" and got["s"] == "t"
        if e["kind"] == MEMORY:
            assert (got["cat"], got["name"]) == ("cpu_instant_event", "[memory]")
        else:
            assert got["name"] == as_text(e["name"])
            assert got.get("cat") == (as_text(e["cat"]) if e["cat"] else None)
        want_args = expected_args(e)
        got_args = got.get("args", {})
        assert got_args.keys() == want_args.keys(), (got, e)
        for k, v in want_args.items():
            assert same_value(got_args[k], v), (k, got_args[k], v)
        if index in flows:
            ph, corr, track, ts = flows[index]
            f = body[pos][1]
            pos += 1
            assert (f["ph"], f["id"], f["ts"]) == (ph, corr, us(ts)), f
            assert (f["pid"], f["tid"]) == where(model, track)
    # Every flow end has its start, at the launch's time.
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    assert len(starts) == sum(1 for e in events if e["ph"] == "s")
    for e in events:
        if e["ph"] == "f":
            assert e["id"] in starts


def check_metadata(model, doc, program=None):
    meta = [e for e in doc["traceEvents"] if e["ph"] == "M"]
    gpu_tracks = {e["track"] for e in model.events if e["kind"] in DEVICE_KINDS}
    processes = {}
    for i, t in enumerate(model.tracks):
        processes.setdefault(t["pid"], []).append(i)
    names = {(e["name"], e["pid"], e["tid"]): e["args"] for e in meta}
    assert len(names) == len(meta), "duplicate metadata"
    sort_index = {}
    for pid, tracks in processes.items():
        gpu = any(i in gpu_tracks for i in tracks)
        given = [model.tracks[i]["process_name"] for i in tracks if model.tracks[i]["process_name"]]
        if given:
            want = as_text(given[0])
        elif not isinstance(pid, int):
            want = as_text(pid)
        elif gpu:
            want = "GPU %d" % pid
        else:
            want = None  # "process <pid>", or the program's name for the writer's own pid
        got = names[("process_name", id_value(pid), 0)]["name"]
        assert got == want if want else got in ("process %d" % pid, program), got
        sort_index[pid] = names[("process_sort_index", id_value(pid), 0)]["sort_index"]
        assert (sort_index[pid] >= GPU_SORT_BASE) == gpu
        if gpu and isinstance(pid, int):
            assert sort_index[pid] == GPU_SORT_BASE + min(max(pid, 0), GPU_SORT_BASE - 1)
        for i in tracks:
            t = model.tracks[i]
            key = (id_value(t["pid"]), id_value(t["tid"]))
            want = as_text(t["thread_name"]) if t["thread_name"] else \
                as_text(t["tid"]) if not isinstance(t["tid"], int) else \
                ("stream %d" if i in gpu_tracks else "thread %d") % t["tid"]
            assert names[("thread_name",) + key]["name"] == want
            if isinstance(t["tid"], int):
                assert names[("thread_sort_index",) + key]["sort_index"] == t["tid"]
    hosts = [v for p, v in sort_index.items() if v < GPU_SORT_BASE]
    gpus = [v for p, v in sort_index.items() if v >= GPU_SORT_BASE]
    assert not hosts or not gpus or max(hosts) < min(gpus)
    wanted = len(processes) * 2 + len(model.tracks) + \
        sum(1 for t in model.tracks if isinstance(t["tid"], int))
    assert len(meta) == wanted


def check_all(model, tmp_path):
    text, doc = load(*write(model, tmp_path))
    check_shape(text, doc)
    check_top(model, doc)
    check_events(model, doc)
    check_metadata(model, doc)
    return doc


# ---- models --------------------------------------------------------------------------------------

HOSTILE = [b"q\"uote", b"back\\slash", b"ctl\x01\x1f\x7f\n\t", b"caf\xc3\xa9 \xe6\x97\xa5",
           b"bad \xff \xe2\x82 \xc0\xaf \xed\xa0\x80 end", b"nul\x00inside", b"", b"{}[],:"]


def test_every_kind_by_hand(tmp_path):
    m = Model()
    m.base_ns, m.rank, m.world_size, m.partial, m.dropped = 1700000000123456789, 2, 8, 1, 42
    m.config, m.window, m.trace_name = b'{"active": 2, "stages": ["fwd"]}', b"steps_4-5", b"t\"n"
    m.devices = [(0, b"NVIDIA H100 80GB HBM3", 85018279936, 9, 0, 132), (1, b"", 0, 0, 0, 0)]
    host = m.track(4242, 4243, b"train.py", b"main \xff")
    worker = m.track(4242, 4300)
    stream = m.track(0, 7)
    named_stream = m.track(0, 13, b"", b"nccl stream")
    legacy = m.track(b"CPU functions", b"thread \"a\"")
    m.event(HOST, host, 0, 5_000_000, b"ProfilerStep#4", b"user_annotation", flags=STEP)
    m.event(HOST, host, 1500, 1, b"aten::mm", b"cpu_op", args=[
        (b"flops", "i", -(2**63)), (b"big", "i", 2**63 - 1), (b"ratio", "d", 0.1),
        (b"tiny", "d", 5e-324), (b"inf", "d", float("inf")), (b"s", "s", b"x\"y\x02\xff"),
        (b"Input Dims", "j", b"[[64, 784], [784, 256], []]"), (b"broken", "j", b"[1, 2"),
        (b"del", "j", b'"a\x7f"'), (b"nested", "j", b'{"a": [true, null, -1.5e3]}')])
    for k, (corr, kind) in enumerate([(7, KERNEL), (8, MEMCPY), (9, MEMSET)]):
        m.event(HOST, host, 2000 + k * 10, 3000, b"cudaLaunchKernel", b"cuda_runtime", corr=corr)
        m.event(kind, stream, 9000 + k * 10, 4000, b"k%d" % k, b"kernel", corr=corr)
    m.event(HOST, host, 2500, 10, b"cudaLaunchKernel", b"cuda_runtime", corr=10)  # no kernel
    m.event(KERNEL, named_stream, 14000, 1000, b"orphan", b"kernel", corr=99)  # no launch
    m.event(KERNEL, named_stream, 14500, 1000, b"second kernel of 7", b"kernel", corr=7)
    m.event(HOST, worker, 2001, 5, b"relaunch of 7", b"cuda_runtime", corr=7)  # not the launch
    m.event(GPU_ANNOTATION, stream, 9000, 6000, b"## forward ##", b"gpu_user_annotation")
    m.event(HOST, host, 4_000_000, 1_000_000, b"open at window end", flags=TRUNCATED)
    m.event(HOST, worker, -1500, -7, b"negative")
    m.event(MEMORY, host, 2500, 0, b"[memory]", b"cpu_instant_event", args=[
        (b"Device Type", "i", 1), (b"Device Id", "i", 0), (b"Bytes", "i", -4096),
        (b"Total Allocated", "i", 91505152)])
    m.event(COUNTER, legacy, 3000, 0, b"loss", args=[(b"value", "d", 1.5)])
    m.event(INSTANT, legacy, 3500, 0, b"epoch start", b"marker")
    for i, s in enumerate(HOSTILE):
        m.event(HOST, host, 10_000 + i, 1, s, s, args=[(s or b"k", "s", s)])
    m.event(HOST, 12345, 1, 1, b"track out of range")
    check_all(m, tmp_path)


def test_empty_model(tmp_path):
    doc = check_all(Model(), tmp_path)
    assert doc["traceEvents"] == []


def test_configuration_that_is_not_json(tmp_path):
    m = Model()
    m.config = b'{"a": '
    doc = check_all(m, tmp_path)
    assert doc["tprof"]["config"] == '{"a": '


def random_model(seed, n):
    rnd = random.Random(seed)
    m = Model()
    m.base_ns = rnd.randrange(0, 2**62)
    m.rank, m.world_size = rnd.choice([(-1, -1), (0, 1), (5, 16)])
    pool = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(12))) for _ in range(40)]
    pool += HOSTILE + [b"aten::addmm", b"void at::native::elementwise_kernel<128, 4>"]
    tracks = [m.track(rnd.choice([1, 2, 4242]), rnd.randrange(1, 99)) for _ in range(6)]
    tracks += [m.track(0, s) for s in (7, 13)] + [m.track(b"Spans", b"PyTorch Profiler")]
    for _ in range(n):
        kind = rnd.choice([HOST] * 4 + list(DEVICE_KINDS) + [INSTANT, MEMORY, COUNTER])
        track = rnd.choice(tracks[6:8] if kind in DEVICE_KINDS else tracks)
        args = []
        for _ in range(rnd.randrange(4)):
            typ = rnd.choice("idsj")
            val = {"i": lambda: rnd.randrange(-2**63, 2**63),
                   "d": lambda: rnd.choice([rnd.uniform(-1e6, 1e6), rnd.random() * 1e-300, 2.0]),
                   "s": lambda: rnd.choice(pool),
                   "j": lambda: rnd.choice([b"[1, 2]", b'{"x": "y"}', b"[", b"nul", b"3.5"])}[typ]()
            args.append((rnd.choice(pool) + b"%d" % len(args), typ, val))
        m.event(kind, track, rnd.randrange(-10**12, 10**15), rnd.randrange(-10, 10**9),
                rnd.choice(pool), rnd.choice(pool + [b""] * 20),
                rnd.choice([0] * 3 + list(range(1, 200))) if kind in RANGE_KINDS else 0,
                rnd.choice([0, 0, 0, TRUNCATED]), args)
    return m


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_models(tmp_path, seed):
    check_all(random_model(seed, 4000 if seed < 3 else 40000), tmp_path)


# ---- models taken from real traces ---------------------------------------------------------------

def fixture_paths():
    found = []
    for sub in ("kineto", "torch-legacy"):
        d = os.path.join(FIXTURES, sub)
        if os.path.isdir(d):
            found += sorted(os.path.join(d, f) for f in os.listdir(d) if ".json" in f)
    return found


def ns(v):
    return int((Decimal(v) * 1000).quantize(Decimal(1), rounding=ROUND_HALF_UP))


def as_id(v):
    """A pid or tid as the model keeps it: decimal strings are numbers, "" is 0 (the empty
    string id is the model's "no string")."""
    if isinstance(v, str) and (v.strip().isdigit() or v == ""):
        return int(v or 0)
    return v.encode() if isinstance(v, str) else int(v)


def arg_of(key, v):
    if isinstance(v, bool) or v is None or isinstance(v, (list, dict)):
        return (key, "j", json.dumps(v, default=str).encode())
    if isinstance(v, int):
        return (key, "i", v) if -2**63 <= v < 2**63 else (key, "j", str(v).encode())
    if isinstance(v, Decimal):
        return (key, "d", float(v))
    return (key, "s", v.encode())


def model_from_trace(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        doc = json.load(f, parse_float=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    m = Model()
    if isinstance(doc, dict):
        m.base_ns = int(doc.get("baseTimeNanoseconds", 0))
        info = doc.get("distributedInfo") or {}
        m.rank, m.world_size = int(info.get("rank", -1)), int(info.get("world_size", -1))
        for d in doc.get("deviceProperties", []):
            m.devices.append((d["id"], d.get("name", "").encode(), d.get("totalGlobalMem", 0),
                              d.get("computeMajor", 0), d.get("computeMinor", 0),
                              d.get("numSms", 0)))
    pnames, tnames = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") in ("process_name", "thread_name"):
            target = pnames if e["name"] == "process_name" else tnames
            key = as_id(e["pid"]) if e["name"] == "process_name" else (as_id(e["pid"]),
                                                                       as_id(e.get("tid", 0)))
            target[key] = e["args"]["name"].encode()
    kinds = {"kernel": KERNEL, "gpu_memcpy": MEMCPY, "memcpy": MEMCPY, "gpu_memset": MEMSET,
             "memset": MEMSET, "gpu_user_annotation": GPU_ANNOTATION}
    for e in events:
        ph, cat = e.get("ph"), e.get("cat", "")
        if ph not in ("X", "i", "I", "C") or cat == "Trace":
            continue
        pid, tid = as_id(e.get("pid", 0)), as_id(e.get("tid", 0))
        track = m.track(pid, tid, pnames.get(pid, b""), tnames.get((pid, tid), b""))
        args = dict(e.get("args") or {})
        corr = args.pop("correlation", 0) if ph == "X" else 0
        if not isinstance(corr, int) or not 0 <= corr < 2**63:
            corr = 0
        if ph == "X":
            kind = kinds.get(cat.lower(), HOST)
        elif ph == "C":
            kind = COUNTER
        else:
            kind = MEMORY if e.get("name") == "[memory]" else INSTANT
        flags = STEP if e.get("name", "").startswith("ProfilerStep#") else 0
        m.event(kind, track, ns(e["ts"]), ns(e.get("dur", 0)), e.get("name", "").encode(),
                cat.encode(), corr, flags, [arg_of(k.encode(), v) for k, v in args.items()])
    return m


def load_events(path):
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        doc = json.load(f, parse_float=Decimal)
    return doc["traceEvents"] if isinstance(doc, dict) else doc


REAL_TRACES = fixture_paths()


@pytest.mark.parametrize("path", REAL_TRACES, ids=[os.path.basename(p) for p in REAL_TRACES])
def test_real_traces(tmp_path, path):
    m = model_from_trace(path)
    assert m.events
    doc = check_all(m, tmp_path)
    # Straight against the original file: the same ranges, names and times, in order.
    original = [e for e in load_events(path) if e.get("ph") == "X" and e.get("cat") != "Trace"]
    written = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(written) == len(original)
    for o, w in zip(original, written):
        assert (w["name"], w["ts"], w["dur"]) == (o["name"], o["ts"], o["dur"]), (o, w)


def test_fixtures_present():
    assert REAL_TRACES, "no fixtures under TPROF_FIXTURES=%r" % FIXTURES
