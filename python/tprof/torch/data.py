"""The data-loading stage: each next() of a loader timed as a range (default "dataloader", the
name the summary's dataloader stage and its recommendation look for). A torch DataLoader's
settings (num_workers, pin_memory, ...) are recorded in the first fetch of each window, for the
recommendation (setup.py).

A loader with workers starts them in the fetch that calls iter() and, unless persistent_workers,
stops them in the fetch that ends its epoch (StopIteration): such fetches are the workers' cost,
not the batches', and more workers make them longer. Their durations in recording windows are
recorded as setup pairs (loader_start_ns, loader_starts, loader_stop_ns), so that the advice
weighs more workers against the steady fetches and persistent_workers against these."""
import time
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from tprof import _tprof
from tprof.torch.setup import has_workers, loader_setup, record_setup, record_worker_cycle

__all__ = ["dataloader"]

_T = TypeVar("_T")


class dataloader(Generic[_T]):
    """Wraps any iterable (a torch DataLoader, a generator): iterating it yields the same
    batches, each fetch inside the range. len() and the loader's attributes pass through."""

    def __init__(self, loader: Iterable[_T], name: str = "dataloader") -> None:
        self.loader = loader
        self.range = _tprof.range(name)

    def __iter__(self) -> Iterator[_T]:
        rng = self.range
        it: Iterator[_T] | None = None
        said = False  # the loader's setup was recorded in this window
        workers = has_workers(self.loader)
        while True:
            rng.begin()
            began = time.perf_counter_ns()
            recording = _tprof.is_recording()
            if recording and not said:
                setup = loader_setup(self.loader)
                if setup is not None:
                    record_setup(setup)
            said = recording
            starts, ended = it is None, False
            try:
                if it is None:  # a DataLoader starts its workers here: part of the first fetch
                    it = iter(self.loader)
                batch = next(it)
            except StopIteration:
                ended = True
            finally:
                rng.end()
            if workers and recording and (starts or ended):
                record_worker_cycle(starts, ended, time.perf_counter_ns() - began)
            if ended:
                return
            yield batch

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]  # a loader without len() raises

    def __getattr__(self, name: str) -> Any:
        if name == "loader":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)

