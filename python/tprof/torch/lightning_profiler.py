"""tprof behind Lightning's own profiler interface:
Trainer(profiler=tprof.torch.LightningProfiler()).

Lightning times its actions through profiler.start(action) / profiler.stop(action): the loops
(run_training_epoch, run_training_batch, [_TrainingEpochLoop].train_dataloader_next,
[_EvaluationLoop].val_next ...), the strategy ([Strategy]DDPStrategy.training_step, .backward,
.validation_step ...), every hook of the LightningModule and the callbacks. Each action becomes a
tprof range of that name; the actions are nested as Lightning nests them.

Stages: a few actions also open a stage range named as the callback's stages (lightning.STAGES),
inside their own range. With automatic optimization the optimizer's step encloses training_step
and backward (Lightning runs them in its closure): a stage inside another suspends the outer one,
so the stage ranges never overlap and the optimizer stage is the step's own time (zero_grad, the
update). Steps end when run_training_batch stops (fit) or a validation/test/predict step ends
(validate, test, predict). The validation loop inside fit is no training step: when a validation
action stops, the step in progress begins again (tprof's step_restart), so the loop's time lies
in the trace between two steps and never in the step statistics. summary() gives Lightning's
action table, as SimpleProfiler prints it, from the run's op_stats.csv, and tprof's step, stage
and op tables.
"""
from __future__ import annotations

import csv
import json
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import tprof
from tprof import _session, _tprof
from tprof._analyze import _files_dir
from tprof.torch import lightning_report
from tprof.torch.lightning import (
    STAGES,
    _epoch_reports,
    _EpochReports,
    _start_profile,
    _take_keywords,
)

__all__ = ["ProfilerLogic"]

_STAGE_RANGES = {name: _tprof.range(name) for name in STAGES}
_EVALUATION: dict[str, tuple[str | None, str | None]] = {
    "validate": ("val_next", "validation_step"), "test": ("test_next", "test_step"),
    "predict": ("predict_next", "predict_step")}


def _stage_of(action: str, fn: str | None) -> str | None:
    """The stage an action opens in a run of Trainer function fn (fit, validate, ...), or None."""
    strategy = action.startswith("[Strategy]")
    if fn == "fit":
        if action.endswith("train_dataloader_next"):
            return "dataloader"
        if strategy and action.endswith(".training_step"):
            return "forward"
        if strategy and action.endswith(".backward"):
            return "backward"
        if action.endswith(("optimizer_step", "optimizer_zero_grad")):
            return "optimizer"
        if "validation" in action or action.endswith("val_next"):
            return "validation"
        return None
    fetch, step = _EVALUATION.get(fn or "", (None, None))
    if fetch and action.endswith(fetch):
        return "dataloader"
    if step and strategy and action.endswith("." + step):
        return "forward"
    return None


def _ends_step(action: str, fn: str | None) -> bool:
    """True when stopping this action ends a step."""
    if fn == "fit":
        return action == "run_training_batch"
    step = _EVALUATION.get(fn or "", (None, None))[1]
    return step is not None and action.startswith("[Strategy]") and action.endswith("." + step)


class _Action:
    """What start/stop do for one action name, learnt on its first start."""

    __slots__ = ("ends_step", "epoch", "range", "restarts_step", "stage")

    def __init__(self, name: str, fn: str | None) -> None:
        self.range = _tprof.range(name)
        stage = _stage_of(name, fn)
        self.stage = _STAGE_RANGES[stage] if stage else None
        self.ends_step = _ends_step(name, fn)
        # validation inside fit is no training step: the step in progress begins after it
        self.restarts_step = fn == "fit" and stage == "validation"
        self.epoch = fn == "fit" and name == "run_training_epoch"


class ProfilerLogic:
    """tprof as a Lightning Profiler: the callback's keywords (tprof.torch.Callback), plus
    Lightning's dirpath and filename (where summary() is also written, as Lightning's profilers
    do). The summary prints Lightning's action table and tprof's step, stage and op tables."""

    keys: dict[str, Any]
    given: list[str]
    with_modules: bool
    record_ops: bool | None
    _every_epoch: bool

    def __init__(self, dirpath: str | os.PathLike[str] | None = None,
                 filename: str | None = None, enabled: bool = True,
                 profile_epochs: Sequence[int] | None = None, profile_steps: int | None = None,
                 warmup_steps: int | None = None,
                 activities: str | Sequence[Any] | None = None,
                 record_shapes: bool | None = None, with_stack: bool | None = None,
                 output_dir: str | None = None, export_chrome_trace: bool = True,
                 log_top_k_ops: int | None = None, with_modules: bool = True,
                 record_ops: bool | None = None, **config: Any) -> None:
        # Lightning's Profiler, the next class of LightningProfiler's MRO
        super().__init__(dirpath=dirpath, filename=filename)  # type: ignore[call-arg]
        _take_keywords(self, enabled, profile_epochs, profile_steps, warmup_steps, activities,
                      record_shapes, with_stack, output_dir, export_chrome_trace, log_top_k_ops,
                      with_modules, record_ops, config)
        self.session: _session.Profile | None = None  # the last run's (run_dir, summary())
        self._actions: dict[str, _Action] = {}
        # the stage ranges of the open actions that have one, innermost last
        self._stages: list[_tprof.range] = []
        # the open actions, outermost first, each with the window it began in (_window when it
        # began in the recording one, else -1)
        self._open: list[tuple[str, int]] = []
        self._window = 0  # counts the windows that opened
        self._fn: str | None = None
        self._recorded = 0.0  # seconds the session's windows recorded (the action table's 100%)
        self._recording_since: float | None = None
        self._reports: _EpochReports | None = None
        self._text = ""
        self._unpatch: Callable[[], None] = _nothing  # undoes _stop_on_exception
        self._on = False  # a session records this run: steps, epochs, reports
        self._trainer: Any = None  # the run's Trainer: its loggers get the windows' figures

    # ---- Lightning's Profiler interface ----

    def setup(self, stage: Any, local_rank: int | None = None, log_dir: str | None = None) -> None:
        super().setup(stage=stage, local_rank=local_rank, log_dir=log_dir)  # type: ignore[misc]
        self._stop_session()
        self._fn = str(getattr(stage, "value", stage))
        self._actions = {}
        self._text = ""
        module = getattr(self, "_lightning_module", None)
        self._start_session(getattr(module, "trainer", None), module)

    def start(self, action_name: str) -> None:
        action = self._actions.get(action_name) or self._learn(action_name)
        stage = action.stage
        if stage is not None:
            outer = self._stages[-1] if self._stages else None
            self._stages.append(stage)
            if outer is stage:  # e.g. zero_grad inside the optimizer's step: one stage goes on
                stage = None
            elif outer is not None:
                outer.end()  # suspended: tprof's end closes the innermost open range
        if action.epoch and self._on:
            self._mark_epoch()  # first: the epoch's window opens, then its range begins in it
        self._open.append((action_name, self._window if self._recording_since is not None
                           else -1))
        action.range.begin()
        if stage is not None:
            stage.begin()

    def stop(self, action_name: str) -> None:
        action = self._actions.get(action_name)
        if action is None:  # a stop without a start: SimpleProfiler raises, tprof never does
            return
        stage = action.stage
        outer = None
        if stage is not None and self._stages and self._stages[-1] is stage:
            self._stages.pop()
            outer = self._stages[-1] if self._stages else None
            if outer is stage:
                stage = outer = None
            else:
                stage.end()
        action.range.end()
        self._close(action_name)
        if outer is not None:
            outer.begin()  # the enclosing action's stage resumes
        if action.ends_step and self._on:
            if _tprof.window_ends():
                self._cut_open_actions()
                self._window += 1  # the next window (at once, or later) is another
            tprof.step()
            self._recording_changed()
        elif action.restarts_step and self._on:
            _tprof.step_restart()
        elif action.epoch and self._on:
            assert self._reports is not None
            self._reports.report_new()

    def summary(self) -> str:
        self._stop_session()
        return self._text

    def teardown(self, stage: Any) -> None:
        self._stop_session()
        super().teardown(stage=stage)  # type: ignore[misc]

    # ---- the session ----

    def _learn(self, name: str) -> _Action:
        action = self._actions[name] = _Action(name, self._fn)
        return action

    def _close(self, name: str) -> None:
        """Takes the innermost open action of that name off the open ones."""
        for i in range(len(self._open) - 1, -1, -1):
            if self._open[i][0] == name:
                del self._open[i]
                return

    def _cut_open_actions(self) -> None:
        """In the window's last step: the actions open across all of it (run_training_epoch when
        wait or warmup steps opened the window inside the epoch) become its ranges, from its
        start to its end, flagged truncated (the recorder knows no name of a range begun before
        its window)."""
        before = [name for name, window in self._open if window != self._window]
        if before:
            _tprof.open_ranges_cut(before)

    def _mark_epoch(self) -> None:
        trainer = getattr(getattr(self, "_lightning_module", None), "trainer", None)
        epoch = getattr(trainer, "current_epoch", None)
        if isinstance(epoch, int):
            assert self._reports is not None
            self._reports.mark(epoch)
            self._recording_changed()

    def _recording_changed(self, stopping: bool = False) -> None:
        """After the schedule moved (a step, an epoch, the end): adds the time the step before
        recorded to _recorded, the recorded windows' wall time the action table divides by."""
        now = time.perf_counter()
        if self._recording_since is not None:
            self._recorded += now - self._recording_since
        recording = not stopping and _tprof.is_recording()
        if recording and self._recording_since is None:
            self._window += 1  # a window opened
        self._recording_since = now if recording else None

    def _start_session(self, trainer: Any, module: Any) -> None:
        prof = _start_profile(self, trainer, _unproxied(module) if self.with_modules else None)
        if prof is None:
            return
        self.session = prof
        self._on = True
        self._recorded = 0.0
        self._recording_since = None
        self._recording_changed()
        self._reports = _epoch_reports(prof, trainer)
        self._trainer = trainer
        if trainer is not None:
            self._stop_on_exception(trainer.strategy)

    def _stop_on_exception(self, strategy: Any) -> None:
        """When fit/validate/test raises, Lightning calls no profiler method, but it calls
        strategy.on_exception: the session stops there (a partial window and the artifacts).
        This wraps the instance's method rather than adding a callback, whose every hook
        Lightning would time as an action of its own."""
        original = strategy.on_exception

        def on_exception(exception: BaseException) -> Any:
            if self._on:
                assert self.session is not None
                self.session.save_flight_on_exception()  # the flight recorder's ring, when on
            self._stop_session(failed=True)
            return original(exception)

        strategy.on_exception = on_exception
        self._unpatch = lambda: setattr(strategy, "on_exception", original)

    def _stop_session(self, failed: bool = False) -> None:
        """Ends the run's session (once): its files, its summary on stderr, the tables. Unless
        the run failed, the last epoch's block prints first (_EpochReports.finish)."""
        if not self._on:
            return
        assert self.session is not None and self._reports is not None
        self._on = False
        self._unpatch()
        self._unpatch = _nothing
        while self._stages:
            self._stages.pop().end()
        if self._recording_since is not None:
            self._cut_open_actions()  # the last window closes with the session
        self._open = []
        self._recording_changed(stopping=True)
        if not failed:
            self._reports.finish()
        _tprof.drop_open_step()  # after the last step (the run's end, teardown): no step
        self.session.stop()
        self._reports.report_new()
        # Lightning finalized its loggers before it asks for the summary
        self._reports.log_to(self._trainer, after_finalize=True)
        self._text = self._tables()

    def _top_k(self) -> int:
        assert self.session is not None and self.session.config is not None
        top_k: int = json.loads(self.session.config.to_json())["top_k"]
        return top_k

    # ---- the summary ----

    def _tables(self) -> str:
        assert self.session is not None and self.session.run_dir is not None
        run_dir = self.session.run_dir
        parts = [self._action_table(os.path.join(_files_dir(run_dir), "op_stats.csv"))]
        analysis = self.session.summary()  # the run's own analysis, with its stages
        if analysis is not None:
            parts.append(lightning_report.run_tables(analysis, self._top_k()))
        parts.append("tprof run directory: %s" % run_dir)
        return os.linesep.join(parts) + os.linesep

    def _action_table(self, op_stats: str) -> str:
        """Lightning's action table (SimpleProfiler's extended form) for the actions recorded:
        mean, calls, total, % of the recorded windows' wall time (with a schedule, the time
        outside the windows recorded no action, so it is no part of the 100%)."""
        rows = []
        if os.path.exists(op_stats):
            with open(op_stats, newline="", encoding="utf-8") as f:
                rows = [r for r in csv.DictReader(f) if r["name"] in self._actions]
        wall = max(self._recorded, 1e-9)
        table = sorted(((r["name"], float(r["mean_us"]) / 1e6, int(r["calls"]),
                         float(r["total_us"]) / 1e6) for r in rows), key=lambda r: -r[3])
        stage = "%s " % self._fn.upper() if self._fn else ""
        if not table:
            return stage + "Profiler Report: no action recorded"
        width = max(len(r[0]) for r in table)
        sep = "-" * (width + 70)

        def row(action: str, mean: str, calls: str, total: str, pct: str) -> str:
            return "|  %-*s  |  %-16s|  %-10s|  %-16s|  %-12s|" % (width, action, mean, calls,
                                                                   total, pct)

        lines = [stage + "Profiler Report (tprof: recorded windows)", sep,
                 row("Action", "Mean duration (s)", "Num calls", "Total time (s)",
                     "Percentage %"), sep,
                 row("Total", "-", str(sum(r[2] for r in table)), "%.5g" % wall, "100 %"), sep]
        lines += [row(a, "%.5g" % m, str(c), "%.5g" % t, "%.5g" % (100.0 * t / wall))
                  for a, m, c, t in table]
        return os.linesep.join(lines + [sep])


def _nothing() -> None:
    pass


def _unproxied(module: Any) -> Any:
    """The LightningModule behind the weak proxy Lightning gives its profiler."""
    if module is None:
        return None
    try:
        return module.trainer.lightning_module
    except (AttributeError, ReferenceError, RuntimeError):
        return None
