"""A Lightning callback: tprof over Trainer.fit with the use case's keywords, the stages taken from
Lightning's hooks and the LightningModule's submodules as ranges.

Lightning 2.x's hook order with automatic optimization (tests/python/test_lightning.py records
it): on_train_batch_start, then inside optimizer.step(closure): training_step, on_before_zero_grad,
zero_grad, on_before_backward, backward, on_after_backward, on_before_optimizer_step, the update;
then on_train_batch_end. So the stages switch at the hooks, one open at a time, never nested:
dataloader (batch end to the next batch start: the fetch), forward (batch start to zero_grad or
backward), optimizer (zero_grad; on_before_optimizer_step to the optimizer's step-post hook),
backward (on_before_backward to on_after_backward), validation (the validation loop inside fit).
Time between stages is "other". The validation loop is no training step: at its end the step in
progress begins again (tprof's step_restart), so the loop lies in the trace between two steps,
never in the step statistics. With manual optimization the user's training_step runs
forward, manual_backward and opt.step() in any order: after an optimizer step the stage returns
to forward. Each training batch is one step (ProfilerStep#N ends at on_train_batch_end); the
time after the last one, until the fit ends, is no step.

CallbackLogic holds the behaviour and needs no Lightning; tprof.torch.Callback
(lightning_classes.py) joins it with Lightning's Callback class.
LightningProfiler (lightning_profiler.py) is the same through Trainer(profiler=...).
"""
from __future__ import annotations

import glob
import json
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

import tprof
from tprof import _keys, _session, _tprof
from tprof._analyze import _files_dir
from tprof.torch import lightning_metrics, lightning_report
from tprof.torch.setup import (
    has_workers,
    loader_setup,
    params_setup,
    record_setup,
    record_worker_cycle,
)

__all__ = ["STAGES", "CallbackLogic"]

# The stages of tprof's Lightning integrations, as bare names: a range counts for a stage only
# when it has exactly that name, so Lightning's own action names never count twice.
STAGES = ("dataloader", "forward", "backward", "optimizer", "validation")
_STAGE_RANGES = {name: _tprof.range(name) for name in STAGES}

_ACTIVITIES = ("cpu", "cuda")


def _gpu_from_activities(activities: str | Iterable[Any]) -> str:
    """torch.profiler's activities (names or ProfilerActivity values) as tprof's gpu key."""
    if isinstance(activities, str):
        activities = [activities]
    names = [str(getattr(a, "name", a)).lower() for a in activities]
    unknown = [n for n in names if n not in _ACTIVITIES]
    if unknown:
        _keys.note("activities: %s not recorded by tprof (ignored); it records cpu and cuda"
                   % ", ".join(unknown))
    return "auto" if "cuda" in names else "off"


def _profile_keys(enabled: bool = True, profile_epochs: Iterable[int] | None = None,
                  profile_steps: int | None = None, warmup_steps: int | None = None,
                  activities: str | Iterable[Any] | None = None,
                  record_shapes: bool | None = None, with_stack: bool | None = None,
                  output_dir: str | None = None, export_chrome_trace: bool = True,
                  log_top_k_ops: int | None = None,
                  config: dict[str, Any] | None = None) -> tuple[dict[str, Any], bool]:
    """The tprof.profile keys for the Lightning keywords (the callback's and the profiler's).
    Returns (keys, every_epoch): every_epoch when steps per epoch are asked for without a list of
    epochs, which the caller fills in from the Trainer's max_epochs."""
    keys = dict(config or {})
    keys.update(enabled=enabled, record_shapes=record_shapes, with_stack=with_stack,
                output_dir=output_dir, top_k=log_top_k_ops)
    every_epoch = False
    if profile_epochs is not None or profile_steps is not None:
        keys.update(epochs=None if profile_epochs is None else list(profile_epochs),
                    epoch_steps=profile_steps, warmup=warmup_steps)
        every_epoch = profile_epochs is None
    elif warmup_steps is not None:
        # without epoch windows, Hydra's alias: the step schedule's warmup (a use case passes
        # its profiling block, wait_steps and active_steps beside it, as keywords)
        keys["warmup"] = warmup_steps
    if activities is not None:
        keys["gpu"] = _gpu_from_activities(activities)
    if not export_chrome_trace:
        _keys.note("export_chrome_trace=False: tprof always writes its traces (ignored)")
    keys.setdefault("stages", list(STAGES))
    return keys, every_epoch


def _given_keywords(**keywords: Any) -> list[str]:
    """The names of the keywords given a value (for the "nothing will be recorded" line)."""
    return [name for name, value in keywords.items() if value is not None]


class _Owner(Protocol):
    """What _take_keywords sets and _start_profile reads: the callback or the profiler."""

    keys: dict[str, Any]
    given: list[str]
    with_modules: bool
    record_ops: bool | None
    _every_epoch: bool


def _take_keywords(target: _Owner, enabled: bool, profile_epochs: Iterable[int] | None,
                   profile_steps: int | None, warmup_steps: int | None,
                   activities: str | Iterable[Any] | None, record_shapes: bool | None,
                   with_stack: bool | None, output_dir: str | None, export_chrome_trace: bool,
                   log_top_k_ops: int | None, with_modules: bool, record_ops: bool | None,
                   config: dict[str, Any]) -> None:
    """The keywords the callback and the profiler share, set on target: keys and _every_epoch
    (_profile_keys), given (_given_keywords), with_modules, record_ops."""
    target.keys, target._every_epoch = _profile_keys(
        enabled, profile_epochs, profile_steps, warmup_steps, activities, record_shapes,
        with_stack, output_dir, export_chrome_trace, log_top_k_ops, config)
    target.given = _given_keywords(profile_epochs=profile_epochs, profile_steps=profile_steps,
                                  warmup_steps=warmup_steps, activities=activities,
                                  record_shapes=record_shapes, with_stack=with_stack,
                                  log_top_k_ops=log_top_k_ops, **config)
    target.with_modules = with_modules
    target.record_ops = record_ops


def _command_line() -> list[str] | None:
    """sys.argv when it holds tprof arguments (--profile, --profiler on, profiling.<key>=...,
    callbacks.profiler.<key>=...: docs/CONFIG.md), else None. They are read, not removed: the
    program's own parser (Hydra's) has them too."""
    rest = list(sys.argv)
    try:
        _tprof.Config().load_args(rest)
    except _tprof.ConfigError:
        return sys.argv  # tprof's, with a bad value: tprof.profile says so in one line
    return sys.argv if len(rest) < len(sys.argv) else None


def _start_profile(owner: _Owner, trainer: Any, model: Any) -> _session.Profile | None:
    """The started tprof.profile of a fit (the callback) or a run (the profiler), from owner's
    keywords (_take_keywords), then the command line's tprof arguments (_command_line); None when
    profiling is off or a configuration error left the run unprofiled (one line said why)."""
    argv = _command_line()
    if not owner.keys["enabled"] and argv is None:
        _session.say_off(owner.keys, owner.given)
        return None
    keys = dict(owner.keys)
    if owner._every_epoch:
        keys["epochs"] = _every_epoch_list(trainer)
    if trainer is not None:
        keys = _shared_run_id(trainer, keys)
    prof = tprof.profile(model=model, record_ops=owner.record_ops, argv=argv, **keys).start()
    if not prof.enabled:  # switched off (TPROF_ENABLED=0) or a configuration error
        prof.stop()
        return None
    return prof


def _every_epoch_list(trainer: Any) -> list[int]:
    """All epochs of a fit: range(max_epochs); Lightning's unbounded fits (-1, None) get its
    default bound of 1000."""
    n = getattr(trainer, "max_epochs", None)
    return list(range(n if isinstance(n, int) and n > 0 else 1000))


def _shared_run_id(trainer: Any, keys: dict[str, Any]) -> dict[str, Any]:
    """With several ranks, one run directory for all: rank 0's run_id, broadcast. The library
    finds the rank in RANK (set here from the trainer when the launcher did not)."""
    if getattr(trainer, "world_size", 1) <= 1:
        return keys
    os.environ.setdefault("RANK", str(trainer.global_rank))
    os.environ.setdefault("WORLD_SIZE", str(trainer.world_size))
    if keys.get("run_id") is None:
        mine = "%s-%d" % (time.strftime("%Y%m%d-%H%M%S"), os.getpid())
        keys = dict(keys, run_id=trainer.strategy.broadcast(mine, src=0))
    return keys


def _epoch_reports(prof: _session.Profile, trainer: Any) -> _EpochReports:
    """The _EpochReports of a started session prof, in the trainer's rank."""
    assert prof.config is not None
    config = json.loads(prof.config.to_json())
    return _EpochReports(prof.run_dir, config["top_k"], getattr(trainer, "global_rank", 0),
                         config["epochs"])


class _EpochReports:
    """After a profiled epoch, its top ops and bottleneck lines on stderr (rank 0, its own
    traces): each window the run saved (trace_<n>_epoch_<e>[.rank0].json) reported once,
    analysed by tprof.analyze, which takes the stages the run was recorded with (its summary's,
    so the shares agree with it and add up to the step)."""

    _EPOCH = re.compile(r"trace_\d+_epoch_(\d+)(?:\.rank(\d+))?\.json(?:\.gz)?$")

    # How long the end of fit waits for the writer thread to write the last windows' traces.
    _WAIT_S = 5.0

    def __init__(self, run_dir: str | None, top_k: int, rank: int, epochs: Iterable[int]) -> None:
        self.run_dir = run_dir
        self.top_k = top_k
        self.rank = rank
        self.epochs = set(epochs)  # the listed epochs (the configuration's)
        self.marked: set[int] = set()  # the epochs the session was told of (tprof.epoch)
        self.done: set[str] = set()
        # epoch -> its window's analysis (for the loggers: lightning_metrics)
        self.analyses: dict[int, Any] = {}

    def mark(self, epoch: int) -> None:
        """Marks the start of epoch `epoch` in the running session, and remembers it."""
        self.marked.add(epoch)
        tprof.epoch(epoch)

    def finish(self) -> None:
        """At the end of fit, before the session stops and prints the run's summary: the last
        epoch's window is closed (an epoch after every listed one begins), and each profiled
        epoch's block printed once the writer thread has written its trace, so the blocks come
        before the summary, in order."""
        if not self.epochs or not self.marked:
            return
        tprof.epoch(max(self.epochs | self.marked) + 1)
        expected = self.epochs & self.marked
        deadline = time.monotonic() + self._WAIT_S
        while self.rank == 0 and self.run_dir and time.monotonic() < deadline:
            if expected <= {e for e, _ in self._traces()}:
                break
            time.sleep(0.01)
        self.report_new()

    def _traces(self) -> list[tuple[int, str]]:
        """[(epoch, path)] of rank 0's epoch traces in the run directory, in window order."""
        assert self.run_dir is not None
        out = []
        for path in sorted(glob.glob(os.path.join(_files_dir(self.run_dir), "trace_*"))):
            m = self._EPOCH.search(os.path.basename(path))
            if m and (m.group(2) or "0") == "0":  # rank 0's own
                out.append((int(m.group(1)), path))
        return out

    def report_new(self) -> None:
        if self.rank != 0 or not self.run_dir:
            return
        for epoch, path in self._traces():
            if path in self.done:
                continue
            self.done.add(path)
            try:
                analysis = tprof.analyze(path, self.top_k)
            except ValueError as e:
                _keys.note("epoch report: %s" % e)
                continue
            self.analyses[epoch] = analysis
            print(lightning_report.epoch_report(analysis, epoch, self.top_k),
                  file=sys.stderr, flush=True)

    def log_to(self, trainer: Any, after_finalize: bool = False) -> None:
        """After the session stopped: each profiled window's figures to the trainer's loggers
        (rank 0; lightning_metrics)."""
        if self.rank == 0 and trainer is not None:
            lightning_metrics.log_windows(getattr(trainer, "loggers", ()), self.run_dir,
                                          self.analyses, self.top_k, after_finalize)


def _train_loader(trainer: Any) -> Any:
    """The fit's training DataLoader (the first of a collection of them), or None."""
    loaders = getattr(trainer, "train_dataloader", None)
    if hasattr(loaders, "num_workers"):
        return loaders
    if isinstance(loaders, dict):
        loaders = list(loaders.values())
    if isinstance(loaders, (list, tuple)):
        return next((one for one in loaders if hasattr(one, "num_workers")), None)
    return None


class CallbackLogic:
    """tprof for a Lightning Trainer's fit.

    enabled, profile_epochs (Lightning's 0-based current_epoch), profile_steps (steps recorded per
    profiled epoch; alone: in every epoch), warmup_steps (with either, each profiled epoch's
    warmup; without, the step schedule's, as Hydra's alias), activities (["cpu"] or ["cpu", "cuda"]:
    tprof's gpu key), record_shapes, with_stack, output_dir, export_chrome_trace (traces are
    always written: False is noted and ignored), log_top_k_ops (rows of the tables) are the use
    case's keywords; with_modules=True makes the LightningModule's submodules ranges, record_ops
    records aten ops; any other keyword is a tprof configuration key. The command line's tprof
    arguments (callbacks.profiler.enabled=true, --profiler on) win over the keywords. A
    configuration error is one `tprof:` line and the fit runs unprofiled.
    """

    keys: dict[str, Any]
    given: list[str]
    with_modules: bool
    record_ops: bool | None
    _every_epoch: bool

    def __init__(self, enabled: bool = True, profile_epochs: Sequence[int] | None = None,
                 profile_steps: int | None = None, warmup_steps: int | None = None,
                 activities: str | Sequence[Any] | None = None,
                 record_shapes: bool | None = None, with_stack: bool | None = None,
                 output_dir: str | None = None, export_chrome_trace: bool = True,
                 log_top_k_ops: int | None = None, with_modules: bool = True,
                 record_ops: bool | None = None, **config: Any) -> None:
        super().__init__()
        _take_keywords(self, enabled, profile_epochs, profile_steps, warmup_steps, activities,
                      record_shapes, with_stack, output_dir, export_chrome_trace, log_top_k_ops,
                      with_modules, record_ops, config)
        self.profile: _session.Profile | None = None  # the last fit's (run_dir, summary())
        self._active = False  # a fit is being profiled: the hooks act
        self._stage: _tprof.range | None = None
        self._before_validation: _tprof.range | None = None
        self._manual = False
        self._hooks: list[Any] = []
        self._reports: _EpochReports | None = None
        self._params: dict[str, Any] = {}  # the module's parameters' setup, read before a window
        self._setup_said = False  # this window has the loader's and the module's setup
        self._epoch_fetch: int | None = None  # when a recorded epoch began to fetch its first batch

    # ---- the stages ----

    def _switch(self, stage: str | None) -> None:
        """Ends the open stage range, if any, and begins `stage` (None: none)."""
        if self._stage is not None:
            self._stage.end()
        self._stage = _STAGE_RANGES[stage] if stage else None
        if self._stage is not None:
            self._stage.begin()

    def _after_optimizer_step(self, *unused: Any) -> None:
        if self._active:
            self._switch("forward" if self._manual else None)

    def _record_setup(self, trainer: Any) -> None:
        """The training loader's settings and the module's dtype and device, once a window, at
        the end of its first step (where tprof.torch.dataloader records a loader's): Lightning
        makes the loaders, so the callback reads them for the advice (docs/METRICS.md)."""
        if not _tprof.is_recording():
            self._setup_said = False
            return
        if self._setup_said:
            return
        self._setup_said = True
        values = dict(self._params)
        loader = _train_loader(trainer)
        values.update((loader_setup(loader) if loader is not None else None) or {})
        record_setup(values)

    # ---- the session ----

    def _start(self, trainer: Any, pl_module: Any) -> None:
        prof = _start_profile(self, trainer, pl_module if self.with_modules else None)
        if prof is None:
            return
        self.profile = prof
        self._active = True
        self._manual = not getattr(pl_module, "automatic_optimization", True)
        self._params = params_setup(pl_module.parameters()) if pl_module is not None else {}
        self._setup_said = False
        self._hooks = [opt.register_step_post_hook(self._after_optimizer_step)
                       for opt in getattr(trainer, "optimizers", ())
                       if hasattr(opt, "register_step_post_hook")]
        self._reports = _epoch_reports(prof, trainer)

    def _stop(self, trainer: Any = None) -> None:
        if not self._active:
            return
        assert self.profile is not None and self._reports is not None
        self._active = False
        self._switch(None)
        for hook in self._hooks:
            hook.remove()
        self._hooks = []
        _tprof.drop_open_step()  # the time after the last batch (the fit's end) is no step
        self.profile.stop()
        self._reports.report_new()
        self._reports.log_to(trainer)

    # ---- Lightning's hooks ----

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        self._start(trainer, pl_module)

    def on_train_epoch_start(self, trainer: Any, pl_module: Any) -> None:
        if self._active:
            assert self._reports is not None
            self._reports.mark(trainer.current_epoch)
            self._switch("dataloader")
            workers = has_workers(_train_loader(trainer))
            self._epoch_fetch = (time.perf_counter_ns()
                                 if workers and _tprof.is_recording() else None)

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int,
                             *args: Any) -> None:
        if self._active:
            if self._epoch_fetch is not None:
                # the epoch's first fetch: Lightning's iter() of the loader, which starts its
                # workers, then the first batch (as tprof.torch.dataloader records it)
                record_worker_cycle(True, False, time.perf_counter_ns() - self._epoch_fetch)
                self._epoch_fetch = None
            self._switch("forward")

    def on_before_zero_grad(self, trainer: Any, pl_module: Any, optimizer: Any) -> None:
        if self._active:
            self._switch("optimizer")

    def on_before_backward(self, trainer: Any, pl_module: Any, loss: Any) -> None:
        if self._active:
            self._switch("backward")

    def on_after_backward(self, trainer: Any, pl_module: Any) -> None:
        if self._active:
            self._switch("forward" if self._manual else None)

    def on_before_optimizer_step(self, trainer: Any, pl_module: Any, optimizer: Any,
                                 *args: Any) -> None:
        if self._active:
            self._switch("optimizer")

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any,
                           batch_idx: int, *args: Any) -> None:
        if self._active:
            assert self.profile is not None
            self._switch(None)
            self._record_setup(trainer)
            self.profile.step()
            self._switch("dataloader")

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if self._active:
            self._before_validation = self._stage
            self._switch("validation")

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        if self._active:
            self._switch(None)
            _tprof.step_restart()  # the loop is no training step: the next one begins now
            self._stage = self._before_validation
            if self._stage is not None:
                self._stage.begin()

    def on_train_epoch_end(self, trainer: Any, pl_module: Any) -> None:
        if self._active:
            assert self._reports is not None
            self._switch(None)
            self._reports.report_new()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        if self._active:
            self._switch(None)
            assert self._reports is not None
            self._reports.finish()  # the last epoch's block before the run's summary
        self._stop(trainer)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        if self._active:
            assert self.profile is not None
            self.profile.save_flight_on_exception()  # the flight recorder's ring, when on
        self._stop(trainer)
