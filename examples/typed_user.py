"""typed_user.py - tprof's Python API as a type-checked user script: `mypy --strict` passes on it
(scripts/lint runs it, tests/python/test_typing.py too), so the annotations, the extension's stub
(tprof/_tprof.pyi) and py.typed give a user's checker and IDE what each call takes and returns.

It also runs: a profiled loop with stages and a decorated function, its run analysed
(tprof.analyze, its tables as pandas DataFrames when pandas is installed), then a short Lightning
fit with tprof.torch.Callback and one with tprof.torch.LightningProfiler.

    python3 examples/typed_user.py [OUTPUT_DIR]
"""
import sys
import tempfile

import torch
from torch import nn

import tprof
import tprof.torch
from tprof.torch import Callback, LightningProfiler


@tprof.range
def loss_of(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    out: torch.Tensor = model(x)
    return out.square().mean()


def train(output_dir: str) -> str:
    """A profiled loop; returns its run directory."""
    model = nn.Linear(8, 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    batches = [torch.randn(16, 8) for _ in range(6)]
    with tprof.profile(model=model, wait=1, active=3, repeat=1, output_dir=output_dir,
                       summary=False) as prof:
        for x in tprof.torch.dataloader(batches):
            with tprof.stage("forward"):
                loss = loss_of(model, x)
            with tprof.stage("backward"):
                torch.autograd.backward(loss)  # typed, unlike Tensor.backward
            with tprof.stage("optimizer"):
                opt.step()
                opt.zero_grad()
            tprof.counter("loss", loss.item())
            prof.step()
    assert prof.run_dir is not None
    return prof.run_dir


def report(run_dir: str) -> None:
    analysis = tprof.analyze(run_dir, top_k=5)
    steps: int = analysis["steps"]["count"]
    print("steps analysed:", steps)
    try:
        ops = analysis.ops()
    except ImportError:  # pandas is optional
        return
    print(ops[["name", "calls", "self_us"]].head().to_string(index=False))


def fit(output_dir: str) -> None:
    """A short Lightning fit with the callback, then one with the profiler."""
    import lightning.pytorch as pl
    from lightning.pytorch.demos.boring_classes import BoringModel

    callback: pl.Callback = Callback(output_dir=output_dir, summary=False)
    trainer = pl.Trainer(max_epochs=1, limit_train_batches=4, limit_val_batches=0,
                         callbacks=[callback], logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(BoringModel())
    profiler = LightningProfiler(output_dir=output_dir, summary=False)
    trainer = pl.Trainer(max_epochs=1, limit_train_batches=4, limit_val_batches=0,
                         profiler=profiler, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(BoringModel())
    print(profiler.summary().splitlines()[0])


def main(argv: list[str]) -> int:
    output_dir = argv[1] if len(argv) > 1 else tempfile.mkdtemp(prefix="tprof-typed-")
    report(train(output_dir))
    fit(output_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
