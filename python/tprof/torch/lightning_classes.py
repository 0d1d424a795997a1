"""tprof.torch.Callback and tprof.torch.LightningProfiler: CallbackLogic and ProfilerLogic with
Lightning's own base classes (lightning.pytorch's, else pytorch_lightning's).

Importing this module imports Lightning, which takes seconds (lightning.fabric imports
torch._dynamo), so tprof.torch imports it only when one of the two names is first used; a type
checker and an IDE see the classes through tprof.torch's TYPE_CHECKING import. Without Lightning
the import raises ImportError naming the package to install.
"""
import importlib
from typing import TYPE_CHECKING

from tprof.torch.lightning import CallbackLogic
from tprof.torch.lightning_profiler import ProfilerLogic

__all__ = ["Callback", "LightningProfiler"]

_ROOTS = ("lightning.pytorch", "pytorch_lightning")


def _lightning_base(module: str, name: str) -> type:
    """Lightning's class `name` from `module` ("" for the package itself, ".profilers"), from
    lightning.pytorch or pytorch_lightning; ImportError naming Lightning when neither has it."""
    for root in _ROOTS:
        try:
            base = getattr(importlib.import_module(root + module), name)
        except (ImportError, AttributeError):
            continue
        if isinstance(base, type):
            return base
    raise ImportError("tprof.torch.Callback and tprof.torch.LightningProfiler need PyTorch "
                      "Lightning (lightning.pytorch or pytorch_lightning), which is not "
                      "installed: pip install lightning", name="lightning")


if TYPE_CHECKING:
    from lightning.pytorch import Callback as _CallbackBase
    from lightning.pytorch.profilers import Profiler as _ProfilerBase
else:
    _CallbackBase = _lightning_base("", "Callback")
    _ProfilerBase = _lightning_base(".profilers", "Profiler")


class Callback(CallbackLogic, _CallbackBase):
    __doc__ = CallbackLogic.__doc__


class LightningProfiler(ProfilerLogic, _ProfilerBase):
    __doc__ = ProfilerLogic.__doc__
