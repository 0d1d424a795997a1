"""`tprof analyze` of several ranks (the `ranks` key, docs/DISTRIBUTED.md) on two ranks of a real
NCCL job (kineto/sampled_rank-0/1) and two ranks of a real DDP job (kineto/worker0_step_12...,
worker1_step_12...: torchrec's DLRM, DDP for the dense part and all-to-alls for the embeddings),
checked against Holistic Trace Analysis (PyPI traceinsight, module hta) and against an
independent stdlib computation of the step spread and the straggler; the docs of the key against
the output; `tprof merge`."""

import gzip
import json
import os
import re
import resource
import shutil
import statistics
import subprocess

import pytest
from cli_helpers import FIXTURES, SOURCE, TPROF, error_line, tprof

import tprof_ref

RANKS = [FIXTURES / "kineto" / ("sampled_rank-%d.json.gz" % r) for r in (0, 1)]
DDP = [FIXTURES / "kineto" / name for name in ("worker0_step_12.1694128201545.pt.trace.json.gz",
                                               "worker1_step_12.1694128201556.pt.trace.json.gz")]
PAIRS = {"nccl": RANKS, "ddp": DDP}


def analyze(*paths):
    return json.loads(tprof("analyze", "--json", *paths, rc=0).stdout)


def events(path):
    with gzip.open(path, "rt") as f:
        return json.load(f)["traceEvents"]


def test_one_rank_has_no_ranks_key():
    assert "ranks" not in analyze(RANKS[0])


def test_text_report_has_a_ranks_section():
    out = tprof("analyze", *RANKS, rc=0).stdout.decode()
    assert "\nRanks (2)\n" in out
    assert "straggler: rank 1 arrives last" in out


@pytest.fixture(scope="module")
def hta_of(tmp_path_factory):
    """HTA's frames for a pair of PAIRS, computed once: (overlap per rank, temporal breakdown per
    rank, kernel-type breakdown over the ranks)."""
    hta = pytest.importorskip("hta.trace_analysis")
    done = {}

    def frames(pair):
        if pair not in done:
            d = tmp_path_factory.mktemp(pair)
            for p in PAIRS[pair]:
                shutil.copy(p, d / p.name)
            # HTA drops the last ProfilerStep by default (it may be incomplete); tprof keeps all
            t = hta.TraceAnalysis(trace_dir=str(d), include_last_profiler_step=True)
            kinds, _ = t.get_gpu_kernel_breakdown(visualize=False, include_memory_kernels=True)
            done[pair] = (t.get_comm_comp_overlap(visualize=False),
                          t.get_temporal_breakdown(visualize=False), kinds)
        return done[pair]
    return frames


@pytest.fixture(scope="module")
def hta_frames(hta_of):
    return hta_of("nccl")[:2]


def close(a, b, rel=0.01):
    return abs(a - b) <= rel * max(abs(b), 1e-9)


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_overlap_and_time_split_agree_with_hta(hta_of, pair):
    """Per rank: overlap, idle and compute time. Communication: HTA splits each rank's kernel
    time by the kinds of kernel running (COMMUNICATION, COMPUTATION overlapping COMMUNICATION,
    ...) and sums over the ranks; the rows naming COMMUNICATION are tprof's communication time,
    those without COMPUTATION its non-overlapped part, both summed over the ranks."""
    overlap, breakdown, kinds = hta_of(pair)
    rows = {r["rank"]: r for r in analyze(*PAIRS[pair])["ranks"]["per_rank"]}
    assert sorted(rows) == [0, 1]
    for _, h in overlap.iterrows():
        r = rows[int(h["rank"])]
        assert close(r["overlap_pct"], h["comp_comm_overlap_pctg"]), (r, h)
    for _, h in breakdown.iterrows():
        r = rows[int(h["rank"])]
        assert close(r["idle_ns"] / 1e3, h["idle_time(us)"]), (r, h)
        assert close(r["compute_ns"] / 1e3, h["compute_time(us)"]), (r, h)
    comm = sum(h["sum"] for _, h in kinds.iterrows() if "COMMUNICATION" in h["kernel_type"])
    alone = sum(h["sum"] for _, h in kinds.iterrows()
                if "COMMUNICATION" in h["kernel_type"] and "COMPUTATION" not in h["kernel_type"])
    assert comm > 0 and alone > 0
    assert close(sum(r["communication_ns"] for r in rows.values()) / 1e3, comm)
    assert close(sum(r["communication_ns"] * (1 - r["overlap_pct"] / 100)
                     for r in rows.values()) / 1e3, alone)



def test_poor_overlap_is_recommended_per_rank(hta_frames):
    """comm_overlap (docs/METRICS.md): overlap < 50% with communication >= 5% of the rank's step
    time. Both ranks qualify (HTA: ~15% and ~20%); the saving is the largest exposed
    communication, from HTA's overlap and tprof's communication time."""
    overlap, _ = hta_frames
    got = analyze(*RANKS)
    rows = {r["rank"]: r for r in got["ranks"]["per_rank"]}
    exposed = {}
    for _, h in overlap.iterrows():
        rank = int(h["rank"])
        steps = sum(steps_of(events(RANKS[rank])).values())
        assert h["comp_comm_overlap_pctg"] < 50 and rows[rank]["communication_ns"] >= 0.05 * steps
        exposed[rank] = rows[rank]["communication_ns"] * (1 - h["comp_comm_overlap_pctg"] / 100)
    reco = [r for r in got["recommendations"] if r["id"] == "comm_overlap"]
    assert len(reco) == 1
    assert "on 2 of 2 ranks" in reco[0]["message"]
    for rank in (0, 1):
        assert "rank %d %.0f%%" % (rank, rows[rank]["overlap_pct"]) in reco[0]["message"]
    assert close(reco[0]["saving_us"], max(exposed.values()) / 1e3)
    # one rank is no multi-rank analysis: no recommendation
    assert not [r for r in analyze(RANKS[0])["recommendations"] if r["id"] == "comm_overlap"]

def steps_of(evs):
    return {int(e["name"].split("#")[1]): round(e["dur"] * 1000)
            for e in evs if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#")}


def comm_kernels(evs):
    """Communication kernels' (start, end) in ns, in order (Kineto numbers no collective)."""
    return sorted((round(e["ts"] * 1000), round(e["ts"] * 1000) + round(e["dur"] * 1000))
                  for e in evs
                  if e.get("ph") == "X" and e.get("cat") == "kernel" and "nccl" in e["name"])


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_spread_and_straggler_agree_with_reference(pair):
    ranks = PAIRS[pair]
    evs = [events(p) for p in ranks]
    got = analyze(*ranks)["ranks"]
    steps = [steps_of(e) for e in evs]
    common = sorted(set(steps[0]) & set(steps[1]))
    assert [s["step"] for s in got["step_spread"]] == common
    for s in got["step_spread"]:
        durs = [steps[0][s["step"]], steps[1][s["step"]]]
        assert (s["min_ns"], s["max_ns"]) == (min(durs), max(durs))
        assert s["slowest_rank"] == durs.index(max(durs))

    kernels = [comm_kernels(e) for e in evs]
    n = min(len(k) for k in kernels)
    # arrivals compare on rank 0's clock: rank 1's moved by the offset `tprof merge` uses
    off = tprof_ref.clock_offset([(a[0], a[1], b[0], b[1])
                                  for a, b in zip(kernels[0][:n], kernels[1][:n])])
    pairs = [(a[0], b[0] + off) for a, b in zip(kernels[0][:n], kernels[1][:n])]
    last1 = sum(b > a for a, b in pairs)
    # the straggler: the rank the other waits for most (from its arrival to the last one's)
    later = sum(b - a for a, b in pairs if b > a)
    strag = 1 if later > sum(a - b for a, b in pairs if a > b) else 0
    st = got["straggler"]
    assert st is not None and st["rank"] == strag and st["collectives"] == n
    assert st["last_share"] == pytest.approx((last1 if strag else n - last1) / n)
    late = [(b - a) if strag else (a - b) for a, b in pairs]
    assert st["mean_late_ns"] == pytest.approx(statistics.mean(late), abs=1)
    other_steps = sum(steps[1 - strag].values())
    assert st["wait_share"] == pytest.approx(sum(x for x in late if x > 0) / other_steps)
    assert st["message"].startswith("rank %d arrives last at" % strag)
    # and it is a recommendation, saving the other's waiting
    reco = [r for r in analyze(*ranks)["recommendations"] if r["id"] == "straggler"]
    assert len(reco) == 1 and reco[0]["message"].startswith(st["message"])
    assert reco[0]["saving_us"] == pytest.approx(st["wait_share"] * other_steps / 1e3, rel=1e-6)
    assert not [r for r in analyze(ranks[0])["recommendations"] if r["id"] == "straggler"]


def documented():
    text = (SOURCE / "docs" / "ANALYZE_JSON.md").read_text(encoding="utf-8")
    section = text.split("## `ranks` in `tprof analyze --json`")[1].split("\n## ")[0]
    keys = set()
    for m in re.finditer(r"^\| `([^`]+)`(?:, `([^`]+)`)? \|", section, re.M):
        keys.add(m.group(1))
        if m.group(2):
            keys.add(m.group(1).rsplit(".", 1)[0] + "." + m.group(2))
    return keys


def flatten(v, prefix, out):
    if isinstance(v, dict):
        if prefix.endswith(("stages_ns", "stages_per_step_ns")):  # stage name -> time: names vary
            out.add(prefix)
            return
        if prefix:
            out.add(prefix)
        for k, x in v.items():
            flatten(x, prefix + "." + k if prefix else k, out)
    elif isinstance(v, list):
        out.add(prefix + "[]")
        for x in v:
            flatten(x, prefix + "[]", out)
    else:
        out.add(prefix)


def test_ranks_keys_are_documented():
    seen = set()
    flatten({"ranks": analyze(*RANKS)["ranks"]}, "", seen)
    seen.discard("ranks")
    doc = documented()
    assert seen - doc == set(), "keys in the output but not in docs/ANALYZE_JSON.md"
    assert doc - seen == set(), "documented keys never seen in the output"


# ---- tprof merge ----

def kernels_per_pid(evs):
    out = {}
    for e in evs:
        if e.get("ph") == "X" and e.get("cat") == "kernel":
            out[e["pid"]] = out.get(e["pid"], 0) + 1
    return out


def test_merge_makes_a_process_per_rank(tmp_path):
    out = tmp_path / "merged.json.gz"
    p = tprof("merge", *RANKS, "-o", out, rc=0)
    with gzip.open(out, "rt") as f:
        doc = json.load(f)
    names = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
             if e.get("ph") == "M" and e["name"] == "process_name"}
    assert names == {0: "rank 0", 1: "rank 1"}
    # every kernel of each rank, under its rank
    want = {r: sum(kernels_per_pid(events(p)).values()) for r, p in enumerate(RANKS)}
    assert kernels_per_pid(doc["traceEvents"]) == want
    assert [r["rank"] for r in doc["tprof"]["merged"]["ranks"]] == [0, 1]
    assert b"rank 1: clock offset" in p.stderr
    # read back as its two ranks: the same per-rank figures as the inputs (rank 0 is not moved)
    back = analyze(out)["ranks"]
    direct = analyze(*RANKS)["ranks"]
    assert back["count"] == 2
    for a, b in zip(back["per_rank"], direct["per_rank"]):
        assert (a["rank"], a["steps"], a["compute_ns"], a["communication_ns"], a["idle_ns"]) == \
            (b["rank"], b["steps"], b["compute_ns"], b["communication_ns"], b["idle_ns"])


def test_merge_recovers_known_clock_offsets(tmp_path):
    """Four ranks made from the two real ones, rank k's clock moved by k x 37.5 us: the offsets
    merge finds are those shifts (plus the real ranks' own offset), to the nanosecond."""
    docs = []
    for r in (0, 1):
        with gzip.open(RANKS[r], "rt") as f:
            docs.append(json.load(f))
    paths = []
    for k in range(4):
        doc = json.loads(json.dumps(docs[k % 2]))
        doc["distributedInfo"]["rank"] = k
        for e in doc["traceEvents"]:
            if isinstance(e.get("ts"), (int, float)):
                e["ts"] = round(e["ts"] + k * 37.5, 3)
        paths.append(tmp_path / ("r%d.json" % k))
        paths[-1].write_text(json.dumps(doc))
    plain = tmp_path / "plain.json"
    tprof("merge", *RANKS, "-o", plain, rc=0)
    real = json.loads(plain.read_text())["tprof"]["merged"]["ranks"][1]["offset_ns"]
    out = tmp_path / "merged.json"
    tprof("merge", *paths, "-o", out, rc=0)
    got = json.loads(out.read_text())["tprof"]["merged"]["ranks"]
    assert [g["offset_ns"] for g in got] == [-k * 37500 + (real if k % 2 else 0) for k in range(4)]


def test_merge_usage_errors(tmp_path):
    p = tprof("merge", *RANKS, rc=2)
    assert b"no output" in p.stderr
    p = tprof("merge", tmp_path / "missing.json", "-o", tmp_path / "m.json", rc=2)
    assert p.stderr.count(b"\n") == 1 and b"missing.json" in p.stderr
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_merge_without_refining_reads_back_as_its_inputs(tmp_path, pair):
    """`merge --no-refine` moves no clock, so the merged trace (written rank by rank, one in
    memory at a time) must analyse as its inputs do: the whole `ranks` key, straggler included,
    and the totals' kernel and op figures (its steps are one window's, not two)."""
    ranks = PAIRS[pair]
    out = tmp_path / "merged.json"
    tprof("merge", "--no-refine", *ranks, "-o", out, rc=0)
    back, direct = analyze(out), analyze(*ranks)
    assert back["ranks"] == direct["ranks"]
    for key in ("top_cpu_ops", "top_gpu_kernels", "top_ops_by_gpu_time"):
        assert back[key] == direct[key], key
    for key in ("kernel_count", "kernel_us"):
        assert back["gpu"][key] == direct["gpu"][key], key
    doc = json.loads(out.read_text())
    assert [r["offset_ns"] for r in doc["tprof"]["merged"]["ranks"]] == [0, 0]
    def ranges(evs):  # the reader keeps no range of category Trace
        return sum(1 for e in evs if e.get("ph") == "X" and e.get("cat") != "Trace")
    assert ranges(doc["traceEvents"]) == sum(ranges(events(p)) for p in ranks)


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_analysis_aligns_clocks_as_merge_does(tmp_path, pair):
    """The analysis of the ranks' own traces moves each rank's collectives by the offset merge
    finds (reported as clock_offset_ns), so it names the same straggler with the same figures as
    the analysis of the merged trace, whose ranks are moved already (offset 0)."""
    ranks = PAIRS[pair]
    out = tmp_path / "merged.json"
    tprof("merge", *ranks, "-o", out, rc=0)
    offsets = [r["offset_ns"] for r in json.loads(out.read_text())["tprof"]["merged"]["ranks"]]
    direct, back = analyze(*ranks)["ranks"], analyze(out)["ranks"]
    assert [r["clock_offset_ns"] for r in direct["per_rank"]] == offsets
    assert offsets[1] != 0  # the real traces' clocks differ: the check is not vacuous
    assert [r["clock_offset_ns"] for r in back["per_rank"]] == [0, 0]
    for r in direct["per_rank"] + back["per_rank"]:
        del r["clock_offset_ns"]
    assert back == direct


def test_merge_refuses_inputs_it_cannot_read_twice(tmp_path):
    out = tmp_path / "m.json"
    p = tprof("merge", "-", RANKS[1], "-o", out, stdin=RANKS[0].read_bytes(), rc=2)
    line = error_line(p)
    assert "<stdin>" in line and "twice" in line
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    p = tprof("merge", fifo, RANKS[1], "-o", out, rc=2)
    assert str(fifo) in error_line(p)
    assert not out.exists()


def test_merge_failing_midway_leaves_nothing(tmp_path):
    """A file-size limit makes the writing fail after its first megabytes, midway through the
    ranks: an error naming the output, and no file nor temporary file left."""
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
    out = tmp_path / "m.json"
    p = subprocess.run([str(TPROF), "merge", *map(str, RANKS), "-o", str(out)],
                       capture_output=True, timeout=120, preexec_fn=limit)
    assert p.returncode == 2, p.stderr
    last = p.stderr.decode().splitlines()[-1]
    assert last.startswith("tprof: cannot write ") and "m.json: File too large" in last
    assert list(tmp_path.iterdir()) == []
