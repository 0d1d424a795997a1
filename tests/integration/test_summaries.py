"""`tprof analyze --summaries` (docs/DISTRIBUTED.md, "Scale"): the cross-rank analysis from each
rank's summary.json alone. Two ranks of a C loop with real collectives (tests/tools/tp_rank_loop.c,
rank 1 slower in its data loading) are analysed from their traces, then, with the traces
deleted, from their summaries: the same `ranks` key. The straggler is cross-checked against a
stdlib computation from the summaries' collectives; rank_summary's keys against the docs."""

import json
import os
import re
import statistics
import subprocess

import pytest
from cli_helpers import BUILD, SOURCE, tprof

import tprof_ref
from run_files import files_dir

LOOP = BUILD / "tests" / "tp_rank_loop"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("summaries")
    (d / "sync").mkdir()
    procs = [subprocess.Popen([str(LOOP), "--sync", str(d / "sync"), "--steps", "12",
                               "--slow-rank", "1", "--slow-ms", "30", "--profile",
                               "--profiling.output_dir", str(d), "--profiling.run_id", "run",
                               "--profiling.summary", "false"],
                              env=dict(os.environ, RANK=str(r), WORLD_SIZE="2"))
             for r in (0, 1)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    return d / "run"


def analyze(*args):
    return json.loads(tprof("analyze", "--json", *args, rc=0).stdout)


def test_summaries_give_the_ranks_of_the_traces(run_dir, tmp_path):
    from_traces = analyze(run_dir)["ranks"]
    assert from_traces["count"] == 2
    # no trace is read: there is none left
    copy = tmp_path / "run"
    copy.mkdir()
    for f in files_dir(run_dir).iterdir():
        if "trace" not in f.name and f.is_file():
            (copy / f.name).write_bytes(f.read_bytes())
    assert not list(copy.glob("*trace*"))
    got = analyze("--summaries", copy)
    assert got["ranks"] == from_traces
    st = got["ranks"]["straggler"]
    assert st is not None and st["rank"] == 1 and st["cause"] == "data_loading"
    assert [r["id"] for r in got["recommendations"]] == ["straggler"]
    # summary files named one by one, in any order, are the same
    files = sorted(copy.glob("summary*.json"), reverse=True)
    assert analyze("--summaries", *files)["ranks"] == from_traces
    text = tprof("analyze", "--summaries", copy, rc=0).stdout.decode()
    assert "Ranks (2)" in text and "straggler: rank 1 arrives last" in text
    # no single-run section, which a summary could only fill with n/a
    for heading in ("Step time", "Stages", "Ops", "GPU", "Memory peaks", "FLOPs"):
        assert "\n%s\n" % heading not in text, heading
    assert "steps: 0" not in text and "n/a: no" not in text
    # the sections are those of the traces' report, less the single-run ones
    full = tprof("analyze", run_dir, rc=0).stdout.decode()
    assert "\nStep time\n" in full and text.split("\nRanks (2)\n")[0] == "tprof report\n"


def test_straggler_agrees_with_reference(run_dir):
    """From the summaries' collectives alone: who arrives last (latest start) and how late."""
    rs = [json.loads((files_dir(run_dir) / ("summary.rank%d.json" % r)).read_text())["rank_summary"]
          for r in (0, 1)]
    colls = [{c[0]: c for c in s["collectives"]} for s in rs]
    seqs = sorted(set(colls[0]) & set(colls[1]))
    assert len(seqs) == 12 and rs[0]["collectives_total"] == 12
    # on rank 0's clock: rank 1's moved by the offset from the blocking collectives' ends
    off = tprof_ref.clock_offset([(colls[0][q][1], colls[0][q][2], colls[1][q][1], colls[1][q][2])
                                  for q in seqs if colls[0][q][3] and colls[1][q][3]])
    late = [colls[1][q][1] + off - colls[0][q][1] for q in seqs]  # rank 1's start less rank 0's
    st = analyze("--summaries", run_dir)["ranks"]["straggler"]
    assert st["collectives"] == 12
    assert st["last_share"] == pytest.approx(sum(x > 0 for x in late) / 12)
    assert st["mean_late_ns"] == pytest.approx(statistics.mean(late), abs=1)
    waited = sum(x for x in late if x > 0)
    assert st["wait_share"] == pytest.approx(waited / rs[0]["steps_total_ns"])
    # rank 1 loads 30 ms more per step: it is late at most all-reduces (a loaded machine may
    # deschedule either rank, hence no tighter figure)
    assert statistics.median(late) > 5e6


def test_bad_summaries_are_one_clear_error(run_dir, tmp_path):
    one = files_dir(run_dir) / "summary.rank0.json"
    p = tprof("analyze", "--summaries", one, rc=2)
    assert b"1 rank found" in p.stderr
    p = tprof("analyze", "--summaries", one, one, rc=2)
    assert b"rank 0: two summaries" in p.stderr
    broken = tmp_path / "summary.rank1.json"
    text = (files_dir(run_dir) / "summary.rank1.json").read_text()
    broken.write_text(text.replace('"collectives": [[', '"collectives": [["x", ', 1))
    p = tprof("analyze", "--summaries", one, broken, rc=2)
    assert re.match(rb"tprof analyze: .*summary.rank1.json: byte \d+: a number expected", p.stderr)
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"run": {}}))
    p = tprof("analyze", "--summaries", one, old, rc=2)
    assert b"old.json" in p.stderr and b"rank_summary" in p.stderr
    p = tprof("analyze", "--summaries", tmp_path / "missing.json", one, rc=2)
    assert b"missing.json" in p.stderr


def test_rank_summary_keys_are_documented(run_dir):
    doc = (SOURCE / "docs" / "ANALYZE_JSON.md").read_text(encoding="utf-8")
    section = doc.split("## `rank_summary` in `summary.json`")[1].split("\n## ")[0]
    keys = set()
    for m in re.finditer(r"^\| `([^`]+)`((?:, `[^`]+`)*) \|", section, re.M):
        keys.add(m.group(1))
        base = m.group(1).rsplit(".", 1)[0]
        keys.update(base + "." + k for k in re.findall(r"`([^`]+)`", m.group(2)))
    got = json.loads((files_dir(run_dir) / "summary.rank0.json").read_text())["rank_summary"]
    seen = {"rank_summary." + k + ("[]" if isinstance(v, list) else "") for k, v in got.items()}
    assert seen == keys
