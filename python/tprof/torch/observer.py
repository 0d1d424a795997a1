"""Ops and allocations through torch's own C++ observer (tprof._observer, python/observer/): the
layer torch.profiler records from, at.RecordFunction callbacks and c10's memory reporting.

OpObserver registers the callback while a window records and removes it when the window closes,
so that outside windows torch runs no tprof code at all. MemoryReports receives the allocator's
reports (CPU and CUDA) while a window records, on the thread that started the profile and the
threads that inherit its state (autograd's), as torch.profiler(profile_memory=True) does.

available() says whether the observer loads; why_not() says, in one line, why it does not (not
built, built for another torch, or failed to load). tprof.torch then records ops through its
dispatch mode (ops.py) and says so once.
"""
from __future__ import annotations

import importlib
from typing import Any

import torch

from tprof import _tprof

__all__ = ["MemoryReports", "OpObserver", "available", "why_not"]

_module: Any | None = None
_why_not: str | None = None
_loaded = False


def _torch_release(version: str) -> str:
    """'2.13.0+cpu' -> '2.13': the observer works with the torch release it was built for."""
    return ".".join(version.split("+")[0].split(".")[:2])


def _load() -> None:
    global _module, _why_not, _loaded
    if _loaded:
        return
    _loaded = True
    try:
        module = importlib.import_module("tprof._observer")
    except ImportError as e:
        _why_not = ("tprof's op observer is not available (%s)" % e if "No module" not in str(e)
                    else "tprof was built without its op observer (no torch or no C++ compiler "
                    "at build time)")
        return
    built = module.built_for_torch
    if _torch_release(built) != _torch_release(torch.__version__):
        _why_not = ("tprof's op observer was built for torch %s, this is torch %s (rebuild "
                    "tprof)" % (built, torch.__version__))
        return
    _module = module


def available() -> bool:
    """True when tprof._observer loads and was built for this torch release."""
    _load()
    return _module is not None


def why_not() -> str:
    """Why the observer is not available ('' when it is)."""
    _load()
    return _why_not or ""


class OpObserver:
    """The profile part behind record_ops=True (and the default with model=... where the
    observer is available): every RecordFunction a range, in windows only."""

    name = "record_ops"

    def __init__(self, record_shapes: bool = False, with_flops: bool = True) -> None:
        self.record_shapes = record_shapes
        self.with_flops = with_flops

    def start(self) -> None:
        self.window_changed()

    def step(self) -> None:
        pass

    def window_changed(self) -> None:
        """After the library's step (and at start): the callback follows the window."""
        assert _module is not None
        if _tprof.is_recording():
            _module.start(record_shapes=self.record_shapes, with_flops=self.with_flops)
        else:
            _module.stop()

    def stop(self) -> None:
        assert _module is not None
        _module.stop()


class MemoryReports:
    """The profile part behind profile_memory=True: the allocators' reports as [memory]
    events, in windows only. When another profiler (torch.profiler) already receives them on
    this thread, they stay its own and one line says so."""

    name = "profile_memory"

    def __init__(self) -> None:
        self.pushed = False

    def start(self) -> None:
        assert _module is not None
        self.pushed = _module.memory_push()
        if not self.pushed:
            _tprof.warn("profile_memory: torch.profiler already receives this thread's "
                        "allocations; tprof records none while it runs")
        self.window_changed()

    def step(self) -> None:
        pass

    def window_changed(self) -> None:
        assert _module is not None
        if self.pushed:
            _module.memory_on(_tprof.is_recording())

    def stop(self) -> None:
        assert _module is not None
        if self.pushed:
            _module.memory_pop()
            self.pushed = False
