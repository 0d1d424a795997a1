"""torch.profiler beside tprof: tprof.profile(torch_profiler=True) runs a torch.profiler.profile
on tprof's schedule, stepped by the same step() calls, so that op-level detail and GPU kernels
come from PyTorch's own profiler (Kineto) when a user wants them. Its traces are saved in the run
directory's torch/ folder, where tprof.analyze reads them.

Only one CUPTI subscriber can exist in a process, so tprof's own GPU source stays off while
torch.profiler runs (the `gpu` key; _parts.build sees to it).
"""
import os
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile, schedule

from tprof import _tprof

__all__ = ["TorchProfiler", "torch_schedule"]


def torch_schedule(s: dict[str, Any]) -> Callable[[int], ProfilerAction]:
    """torch.profiler's schedule for tprof's step schedule s (Config.schedule()). torch before
    2.5 has no skip_first_wait: there the first cycle's wait is skipped by shifting the step, as
    torch 2.5 does."""
    params = {"wait": s["wait"], "warmup": s["warmup"], "active": s["active"],
              "repeat": s["repeat"], "skip_first": s["skip_first"]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Profiler won't be using warmup" when warmup=0
        if not s["skip_first_wait"]:
            return schedule(**params)
        try:
            return schedule(skip_first_wait=1, **params)
        except TypeError:
            base = schedule(**dict(params, skip_first=0))
    skip, wait = s["skip_first"], s["wait"]
    return lambda k: ProfilerAction.NONE if k < skip else base(k - skip + wait)


class TorchProfiler:
    """The profile part behind torch_profiler=True."""

    name = "torch_profiler"

    def __init__(self, cfg: _tprof.Config, effective: dict[str, Any], run_dir: str) -> None:
        s = cfg.schedule()
        if s["mode"] == "epochs":
            raise _tprof.ConfigError(
                "torch_profiler=True follows the step schedule; epoch windows (profiling.epochs) "
                "have no torch.profiler equivalent")
        self.schedule = torch_schedule(s) if s["mode"] == "steps" else None
        activities = [ProfilerActivity.CPU]
        if torch.cuda.is_available():
            activities.append(ProfilerActivity.CUDA)
        self.options = {"activities": activities, "record_shapes": effective["record_shapes"],
                        "profile_memory": effective["profile_memory"],
                        "with_flops": effective["with_flops"],
                        "with_stack": effective["with_stack"]}
        self.dir = os.path.join(run_dir, "torch")
        self.traces: list[str] = []
        self.prof: profile | None = None

    def start(self) -> None:
        os.makedirs(self.dir, exist_ok=True)
        self.prof = profile(schedule=self.schedule, on_trace_ready=self._save, **self.options)
        self.prof.start()

    def step(self) -> None:
        assert self.prof is not None
        self.prof.step()

    def stop(self) -> None:
        assert self.prof is not None
        self.prof.stop()

    def _save(self, prof: profile) -> None:
        path = os.path.join(self.dir, "window_%d.pt.trace.json" % (len(self.traces) + 1))
        prof.export_chrome_trace(path)
        self.traces.append(path)
