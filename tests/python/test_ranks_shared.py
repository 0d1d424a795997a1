"""Ranks share one run directory with no run_id chosen (docs/DISTRIBUTED.md): two gloo processes
on the CPU started by torch.multiprocessing.spawn (tprof.profile as the worker's decorator, its
rank unknown when it starts), by torchrun (tprof.profile in the script, and the script unchanged
under `tprof run`), and by Lightning's DDP under `tprof run`. Each launch gives exactly one run
directory holding rank 0's and rank 1's files, and the next launch another one."""
import os
import subprocess
import textwrap

import pytest

torch = pytest.importorskip("torch")
if not torch.distributed.is_available():
    pytest.skip("this torch has no torch.distributed", allow_module_level=True)

from conftest import PYTHON, free_port, run_traces, step_numbers, trace_events  # noqa: E402
from lightning_jobs import lightning_script  # noqa: E402
from run_files import files_dir  # noqa: E402

TPROF = os.path.join(os.environ["TPROF_BUILD_DIR"], "tprof")

SPAWN = """
import os, sys
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch import nn
import tprof


@tprof.profile(output_dir=sys.argv[1], wait=1, active=3, repeat=1)
def worker(rank, port):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("gloo", rank=rank, world_size=2)
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for step in range(5):
        model(torch.randn(4, 8)).sum().backward()
        opt.step()
        opt.zero_grad()
        tprof.step()
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(sys.argv[2],), nprocs=2)
"""

TORCHRUN_PLAIN = """
import os
import torch, torch.distributed as dist
from torch import nn

dist.init_process_group("gloo")
model = nn.parallel.DistributedDataParallel(nn.Linear(8, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.utils.data.TensorDataset(torch.randn(32, 8))
for (x,) in torch.utils.data.DataLoader(data, batch_size=4):
    model(x).sum().backward()
    opt.step()
    opt.zero_grad()
dist.barrier()
os.write(1, b"rank %d done\\n" % dist.get_rank())  # one write: the ranks share stdout
# DDP's reducer holds gloo work with tensors in it; released while the interpreter is whole, not
# at its finalization, where gloo's threads aborted a rank now and then ("terminate called
# without an active exception", 2 of 8 full test runs; pytorch PR 179291)
del model, opt
dist.destroy_process_group()
"""

# the same, profiled by the script itself
TORCHRUN = (TORCHRUN_PLAIN.replace("from torch import nn",
                                   "from torch import nn\nimport sys, tprof")
            .replace("opt = torch", "prof = tprof.profile(output_dir=sys.argv[1], active=8, "
                     "repeat=1).start()\nopt = torch")
            .replace("    opt.zero_grad()", "    opt.zero_grad()\n    prof.step()")
            .replace("dist.barrier()", "prof.stop()\ndist.barrier()"))

LIGHTNING_DDP = lightning_script("""
    data = [(torch.randn(8), i % 3) for i in range(32)]
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=1,
                         logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)
    trainer.fit(Net(), torch.utils.data.DataLoader(data, batch_size=4))
""")


def launch(tmp_path, script, cmd):
    path = tmp_path / "job.py"
    path.write_text(textwrap.dedent(script))
    env = {k: v for k, v in os.environ.items()
           if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT")}
    env.update(OMP_NUM_THREADS="1", PL_DISABLE_FORK="1")
    try:
        p = subprocess.run([c if c != "JOB" else str(path) for c in cmd], env=env,
                           capture_output=True, text=True, timeout=400, cwd=str(tmp_path))
    except subprocess.TimeoutExpired as e:
        pytest.fail("the job did not finish in %ss:\n%s\n%s" % (e.timeout, e.stdout, e.stderr))
    # stdout says which ranks got past their script's end ("rank N done")
    assert p.returncode == 0, p.stdout[-500:] + p.stderr[-3000:]
    return p


def one_run_dir_of_two_ranks(out):
    """The only run directory under out, holding rank 0's and rank 1's traces and summaries."""
    runs = os.listdir(out)
    assert len(runs) == 1, runs
    run_dir = os.path.join(out, runs[0])
    files = os.listdir(files_dir(run_dir))
    for rank in (0, 1):
        assert "summary.rank%d.json" % rank in files, files
        assert any(f.startswith("trace_") and ".rank%d." % rank in f for f in files), files
    assert not [f for f in files if f.startswith("summary.json")]
    check = subprocess.run([TPROF, "check", run_dir], capture_output=True, text=True,
                           timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    return run_dir


def test_mp_spawn_with_the_decorator(tmp_path):
    dirs = []
    for launch_no in (1, 2):
        out = str(tmp_path / ("runs%d" % launch_no))
        launch(tmp_path, SPAWN, [PYTHON, "JOB", out, free_port()])
        run_dir = one_run_dir_of_two_ranks(out)
        # the session starts at the first step (the rank is known then); the numbers stay the
        # worker's: wait=1 leaves step 0 out, steps 1-3 are recorded
        for trace in run_traces(run_dir):
            assert step_numbers(trace_events(trace)) == [1, 2, 3], trace
        dirs.append(os.path.basename(run_dir))
    assert dirs[0] != dirs[1]  # each launch its own run_id (its parent process's)


def test_torchrun(tmp_path):
    out = str(tmp_path / "runs")
    cmd = [PYTHON, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port",
           free_port(), "JOB"]
    launch(tmp_path, TORCHRUN, cmd + [out])
    for trace in run_traces(one_run_dir_of_two_ranks(out)):
        assert step_numbers(trace_events(trace)) == list(range(8))


def test_torchrun_under_tprof_run(tmp_path):
    out = str(tmp_path / "runs")
    cmd = [TPROF, "run", "--output_dir", out, "--", PYTHON, "-m", "torch.distributed.run",
           "--nproc_per_node", "2", "--master_port", free_port(), "JOB"]
    p = launch(tmp_path, TORCHRUN_PLAIN, cmd)
    run_dir = one_run_dir_of_two_ranks(out)
    assert sorted(p.stdout.splitlines()) == ["rank 0 done", "rank 1 done"]
    assert p.stderr.count("tprof: run directory: %s\n" % run_dir) == 1  # rank 0 names it
    for trace in run_traces(run_dir):  # 8 optimizer steps; the rest of the script is none
        assert step_numbers(trace_events(trace)) == list(range(8))


def test_lightning_ddp_under_tprof_run(tmp_path):
    pytest.importorskip("lightning.pytorch")
    out = str(tmp_path / "runs")
    launch(tmp_path, LIGHTNING_DDP, [TPROF, "run", "--output_dir", out, "--", PYTHON, "JOB"])
    for trace in run_traces(one_run_dir_of_two_ranks(out)):
        # 32 samples, batch 4, 2 ranks: 4 batches per rank (the fit's end is no step)
        assert step_numbers(trace_events(trace)) == list(range(4))
