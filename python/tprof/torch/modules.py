"""Module ranges: each nn.Module's forward is a range named by the module's path in the model
("Net", "Net.encoder", "Net.encoder.0"), so ranges nest as the model does.

The hooks are the ranges' own C methods (begin and end), so a module costs no Python frame for
tprof. On torch >= 2.0 the closing hook also runs when forward raises (always_call); on older
torch a forward that raises leaves its range open until the window closes (flagged truncated).
"""
import inspect

from torch import nn
from tprof import _tprof

_ALWAYS_CALL = "always_call" in inspect.signature(nn.Module.register_forward_hook).parameters


class ModuleRanges:
    """The profile part behind model=...: forward hooks on every submodule while it runs.
    named_modules() visits a module shared by several parents once, under its first path."""

    name = "with_modules"

    def __init__(self, model, root=None):
        self.model = model
        self.root = root or type(model).__name__
        self.handles = []

    def start(self):
        end_kw = {"always_call": True} if _ALWAYS_CALL else {}
        for path, module in self.model.named_modules():
            rng = _tprof.range(self.root + "." + path if path else self.root)
            self.handles.append(module.register_forward_pre_hook(rng.begin))
            self.handles.append(module.register_forward_hook(rng.end, **end_kw))
        return self

    def step(self):
        pass

    def stop(self):
        for handle in self.handles:
            handle.remove()
        self.handles = []


def watch(model, root=None):
    """Module ranges for model outside tprof.profile(model=...): returns the part; call its
    stop() to remove the hooks."""
    return ModuleRanges(model, root).start()
