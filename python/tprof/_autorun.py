"""tprof run: a training script profiled without a change to it (docs/PYTHON.md, "tprof run").

`tprof run [KEY options] -- python train.py ARGS` sets TPROF_AUTORUN=1 and puts the folder
tprof/_bootstrap on PYTHONPATH: its sitecustomize calls install() as each Python process of the
command starts, before the script. install() only watches imports; the steps are found where the
training does its work, with no code of the script changed:

- torch imported: torch's global optimizer-step hooks. Each optimizer step is one step (the
  "optimizer" stage around it, then tprof.step()), and the first one, or the first batch a
  DataLoader yields, starts a tprof.profile with the configuration of the environment (the
  TPROF_<KEY> variables `tprof run` sets from its options), which records torch's ops through the
  observer (the record_ops key's auto: installed() says so). Each next() of a DataLoader's
  iterator is the "dataloader" stage.
- Lightning imported: each Trainer built gets tprof's Lightning callback (appended to
  trainer.callbacks; the list the script passed is not touched), which profiles its fit and steps
  at its batches; the global hooks then stand aside. A Trainer that has a tprof callback or
  profiler already is left as it is.

A process that never steps (the script's launcher, torchrun's agent, a DataLoader worker) never
starts a profile, so it writes nothing; a forked child never acts on its parent's profile. At
exit the profile stops (its summary, then one line naming the run directory, on stderr, rank 0);
the time after the last optimizer step is no step, so N optimizer steps are N steps. The script's
own exit status, output and exception traceback stay what they were.
"""
from __future__ import annotations

import atexit
import functools
import importlib.abc
import importlib.machinery
import os
import sys
import threading
import time
import types
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from tprof import _session, _tprof

__all__ = ["install", "installed"]

_WATCHED = ("torch", "lightning.pytorch", "pytorch_lightning")


class _State:
    """What install() set up in this process."""

    def __init__(self) -> None:
        self.pid = os.getpid()  # a forked child (a DataLoader worker) is not this process
        # the tprof.profile the global hooks started
        self.profile: _session.Profile | None = None
        self.failed = False  # it could not start: not tried again
        # the callbacks given to Trainers: they profile, the hooks do not
        self.lightning: list[Any] = []
        self.lock = threading.Lock()
        self.local = threading.local()  # depth of nested optimizer steps, per thread


_state: _State | None = None
_OPTIMIZER = _tprof.range("optimizer")
_DATALOADER = _tprof.range("dataloader")


def installed() -> bool:
    """Whether this process runs under `tprof run` (install() ran in it)."""
    return _state is not None


def _acting() -> bool:
    """Whether the global hooks record: in the process install() ran in, no Trainer profiled by
    the callback, and no profile of the script's own running (an instrumented script)."""
    st = _state
    if st is None or st.failed or st.lightning or os.getpid() != st.pid:
        return False
    current = _session._current  # the package's own session state
    return current is None or current is st.profile


def _started() -> _session.Profile | None:
    """The global hooks' profile, started on first use; None when it cannot be."""
    st = _state
    assert st is not None  # install() ran: the hooks are its
    if st.profile is not None or st.failed:
        return st.profile
    with st.lock:
        if st.profile is None and not st.failed:
            prof = _session.Profile()
            prof.start()
            if prof.running:
                st.profile = prof
            else:
                st.failed = True
        return st.profile


def _depth() -> int:
    """How many optimizer steps this thread is inside (an optimizer calling another)."""
    assert _state is not None
    depth: int = getattr(_state.local, "depth", 0)
    return depth


def _before_optimizer_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    if not _acting():
        return
    assert _state is not None
    depth = _depth()
    _state.local.depth = depth + 1
    if depth == 0 and _started() is not None:  # an optimizer calling another: one step
        _OPTIMIZER.begin()


def _after_optimizer_step(optimizer: Any, args: Any, kwargs: Any) -> None:
    depth = _depth()
    if depth == 0:
        return  # its pre-hook did not act
    assert _state is not None
    _state.local.depth = depth - 1
    prof = _state.profile
    if depth == 1 and prof is not None and prof.running:
        _OPTIMIZER.end()
        prof.step()


_loader_warned = False


def _beside_fetch(record: Callable[..., None], *args: Any) -> None:
    """Runs one of tprof's records beside a DataLoader fetch: an error there is one warning for
    the run, never the script's (nor in place of its StopIteration)."""
    global _loader_warned
    try:
        record(*args)
    except Exception as e:
        if not _loader_warned:
            _loader_warned = True
            _tprof.warn("tprof run: the DataLoader's setup is not recorded: %s: %s"
                        % (type(e).__name__, e))


def _loader_settings(it: Any, said: weakref.WeakKeyDictionary[Any, bool], recording: bool) -> None:
    """The loader's settings, recorded at an iterator's first fetch of a recording window (`said`:
    whether this window had it)."""
    if said.get(it, False) == recording:
        return
    said[it] = recording
    from tprof.torch.setup import iterator_setup, record_setup  # loaded by the profile already

    settings = iterator_setup(it) if recording else None
    if settings is not None:
        record_setup(settings)


def _worker_cycle(first: bool, ended: bool, fetch_ns: int) -> None:
    from tprof.torch.setup import record_worker_cycle

    record_worker_cycle(first, ended, fetch_ns)


def _timed_next(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A DataLoader iterator's __next__ inside the dataloader stage (when the hooks act), with
    what tprof.torch.dataloader records beside its fetches (tprof/torch/data.py), so that the
    advice on the loader is the measured one here too: the loader's settings at an iterator's
    first fetch in each recording window, and the durations of the fetches that start its workers
    (an epoch's first: iter() started them, or reset persistent ones) and stop them (the one
    ending in StopIteration)."""
    said: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()

    @functools.wraps(original)
    def __next__(self: Any) -> Any:
        if not _acting() or _started() is None:
            return original(self)
        first = getattr(self, "_num_yielded", None) == 0
        recording = _tprof.is_recording()
        ended = False
        _DATALOADER.begin()
        began = time.perf_counter_ns()
        try:
            _beside_fetch(_loader_settings, self, said, recording)
            return original(self)
        except StopIteration:
            ended = True
            raise
        finally:
            _DATALOADER.end()
            if recording and (first or ended) and getattr(self, "_num_workers", 0):
                _beside_fetch(_worker_cycle, first, ended, time.perf_counter_ns() - began)

    return __next__


def _on_torch(torch: types.ModuleType) -> None:
    from torch.optim.optimizer import (
        register_optimizer_step_post_hook,
        register_optimizer_step_pre_hook,
    )
    from torch.utils.data import dataloader

    register_optimizer_step_pre_hook(_before_optimizer_step)
    register_optimizer_step_post_hook(_after_optimizer_step)
    cls = dataloader._BaseDataLoaderIter  # every DataLoader iterator's base class
    setattr(cls, "__next__", _timed_next(cls.__next__))  # noqa: B010 (a method replaced)


def _has_tprof(trainer: Any) -> bool:
    """Whether the script gave the Trainer a tprof callback or profiler itself."""
    from tprof.torch.lightning import CallbackLogic
    from tprof.torch.lightning_profiler import ProfilerLogic

    return (any(isinstance(cb, CallbackLogic) for cb in getattr(trainer, "callbacks", ()))
            or isinstance(getattr(trainer, "profiler", None), ProfilerLogic))


def _give_callback(trainer: Any) -> None:
    st = _state
    assert st is not None
    if os.getpid() != st.pid or _has_tprof(trainer):
        return
    if st.profile is not None:
        _tprof.warn("tprof run: a Trainer built after the script's own loop was profiled: its "
                    "fit is not profiled apart (the loop's profile goes on)")
        return
    import tprof.torch

    callback = tprof.torch.Callback()
    trainer.callbacks.append(callback)
    st.lightning.append(callback)


def _on_lightning(module: types.ModuleType) -> None:
    trainer_cls = module.Trainer
    original = trainer_cls.__init__

    @functools.wraps(original)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        try:
            _give_callback(self)
        except Exception as e:  # never into the script
            _tprof.warn("tprof run: the Trainer is not profiled: %s: %s" % (type(e).__name__, e))

    trainer_cls.__init__ = __init__


_HOOKS: dict[str, Callable[[types.ModuleType], None]] = {
    "torch": _on_torch, "lightning.pytorch": _on_lightning, "pytorch_lightning": _on_lightning}


def _run_hook(name: str, module: types.ModuleType) -> None:
    try:
        _HOOKS[name](module)
    except Exception as e:  # an unexpected torch or Lightning: the script runs unprofiled
        _tprof.warn("tprof run: %s is not watched: %s: %s" % (name, type(e).__name__, e))


class _ImportWatch(importlib.abc.MetaPathFinder):
    """Calls the hook of a watched module once it has been executed: the spec is the other
    finders' own, with its loader's exec_module followed by the hook (the module's __loader__
    and __spec__ stay the real ones)."""

    def __init__(self) -> None:
        self.pending = set(_WATCHED)

    def find_spec(self, name: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name not in self.pending:
            return None
        self.pending.discard(name)
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None)
            if finder is self or find is None:
                continue
            spec: importlib.machinery.ModuleSpec | None = find(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader: Any = spec.loader
        execute = getattr(loader, "exec_module", None)
        if execute is None or isinstance(loader, type):  # a class serves many modules
            return spec

        def exec_module(module: types.ModuleType) -> None:
            try:
                execute(module)
            finally:
                del loader.exec_module  # the loader's own method again
            _run_hook(name, module)

        try:
            loader.exec_module = exec_module
        except AttributeError:  # a loader without a __dict__: that module is not watched
            pass
        return spec


def _at_exit() -> None:
    """Stops the profile, then names the run directory (rank 0 of several prints it once)."""
    st = _state
    assert st is not None
    if os.getpid() != st.pid:
        return
    dirs: list[str] = []
    if st.profile is not None and st.profile.running:
        # steps end at optimizer steps: the time after the last one (the script's end,
        # teardown) is no step
        _tprof.drop_open_step()
    for prof in [st.profile] + [cb.profile for cb in st.lightning]:
        if prof is None:
            continue
        prof.stop()
        if prof.enabled and prof.run_dir and prof.run_dir not in dirs:
            dirs.append(prof.run_dir)
    if os.environ.get("RANK", "0") in ("", "0"):
        for run_dir in dirs:
            print("tprof: run directory: %s" % run_dir, file=sys.stderr, flush=True)


def install() -> None:
    """Sets up tprof run in this process (the bootstrap calls it once, at startup)."""
    global _state
    if _state is not None:
        return
    _state = _State()
    atexit.register(_at_exit)
    watch = _ImportWatch()
    for name in _WATCHED:
        if name in sys.modules:
            watch.pending.discard(name)
            _run_hook(name, sys.modules[name])
    sys.meta_path.insert(0, watch)
