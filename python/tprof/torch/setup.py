"""The run's setup, recorded for the recommendations (docs/METRICS.md, "The run's setup"), and
Python's garbage collections as ranges.

The analysis advises what to change to what ("raise num_workers from 2 to 7", "the 2 workers
already use both CPUs: the CPU is the limit", "pass fused=True") only when it knows the setup. A
trace holds none of it, so tprof.torch records it once per window as a "tprof.setup" range whose
"tprof.setup" arg is "key=value;..." pairs (setup_text):

- cpu_count, param_dtype, device (where the model's parameters are): at the start of each window;
- optimizer, foreach, fused (as the optimizer will run: torch's own default resolved): in the
  first Optimizer.step of each window, through torch's global step pre-hook, which only reads;
- num_workers, pin_memory, persistent_workers, batch_size, prefetch_factor: in the first fetch of
  each window of a loader wrapped by tprof.torch.dataloader (data.py), or of a DataLoader iterator
  under `tprof run` (iterator_setup: tprof/_autorun.py);
- the fetches that started a loader's workers and stopped them (record_worker_cycle: data.py, the
  Lightning callback, `tprof run`), and the CPU time of the workers and the process
  (loader_cpu.py), summed.

A foreign trace (torch.profiler's) has none of these: the advice then stays generic.

GcRanges records each collection of Python's garbage collector as a "gc" range (with its
generation and the objects it collected) through gc.callbacks while a window records; the
callback only records: collections run when and as they would.
"""
from __future__ import annotations

import gc
import os
from collections.abc import Iterable
from typing import Any

import torch

from tprof import _tprof

__all__ = ["GcRanges", "SetupRecord", "cpu_count", "has_workers", "iterator_setup", "loader_setup",
           "params_setup", "record_setup", "record_worker_cycle", "setup_text"]


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity), else the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def setup_text(values: dict[str, Any]) -> str:
    """'key=value;...' of values; booleans as 0/1, None values left out (unknown)."""
    parts = []
    for key, value in values.items():
        if value is None:
            continue
        if isinstance(value, bool):
            value = int(value)
        parts.append("%s=%s" % (key, str(value).replace(";", ",").replace("=", ":")))
    return ";".join(parts)


def record_setup(values: dict[str, Any]) -> None:
    """A "tprof.setup" range holding values (nothing outside windows)."""
    if not _tprof.is_recording():
        return
    rng = _tprof.range("tprof.setup")
    rng.begin()
    try:
        _tprof.arg("tprof.setup", setup_text(values))
    finally:
        rng.end()


def params_setup(params: Iterable[torch.Tensor]) -> dict[str, Any]:
    """param_dtype ("mixed" when they differ) and device of a model's parameters."""
    dtypes, device = set(), None
    for p in params:
        dtypes.add(str(p.dtype).replace("torch.", ""))
        device = device or p.device.type
    dtype = None if not dtypes else dtypes.pop() if len(dtypes) == 1 else "mixed"
    return {"param_dtype": dtype, "device": device}


def loader_setup(loader: Any) -> dict[str, Any] | None:
    """A torch DataLoader's settings, or None for another iterable."""
    if not hasattr(loader, "num_workers"):
        return None
    return {"num_workers": getattr(loader, "num_workers", None),
            "pin_memory": getattr(loader, "pin_memory", None),
            "persistent_workers": getattr(loader, "persistent_workers", None),
            "batch_size": getattr(loader, "batch_size", None),
            "prefetch_factor": getattr(loader, "prefetch_factor", None),
            "cpu_count": cpu_count()}


def iterator_setup(it: Any) -> dict[str, Any] | None:
    """The settings of the DataLoader that a torch DataLoader iterator (_BaseDataLoaderIter)
    iterates, as loader_setup gives them, read from what the iterator keeps of its loader (`tprof
    run` times the iterators' fetches and never sees the loader); None for another iterator.
    pin_memory is the one the iterator uses: off where no accelerator is there to pin for."""
    if not hasattr(it, "_num_workers"):
        return None
    sampler = getattr(it, "_index_sampler", None) if getattr(it, "_auto_collation", 0) else None
    return {"num_workers": it._num_workers,
            "pin_memory": getattr(it, "_pin_memory", None),
            "persistent_workers": getattr(it, "_persistent_workers", None),
            "batch_size": getattr(sampler, "batch_size", None),
            "prefetch_factor": getattr(it, "_prefetch_factor", None),
            "cpu_count": cpu_count()}


def has_workers(loader: Any) -> bool:
    """Whether a loader loads in worker processes (a torch DataLoader with num_workers > 0)."""
    return (getattr(loader, "num_workers", 0) or 0) > 0


def record_worker_cycle(started: bool, stopped: bool, fetch_ns: int) -> None:
    """A fetch that started a loader's workers, stopped them, or both (an empty epoch), as setup
    pairs the analysis sums: loader_start_ns, loader_starts, loader_stop_ns."""
    values: dict[str, Any] = {}
    if started:
        values.update(loader_start_ns=fetch_ns, loader_starts=1)
    if stopped:
        values["loader_stop_ns"] = 0 if started else fetch_ns
    record_setup(values)


# Where torch's optimizers default to their foreach implementation (torch.optim.optimizer's
# _default_to_fused_or_foreach, which is not called here: with_stack would record its frames).
_FOREACH_DEVICES = ("cuda", "xpu")


def _optimizer_setup(opt: torch.optim.Optimizer) -> dict[str, Any]:
    params = [p for group in opt.param_groups for p in group["params"]]
    fused, foreach = opt.defaults.get("fused"), opt.defaults.get("foreach")
    if not fused and foreach is None and not opt.defaults.get("differentiable"):
        # torch's default when neither is given: foreach when every parameter is a plain
        # tensor on a device with foreach kernels
        foreach = bool(params) and all(type(p) in (torch.Tensor, torch.nn.Parameter)
                                       and p.device.type in _FOREACH_DEVICES for p in params)
    values: dict[str, Any] = {"optimizer": type(opt).__name__, "foreach": foreach,
                              "fused": bool(fused)}
    values.update(params_setup(params))
    return values


class SetupRecord:
    """The profile part that records the setup: the process's at the end of each window's first
    step (a range at its start would shorten the step's lead, the loader's time in a plain
    loop), each optimizer's in its first step of a window. The model's parameters are read
    when the part is made, before the session starts: with_stack records no frame of it."""

    name = "setup"

    def __init__(self, model: torch.nn.Module | None = None) -> None:
        self.values: dict[str, Any] = {"cpu_count": cpu_count()}
        if model is not None:
            self.values.update(params_setup(model.parameters()))
        self.window_said = False
        self.optimizers_said: set[int] = set()
        self.handle: Any = None

    def start(self) -> None:
        try:  # torch 2.0 and later; without it the optimizer's setup stays unknown
            from torch.optim.optimizer import register_optimizer_step_pre_hook
            self.handle = register_optimizer_step_pre_hook(self._optimizer_step)
        except ImportError:
            self.handle = None

    def step(self) -> None:
        """Before the library's step: the last moment of a recorded step."""
        if _tprof.is_recording() and not self.window_said:
            self.window_said = True
            record_setup(self.values)

    def window_changed(self) -> None:
        if not _tprof.is_recording():
            self.window_said = False
            self.optimizers_said.clear()

    def _optimizer_step(self, opt: torch.optim.Optimizer, args: Any, kwargs: Any) -> None:
        """torch's global pre-hook: reads the optimizer, returns None (its step is unchanged)."""
        if not _tprof.is_recording() or id(opt) in self.optimizers_said:
            return None
        self.optimizers_said.add(id(opt))
        try:
            record_setup(_optimizer_setup(opt))
        except Exception as e:  # never into the training loop
            _tprof.warn("setup: %s: %s (ignored)" % (type(e).__name__, e))
        return None

    def stop(self) -> None:
        self.step()  # a window that ends with the session has its setup too
        if self.handle is not None:
            self.handle.remove()
            self.handle = None


class GcRanges:
    """The profile part that records garbage collections as "gc" ranges while windows record."""

    name = "gc"

    def __init__(self) -> None:
        self.rng = _tprof.range("gc")
        self.open = False

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        try:
            if phase == "start" and not self.open and _tprof.is_recording():
                self.rng.begin()
                self.open = True
            elif phase == "stop" and self.open:
                _tprof.arg("generation", int(info.get("generation", -1)))
                _tprof.arg("collected", int(info.get("collected", 0)))
                self.rng.end()
                self.open = False
        except Exception:  # a callback that raises would print into the program's stderr
            self.open = False

    def start(self) -> None:
        gc.callbacks.append(self._callback)

    def step(self) -> None:
        pass

    def stop(self) -> None:
        if self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
        if self.open:
            self.rng.end()
            self.open = False
