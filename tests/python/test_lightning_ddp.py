"""The callback under Lightning's DDP on the CPU: Trainer(accelerator="cpu", devices=2,
strategy="ddp") launches a second process running the same script (gloo backend). Each rank
writes its own traces into one run directory (rank 0's run_id, broadcast); only rank 0 prints
the summary and the epoch reports."""
import os
import subprocess
import textwrap

import pytest

pytest.importorskip("torch")
pytest.importorskip("lightning.pytorch")

from conftest import PYTHON, run_traces, step_numbers, trace_events  # noqa: E402
from lightning_jobs import lightning_script

SCRIPT = lightning_script("""
    data = [(torch.randn(8), i % 3) for i in range(64)]
    cb = tprof.torch.Callback(profile_epochs=[1], profile_steps=4, warmup_steps=1,
                              output_dir=sys.argv[1], log_top_k_ops=3)
    trainer = pl.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=2,
                         callbacks=[cb], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(Net(), torch.utils.data.DataLoader(data, batch_size=4))
""", imports="import tprof.torch")


def test_ddp_two_ranks_one_run_directory(tmp_path):
    script = tmp_path / "train_ddp.py"
    script.write_text(textwrap.dedent(SCRIPT))
    out = tmp_path / "runs"
    env = dict(os.environ, PL_DISABLE_FORK="1")
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
        env.pop(name, None)
    proc = subprocess.run([PYTHON, str(script), str(out)], env=env, capture_output=True,
                          text=True, timeout=300, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr[-3000:]
    (run_dir,) = [str(p) for p in out.iterdir()]  # one run directory for both ranks
    names = sorted(os.path.basename(t) for t in run_traces(run_dir))
    assert names == ["trace_0001_epoch_1.rank0.json", "trace_0001_epoch_1.rank1.json"]
    for trace in run_traces(run_dir):
        # 64 samples, batch 4, 2 ranks: 8 batches per rank and epoch; epoch 1 from step 8
        assert step_numbers(trace_events(trace)) == [9, 10, 11, 12]
    output = proc.stdout + proc.stderr
    assert output.count("tprof summary:") == 1  # rank 0 only
    assert output.count("tprof: epoch 1:") == 1
