"""Each profiled epoch's figures as scalars for the Trainer's loggers (TensorBoardLogger,
CSVLogger, any Lightning Logger through log_metrics): what tprof's Lightning integrations send
once the run's files are written.

Names, one set per profiled window (an epoch's with epoch windows, else the run's one):
tprof/step_time_ms (mean step time), tprof/stage_share/<stage> (% of step time, `other`
included), tprof/op_ms/<op> (self time of the window's top ops, log_top_k_ops of them) and
tprof/epoch. They are logged at the window's last step (tprof's ProfilerStep number: the batches
since fit began). Every figure is read from the run's artifacts: the steps and stages from
stage_times.json (the run's own stages), the ops from the window's analysis (or summary.json).
Nothing here measures.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from tprof._analyze import _files_dir

__all__ = ["log_windows", "window_metrics"]

_PREFIX = "tprof/"


def _read_json(path: str) -> Any:
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def window_metrics(steps: Sequence[Mapping[str, Any]], ops: Sequence[Mapping[str, Any]],
                   top_k: int) -> dict[str, float]:
    """{name: value} for the steps of one window (stage_times.json's steps[] rows) and its op
    table (an analysis's top_cpu_ops); {} without steps."""
    if not steps:
        return {}
    total = sum(s["dur_us"] for s in steps)
    metrics = {_PREFIX + "step_time_ms": total / len(steps) / 1000.0}
    if total > 0:
        for stage in steps[0]["stages"]:
            share = sum(s["stages"][stage] for s in steps)
            metrics[_PREFIX + "stage_share/" + stage] = 100.0 * share / total
        metrics[_PREFIX + "stage_share/other"] = 100.0 * sum(s["other_us"] for s in steps) / total
    for op in ops[:top_k]:
        metrics[_PREFIX + "op_ms/" + op["name"]] = op["self_us"] / 1000.0
    return metrics


def _windows(run_dir: str, epochs: Mapping[int, Mapping[str, Any]]
             ) -> list[tuple[int | None, list[dict[str, Any]], list[dict[str, Any]]]]:
    """[(epoch or None, stage_times rows, ops)] of the run: one per analysed epoch window
    (epochs: {epoch: its window's analysis}), else the whole run as one."""
    run_dir = _files_dir(run_dir)  # where the run's own files are
    stage_times = os.path.join(run_dir, "stage_times.json")
    if not os.path.exists(stage_times):
        return []
    rows = _read_json(stage_times)["steps"]
    if epochs:
        out: list[tuple[int | None, list[dict[str, Any]], list[dict[str, Any]]]] = []
        for epoch, analysis in sorted(epochs.items()):
            numbers = {s["number"] for s in analysis["steps"]["list"]}
            out.append((epoch, [r for r in rows if r["number"] in numbers],
                        analysis["top_cpu_ops"]))
        return out
    summary = os.path.join(run_dir, "summary.json")
    ops = _read_json(summary)["top_cpu_ops"] if os.path.exists(summary) else []
    return [(None, rows, ops)]


def log_windows(loggers: Iterable[Any] | None, run_dir: str | None,
                epochs: Mapping[int, Mapping[str, Any]], top_k: int,
                after_finalize: bool = False) -> None:
    """Logs each window's metrics to every logger (log_metrics at the window's last step, then
    save). after_finalize: the Trainer already finalized its loggers (the profiler's summary
    comes after): they are finalized again, so that what was logged is flushed."""
    targets = [lg for lg in loggers or () if hasattr(lg, "log_metrics")]
    if not targets or not run_dir:
        return
    for epoch, rows, ops in _windows(run_dir, epochs):
        metrics = window_metrics(rows, ops, top_k)
        if not metrics:
            continue
        if epoch is not None:
            metrics[_PREFIX + "epoch"] = float(epoch)
        step = max(r["number"] for r in rows)
        for lg in targets:
            lg.log_metrics(metrics, step=step)
    for lg in targets:
        if after_finalize:
            lg.finalize("success")
        else:
            lg.save()
