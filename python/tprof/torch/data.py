"""The data-loading stage: each next() of a loader timed as a range (default "dataloader", the
name the summary's dataloader stage and its recommendation look for). A torch DataLoader's
settings (num_workers, pin_memory, ...) are recorded in the first fetch of each window, for the
recommendation (setup.py)."""
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from tprof import _tprof
from tprof.torch.setup import loader_setup, record_setup

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
        while True:
            rng.begin()
            recording = _tprof.is_recording()
            if recording and not said:
                setup = loader_setup(self.loader)
                if setup is not None:
                    record_setup(setup)
            said = recording
            try:
                if it is None:  # a DataLoader starts its workers here: part of the first fetch
                    it = iter(self.loader)
                batch = next(it)
            except StopIteration:
                return
            finally:
                rng.end()
            yield batch

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]  # a loader without len() raises

    def __getattr__(self, name: str) -> Any:
        if name == "loader":  # not set yet (a copy being built): no recursion
            raise AttributeError(name)
        return getattr(self.loader, name)
