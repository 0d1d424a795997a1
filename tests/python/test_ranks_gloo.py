"""Several ranks for real: torch.distributed with gloo on the CPU, 2 and 4 processes, a DDP model
with tprof.profile in each rank, one rank made slower in its data loading (a sleep inside its
dataloader stage). `tprof analyze` of the run directory names that rank as the straggler and data
loading as its cause; `tprof merge` makes one trace with a process per rank whose steps line up,
and realigns a rank whose clock is shifted by a known offset. Traces are checked with Python's
json module."""
import glob
import json
import os
import shutil
import socket
import subprocess

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("this torch has no torch.distributed", allow_module_level=True)

from conftest import PYTHON, ranges, read_json, trace_events  # noqa: E402

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
            prof.step()
    dist.destroy_process_group()
    os._exit(0)  # torch 2.13's gloo teardown can deadlock (tests/python/test_torch_distributed.py)


if __name__ == "__main__":
    world, slow = int(sys.argv[3]), int(sys.argv[4])
    mp.spawn(worker, args=(sys.argv[1], sys.argv[2], world, slow, float(sys.argv[5])),
             nprocs=world)
'''


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


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
    ranks = json.loads(tprof("analyze", "--json", run_dir).stdout)["ranks"]
    assert ranks["count"] == world
    assert [r["rank"] for r in ranks["per_rank"]] == list(range(world))
    for r in ranks["per_rank"]:
        assert r["steps"] == 6
        # the sleep is in the slow rank's dataloader stage only
        if r["rank"] == slow:
            assert r["stages_ns"]["dataloader"] >= 6 * SLEEP_S * 1e9
        else:
            assert r["stages_ns"]["dataloader"] < 6 * SLEEP_S * 1e9 / 3
        assert r["communication_ns"] > 0 and r["collectives"] >= 12
    st = ranks["straggler"]
    assert st is not None, ranks
    assert st["rank"] == slow and st["cause"] == "data_loading", st
    # last at every DDP gradient all-reduce (it starts its backward late); at the blocking
    # all-reduce after the optimizer the ranks arrive together, in any order
    assert st["last_share"] >= 0.5
    # its sleep late at half the collectives, on time at the others; the others wait for it
    assert st["mean_late_ns"] > 0.3 * SLEEP_S * 1e9
    assert st["wait_share"] > 0.1
    assert st["message"].startswith("rank %d arrives last at" % slow)
    text = tprof("analyze", run_dir).stdout
    assert "straggler: rank %d arrives last" % slow in text
