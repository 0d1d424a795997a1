"""The trace reader against an independent reading of every fixture with Python's json module.

build/tests/tp_model_dump reads a trace with the C reader and prints a summary of the model; the
same summary is computed here from the JSON, following docs/SEMANTICS.md §2 and the reader's
documented rules, with exact decimal arithmetic for times (µs -> ns, half away from zero).
"""
import decimal
import glob
import gzip
import json
import os
import re
import subprocess
import zlib

import pytest

import tprof_ref

FIXTURES = os.environ["TPROF_FIXTURES"]
DUMP = os.path.join(os.environ["TPROF_BUILD_DIR"], "tests", "tp_model_dump")
M64 = 2**64
LIMIT = 2**62  # times beyond ±2^62 ns are left out
INT64_MAX = 2**63 - 1
KINDS = {"kernel": "kernel", "gpu_memcpy": "memcpy", "memcpy": "memcpy", "gpu_memset": "memset",
         "memset": "memset", "gpu_user_annotation": "gpu_annotation", "trace": None}
MEM_KEYS = ("Device Type", "Device Id", "Bytes", "Total Allocated", "Addr")
STEP = re.compile(r"ProfilerStep#([0-9]+)")
DECIMAL_ID = re.compile(r"-?[0-9]{1,19}")

ALL = sorted(glob.glob(os.path.join(FIXTURES, "*", "*.json*")))


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=decimal.Decimal), len(raw)


def is_num(v):
    return isinstance(v, (int, decimal.Decimal)) and not isinstance(v, bool)


def scaled(v, scale):
    """round(v * 10^scale) half away from zero, or None when not a number or out of range."""
    if not is_num(v):
        return None
    with decimal.localcontext() as ctx:
        ctx.prec = 80
        n = int((decimal.Decimal(v) * 10**scale).to_integral_value(rounding=decimal.ROUND_HALF_UP))
    return n if abs(n) <= LIMIT else None


def ident(v):
    """A pid or tid as the summary names it."""
    if is_num(v):
        return str(v)
    if isinstance(v, str):
        if DECIMAL_ID.fullmatch(v) and int(v) <= INT64_MAX:
            return str(int(v))
        return v or "0"
    return "0"


def c_len(s):
    """Bytes of a name as the model holds it (U+0000 becomes U+FFFD)."""
    return len(s.replace("\x00", "\ufffd").encode("utf-8", "surrogatepass"))


def num_value(v):
    # a string arg (or "Input Dims", an array) counts, adding nothing
    return 0.0 if isinstance(v, (str, list)) else float(v)


class Reference:
    def __init__(self):
        self.events = []  # (kind, ts, dur, name, track, corr, args)
        self.pnames, self.tnames = {}, {}

    def add(self, kind, ts, dur, name, track, corr=0, args=()):
        self.events.append((kind, ts, dur, name, track, corr, tuple(args)))

    def read(self, doc):
        evs = doc if isinstance(doc, list) else doc.get("traceEvents", [])
        stacks = {}
        for e in evs:
            if not isinstance(e, dict):
                continue
            ph, name, cat = e.get("ph"), e.get("name"), e.get("cat")
            name = name if isinstance(name, str) else ""
            cat = cat if isinstance(cat, str) else ""
            track = (ident(e.get("pid")), ident(e.get("tid")))
            args = e.get("args") if isinstance(e.get("args"), dict) else {}
            ts = scaled(e.get("ts"), 3)
            if ph in ("X", "B"):
                corr = args.get("correlation")
                ok = is_num(corr) and isinstance(corr, int) and 0 < corr <= INT64_MAX
                corr = corr if ok else 0
                flops = [("flops", args["flops"])] if is_num(args.get("flops")) else []
                if not flops and (tprof_ref.shape_flops(name, args) or 0) > 0:  # from shapes
                    flops = [("flops", tprof_ref.shape_flops(name, args))]
                # a collective's args, for the cross-rank analysis (src/analysis/ranks.h)
                flops += [(k, args[k]) for k in ("seq", "async") if is_num(args.get(k))]
                if isinstance(args.get("Collective name"), str) and args["Collective name"]:
                    flops.append(("Collective name", args["Collective name"]))
                # autograd's link from an op to its backward (src/analysis/modules.c): the
                # thread id only beside a sequence number, and not when 0 (a forward op)
                if is_num(args.get("Sequence number")):
                    flops.append(("Sequence number", args["Sequence number"]))
                    if is_num(args.get("Fwd thread id")) and args["Fwd thread id"] != 0:
                        flops.append(("Fwd thread id", args["Fwd thread id"]))
                # record_shapes: the op table by input shape (src/analysis/shapes.c)
                if isinstance(args.get("Input Dims"), list):
                    flops.append(("Input Dims", args["Input Dims"]))
                # the ops' dtypes, and tprof.torch's record of the run's setup (the advice)
                if isinstance(args.get("Input type"), list):
                    flops.append(("Input type", args["Input type"]))
                if isinstance(args.get("tprof.setup"), str) and args["tprof.setup"]:
                    flops.append(("tprof.setup", args["tprof.setup"]))
                # the External id of an op, a launch or GPU work: the event's field (tp_event.ext),
                # kept when it fits 32 bits (src/analysis/corr.c)
                ext = args.get("External id")
                if isinstance(ext, int) and not isinstance(ext, bool) and 0 < ext < 2**32:
                    flops.append(("External id", ext))
                if ts is None:
                    continue
                if ph == "B":
                    stacks.setdefault(track, []).append((ts, name, cat, corr, flops))
                    continue
                dur = scaled(e["dur"], 3) if is_num(e.get("dur")) else 0
                if dur is None or dur < 0:
                    continue
                self.range(cat, ts, dur, name, track, corr, flops)
            elif ph == "E":
                if not stacks.get(track):
                    continue
                bts, bname, bcat, corr, flops = stacks[track].pop()
                if ts is None or ts < bts:
                    continue
                self.range(bcat, bts, ts - bts, bname, track, corr, flops)
            elif ph in ("i", "I") and name == "[memory]" and ts is not None:
                self.add("memory", ts, 0, name, track, 0,
                         [(k, args[k]) for k in MEM_KEYS if is_num(args.get(k))])
            elif ph == "C" and ts is not None:
                self.add("counter", ts, 0, name, track, 0,
                         [(k, v) for k, v in args.items() if is_num(v)])
            elif (ph == "M" and name in ("process_name", "thread_name")
                  and isinstance(args.get("name"), str)):
                if name == "process_name":
                    self.pnames[track[0]] = args["name"]
                else:
                    self.tnames[track] = args["name"]

    def range(self, cat, ts, dur, name, track, corr, flops):
        kind = KINDS.get(cat.lower(), "host_range")
        if kind == "host_range" and name == tprof_ref.DATALOADER_TWIN:
            return  # tprof's copy of its dataloader range for TensorBoard's plugin (not an event)
        if kind:
            self.add(kind, ts, dur, name, track, corr, flops)

    def summary(self, docs_and_sizes):
        s = {"input_events": 0, "input_bytes": 0, "base_ns": 0, "rank": -1, "world_size": -1,
             "dropped_events": 0, "partial": 0}
        base = None
        for doc, size in docs_and_sizes:
            first = len(self.events)
            self.read(doc)
            top = doc if isinstance(doc, dict) else {}
            evs = doc if isinstance(doc, list) else top.get("traceEvents", [])
            s["input_events"] += len(evs)
            s["input_bytes"] += size
            b = scaled(top.get("baseTimeNanoseconds"), 0) or 0
            if base is None:
                base = b if first == 0 else 0
            elif b != base:  # later files move onto the first one's base
                self.events[first:] = [(e[0], e[1] + b - base) + e[2:] for e in self.events[first:]]
            dist, tp = top.get("distributedInfo") or {}, top.get("tprof") or {}
            for key in ("rank", "world_size"):
                for src in (dist, tp):
                    if isinstance(src.get(key), int):
                        s[key] = src[key]
                        break
            if isinstance(tp.get("dropped_events"), int):
                s["dropped_events"] += max(tp["dropped_events"], 0)
            s["partial"] |= tp.get("partial") is True
        s["base_ns"] = base or 0
        s["events"] = len(self.events)
        kinds = {}
        for kind, ts, dur, name, *_ , args in self.events:
            k = kinds.setdefault(kind, {"count": 0, "dur_ns": 0, "ts_ns": 0, "name_bytes": 0,
                                        "args": 0})
            k["count"] += 1
            k["dur_ns"] = (k["dur_ns"] + dur) % M64
            k["ts_ns"] = (k["ts_ns"] + ts) % M64
            k["name_bytes"] += c_len(name)
            k["args"] += sum(key != "External id" for key, _ in args)
        s["kinds"] = kinds
        steps = [(dur, int(m.group(1))) for kind, ts, dur, name, *_ in self.events
                 if kind == "host_range" and (m := STEP.fullmatch(name))
                 and int(m.group(1)) < 2**63 // 10]
        s["steps"] = len(steps)
        s["step_dur_ns"] = sum(d for d, _ in steps) % M64
        s["step_number_sum"] = sum(n for _, n in steps) % M64
        corrs = [e[5] for e in self.events if e[5]]
        s["corr_events"], s["corr_sum"] = len(corrs), sum(corrs) % M64
        exts = [v for e in self.events for key, v in e[6] if key == "External id"]
        s["ext_events"], s["ext_sum"] = len(exts), sum(exts) % M64
        sums = {}
        for e in self.events:
            for key, v in e[6]:
                if key == "External id":
                    continue
                c = sums.setdefault(key, {"count": 0, "sum": 0.0})
                c["count"] += 1
                c["sum"] += num_value(v)
        s["arg_sums"] = sums
        per = {}
        for e in self.events:
            per[e[4]] = per.get(e[4], 0) + 1
        s["track_events"] = {"%s/%s" % t: n for t, n in per.items()}
        s["process_names"] = {"%s/%s" % t: self.pnames[t[0]] for t in per if self.pnames.get(t[0])}
        s["thread_names"] = {"%s/%s" % t: self.tnames[t] for t in per if self.tnames.get(t)}
        return s


def devices(docs):
    out = {}
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        for key in ("deviceProperties", "computeProperties"):
            for i, d in enumerate(doc.get(key) or []):
                if not isinstance(d, dict):
                    continue
                f = {"id": i, "name": "", "total_mem": 0, "major": 0, "minor": 0, "sms": 0}
                for k, v in d.items():
                    field = {"id": "id", "totalGlobalMem": "total_mem", "computeMajor": "major",
                             "major": "major", "computeMinor": "minor", "minor": "minor",
                             "numSms": "sms", "multiProcessorCount": "sms"}.get(k)
                    if field and isinstance(v, int) and not isinstance(v, bool):
                        f[field] = v
                    elif k == "name" and isinstance(v, str):
                        f["name"] = v
                f["total_mem"] = max(f["total_mem"], 0)
                out[f["id"]] = f
    return list(out.values())


def dump(*paths, stdin=None):
    r = subprocess.run([DUMP, *paths], input=stdin, capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr.decode()
    return json.loads(r.stdout)


def expected(*paths):
    docs = [load(p) for p in paths]
    s = Reference().summary(docs)
    s["devices"] = devices([d for d, _ in docs])
    return s


def check(got, want):
    got_sums, want_sums = got.pop("arg_sums"), want.pop("arg_sums")
    # FlopCounterMode's FLOPs the reader computes from an op's shapes (src/trace/flops.c) have no
    # reference here: tests/python/test_flops_fcm.py checks them against torch's FlopCounterMode
    none = {"count": 0}
    fcm = got_sums.pop("flops_fcm", none)["count"] - want_sums.pop("flops_fcm", none)["count"]
    if fcm:
        got["kinds"]["host_range"]["args"] -= fcm
    assert got == want
    assert got_sums.keys() == want_sums.keys()
    for k, w in want_sums.items():
        assert got_sums[k]["count"] == w["count"], k
        assert got_sums[k]["sum"] == pytest.approx(w["sum"], rel=1e-12), k


def test_fixtures_present():
    assert len(ALL) >= 8, "expected the kineto and torch-legacy fixtures in " + FIXTURES


@pytest.mark.parametrize("path", ALL, ids=[os.path.basename(p) for p in ALL])
def test_fixture(path):
    got = dump(path)
    want = expected(path)
    assert got["events"] > 0
    check(got, want)


def test_two_ranks_into_one_model():
    a, b = (os.path.join(FIXTURES, "kineto", "sampled_rank-%d.json.gz" % r) for r in (0, 1))
    check(dump(a, b), expected(a, b))


def test_different_bases_are_aligned():
    a = os.path.join(FIXTURES, "kineto", "nccl_data.json.gz")
    b = os.path.join(FIXTURES, "kineto", "mi250_minitoy_train_ROCm6_2_kineto.json.gz")
    got, want = dump(a, b), expected(a, b)
    assert want["base_ns"] == 1711964646000000000
    check(got, want)


def test_stdin_and_plain_equal_gzip(tmp_path):
    path = os.path.join(FIXTURES, "kineto", "worker0.1623143089861.pt.trace.json.gz")
    with open(path, "rb") as f:
        packed = f.read()
    plain = tmp_path / "worker0.json"
    plain.write_bytes(gzip.decompress(packed))
    from_gz = dump(path)
    assert dump(str(plain)) == from_gz
    assert dump("-", stdin=packed) == from_gz
    assert dump("-", stdin=plain.read_bytes()) == from_gz


def test_errors_name_file_and_offset(tmp_path):
    path = os.path.join(FIXTURES, "kineto", "nccl_data.json.gz")
    with open(path, "rb") as f:
        data = gzip.decompress(f.read())
    cut = tmp_path / "cut.json"
    cut.write_bytes(data[: len(data) // 2])
    r = subprocess.run([DUMP, str(cut)], capture_output=True, timeout=60)
    assert r.returncode == 1
    line = r.stderr.decode().strip()
    assert line.startswith("%s: byte %d: unexpected end of input" % (cut, len(data) // 2)), line
    truncated = tmp_path / "cut.json.gz"
    truncated.write_bytes(gzip.compress(data)[:100000])
    r = subprocess.run([DUMP, str(truncated)], capture_output=True, timeout=60)
    assert r.returncode == 1
    assert re.fullmatch(r"%s: byte \d+: truncated gzip data\n" % re.escape(str(truncated)),
                        r.stderr.decode())
    r = subprocess.run([DUMP, str(tmp_path / "missing.json")], capture_output=True, timeout=60)
    assert r.returncode == 1 and "missing.json: cannot open: No such file" in r.stderr.decode()


def test_truncated_gzip_names_the_offset_reached(tmp_path):
    """A gzip stream cut short fails at the offset of the last byte it could give, as zlib's own
    decompressor (Python's zlib) counts them: within the first block of the decompressing
    thread, and past several of its 1 MB blocks."""
    path = os.path.join(FIXTURES, "kineto", "nccl_data.json.gz")
    with open(path, "rb") as f:
        packed = gzip.compress(gzip.decompress(f.read()))
    cut = tmp_path / "cut.json.gz"
    for n in (200, 5000, len(packed) // 3, len(packed) - 9):
        cut.write_bytes(packed[:n])
        reached = len(zlib.decompressobj(31).decompress(packed[:n]))
        r = subprocess.run([DUMP, str(cut)], capture_output=True, timeout=60)
        assert r.returncode == 1
        assert r.stderr.decode() == "%s: byte %d: truncated gzip data\n" % (cut, reached)
    assert reached > 4 << 20  # the last cut lies past several blocks


def test_progress_forced_off_a_terminal(tmp_path):
    """`--progress` (tp_read_opts.progress = 2) shows the progress when stderr is a file too, as
    plain lines without the terminal's carriage returns and escapes; without it, nothing."""
    path = tmp_path / "wide.json"
    with open(path, "wb") as f:  # over the 100 MB from which progress shows, read in a moment
        f.write(b'{"traceEvents": [' + b" " * (110 << 20) + b"]}")
    tprof = os.path.join(os.environ["TPROF_BUILD_DIR"], "tprof")
    for flags, shown in ((["--progress"], True), ([], False)):
        r = subprocess.run([tprof, "analyze", "-o", os.devnull] + flags + [str(path)],
                           capture_output=True, timeout=120)
        assert r.returncode == 0
        lines = r.stderr.decode().splitlines(keepends=True)
        progress = [line for line in lines if line.startswith("tprof: reading %s: " % path)]
        assert bool(progress) == shown
        assert all(re.fullmatch(r"tprof: reading \S+: +\d+% of 110 MB\n", line)
                   for line in progress)
        assert "\r" not in r.stderr.decode() and "\033" not in r.stderr.decode()
    path.unlink()
