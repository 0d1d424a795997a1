"""The keyword spellings of the use cases tprof is built for, turned into tprof's configuration.

Users copy configurations written for torch.profiler, Nsight or a Lightning callback verbatim.
Each such key is one of:

- a tprof key as it is (skip_first, wait, warmup, active, repeat, with_flops, record_shapes...);
- mapped to a tprof key, with one note saying so (nsight_enabled -> nsight);
- optional: a key this build of the library may not know yet (with_stack, nsight_output...):
  passed through, and when the library says it is unknown, accepted with one warning naming it.

A configuration error in the Python integrations never stops training: tprof.profile reports it
as one `tprof:` line and the run goes on unprofiled (see _session.Profile.start).
"""
from typing import Any

from tprof import _tprof

# Spelling in a use case -> tprof key. Each mapping prints one note the first time it is used.
MAPPED = {"nsight_enabled": "nsight"}

# Keys newer than some builds of the library: an "unknown key" for one of these is a warning
# naming the key, not a configuration error (the rest of the configuration still applies).
OPTIONAL = ("with_stack", "nsight_output", "peak_tflops")

# The keys that only shape what is recorded: given while profiling is off, they record nothing,
# and tprof says so once (enabled, output_dir and run_id choose where, not what).
NOT_SCHEDULE = ("enabled", "output_dir", "run_id", "summary", "config")


def note(message: str, must_act: bool = False) -> None:
    """A one-line note, reported as the library reports ("tprof: ...", once; tprof._messages
    says where it goes); must_act for one the user must act on (the run goes on unprofiled)."""
    _tprof.warn(message, must_act)


def map_keys(keys: dict[str, Any], source: str) -> dict[str, Any]:
    """keys with the use cases' spellings replaced by tprof's (a new dict); one note per mapping."""
    out = {}
    for key, value in keys.items():
        target = MAPPED.get(key)
        if target is not None and value is not None:
            note("%s=%r (from %s) is tprof's %s=%r" % (key, value, source, target, value))
            key = target
        out[key] = value
    return out


def set_key(cfg: _tprof.Config, key: str, value: Any, source: str) -> None:
    """cfg.set(key, value, source), where an unknown OPTIONAL key is one warning, not an error.
    Other errors raise ConfigError as cfg.set does."""
    try:
        cfg.set(key, value, source)
    except _tprof.ConfigError as e:
        if key not in OPTIONAL or not str(e).startswith("unknown key"):
            raise
        note("%s=%r (from %s) is not supported by this build of tprof (ignored)"
             % (key, value, source))


def unused_while_off(keys: dict[str, Any]) -> list[str]:
    """The names among keys that would shape a recording, for the "profiling is off" line."""
    return sorted(k for k, v in keys.items() if v is not None and k not in NOT_SCHEDULE)
