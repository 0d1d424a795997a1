"""tprof.torch.Callback inside a real lightning.Trainer (Lightning 2.6, CPU): the use case's
integration test, stages under Lightning's real hook order (automatic and manual optimization,
gradient accumulation, two optimizers, validation), failures inside fit, enabled=False, the
use cases' keywords verbatim, and the decorator's keys. Traces are read with Python's json
module (conftest), and every stage claim is checked against the trace's own intervals."""
import os
import signal

import pytest

torch = pytest.importorskip("torch")
pl = pytest.importorskip("lightning.pytorch")

import tprof  # noqa: E402
import tprof.torch  # noqa: E402
from conftest import inside, ranges, read_json, run_traces, step_numbers, trace_events  # noqa: E402
from run_files import artifact  # noqa: E402

nn = torch.nn
torch.set_num_threads(1)  # 2 shared cores: no spinning intra-op pool
STAGES = ("dataloader", "forward", "backward", "optimizer", "validation")


class Net(pl.LightningModule):
    """A small classifier; manual=True steps two optimizers by hand, fail_at raises there."""

    def __init__(self, manual=False, fail_at=None, two_optimizers=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(8, 16), nn.ReLU())
        self.head = nn.Linear(16, 3)
        self.automatic_optimization = not manual
        self.fail_at = fail_at
        self.two = two_optimizers

    def loss(self, batch):
        x, y = batch
        return nn.functional.cross_entropy(self.head(self.body(x)), y)

    def training_step(self, batch, i):
        if self.fail_at is not None and self.global_step >= self.fail_at:
            raise self.fail_at_error
        if self.automatic_optimization:
            return self.loss(batch)
        for opt in self.optimizers() if self.two else [self.optimizers()]:
            opt.zero_grad()
            self.manual_backward(self.loss(batch))
            opt.step()
        return None

    def validation_step(self, batch, i):
        self.log("val", self.loss(batch))

    def test_step(self, batch, i):
        self.log("test", self.loss(batch))

    def configure_optimizers(self):
        if self.two:
            return [torch.optim.SGD(self.body.parameters(), lr=0.01),
                    torch.optim.SGD(self.head.parameters(), lr=0.01)]
        return torch.optim.SGD(self.parameters(), lr=0.01)


def loader(batches):
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(8, generator=g), i % 3) for i in range(batches * 4)]
    return torch.utils.data.DataLoader(data, batch_size=4)


def trainer(callbacks=(), **kw):
    kw.setdefault("max_epochs", 1)
    return pl.Trainer(callbacks=list(callbacks), logger=False, enable_checkpointing=False,
                      enable_progress_bar=False, enable_model_summary=False,
                      accelerator="cpu", num_sanity_val_steps=0, **kw)


def all_events(run_dir):
    return [e for path in run_traces(run_dir) for e in trace_events(path)]


def steps_with_stages(events):
    """{step number: (the step's range, [its stage ranges])}: a stage belongs to the step
    whose interval holds it."""
    xs = ranges(events)
    steps = {int(e["name"].split("#")[1]): e for e in xs if e["name"].startswith("ProfilerStep#")}
    out = {}
    for n, step in steps.items():
        out[n] = (step, sorted((e for e in xs if e["name"] in STAGES and inside(e, step)),
                               key=lambda e: e["ts"]))
    return out


def assert_stages_partition_steps(events):
    """Every stage range lies inside one ProfilerStep, the stages of a step do not overlap, and
    their sum plus "other" is the step (other >= 0). The validation loop inside fit is no
    training step: its ranges, and the stage it cut short (ended as it began), lie between
    steps, and no step holds any of them. Neither is the end of fit after the last batch (the
    last fetch): its stage lies after every step."""
    per_step = steps_with_stages(events)
    stage_ranges = [e for e in ranges(events) if e["name"] in STAGES]
    held = {id(e) for _, s in per_step.values() for e in s}
    outside = [e for e in stage_ranges if id(e) not in held]
    validation = [e for e in stage_ranges if e["name"] == "validation"]
    assert all(id(v) not in held for v in validation)
    last_end = max(step["ts"] + step["dur"] for step, _ in per_step.values())
    for e in outside:
        assert e["name"] == "validation" or e["ts"] >= last_end or any(
            0 <= v["ts"] - (e["ts"] + e["dur"]) < 200 for v in validation), e
    for n, (step, stages) in per_step.items():
        for a, b in zip(stages, stages[1:]):
            assert a["ts"] + a["dur"] <= b["ts"] + 0.002, (n, a["name"], b["name"])
        other = step["dur"] - sum(s["dur"] for s in stages)
        assert other >= -0.01, n
    return per_step


# ---- Lightning's real hook order ----

def test_lightning_hook_order_is_what_the_callback_assumes():
    """Records the hooks, training_step and the optimizer's step hooks as Lightning 2.6 calls
    them: with automatic optimization training_step and backward run inside optimizer.step's
    closure, zero_grad before backward, on_before_optimizer_step after the closure."""
    log = []

    class Recorder(pl.Callback):
        pass

    for hook in ("on_train_batch_start", "on_before_zero_grad", "on_before_backward",
                 "on_after_backward", "on_before_optimizer_step", "on_train_batch_end"):
        setattr(Recorder, hook, (lambda h: lambda self, *a: log.append(h))(hook))

    class Logged(Net):
        def training_step(self, batch, i):
            log.append("training_step")
            return super().training_step(batch, i)

        def configure_optimizers(self):
            opt = super().configure_optimizers()
            opt.register_step_pre_hook(lambda *a: log.append("optimizer.step begins"))
            opt.register_step_post_hook(lambda *a: log.append("optimizer.step ends"))
            return opt

    trainer([Recorder()], max_steps=1).fit(Logged(), loader(2))
    assert log == ["on_train_batch_start", "optimizer.step begins", "training_step",
                   "on_before_zero_grad", "on_before_backward", "on_after_backward",
                   "on_before_optimizer_step", "optimizer.step ends", "on_train_batch_end"]
    log.clear()
    trainer([Recorder()], max_steps=1).fit(Logged(manual=True), loader(2))
    assert log == ["on_train_batch_start", "training_step", "on_before_backward",
                   "on_after_backward", "optimizer.step begins", "on_before_optimizer_step",
                   "optimizer.step ends", "on_train_batch_end"]


# ---- the use case ----

def test_use_case_epochs_1_and_2_of_3(out_dir, capfd):
    """max_epochs=3, profile_epochs=[1, 2], profile_steps=50, warmup_steps=5: traces for epochs
    1 and 2, none for 0; the console shows top ops and bottleneck lines after each."""
    cb = tprof.torch.Callback(profile_epochs=[1, 2], profile_steps=50, warmup_steps=5,
                              output_dir=out_dir, log_top_k_ops=4)
    trainer([cb], max_epochs=3, limit_val_batches=2).fit(Net(), loader(60), loader(2))
    traces = run_traces(cb.profile.run_dir)
    assert [os.path.basename(t) for t in traces] == ["trace_0001_epoch_1.json",
                                                     "trace_0002_epoch_2.json"]
    # 60 batches per epoch, one step each: epoch e starts at step 60e, 5 steps of warmup
    assert step_numbers(trace_events(traces[0])) == list(range(65, 115))
    assert step_numbers(trace_events(traces[1])) == list(range(125, 175))
    err = capfd.readouterr().err
    for epoch in (1, 2):
        report = err.split("tprof: epoch %d: " % epoch)[1]
        assert report.startswith("50 steps, mean ")
        assert "Top 4 ops by self time" in report and "Bottleneck" in report
    assert "tprof: epoch 0" not in err
    assert_stages_partition_steps(all_events(cb.profile.run_dir))


def test_profile_steps_alone_records_every_epoch(out_dir):
    cb = tprof.torch.Callback(profile_steps=20, output_dir=out_dir, summary=False)
    trainer([cb], max_epochs=2, limit_val_batches=0).fit(Net(), loader(25))
    traces = run_traces(cb.profile.run_dir)
    assert [os.path.basename(t) for t in traces] == ["trace_0001_epoch_0.json",
                                                     "trace_0002_epoch_1.json"]
    assert step_numbers(trace_events(traces[0])) == list(range(0, 20))
    assert step_numbers(trace_events(traces[1])) == list(range(25, 45))
    # profile_epochs narrows it
    cb = tprof.torch.Callback(profile_epochs=[1], profile_steps=20, output_dir=out_dir,
                              summary=False)
    trainer([cb], max_epochs=2, limit_val_batches=0).fit(Net(), loader(25))
    assert [os.path.basename(t) for t in run_traces(cb.profile.run_dir)] == [
        "trace_0001_epoch_1.json"]


# ---- stages ----

def fit_whole_run(out_dir, module, **kw):
    """A fit recorded whole (no schedule); the events and the run's summary."""
    cb = tprof.torch.Callback(output_dir=out_dir, summary=False)
    trainer([cb], **kw).fit(module, loader(8), loader(2))
    return all_events(cb.profile.run_dir), cb.profile.summary()


def stage_names(stages):
    return [s["name"] for s in stages]


def test_stages_automatic_optimization(out_dir):
    events, summary = fit_whole_run(out_dir, Net(), limit_val_batches=0)
    per_step = assert_stages_partition_steps(events)
    for n in range(8):  # each batch: fetch, training_step, zero_grad, backward, the update
        assert stage_names(per_step[n][1]) == ["dataloader", "forward", "optimizer", "backward",
                                               "optimizer"], n
    # module ranges nest inside forward
    names = {e["name"] for e in ranges(events)}
    assert {"Net.body", "Net.body.0", "Net.head"} <= names
    # the run's own stage totals (C analysis) are the sums of the trace's stage ranges in steps
    # (the last fetch, after the last batch, is in none)
    held = [e for _, stages in per_step.values() for e in stages]
    for stage in summary["stages"]:
        mine = sum(e["dur"] for e in held if e["name"] == stage["stage"])
        assert stage["total_us"] == pytest.approx(mine, rel=1e-3, abs=0.01), stage["stage"]


def test_callback_records_the_loader_and_module_setup(out_dir):
    """The advice reads the run's setup: under the callback, the DataLoader Lightning made and
    the module's parameters are recorded once per window, as the program sees them."""
    events, _ = fit_whole_run(out_dir, Net(), limit_val_batches=0)
    texts = [e["args"]["tprof.setup"] for e in ranges(events) if e["name"] == "tprof.setup"]
    got = dict(pair.split("=", 1) for text in texts for pair in text.split(";"))
    want = loader(8)
    assert (got["num_workers"], got["batch_size"], got["pin_memory"]) == (
        str(want.num_workers), str(want.batch_size), str(int(want.pin_memory)))
    assert (got["param_dtype"], got["device"]) == ("float32", "cpu")
    assert int(got["cpu_count"]) == len(os.sched_getaffinity(0))
    assert sum("num_workers=" in text for text in texts) == 1  # one window, once


def test_callback_times_each_epochs_first_fetch(out_dir):
    """A loader with workers (not persistent): each epoch's first fetch, where Lightning's iter()
    starts them, is recorded for the advice (loader_start_ns) and equals that epoch's first
    dataloader stage range in the trace; the advice then names what persistent_workers saves."""
    g = torch.Generator().manual_seed(0)
    data = [(torch.randn(8, generator=g), i % 3) for i in range(32)]
    workers = torch.utils.data.DataLoader(data, batch_size=4, num_workers=1)
    cb = tprof.torch.Callback(output_dir=out_dir, summary=False)
    trainer([cb], max_epochs=2, limit_val_batches=0).fit(Net(), workers)
    events = all_events(cb.profile.run_dir)
    fetches = sorted((e for e in ranges(events) if e["name"] == "dataloader"),
                     key=lambda e: e["ts"])
    assert len(fetches) == 2 * (8 + 1)  # per epoch: 8 batches' fetches, then the epoch's end
    starts = [int(dict(p.split("=", 1) for p in e["args"]["tprof.setup"].split(";"))
                  ["loader_start_ns"]) for e in ranges(events)
              if e["name"] == "tprof.setup" and "loader_start_ns" in e["args"]["tprof.setup"]]
    assert len(starts) == 2
    for ns, fetch in zip(starts, (fetches[0], fetches[9])):
        assert ns / 1e3 == pytest.approx(fetch["dur"], rel=0.1, abs=200)
    recos = {r["id"]: r["message"] for r in cb.profile.summary()["recommendations"]}
    assert "starting the workers (2 times, at each epoch)" in recos["dataloader"]


def test_stages_gradient_accumulation(out_dir):
    events, _ = fit_whole_run(out_dir, Net(), accumulate_grad_batches=4, limit_val_batches=0)
    per_step = assert_stages_partition_steps(events)
    for n in range(8):  # zero_grad opens each group of 4 batches, the update closes it
        want = ["dataloader", "forward"] + ["optimizer"] * (n % 4 == 0) + ["backward"]
        assert stage_names(per_step[n][1]) == want + ["optimizer"] * (n % 4 == 3), n


def test_stages_manual_optimization_two_optimizers(out_dir):
    events, _ = fit_whole_run(out_dir, Net(manual=True, two_optimizers=True),
                              limit_val_batches=0)
    per_step = assert_stages_partition_steps(events)
    for n in range(1, 8):
        # after an optimizer's step the training_step goes on: forward again
        assert stage_names(per_step[n][1]) == ["dataloader", "forward", "backward", "forward",
                                               "optimizer", "forward", "backward", "forward",
                                               "optimizer", "forward"], n


def test_validation_is_its_own_stage_and_no_training_step(out_dir):
    """Issue 23: the validation loop inside fit was counted as one long training step (the
    tail step held it alone). It lies between steps now: no ProfilerStep overlaps it, every
    step holds a training batch, and the summary's stage shares stay within the steps."""
    events, summary = fit_whole_run(out_dir, Net(), max_epochs=2, limit_val_batches=2)
    assert_stages_partition_steps(events)
    xs = ranges(events)
    validation = [e for e in xs if e["name"] == "validation"]
    assert len(validation) == 2  # one validation loop per epoch
    loading = [e for e in xs if e["name"] == "dataloader"]
    steps = [e for e in xs if e["name"].startswith("ProfilerStep#")]

    def overlap(a, b):
        return a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]

    for v in validation:  # validation never counted as loading, nor as a step
        assert not any(overlap(d, v) for d in loading)
        assert not any(overlap(st, v) for st in steps)
    forward = [e for e in xs if e["name"] == "forward"]
    per_step = steps_with_stages(events)
    assert all(any(inside(f, per_step[n][0]) for f in forward) for n in per_step)
    assert summary["steps"]["count"] == len(steps)
    assert summary["steps"]["total_us"] == pytest.approx(sum(e["dur"] for e in steps), rel=1e-3)
    got = {s["stage"]: s for s in summary["stages"]}
    assert got["validation"]["count"] == 0 and got["validation"]["total_us"] == 0
    assert sum(s["total_us"] for s in summary["stages"]) <= summary["steps"]["total_us"] * 1.001


@pytest.mark.parametrize("kind", ["Callback", "LightningProfiler"])
def test_last_epoch_block_prints_before_the_summary(out_dir, capfd, kind):
    """Issue 23: the last epoch's window closed only at shutdown, so its block printed after the
    run's summary. The end of fit closes it first: epoch 0's block, epoch 1's, then the summary;
    the window is complete (a whole epoch, not cut by the end of the run)."""
    integration = getattr(tprof.torch, kind)(profile_epochs=[0, 1], output_dir=out_dir,
                                             log_top_k_ops=2)
    if kind == "Callback":
        trainer([integration], max_epochs=2, limit_val_batches=1).fit(Net(), loader(4),
                                                                      loader(1))
        run_dir = integration.profile.run_dir
    else:
        trainer(profiler=integration, max_epochs=2, limit_val_batches=1).fit(Net(), loader(4),
                                                                             loader(1))
        run_dir = integration.session.run_dir
    err = capfd.readouterr().err
    order = [err.find(mark) for mark in ("tprof: epoch 0: ", "tprof: epoch 1: ",
                                         "tprof summary:")]
    assert -1 not in order and order == sorted(order), order
    assert err.count("tprof: epoch 1: ") == 1
    for epoch in (0, 1):  # analysed with the run's stages: the shares add up to the step
        line = err.split("tprof: epoch %d: " % epoch)[1].splitlines()[0]
        shares = [float(part.rsplit(" ", 1)[1].rstrip("%")) for part in line.split("; ")[1]
                  .split(", ")]
        assert len(shares) == len(STAGES) + 1 and sum(shares) == pytest.approx(100.0, abs=0.3)
    run = read_json(artifact(run_dir, "summary.json"))["run"]
    assert run["windows"] == 2 and run["partial_windows"] == 0
    assert [os.path.basename(t) for t in run_traces(run_dir)] == ["trace_0001_epoch_0.json",
                                                                  "trace_0002_epoch_1.json"]


# ---- failures inside fit ----

@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_failure_inside_fit_leaves_a_partial_trace(out_dir, error):
    module = Net(fail_at=5)
    module.fail_at_error = error
    cb = tprof.torch.Callback(profile_epochs=[0], profile_steps=20, output_dir=out_dir,
                              summary=False)
    handler = signal.getsignal(signal.SIGINT)
    try:
        # Lightning re-raises an exception; a KeyboardInterrupt ends in sys.exit(1)
        with pytest.raises(SystemExit if isinstance(error, KeyboardInterrupt) else RuntimeError):
            trainer([cb]).fit(module, loader(8))
    finally:
        signal.signal(signal.SIGINT, handler)  # Lightning ignores SIGINT after an interrupt
    run_dir = cb.profile.run_dir
    assert not tprof._tprof.is_active()
    for name in ("config.json", "summary.json", "stage_times.json", "op_stats.csv"):
        assert os.path.exists(artifact(run_dir, name)), name
    (trace,) = run_traces(run_dir)
    doc = read_json(trace)
    assert step_numbers(doc["traceEvents"])[:5] == [0, 1, 2, 3, 4]  # then the failing one
    assert read_json(artifact(run_dir, "summary.json"))["windows"]["partial"] == 1


# ---- off, and configuration errors ----

def test_disabled_leaves_nothing(out_dir, caplog):
    cb = tprof.torch.Callback(enabled=False, profile_epochs=[0], profile_steps=5,
                              output_dir=out_dir)
    trainer([cb]).fit(Net(), loader(8))
    assert not os.path.exists(out_dir) and not tprof._tprof.is_active()
    err = [r.getMessage() for r in caplog.records if r.name == "tprof"]  # the "tprof" logger's
    assert err == ["tprof: profiling is off (enabled=False): nothing will be recorded, so "
                   "profile_epochs, profile_steps have no effect"]


def test_configuration_error_runs_unprofiled(out_dir, caplog):
    cb = tprof.torch.Callback(profile_steps=-1, output_dir=out_dir)
    module = Net()
    trainer([cb], max_epochs=2, limit_val_batches=0).fit(module, loader(4))
    assert module.global_step == 8  # the training ran
    assert not os.path.exists(out_dir)
    err = [r.getMessage() for r in caplog.records if r.name == "tprof"]
    assert len(err) == 1 and "profiling.epoch_steps" in err[0] and "unprofiled" in err[0]


# ---- the use cases' keywords, verbatim ----

def test_callback_keywords_verbatim(out_dir, caplog):
    cb = tprof.torch.Callback(enabled=True, profile_epochs=[0], profile_steps=3, warmup_steps=1,
                              activities=["cpu", "cuda"], record_shapes=True, with_stack=False,
                              output_dir=out_dir, export_chrome_trace=False, log_top_k_ops=7)
    trainer([cb], limit_val_batches=0).fit(Net(), loader(6))
    config = read_json(artifact(cb.profile.run_dir, "config.json"))
    assert (config["epochs"], config["epoch_steps"], config["warmup"]) == ([0], 3, 1)
    assert (config["record_shapes"], config["top_k"], config["gpu"]) == (True, 7, "auto")
    assert config["output_dir"] == out_dir and list(config["stages"]) == list(STAGES)
    assert caplog.text.count("export_chrome_trace=False") == 1
    cb = tprof.torch.Callback(activities=["cpu"], output_dir=out_dir, summary=False)
    trainer([cb], limit_val_batches=0, max_steps=2).fit(Net(), loader(6))
    assert read_json(artifact(cb.profile.run_dir, "config.json"))["gpu"] == "off"


def test_decorator_keys_verbatim(out_dir, capfd, caplog):
    @tprof.profile(skip_first=1, wait=1, warmup=1, active=2, repeat=1, with_stack=False,
                   with_flops=True, with_modules=True, nsight_enabled=False,
                   nsight_output="prof.nsys-rep", output_dir=out_dir, summary=False,
                   run_id="decorated")
    def train():
        recorded = []
        for _ in range(8):
            recorded.append(tprof.is_recording())
            tprof.step()
        return recorded

    assert train() == [False, False, False, True, True, False, False, False]
    config = read_json(artifact(os.path.join(out_dir, "decorated"), "config.json"))
    assert (config["skip_first"], config["wait"], config["warmup"], config["active"],
            config["repeat"], config["nsight"]) == (1, 1, 1, 2, 1, False)
    mapped = "nsight_enabled=False (from tprof.profile) is tprof's nsight=False"
    assert caplog.text.count(mapped) == 1
    assert "Traceback" not in capfd.readouterr().err


def test_analyze_with_the_runs_stages_equals_its_summary(out_dir):
    """tprof.analyze(path, top_k, stages) with the run's stages gives the run's stage table (one
    window: the same figures as summary.json; the default stages count torch's Optimizer.step,
    which encloses forward and backward, as well); a bad stage is a ValueError."""
    _, summary = fit_whole_run(out_dir, Net(), max_epochs=1, limit_val_batches=0)
    (trace,) = run_traces(summary["run"]["dir"])
    mine = tprof.analyze(trace, 5, list(STAGES))
    assert [(s["stage"], s["count"]) for s in mine["stages"]] == \
        [(s["stage"], s["count"]) for s in summary["stages"]]
    for a, b in zip(mine["stages"], summary["stages"]):
        assert a["total_us"] == pytest.approx(b["total_us"], rel=1e-6, abs=1e-3)
    assert sum(s["pct"] for s in mine["stages"]) <= 100.01
    with pytest.raises(ValueError, match="stages"):
        tprof.analyze(trace, 5, ["=nothing"])
