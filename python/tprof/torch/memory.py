"""CUDA memory counters: at the end of each recorded step, the current device's allocated,
reserved and peak-allocated bytes (torch.cuda's caching allocator) as counter events
"cuda:<d> allocated", "cuda:<d> reserved", "cuda:<d> peak allocated".

The peak is torch's running maximum (max_memory_allocated); tprof never resets it, so the
program's own use of the peak statistics is unchanged."""
import torch

from tprof import _tprof

__all__ = ["CudaMemory"]


class CudaMemory:
    """The profile part behind cuda_memory. Nothing is read before CUDA is initialised."""

    name = "cuda_memory"

    def __init__(self) -> None:
        self.cuda = torch.cuda

    def start(self) -> None:
        pass

    def step(self) -> None:
        cuda = self.cuda
        if not _tprof.is_recording() or not cuda.is_initialized():
            return
        d = cuda.current_device()
        _tprof.counter("cuda:%d allocated" % d, cuda.memory_allocated(d))
        _tprof.counter("cuda:%d reserved" % d, cuda.memory_reserved(d))
        _tprof.counter("cuda:%d peak allocated" % d, cuda.max_memory_allocated(d))

    def stop(self) -> None:
        self.step()  # the last step before the session ends has its counters too
