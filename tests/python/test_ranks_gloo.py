"""Several ranks for real: torch.distributed with gloo on the CPU, 2 and 4 processes, a DDP model
with tprof.profile in each rank, one rank made slower in its data loading (a sleep inside its
dataloader stage). `tprof analyze` of the run directory names that rank as the straggler and data
loading as its cause; `tprof merge` makes one trace with a process per rank whose steps line up,
and realigns a rank whose clock is shifted by a known offset. Traces are checked with Python's
json module."""
import glob
import json
import os
import subprocess

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("this torch has no torch.distributed", allow_module_level=True)

from conftest import PYTHON, free_port, ranges, read_json  # noqa: E402
from run_files import artifact  # noqa: E402

TPROF = os.path.join(os.environ["TPROF_BUILD_DIR"], "tprof")
SLEEP_S = 0.03

WORKER = r'''
import os, sys, time
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch import nn
import tprof, tprof.torch


def worker(rank, out, port, world, slow, sleep_s):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(
        nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(rank)
    with tprof.profile(model=model, output_dir=out, run_id="ddp", wait=1, active=6, repeat=1,
                       top_k=3) as prof:
        for step in range(7):
            with tprof.stage("dataloader"):
                if rank == slow:
                    time.sleep(sleep_s)
                x, y = torch.randn(8, 16, generator=g), torch.randint(0, 4, (8,), generator=g)
            with tprof.stage("forward"):
                loss = nn.functional.cross_entropy(model(x), y)
            with tprof.stage("backward"):
                loss.backward()
            with tprof.stage("optimizer"):
                opt.step()
                opt.zero_grad()
            mean_loss = loss.detach().clone()
            dist.all_reduce(mean_loss)  # blocking: every rank leaves it together
            dist.barrier()  # two more blocking collectives per step for the clock alignment
            dist.barrier()
            prof.step()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.13's gloo teardown can deadlock (tests/python/test_torch_distributed.py)


if __name__ == "__main__":
    world, slow = int(sys.argv[3]), int(sys.argv[4])
    mp.spawn(worker, args=(sys.argv[1], sys.argv[2], world, slow, float(sys.argv[5])),
             nprocs=world)
'''


def run_job(tmp, world, slow):
    script = tmp / "ddp_job.py"
    script.write_text(WORKER)
    out = str(tmp / "runs")
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    env["OMP_NUM_THREADS"] = "1"
    try:
        r = subprocess.run([PYTHON, str(script), out, free_port(), str(world), str(slow),
                            str(SLEEP_S)], env=env, capture_output=True, text=True, timeout=400)
    except subprocess.TimeoutExpired as e:
        pytest.fail("the %d-rank job did not finish in %ss:\n%s\n%s"
                    % (world, e.timeout, e.stdout, e.stderr))
    assert r.returncode == 0, r.stderr[-3000:]
    return os.path.join(out, "ddp")


@pytest.fixture(scope="module", params=[(2, 1), (4, 2)], ids=["2ranks", "4ranks"])
def job(request, tmp_path_factory):
    world, slow = request.param
    return run_job(tmp_path_factory.mktemp("ranks%d" % world), world, slow), world, slow


def tprof(*args):
    p = subprocess.run([TPROF, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


def test_the_slow_rank_is_the_straggler_and_data_loading_its_cause(job):
    run_dir, world, slow = job
    doc = json.loads(tprof("analyze", "--json", run_dir).stdout)
    ranks = doc["ranks"]
    assert ranks["count"] == world
    assert [r["rank"] for r in ranks["per_rank"]] == list(range(world))
    for r in ranks["per_rank"]:
        assert r["steps"] == 6
        # the sleep is in the slow rank's dataloader stage only
        if r["rank"] == slow:
            assert r["stages_ns"]["dataloader"] >= 6 * SLEEP_S * 1e9
        else:
            assert r["stages_ns"]["dataloader"] < 6 * SLEEP_S * 1e9 / 3
        # 4 per step (DDP's bucket all-reduce, the all_reduce, 2 barriers); through torch's op
        # observer gloo's own ranges, DDP's broadcasts of its first step included
        assert r["communication_ns"] > 0 and r["collectives"] >= 24
    assert len({r["collectives"] for r in ranks["per_rank"]}) == 1
    st = ranks["straggler"]
    assert st is not None, ranks
    assert st["rank"] == slow and st["cause"] == "data_loading", st
    # last at the DDP gradient all-reduces (it starts its backward late); at the blocking
    # collectives after the optimizer the ranks arrive together, in any order
    # at least at the 6 gradient all-reduces, of the 24 or more collectives matched (DDP's
    # broadcasts of its first step are matched too when both ranks' windows hold them)
    assert round(st["last_share"] * st["collectives"]) >= 6, st
    # its sleep late at a quarter of the collectives, on time at the others; the others wait.
    # Through torch's op observer a collective's arrival is when gloo starts running it (its own
    # range, on its thread), which for the ranks on time can lag their call: less lateness
    assert st["mean_late_ns"] > 0.1 * SLEEP_S * 1e9
    assert st["wait_share"] > 0.1
    assert st["message"].startswith("rank %d arrives last at" % slow)
    assert [r["id"] for r in doc["recommendations"]].count("straggler") == 1
    text = tprof("analyze", run_dir).stdout
    assert "straggler: rank %d arrives last" % slow in text


def merge(out, *inputs):
    p = tprof("merge", *inputs, "-o", out)
    return read_json(out), p.stderr


def step_starts(events):
    """{step number: {pid: start in µs}} of the ProfilerStep#k ranges."""
    starts = {}
    for e in ranges(events):
        if e["name"].startswith("ProfilerStep#"):
            starts.setdefault(int(e["name"].split("#")[1]), {})[e["pid"]] = e["ts"]
    return starts


def test_merged_trace_has_a_process_per_rank_and_aligned_steps(job, tmp_path):
    run_dir, world, slow = job
    doc, err = merge(str(tmp_path / "merged.json.gz"), run_dir)
    events = doc["traceEvents"]
    names = {e["pid"]: e["args"]["name"] for e in events
             if e.get("ph") == "M" and e["name"] == "process_name"}
    assert names == {r: "rank %d" % r for r in range(world)}
    assert {e["pid"] for e in ranges(events)} == set(range(world))
    offsets = doc["tprof"]["merged"]["ranks"]
    assert [o["rank"] for o in offsets] == list(range(world))
    # the blocking collectives (3 per step; through the observer every gloo range is one)
    counts = {o["collectives"] for o in offsets[1:]}
    assert len(counts) == 1 and counts.pop() >= 18, offsets
    assert err.count("clock offset") == world - 1
    # every rank leaves each step's blocking all-reduce together: the next step starts together
    # (give or take the scheduling of 2 to 4 processes on a 2-core machine shared with other
    # jobs: up to 6 ms seen), not the slow rank's sleep apart
    starts = step_starts(events)
    assert len(starts) == 6
    for step, by_rank in starts.items():
        assert sorted(by_rank) == list(range(world))
        assert max(by_rank.values()) - min(by_rank.values()) < SLEEP_S * 1e6 / 2, (step, by_rank)
    # read back as the ranks it holds, the same straggler
    ranks = json.loads(tprof("analyze", "--json", str(tmp_path / "merged.json.gz")).stdout)["ranks"]
    assert ranks["count"] == world
    assert ranks["straggler"]["rank"] == slow


def shifted_copy(run_dir, rank, shift_us, dest):
    """The run's traces, rank's with every time moved by shift_us (its clock off by that)."""
    os.makedirs(dest)
    for path in glob.glob(artifact(run_dir, "trace_*.json")):
        doc = read_json(path)
        if path.endswith(".rank%d.json" % rank):
            for e in doc["traceEvents"]:
                if "ts" in e:
                    e["ts"] = round(e["ts"] + shift_us, 3)
        with open(os.path.join(dest, os.path.basename(path)), "w", encoding="utf-8") as f:
            json.dump(doc, f)


def test_a_shifted_clock_is_realigned(job, tmp_path):
    run_dir, world, _ = job
    shift_us = 12345.678
    shifted = str(tmp_path / "shifted")
    shifted_copy(run_dir, world - 1, shift_us, shifted)
    as_run, _ = merge(str(tmp_path / "as_run.json"), run_dir)
    moved, _ = merge(str(tmp_path / "moved.json"), shifted)
    before = as_run["tprof"]["merged"]["ranks"][world - 1]["offset_ns"]
    after = moved["tprof"]["merged"]["ranks"][world - 1]["offset_ns"]
    # The shift is in the events' times only (baseTimeNanoseconds unchanged): only the
    # collectives can tell it. Realigned: the offset moves by the shift, to 50 us.
    realign_ns = abs(after - (before - shift_us * 1e3))
    # The ranks share one clock (one machine): the right offset is 0 before the shift. The
    # ends of gloo's collectives at the Python level spread by 0.1 to 4 ms on a 2-core machine
    # shared with other jobs (descheduled processes); the estimate is bounded by the arrivals
    # (straggler.c) and held here to 1 ms.
    print("rank %d shifted by %.3f us: realigned to %.1f us; offset against the shared clock "
          "%.1f us" % (world - 1, shift_us, realign_ns / 1e3, before / 1e3))
    assert realign_ns < 50_000
    assert abs(before) < 1_000_000
