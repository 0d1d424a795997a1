"""Issue 23, item 5: the Lightning callback and LightningProfiler log each profiled epoch's step
time, stage shares and top ops as scalars to the Trainer's loggers. Read back with
tensorboard's own reader (EventAccumulator) and Python's csv module, every number is the run's:
steps and stages from stage_times.json grouped by the steps of each epoch's trace (read with the
json module), ops from summary.json (one window) or that window's analysis."""
import csv
import glob
import os

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")
event_accumulator = pytest.importorskip(
    "tensorboard.backend.event_processing.event_accumulator")

import tprof  # noqa: E402
import tprof.torch  # noqa: E402
from conftest import read_json, run_traces, step_numbers, trace_events  # noqa: E402
from run_files import artifact  # noqa: E402
from test_lightning import STAGES, Net, loader  # noqa: E402

torch.set_num_threads(1)


def fit(tmp_path, integration, kind, max_epochs=2):
    loggers = [pl.loggers.TensorBoardLogger(str(tmp_path / "tb"), name="", version=0),
               pl.loggers.CSVLogger(str(tmp_path / "csv"), name="", version=0)]
    kw = {"callbacks": [integration]} if kind == "Callback" else {"profiler": integration}
    trainer = pl.Trainer(logger=loggers, max_epochs=max_epochs, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False,
                         accelerator="cpu", num_sanity_val_steps=0, limit_val_batches=1,
                         log_every_n_steps=1, **kw)
    trainer.fit(Net(), loader(5), loader(1))
    session = integration.profile if kind == "Callback" else integration.session
    return session.run_dir, loggers


def tensorboard_scalars(log_dir):
    """{tag: {step: value}} of the tprof/ scalars, through tensorboard's reader."""
    acc = event_accumulator.EventAccumulator(log_dir, size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: {e.step: e.value for e in acc.Scalars(tag)}
            for tag in acc.Tags()["scalars"] if tag.startswith("tprof/")}


def csv_scalars(log_dir):
    """{column: {step: value}} of the tprof/ columns of CSVLogger's metrics.csv."""
    (path,) = glob.glob(os.path.join(log_dir, "**", "metrics.csv"), recursive=True)
    out = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            for key, value in row.items():
                if key.startswith("tprof/") and value != "":
                    out.setdefault(key, {})[int(row["step"])] = float(value)
    return out


def expected(run_dir, top_k):
    """{step: {name: value}}: each epoch window's figures computed here from the run's files."""
    rows = read_json(artifact(run_dir, "stage_times.json"))["steps"]
    traces = run_traces(run_dir)
    summary = read_json(artifact(run_dir, "summary.json"))
    out = {}
    for path in traces:
        epoch = int(os.path.basename(path).split("_epoch_")[1].split(".")[0])
        numbers = set(step_numbers(trace_events(path)))
        mine = [r for r in rows if r["number"] in numbers]
        total = sum(r["dur_us"] for r in mine)
        want = {"tprof/step_time_ms": total / len(mine) / 1000.0, "tprof/epoch": float(epoch)}
        for stage in STAGES:
            want["tprof/stage_share/" + stage] = (100.0 * sum(r["stages"][stage] for r in mine)
                                                 / total)
        want["tprof/stage_share/other"] = 100.0 * sum(r["other_us"] for r in mine) / total
        ops = summary["top_cpu_ops"] if len(traces) == 1 else tprof.analyze(path)["top_cpu_ops"]
        for op in ops[:top_k]:
            want["tprof/op_ms/" + op["name"]] = op["self_us"] / 1000.0
        out[max(numbers)] = want
    return out


def assert_logged(got, want):
    names = {name for figures in want.values() for name in figures}
    assert set(got) == names
    for step, figures in want.items():
        for name, value in figures.items():
            assert got[name][step] == pytest.approx(value, rel=1e-5, abs=1e-6), (step, name)
    assert all(set(by_step) <= set(want) for by_step in got.values())


@pytest.mark.parametrize("kind", ["Callback", "LightningProfiler"])
def test_one_epoch_window_equals_summary_json(tmp_path, kind):
    integration = getattr(tprof.torch, kind)(profile_epochs=[1], log_top_k_ops=3,
                                             output_dir=str(tmp_path / "runs"), summary=False)
    run_dir, loggers = fit(tmp_path, integration, kind)
    want = expected(run_dir, 3)
    assert list(want) == [9]  # epoch 1's steps 5..9 (5 batches an epoch, one step each)
    assert len([n for n in want[9] if n.startswith("tprof/op_ms/")]) == 3
    assert_logged(tensorboard_scalars(loggers[0].log_dir), want)
    assert_logged(csv_scalars(loggers[1].log_dir), want)


def test_every_profiled_epoch_at_its_step(tmp_path):
    cb = tprof.torch.Callback(profile_epochs=[0, 1], log_top_k_ops=2,
                              output_dir=str(tmp_path / "runs"), summary=False)
    run_dir, loggers = fit(tmp_path, cb, "Callback")
    want = expected(run_dir, 2)
    assert sorted(want) == [4, 9]
    got = tensorboard_scalars(loggers[0].log_dir)
    assert_logged({k: v for k, v in got.items() if not k.startswith("tprof/op_ms/")},
                  {s: {k: v for k, v in f.items() if not k.startswith("tprof/op_ms/")}
                   for s, f in want.items()})
    for step, figures in want.items():  # each window's own top ops
        ops = {k: v for k, v in figures.items() if k.startswith("tprof/op_ms/")}
        assert ops and all(got[k][step] == pytest.approx(v, rel=1e-5) for k, v in ops.items())
    shares = [v for k, v in got.items() if k.startswith("tprof/stage_share/")]
    for step in want:  # the shares of a step's time add up to it
        assert sum(by_step[step] for by_step in shares) == pytest.approx(100.0, abs=0.01)
