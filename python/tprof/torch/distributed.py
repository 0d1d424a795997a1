"""torch.distributed's collectives as ranges: while a profile runs in a process where
torch.distributed is initialised, each call of a collective of the torch.distributed module
(all_reduce, broadcast, barrier, all_gather, reduce_scatter, send, recv, ...) is a range named
"<backend>:<collective>" (e.g. "gloo:all_reduce", as torch.profiler names them), with the args
"seq" (this process's count of collectives so far, recorded or not: equal on every rank for the
same collective), "bytes" (the tensors' sizes), "Group size", and "async" (1) for an async_op=True
call.

DDP reduces gradients in C++, out of Python's sight: for a DistributedDataParallel model given as
model=, the profile registers DDP's own reference hook (default_hooks.allreduce_hook, the same
result as DDP's built-in reduction), whose bucket all-reduces then go through all_reduce and are
ranges too. DDP allows one hook per model and never removes it: a model with a hook of its own
keeps it (said once), and ours stays after the profile, costing a Python call per bucket.

The launch is the range: an async_op=True collective returns at once and its transfer runs on the
backend's threads, outside the range.
"""
import functools
import os
from collections.abc import Callable, Iterable
from typing import Any

import torch

from tprof import _tprof

__all__ = ["COLLECTIVES", "CollectiveRanges", "initialized", "pass_rank_to_library"]

COLLECTIVES = ("all_gather", "all_gather_into_tensor", "all_gather_object", "all_reduce",
               "all_to_all", "all_to_all_single", "barrier", "batch_isend_irecv", "broadcast",
               "broadcast_object_list", "gather", "gather_object", "irecv", "isend",
               "monitored_barrier", "recv", "reduce", "reduce_scatter", "reduce_scatter_tensor",
               "scatter", "scatter_object_list", "send")

_is_recording = _tprof.is_recording


def initialized() -> bool:
    """torch.distributed is available and initialised in this process."""
    dist = torch.distributed
    return dist.is_available() and dist.is_initialized()


def pass_rank_to_library() -> None:
    """Launchers such as torchrun set RANK and WORLD_SIZE, which the library reads; a process
    started by torch.multiprocessing.spawn has neither, so torch.distributed's own rank and
    world size are put there (when both are absent) before the session starts."""
    if initialized() and "RANK" not in os.environ and "WORLD_SIZE" not in os.environ:
        os.environ["RANK"] = str(torch.distributed.get_rank())
        os.environ["WORLD_SIZE"] = str(torch.distributed.get_world_size())


def _nbytes(values: Iterable[Any]) -> int:
    n = 0
    for v in values:
        if isinstance(v, torch.Tensor):
            n += v.numel() * v.element_size()
        elif isinstance(v, (list, tuple)):
            n += _nbytes(v)
    return n


class CollectiveRanges:
    """The profile part that wraps torch.distributed's collectives while the profile runs."""

    name = "distributed"

    def __init__(self, model: Any = None) -> None:
        self.model = model
        self.saved: dict[str, Callable[..., Any]] = {}
        self.seq = 0

    def _wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        dist = torch.distributed
        part = self

        @functools.wraps(fn)
        def collective(*args: Any, **kwargs: Any) -> Any:
            part.seq += 1
            if not _is_recording():
                return fn(*args, **kwargs)
            group = kwargs.get("group")
            backend: str
            try:
                backend = dist.get_backend(group)
                size = dist.get_world_size(group)
            except Exception:  # a group this rank is not part of: the collective says why
                backend, size = "c10d", -1
            rng = _tprof.range("%s:%s" % (backend, name))
            rng.begin()
            try:
                _tprof.arg("seq", part.seq)
                _tprof.arg("bytes", _nbytes(args) + _nbytes(kwargs.values()))
                _tprof.arg("Group size", size)
                if kwargs.get("async_op"):  # the range is the launch: its end says nothing
                    _tprof.arg("async", 1)
                return fn(*args, **kwargs)
            finally:
                rng.end()

        return collective

    def start(self) -> None:
        dist = torch.distributed
        for name in COLLECTIVES:
            fn = getattr(dist, name, None)
            if fn is not None:
                self.saved[name] = fn
                setattr(dist, name, self._wrap(name, fn))
        self._hook_ddp()

    def _hook_ddp(self) -> None:
        from torch.nn.parallel import DistributedDataParallel

        model = self.model
        if not isinstance(model, DistributedDataParallel) or getattr(model, "_tprof_hooked",
                                                                        False):
            return
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        if getattr(model, "_comm_hooks", None):
            _tprof.warn("the DDP model has a comm hook of its own: its gradient all-reduces are "
                        "not ranges")
            return
        try:
            model.register_comm_hook(state=None, hook=default_hooks.allreduce_hook)
        except RuntimeError as e:  # a built-in hook registered before
            _tprof.warn("DDP comm hook not registered (%s): gradient all-reduces are not "
                        "ranges" % e)
            return
        model._tprof_hooked = True  # type: ignore[assignment]  # an attribute of our own

    def step(self) -> None:
        pass

    def stop(self) -> None:
        dist = torch.distributed
        for name, fn in self.saved.items():
            setattr(dist, name, fn)
        self.saved = {}
