"""tprof for PyTorch: the pieces tprof.profile drives through its options, usable alone too.

    with tprof.profile(model=model, record_ops=True, wait=1, active=3) as prof:
        for x, y in tprof.torch.dataloader(loader):
            ...
            prof.step()

- dataloader(loader): each batch fetch timed as the "dataloader" stage;
- watch(model) / model=: a range per nn.Module forward, named by its path in the model;
- record_ops=True (the default with model=): a range per op through torch's C++ observer
  (observer.py; the dispatch mode of ops.py where it cannot load), FLOPs and shapes;
- torch_profiler=True: torch.profiler on the same schedule, its traces read by tprof.analyze;
- cuda_memory: allocated / reserved / peak counters at each recorded step;
- always: the run's setup for the recommendations (CPUs, the DataLoader's and the optimizer's
  settings, the parameters' dtype) as "tprof.setup" ranges, Python's garbage collections as "gc"
  ranges (setup.py);
- Callback: a PyTorch Lightning callback, LightningProfiler: Trainer(profiler=...)
  (lightning_classes.py; ImportError naming Lightning when it is not installed).

Importing this package imports torch, not Lightning: Callback and LightningProfiler are static
classes of tprof.torch.lightning_classes, imported on first use (importing Lightning takes
seconds: lightning.fabric imports torch._dynamo), so that tprof.profile, which imports this
package when torch is loaded, starts at once. Type checkers and IDEs see them through the
TYPE_CHECKING import below.
"""
from typing import TYPE_CHECKING, Any

import torch  # noqa: F401  (this package needs it)

from tprof.torch.data import dataloader
from tprof.torch.flops import batched_gemm, conv2d, gemm
from tprof.torch.lightning import CallbackLogic
from tprof.torch.lightning_profiler import ProfilerLogic
from tprof.torch.modules import ModuleRanges, watch
from tprof.torch.ops import OpRecording, input_dims

if TYPE_CHECKING:
    from tprof.torch.lightning_classes import Callback, LightningProfiler

_LIGHTNING_CLASSES = ("Callback", "LightningProfiler")


def __getattr__(name: str) -> Any:
    """Callback and LightningProfiler, imported on first use (ImportError naming Lightning when
    it is not installed) and kept as the module's attributes from then on."""
    if name not in _LIGHTNING_CLASSES:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    from tprof.torch import lightning_classes

    value = getattr(lightning_classes, name)
    globals()[name] = value
    return value


__all__ = ["Callback", "CallbackLogic", "LightningProfiler", "ModuleRanges", "OpRecording",
           "ProfilerLogic", "batched_gemm", "conv2d", "dataloader", "gemm", "input_dims", "watch"]
