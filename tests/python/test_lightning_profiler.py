"""Trainer(profiler=tprof.torch.LightningProfiler(...)): Lightning's actions as ranges, stages
that never overlap under the optimizer's closure, steps in fit, validate and test, the summary
(Lightning's action table beside tprof's tables, cross-checked against the trace), failures."""
import csv
import io
import json
import logging
import os

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

import tprof.torch  # noqa: E402
from conftest import inside, ranges, read_json, run_traces, step_numbers, trace_events  # noqa: E402
from run_files import artifact  # noqa: E402
from summary_files import analyze  # noqa: E402
from test_lightning import STAGES, Net, assert_stages_partition_steps, loader, stage_names, trainer  # noqa: E402


def events_of(run_dir):
    return [e for path in run_traces(run_dir) for e in trace_events(path)]


def test_fit_actions_stages_and_summary(out_dir, caplog):
    caplog.set_level(logging.INFO)  # Lightning logs its profiler's summary at INFO
    prof = tprof.torch.LightningProfiler(output_dir=out_dir, log_top_k_ops=5)
    trainer(profiler=prof, max_epochs=2, limit_val_batches=2).fit(Net(), loader(6), loader(2))
    run_dir = prof.session.run_dir
    events = events_of(run_dir)
    names = [e["name"] for e in ranges(events)]
    for action in ("run_training_epoch", "run_training_batch",
                   "[_TrainingEpochLoop].train_dataloader_next",
                   "[Strategy]SingleDeviceStrategy.training_step",
                   "[Strategy]SingleDeviceStrategy.backward", "[LightningModule]Net.optimizer_step",
                   "[_EvaluationLoop].val_next", "[Strategy]SingleDeviceStrategy.validation_step"):
        assert action in names, action
    assert names.count("run_training_batch") == 12
    assert step_numbers(events) == list(range(12))  # a step per batch; the end of fit is none
    per_step = assert_stages_partition_steps(events)
    for n in range(1, 6):
        assert stage_names(per_step[n][1]) == ["dataloader", "optimizer", "forward",
                                               "optimizer", "backward", "optimizer"], n
    assert names.count("validation") >= 2 and "Net.head" in names
    # the action table counts what the trace holds
    summary = prof.summary()  # after the run: the text Lightning logged at its end
    assert summary and "FIT Profiler Report" in summary
    assert summary.strip() in caplog.text
    row = [line for line in summary.splitlines() if "|  run_training_batch " in line][0]
    cells = [c.strip() for c in row.strip("|").split("|")]
    batches = [e for e in ranges(events) if e["name"] == "run_training_batch"]
    assert int(cells[2]) == 12
    assert float(cells[3]) == pytest.approx(sum(e["dur"] for e in batches) / 1e6, rel=1e-3)
    for table in ("tprof report", "Steps: 12", "Stages (share of step time)", "other",
                  "Top 5 ops by self time"):
        assert table in summary, table
    stage_totals = {s["stage"]: s["total_us"] for s in prof.session.summary()["stages"]}
    # validation inside fit is no training step: its ranges lie between steps (issue 23)
    assert list(stage_totals) == list(STAGES) and stage_totals["validation"] == 0
    pcts = [float(line.strip("|").split("|")[4]) for line in summary.splitlines()
            if line.startswith("|  [") or line.startswith("|  run_")]
    assert pcts and max(pcts) <= 100.5  # against the recorded window, which holds every action


def action_rows(summary):
    """{action: (calls, total s, %)} of the summary's action table."""
    rows = {}
    for line in summary.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("Action", "Total"):
            rows[cells[0]] = (int(cells[2]), float(cells[3]), float(cells[4]))
    return rows


@pytest.mark.parametrize("fn,step", [("validate", "validation_step"), ("test", "test_step")])
def test_validate_and_test(out_dir, fn, step):
    prof = tprof.torch.LightningProfiler(output_dir=out_dir, summary=False)
    getattr(trainer(profiler=prof), fn)(Net(), loader(5))
    events = events_of(prof.session.run_dir)
    assert step_numbers(events) == list(range(5))  # a step per batch, no tail
    names = [e["name"] for e in ranges(events)]
    assert names.count("[Strategy]SingleDeviceStrategy.%s" % step) == 5
    assert names.count("forward") == 5 and names.count("dataloader") >= 5
    assert "%s Profiler Report" % fn.upper() in prof.summary()


def test_failure_inside_fit_writes_the_run(out_dir):
    module = Net(fail_at=3)
    module.fail_at_error = RuntimeError("boom")
    prof = tprof.torch.LightningProfiler(output_dir=out_dir, summary=False)
    with pytest.raises(RuntimeError):
        trainer(profiler=prof).fit(module, loader(8))
    assert not tprof._tprof.is_active()
    run_dir = prof.session.run_dir
    for name in ("config.json", "summary.json", "op_stats.csv"):
        assert os.path.exists(artifact(run_dir, name)), name
    assert step_numbers(events_of(run_dir))[:3] == [0, 1, 2]


def test_keys_as_the_callback_and_errors(out_dir, caplog):
    prof = tprof.torch.LightningProfiler(profile_epochs=[1], profile_steps=3, warmup_steps=1,
                                         activities=["cpu"], output_dir=out_dir, summary=False)
    trainer(profiler=prof, max_epochs=2, limit_val_batches=0).fit(Net(), loader(6))
    (trace,) = run_traces(prof.session.run_dir)
    assert os.path.basename(trace) == "trace_0001_epoch_1.json"
    assert step_numbers(trace_events(trace)) == [7, 8, 9]
    config = read_json(artifact(prof.session.run_dir, "config.json"))
    assert config["gpu"] == "off"
    # issue 23: with a schedule, every action the window timed is in the table (the epoch's
    # own range included), each as a share of the recorded window, not of the whole run
    events = trace_events(trace)
    rows = action_rows(prof.summary())
    timed = {e["name"] for e in ranges(events) if e["name"].startswith(("[", "run_"))}
    assert set(rows) == timed
    steps = sum(e["dur"] for e in ranges(events) if e["name"].startswith("ProfilerStep#")) / 1e6
    total = float([line for line in prof.summary().splitlines()
                   if line.startswith("|  Total")][0].strip("|").split("|")[3])
    assert steps * 0.999 <= total < steps + 0.5  # the window: its 3 steps and the epoch's start
    calls, seconds, pct = rows["run_training_batch"]
    assert calls == 3 and pct == pytest.approx(100.0 * seconds / total, rel=1e-3)
    caplog.clear()
    bad = tprof.torch.LightningProfiler(warmup_steps=-2, output_dir=out_dir + "-bad")
    module = Net()
    trainer(profiler=bad, limit_val_batches=0).fit(module, loader(4))
    assert module.global_step == 4 and not os.path.exists(out_dir + "-bad")
    err = [r.getMessage() for r in caplog.records if r.name == "tprof"]
    assert len(err) == 1 and "profiling.warmup" in err[0]


def test_scheduled_epoch_keeps_its_epoch_action(out_dir):
    """Issue 23: the epoch's window opens before Lightning's run_training_epoch range begins, so
    the table keeps it (a window opened after warmup steps starts inside the epoch: the epoch's
    range began before it and no window holds it)."""
    prof = tprof.torch.LightningProfiler(profile_epochs=[1], output_dir=out_dir, summary=False)
    trainer(profiler=prof, max_epochs=2, limit_val_batches=0).fit(Net(), loader(4))
    (trace,) = run_traces(prof.session.run_dir)
    epochs = [e for e in ranges(trace_events(trace)) if e["name"] == "run_training_epoch"]
    rows = action_rows(prof.summary())
    assert len(epochs) == 1 and rows["run_training_epoch"][0] == 1
    assert rows["run_training_epoch"][1] == pytest.approx(epochs[0]["dur"] / 1e6, rel=1e-3)
    assert rows["run_training_epoch"][2] <= 100.5


@pytest.mark.parametrize("keys,recorded", [
    ({"wait": 1, "warmup": 1, "active": 10}, [2, 3, 4, 5]),
    ({"profile_epochs": [0], "profile_steps": 2, "warmup_steps": 2}, [2, 3])],
    ids=["ends_in_the_window", "open_across_the_window"])
def test_an_epoch_open_as_the_window_opens_is_in_it(out_dir, keys, recorded):
    """Issue 23: with warmup steps the window opens inside the epoch, after run_training_epoch
    began; its range was dropped from the trace and the action table. It is in both now, from
    the window's start (the first recorded step's) to the epoch's end, or to the window's end
    when the epoch goes on after it, flagged "tprof truncated" as cut by the window
    (torch.profiler drops a range begun before its window)."""
    prof = tprof.torch.LightningProfiler(output_dir=out_dir, summary=False, **keys)
    trainer(profiler=prof, max_epochs=1, limit_val_batches=0).fit(Net(), loader(6))
    events = events_of(prof.session.run_dir)
    steps = sorted((e for e in ranges(events) if e["name"].startswith("ProfilerStep#")),
                   key=lambda e: e["ts"])
    assert [int(e["name"].split("#")[1]) for e in steps] == recorded
    (epoch,) = [e for e in ranges(events) if e["name"] == "run_training_epoch"]
    assert epoch["args"]["tprof truncated"] is True
    assert abs(epoch["ts"] - steps[0]["ts"]) < 0.002
    assert epoch["ts"] + epoch["dur"] > steps[-1]["ts"]  # to the window's last step, at least
    if "profile_steps" in keys:  # the epoch went on after the window: cut at its end
        assert abs(epoch["ts"] + epoch["dur"] - steps[-1]["ts"] - steps[-1]["dur"]) < 0.002
    # the other actions of the window's steps lie within it
    batches = [e for e in ranges(events) if e["name"] == "run_training_batch"]
    assert len(batches) == len(recorded) and all(inside(b, epoch) for b in batches)
    rows = action_rows(prof.summary())
    assert rows["run_training_epoch"][0] == 1
    assert rows["run_training_epoch"][1] == pytest.approx(epoch["dur"] / 1e6, rel=1e-3)


def test_a_streamed_fit_keeps_its_summary(out_dir, capfd):
    """stream: true with a window larger than the summary holds uncut (max_events / 2 events):
    run_training_epoch is open around every step, and the summary cuts it into parts at its
    pieces' ends (src/sink/artifacts.c) rather than leaving the window out; its op table is the
    trace's (`tprof analyze`), run_training_epoch one call of the trace's length."""
    prof = tprof.torch.LightningProfiler(output_dir=out_dir, summary=False, stream=True,
                                         max_events=65536, top_k=1000)
    trainer(profiler=prof, max_epochs=1).fit(Net(), loader(400))
    assert "leaves" not in capfd.readouterr().err
    run_dir = prof.session.run_dir
    [trace] = run_traces(run_dir)
    events = trace_events(trace)
    assert len(events) > 65536 // 2
    with open(artifact(run_dir, "op_stats.csv"), encoding="utf-8") as f:
        rows = {r["name"]: r for r in csv.DictReader(f)}
    whole = {}
    for r in csv.DictReader(io.StringIO(analyze([trace], "--csv", "--top", "1000"))):
        if r.pop("kind") == "op":
            del r["pct"]
            whole[r["name"]] = r
    assert rows == whole
    # its stages too: the trace analysed alone takes the run's (Lightning's, in config.json)
    report = json.loads(analyze([trace], "--json"))
    with open(artifact(run_dir, "summary.json"), encoding="utf-8") as f:
        assert [s["stage"] for s in report["stages"]] == list(STAGES)
        assert json.load(f)["stages"] == report["stages"]
    (epoch,) = [e for e in ranges(events) if e["name"] == "run_training_epoch"]
    assert rows["run_training_epoch"]["calls"] == "1"
    assert float(rows["run_training_epoch"]["total_us"]) == pytest.approx(epoch["dur"], abs=0.002)
