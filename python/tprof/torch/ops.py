"""Op recording: a range per aten op, through PyTorch's Python dispatch mode (TorchDispatchMode),
with FLOPs by torch.profiler's formulas (flops.py) and, with record_shapes, the inputs' shapes as
the "Input Dims" arg, as Kineto writes them.

The mode sees the ops below autograd, forward and backward, on the thread that started it (and
autograd's threads, which inherit it). Outside a recorded step an op costs one extra check.

This is the fallback where tprof's C++ op observer (observer.py) cannot load. torch.compile runs
a compiled function eagerly while a user dispatch mode is active, which would change the program
measured; the mode therefore declares itself an "infra" mode (as torch's own FakeTensorMode
does), which dynamo ignores: compiled code runs compiled. Ops that dynamo traces while compiling
are not recorded (torch.compiler.is_compiling()); inside compiled code only the aten ops it calls
through the dispatcher (extern kernels such as addmm) are seen, never its fused kernels.
"""
from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

from tprof import _tprof
from tprof.torch import flops as _flops

__all__ = ["OpRecording", "input_dims"]

_Tensor = torch.Tensor
_is_recording = _tprof.is_recording
_category = _tprof.category
_UNKNOWN = object()


def input_dims(args: Sequence[Any], kwargs: dict[str, Any]) -> str:
    """Kineto's "Input Dims": a tensor's sizes, a tensor list's sizes each, [] for the rest."""
    dims = []
    for a in (*args, *kwargs.values()):
        if isinstance(a, _Tensor):
            dims.append(str(list(a.shape)))
        elif isinstance(a, (list, tuple)) and a and all(isinstance(t, _Tensor) for t in a):
            dims.append("[" + ", ".join(str(list(t.shape)) for t in a) + "]")
        else:
            dims.append("[]")
    return "[" + ", ".join(dims) + "]"


_is_compiling = torch.compiler.is_compiling

# What _OpMode keeps per op: the overload, its range, its FLOPs function (None: not counted).
_Op = tuple[Any, _tprof.range, Callable[[Sequence[Any]], int] | None]


class _OpMode(TorchDispatchMode):  # type: ignore[no-untyped-call]  # torch's, untyped
    @classmethod
    def is_infra_mode(cls) -> bool:
        return True  # dynamo then leaves compiled code compiled (see the module's doc)

    def __init__(self, record_shapes: bool, with_flops: bool) -> None:
        super().__init__()  # type: ignore[no-untyped-call]
        self.record_shapes = record_shapes
        self.with_flops = with_flops
        # id(op overload) -> (the overload, its range, its FLOPs function or None), or None: not
        # kept. Keyed by id: OpOverload's __hash__ is a Python method, a dict lookup by the
        # overload itself runs it per op. The overload kept in the value keeps its id unique.
        self.ops: dict[int, Any] = {}

    def describe(self, func: Any) -> _Op | None:
        name = func._schema.name  # "aten::mm", as torch.profiler names the op
        if name.startswith("profiler::"):  # record_function's own ops
            return None
        return func, _tprof.range(name), (_flops.rule(name) if self.with_flops else None)

    def __torch_dispatch__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        if kwargs is None:
            kwargs = {}
        if not _is_recording() or _is_compiling():
            return func(*args, **kwargs)
        key = id(func)
        op = self.ops.get(key, _UNKNOWN)
        if op is _UNKNOWN:
            op = self.ops[key] = self.describe(func)
        if op is None:
            return func(*args, **kwargs)
        rng, flops_of = op[1], op[2]
        rng.begin()
        _category("cpu_op")  # as Kineto writes aten ops
        try:
            if self.record_shapes:
                _tprof.shapes(input_dims(args, kwargs))
            if flops_of is not None:
                n = flops_of(args)
                if n:
                    _tprof.flops(n)
            return func(*args, **kwargs)
        finally:
            rng.end()


class OpRecording:
    """The profile part behind record_ops=True: the dispatch mode, entered at start and left at
    stop, on the thread that starts the profile."""

    name = "record_ops"

    def __init__(self, record_shapes: bool = False, with_flops: bool = True) -> None:
        self.mode = _OpMode(record_shapes, with_flops)

    def start(self) -> None:
        self.mode.__enter__()  # type: ignore[no-untyped-call]

    def step(self) -> None:
        pass

    def stop(self) -> None:
        self.mode.__exit__(None, None, None)  # type: ignore[no-untyped-call]
