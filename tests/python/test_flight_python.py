"""The flight recorder from Python (docs/FLIGHT.md): tprof.flight_save, an exception escaping
tprof.profile, and a training_step raising inside a Lightning fit (the callback and the
profiler). Traces are read with Python's json module."""
import os

import pytest

import tprof
from conftest import read_json, run_traces, step_numbers

FLIGHT = dict(flight_recorder=True, flight_steps=5, slow_step_factor=0, summary=False)


def flight_traces(run_dir):
    return [p for p in run_traces(run_dir) if "_flight_" in os.path.basename(p)]


def test_flight_save_from_python(out_dir):
    with tprof.profile(output_dir=out_dir, **FLIGHT) as prof:
        for i in range(20):
            with tprof.stage("forward"):
                pass
            if i == 12:
                assert tprof.flight_save("manual") is True
            prof.step()
    (path,) = flight_traces(prof.run_dir)
    assert os.path.basename(path) == "trace_0001_flight_manual_steps_7-12.json"
    doc = read_json(path)
    assert doc["tprof"]["flight"] == {"reason": "manual", "step": 12}
    assert step_numbers(doc["traceEvents"]) == list(range(7, 13))


def test_flight_save_refusals(out_dir, caplog):
    assert tprof.flight_save("x") is False  # no session
    with tprof.profile(output_dir=out_dir, summary=False):
        assert tprof.flight_save("x") is False  # the recorder is off
    with tprof.profile(output_dir=out_dir, **FLIGHT):
        assert tprof.flight_save("../etc") is False
        with pytest.raises(TypeError):
            tprof.flight_save(3)
    assert "the flight recorder is off" in caplog.text and "the reason must be" in caplog.text


def test_exception_in_profile_saves_the_ring(out_dir):
    prof = tprof.profile(output_dir=out_dir, **FLIGHT)
    with pytest.raises(ValueError):
        with prof:
            for i in range(30):
                with tprof.stage("forward"):
                    if i == 17:
                        raise ValueError("diverged")
                prof.step()
    (path,) = flight_traces(prof.run_dir)
    assert os.path.basename(path) == "trace_0001_flight_exception_steps_12-17.json"
    doc = read_json(path)
    assert doc["tprof"]["flight"] == {"reason": "exception", "step": 17}
    events = doc["traceEvents"]
    assert step_numbers(events) == list(range(12, 18))
    # the failing step's stage is in the trace, cut where the exception left it
    assert any(e.get("name") == "forward" and e.get("args", {}).get("tprof truncated")
               for e in events) or len([e for e in events if e.get("name") == "forward"]) == 6


def test_no_flight_save_without_an_exception(out_dir):
    with tprof.profile(output_dir=out_dir, **FLIGHT) as prof:
        for _ in range(10):
            prof.step()
    assert flight_traces(prof.run_dir) == []


torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")
import tprof.torch  # noqa: E402


class Failing(pl.LightningModule):
    def __init__(self, fail_at):
        super().__init__()
        self.lin = torch.nn.Linear(4, 2)
        self.fail_at = fail_at

    def training_step(self, batch, i):
        if self.global_step >= self.fail_at:
            raise RuntimeError("loss is nan")
        x, y = batch
        return torch.nn.functional.cross_entropy(self.lin(x), y)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def fit(module, **kw):
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(4, generator=g), i % 2) for i in range(64)]
    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu", num_sanity_val_steps=0, **kw)
    with pytest.raises(RuntimeError, match="loss is nan"):
        trainer.fit(module, torch.utils.data.DataLoader(data, batch_size=4))


def test_lightning_callback_exception_saves_the_ring(out_dir):
    cb = tprof.torch.Callback(output_dir=out_dir, **FLIGHT)
    fit(Failing(fail_at=9), callbacks=[cb])
    (path,) = flight_traces(cb.profile.run_dir)
    doc = read_json(path)
    assert doc["tprof"]["flight"]["reason"] == "exception"
    assert os.path.basename(path).startswith("trace_0001_flight_exception_steps_")
    steps = step_numbers(doc["traceEvents"])
    assert steps[-1] == doc["tprof"]["flight"]["step"] and len(steps) == 6


def test_lightning_profiler_exception_saves_the_ring(out_dir):
    profiler = tprof.torch.LightningProfiler(dirpath=out_dir, **FLIGHT)
    fit(Failing(fail_at=9), profiler=profiler)
    (path,) = flight_traces(profiler.session.run_dir)
    assert read_json(path)["tprof"]["flight"]["reason"] == "exception"
