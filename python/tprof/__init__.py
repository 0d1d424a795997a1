"""tprof: a profiler for machine-learning training loops, from Python.

    import tprof

    with tprof.profile(wait=1, warmup=1, active=3) as prof:
        for batch in loader:
            with tprof.stage("forward"):
                loss = model(batch)
            ...
            prof.step()

The recording calls (ranges, steps, counters, FLOPs) are the C library's, through the extension
tprof._tprof; this package only adds the session object and, in tprof.torch, PyTorch's pieces.
Configuration keys and their rules are the library's (docs/CONFIG.md); see docs/PYTHON.md.
"""
from tprof._analyze import Analysis, Comparison, analyze, compare
from tprof._messages import ConfigWarning
from tprof._session import Profile, config_from_args, epoch, flight_save, profile, stage, step
from tprof._tprof import (
    Config,
    ConfigError,
    arg,
    counter,
    flops,
    is_recording,
    last_error,
    messages,
    thread_name,
)
from tprof._tprof import range as range  # re-exported, though not in __all__ (below)
from tprof._tprof import version as __version__

# tprof.range is used as tprof.range: it is left out of `import *`, where it would hide the builtin.
__all__ = [
    "__version__",
    "Analysis",
    "Comparison",
    "Config",
    "ConfigError",
    "ConfigWarning",
    "Profile",
    "analyze",
    "arg",
    "compare",
    "config_from_args",
    "counter",
    "epoch",
    "flight_save",
    "flops",
    "is_recording",
    "last_error",
    "messages",
    "profile",
    "stage",
    "step",
    "thread_name",
]
