"""Module ranges: each nn.Module's forward is a range named by the module's path in the model
("Net", "Net.encoder", "Net.encoder.0"), so ranges nest as the model does.

The ranges come from torch's global module hooks (register_module_forward_pre_hook and
register_module_forward_hook), which look the module up among the model's: the model's own
hook dictionaries are never touched. That matters for torch.compile, whose guards count a
module's hooks: a hook added to a compiled module would recompile it, once when the profile
starts and again when it ends. Global hooks are not guarded on, and each hook first asks
torch.compiler.is_compiling(), which dynamo evaluates while tracing (True: the hook traces to
nothing, no graph break) and which is False when eager code runs. Compiled code therefore has no
module ranges (its regions appear as torch's own "Torch-Compiled Region" ranges) and compiles
exactly as without tprof: the same graphs, no graph break, no recompilation
(tests/python/test_torch_observer.py compares dynamo's counters). Code compiled while the hooks
exist is guarded on their number, so they then stay registered, recording nothing (_Hooks).

torch warns when a compiled module runs while global module hooks exist (they would fire for
the OptimizedModule too; ours ignore modules outside the model): that warning, caused by tprof
alone, is filtered while the ranges are on, so the program's output stays its own.

On torch >= 2.0 the closing hook also runs when forward raises (always_call); on older torch a
forward that raises leaves its range open until the window closes (flagged truncated).
"""
from __future__ import annotations

import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from tprof import _tprof

__all__ = ["ModuleRanges", "watch"]

_module_hooks = nn.modules.module
_ALWAYS_CALL = "always_call" in inspect.signature(
    _module_hooks.register_module_forward_hook).parameters
_is_compiling: Callable[[], bool] = (getattr(getattr(torch, "compiler", None), "is_compiling", None)
                                     or (lambda: False))
_GLOBAL_HOOKS_WARNING = r"Using `torch\.compile\(module\)` when there are global hooks"


def _dynamo_frames() -> int:
    """How many frames dynamo has compiled in this process (0 before it is imported)."""
    utils = sys.modules.get("torch._dynamo.utils")
    return utils.counters["frames"]["total"] if utils is not None else 0


class _Hooks:
    """The two global hooks, registered once and shared by every ModuleRanges: `ranges` (id of
    a module -> its range) says what they record; empty, they record nothing. They are removed
    when a profile stops, unless dynamo compiled code while they were registered: its guards
    then count them, and removing them would recompile that code, so they stay, recording
    nothing, until the process ends (docs/PYTHON.md, "torch.compile")."""

    def __init__(self) -> None:
        self.ranges: dict[int, _tprof.range] = {}
        self.handles: list[Any] = []
        self.filter: Any = None
        self.frames_at_register = 0

    def register(self) -> None:
        if self.handles:
            return
        ranges = self  # the hooks read self.ranges at each call: a session swaps it

        def pre(module: nn.Module, args: Any) -> None:
            if not _is_compiling():
                rng = ranges.ranges.get(id(module))
                if rng is not None:
                    rng.begin()

        def post(module: nn.Module, args: Any, output: Any) -> None:
            if not _is_compiling():
                rng = ranges.ranges.get(id(module))
                if rng is not None:
                    rng.end()

        end_kw: dict[str, Any] = {"always_call": True} if _ALWAYS_CALL else {}
        self.frames_at_register = _dynamo_frames()
        self.handles = [_module_hooks.register_module_forward_pre_hook(pre),
                        _module_hooks.register_module_forward_hook(post, **end_kw)]
        warnings.filterwarnings("ignore", message=_GLOBAL_HOOKS_WARNING, category=UserWarning)
        self.filter = warnings.filters[0]

    def release(self) -> None:
        self.ranges = {}
        if _dynamo_frames() != self.frames_at_register:
            return  # compiled code guards on them: they stay, recording nothing
        for handle in self.handles:
            handle.remove()
        self.handles = []
        if self.filter is not None:
            try:
                warnings.filters.remove(self.filter)  # type: ignore[attr-defined]  # a list
                # as filterwarnings does: caches see the change
                warnings._filters_mutated()  # type: ignore[attr-defined]
            except (ValueError, AttributeError):
                pass  # the program reset the filters itself
            self.filter = None


_hooks = _Hooks()


class ModuleRanges:
    """The profile part behind model=...: the model's modules ranged through the global hooks
    while the profile runs. named_modules() visits a module shared by several parents once,
    under its first path."""

    name = "with_modules"

    def __init__(self, model: nn.Module, root: str | None = None) -> None:
        self.model = model
        self.root = root or type(model).__name__
        self._keep: list[nn.Module] = []

    def start(self) -> ModuleRanges:
        self._keep = list(self.model.modules())  # the ids stay theirs while the hooks run
        _hooks.ranges = {id(module): _tprof.range(self.root + "." + path if path else self.root)
                         for path, module in self.model.named_modules()}
        _hooks.register()
        return self

    def step(self) -> None:
        pass

    def stop(self) -> None:
        _hooks.release()
        self._keep = []


def watch(model: nn.Module, root: str | None = None) -> ModuleRanges:
    """Module ranges for model outside tprof.profile(model=...): returns the part; call its
    stop() to remove the hooks."""
    return ModuleRanges(model, root).start()
