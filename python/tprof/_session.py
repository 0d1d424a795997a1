"""The profiling session from Python: tprof.profile, the module's step/epoch/stage and
config_from_args.

One session runs per process (the library's rule). The Profile that started it is the current
one: tprof.step() and tprof.epoch() go through it, so the PyTorch parts it drives (module ranges,
op recording, torch.profiler, CUDA memory counters) follow the same steps.
"""
from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
import threading
import time
import types
from collections.abc import Iterable
from typing import Any, Literal, Protocol

from tprof import _html, _keys, _stack, _tprof
from tprof._analyze import Analysis, _files_dir, _trace_files, analyze
from tprof._cupti import pass_wheel_cupti_dirs

__all__ = ["Profile", "config_from_args", "epoch", "flight_save", "profile", "stage", "step"]


class _Part(Protocol):
    """A PyTorch part a profile drives (tprof.torch._parts); step() and window_changed() are
    optional."""

    name: str

    def start(self) -> object: ...

    def stop(self) -> None: ...


_lock = threading.Lock()
_current: Profile | None = None  # the Profile whose session is active (or started disabled)
_run_ids: set[str] = set()  # run directories this process has written (see _fresh_run_id)


def config_from_args(argv: Iterable[str] | None = None) -> tuple[_tprof.Config, list[str]]:
    """Reads the configuration as the C library's tprof_init does: the YAML file named by
    --profiling.config or TPROF_CONFIG, then TPROF_<KEY> variables, then tprof's arguments of argv
    (sys.argv by default; argv[0] is the program). The arguments are consumed from argv, in place,
    even when one is invalid; the first error then raises ConfigError.

    Returns (config, argv): pass config to tprof.profile(config), argv to your own parser."""
    if argv is None:
        argv = sys.argv
    elif not isinstance(argv, list):
        argv = list(argv)
    cfg = _tprof.Config()
    cfg.load_sources(argv)
    return cfg, argv


def _build_config(config: Any, keys: dict[str, Any],
                  argv: Iterable[str] | None = None) -> _tprof.Config:
    """A Config from tprof.profile's arguments (see Profile)."""
    if isinstance(config, _tprof.Config):
        cfg = config.copy()
    else:
        cfg = _tprof.Config()
        cfg.set("enabled", True, "tprof.profile")
        path = config if isinstance(config, (str, bytes, os.PathLike)) else None
        if config is not None and path is None and not isinstance(config, dict):
            raise TypeError("tprof.profile(config): a tprof.Config, a dict or a YAML file's path, "
                            "not %s" % type(config).__name__)
        path = path or os.environ.get("TPROF_CONFIG") or None
        if path is not None:
            cfg.load_yaml(path)
        for key, value in (config.items() if isinstance(config, dict) else ()):
            if value is not None:
                _keys.set_key(cfg, key, value, "tprof.profile(config)")
    for key, value in keys.items():
        if value is not None:
            _keys.set_key(cfg, key, value, "tprof.profile")
    if not isinstance(config, _tprof.Config):
        cfg.load_env()
    if argv is not None:
        cfg.load_args(list(argv))  # a copy: the caller's list keeps its arguments
    cfg.validate()
    return cfg


def _disabled_config() -> _tprof.Config:
    """The configuration of a run that goes on unprofiled after a configuration error."""
    cfg = _tprof.Config()
    cfg.set("enabled", False, "tprof.profile (configuration error)")
    return cfg


def _why_off(keys: dict[str, Any]) -> str:
    """Which source switched profiling off, for the "nothing will be recorded" line."""
    if keys.get("enabled") is not None and not keys["enabled"]:
        return "enabled=%r" % (keys["enabled"],)
    env = os.environ.get("TPROF_ENABLED")
    if env:
        return "TPROF_ENABLED=%s" % env
    return "enabled is false in the configuration"


def say_off(keys: dict[str, Any], names: Iterable[str] | None = None) -> None:
    """One line when profiling keys were given while profiling is off: they record nothing.
    names: the keys as the caller spelled them (default: those of keys that shape a recording)."""
    unused = sorted(names) if names is not None else _keys.unused_while_off(keys)
    if unused:
        _keys.note("profiling is off (%s): nothing will be recorded, so %s %s no effect"
                   % (_why_off(keys), ", ".join(unused), "has" if len(unused) == 1 else "have"))


_LAUNCHER_SIZES = ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS")
_LAUNCHER_RANKS = ("RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "LOCAL_RANK")


def _several_ranks() -> bool:
    """Whether this process is one rank of several: a launcher's world size above 1 (the
    variables the library reads, src/record/rank.c), or torch.distributed's."""
    for name in _LAUNCHER_SIZES:
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value) > 1
    dist = getattr(sys.modules.get("torch"), "distributed", None)
    return bool(dist is not None and dist.is_available() and dist.is_initialized()
                and dist.get_world_size() > 1)


def _parent_run_id() -> str | None:
    """The run_id the parent process would have by default: its start time and its pid
    (YYYYmmdd-HHMMSS-<ppid>), the same in every child of one launcher (torchrun's agent,
    mp.spawn's script), other in the next launch. None where /proc cannot say."""
    ppid = os.getppid()
    if ppid <= 1:
        return None
    try:
        with open("/proc/%d/stat" % ppid, encoding="ascii", errors="replace") as f:
            stat = f.read()
        with open("/proc/stat", encoding="ascii", errors="replace") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])  # field 22: starttime
        started = boot + ticks // os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None
    return "%s-%d" % (time.strftime("%Y%m%d-%H%M%S", time.localtime(started)), ppid)


def _shared_run_id(cfg: _tprof.Config, effective: dict[str, Any]) -> None:
    """Ranks share one run directory without the user choosing a run_id: a rank whose run_id
    is the built-in default (this process's start and pid) takes its parent's, which its
    sibling ranks take too (docs/DISTRIBUTED.md). Launches across machines still need one."""
    if cfg.origin("run_id") is not None or not _several_ranks():
        return
    shared = _parent_run_id()
    if shared is not None:
        effective["run_id"] = shared
        cfg.set("run_id", shared, "tprof.profile (the ranks' parent process)")


def _spawned_rank_unknown() -> bool:
    """True in a torch.multiprocessing.spawn worker whose rank nobody has told the library yet:
    no launcher variable, torch.distributed not initialized (a decorated worker function)."""
    if any(os.environ.get(name) for name in _LAUNCHER_RANKS):
        return False
    dist = getattr(sys.modules.get("torch"), "distributed", None)
    if dist is None or (dist.is_available() and dist.is_initialized()):
        return False
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "_wrap" and code.co_filename.endswith(
                os.path.join("torch", "multiprocessing", "spawn.py")):
            return True
        frame = frame.f_back
    return False


def _fresh_run_id(cfg: _tprof.Config, effective: dict[str, Any]) -> None:
    """The default run_id has a one-second resolution, and a process may profile several times a
    second (a decorated function, tests): a run_id this process used already gets a suffix, so
    that one run never overwrites another's files."""
    run_id = effective["run_id"]
    n = 2
    while effective["run_id"] in _run_ids:
        effective["run_id"] = "%s-%d" % (run_id, n)
        n += 1
    if effective["run_id"] != run_id:
        cfg.set("run_id", effective["run_id"], "tprof.profile (run_id used before by this process)")
    _run_ids.add(effective["run_id"])


class Profile(contextlib.ContextDecorator):
    """A profiling session: a context manager, a decorator, or start()/stop().

    tprof.profile(config=None, *, model=None, with_modules=True, record_ops=None,
                  torch_profiler=False, cuda_memory=None, argv=None, **keys)

    keys are the library's configuration keys (docs/CONFIG.md: wait=1, active=3, epochs=[1, 5],
    output_dir="runs", ...). Without a tprof.Config, the sources are, later winning: the built-in
    defaults with enabled=True, the YAML file (config as a path, or TPROF_CONFIG), config as a
    dict, keys, then the TPROF_<KEY> variables (so TPROF_ENABLED=0 switches a profiled script
    off). With a tprof.Config (from config_from_args), that configuration and then keys. argv, a
    command line (sys.argv), adds its tprof arguments last, without removing them.
    A configuration error never stops the program: start() prints the library's message as one
    `tprof:` line, keeps it in .error, and runs unprofiled (a disabled session). Keys that shape
    the recording, given while profiling is off, print one line saying they record nothing.
    The use cases' spellings are accepted (tprof._keys): nsight_enabled maps to nsight, and
    with_stack, nsight_output, peak_tflops are ignored with one warning on a build without them.
    A run_id this process used before (the default one has a one-second resolution) gets a
    suffix: -2, -3, ... One rank of several (torchrun, mp.spawn) with the default run_id takes
    its parent process's, so that the ranks share one run directory; in a torch.multiprocessing
    spawn worker whose rank is not known yet (a decorator, before init_process_group), the
    session starts at the first step() (docs/DISTRIBUTED.md).

    The PyTorch options (tprof.torch; docs/PYTHON.md): model, an nn.Module whose forward calls
    become ranges named by their path (with_modules); record_ops, a range per op as torch's
    RecordFunction sees it (through tprof's C++ observer; default None: the record_ops key,
    whose auto is on when model is given, or under `tprof run`, and the observer is built),
    with its FLOPs (and input shapes with record_shapes=True, torch's
    allocations with profile_memory=True); torch_profiler, a torch.profiler run on the
    same schedule whose traces tprof analyzes; cuda_memory, allocated/reserved/peak counters per
    step (default: when CUDA is in use). with_stack=True (a configuration key) records each
    Python call of the starting thread as a python_function range while a window records.
    """

    def __init__(self, config: _tprof.Config | dict[str, Any] | str | bytes | os.PathLike[str]
                 | None = None, *, model: Any = None, with_modules: bool = True,
                 record_ops: bool | None = None, torch_profiler: bool = False,
                 cuda_memory: bool | None = None, argv: Iterable[str] | None = None,
                 **keys: Any) -> None:
        if model is not None and not callable(getattr(model, "named_modules", None)):
            # a programming error, not a configuration value: it raises, naming the argument
            raise TypeError("tprof.profile(model=...) takes a torch.nn.Module, not %s"
                            % type(model).__name__)
        self._config_arg = config
        self._argv = argv
        self._keys = _keys.map_keys(keys, "tprof.profile")
        self._torch_options = {"model": model, "with_modules": with_modules,
                               "record_ops": record_ops, "torch_profiler": torch_profiler,
                               "cuda_memory": cuda_memory}
        self.config: _tprof.Config | None = None  # the Config of the last start
        self.running = False  # this object's session is the process's session
        self.enabled = False  # ... and it records (enabled=True)
        self.run_dir: str | None = None  # <output_dir>/<run_id> of the last start
        self.error: str | None = None  # the configuration error that left the last start unprofiled
        self._flight = False  # the flight recorder is on (docs/FLIGHT.md)
        self._parts: list[_Part] = []
        self._pending = False  # a spawned worker's start, waiting for its rank (start())

    # ---- life cycle ----

    def start(self) -> Profile:
        """Starts the session (returns self); see the class."""
        global _current
        with _lock:
            if self.running or self._pending:
                return self
            if _current is not None:
                _tprof.warn("tprof.profile started while another profile is running "
                            "(ignored): profiles do not nest")
                return self
            if _spawned_rank_unknown():
                # the rank decides the run directory's file names: the session starts at the
                # first step, once the worker has joined torch.distributed (docs/DISTRIBUTED.md)
                self._pending = True
                _current = self
                return self
            parts = self._start_session()
        self._start_parts(parts)
        return self

    def _start_session(self) -> list[_Part]:
        """Starts the library's session (under _lock); the PyTorch parts to start, or []."""
        global _current
        cfg, effective, parts = self._configure()
        pass_wheel_cupti_dirs()
        if not _tprof.start(cfg):
            return []  # the library said why (on stderr and in tprof.messages())
        self.config = cfg
        self.enabled = effective["enabled"]
        self._flight = effective["flight_recorder"]
        # the library's: another folder when <output_dir>/<run_id> was not tprof's to use
        self.run_dir = _tprof.run_dir() or os.path.join(effective["output_dir"],
                                                        effective["run_id"])
        self.running = True
        self._parts = []
        _current = self
        return parts

    def _start_parts(self, parts: list[_Part]) -> None:
        """Starts the PyTorch parts (a failing one stops the session and raises)."""
        try:
            for part in parts:
                part.start()
                self._parts.append(part)
        except BaseException:
            self.stop()
            raise

    def _start_pending(self) -> bool:
        """The deferred start of a spawned worker's profile (start()); True when a session
        started, whose first step is the one the worker has just ended."""
        global _current
        with _lock:
            if not self._pending:
                return False
            self._pending = False
            _current = None
            parts = self._start_session()
        self._start_parts(parts)
        return self.running

    def stop(self) -> None:
        """Ends the session: the last window, the artifacts, the summary."""
        global _current
        with _lock:
            if self._pending:  # a spawned worker that never stepped recorded nothing
                self._pending = False
                _current = None
            if not self.running:
                return
            try:
                for part in reversed(self._parts):
                    part.stop()
            finally:
                self.running = False
                _current = None
                _tprof.shutdown()

    def __enter__(self) -> Profile:
        return self.start()

    def __exit__(self, *exc: Any) -> Literal[False]:
        if exc[0] is not None and issubclass(exc[0], Exception):
            self.save_flight_on_exception()
        self.stop()
        return False

    def save_flight_on_exception(self) -> None:
        """An exception escapes the profiled code: the flight recorder, when on, saves its ring
        (reason "exception") before the session stops (docs/FLIGHT.md)."""
        if self.running and self.enabled and self._flight:
            _tprof.flight_save("exception")

    def _configure(self) -> tuple[_tprof.Config, dict[str, Any], list[_Part]]:
        """(config, its effective values, the PyTorch parts). A configuration error is one
        `tprof:` line and a disabled configuration: the training runs on, unprofiled."""
        try:
            cfg = _build_config(self._config_arg, self._keys, self._argv)
            effective = json.loads(cfg.to_json())
            if not effective["enabled"]:
                return cfg, effective, []  # the library says once that the keys record nothing
            _shared_run_id(cfg, effective)
            _fresh_run_id(cfg, effective)
            parts = self._torch_parts(cfg, effective)
            if effective["with_stack"] and not self._torch_options["torch_profiler"]:
                parts.append(_stack.PythonStacks())  # else torch.profiler records the stacks
            return cfg, effective, parts
        except (_tprof.ConfigError, TypeError, ValueError) as e:
            self.error = str(e)
            _keys.note("%s; this run goes on unprofiled" % e, must_act=True)
            cfg = _disabled_config()
            return cfg, json.loads(cfg.to_json()), []

    def _torch_parts(self, cfg: _tprof.Config, effective: dict[str, Any]) -> list[_Part]:
        """The PyTorch parts this profile drives (none when no option asks for one)."""
        opts = self._torch_options
        wanted = (opts["model"] is not None or opts["record_ops"] or opts["torch_profiler"]
                  or opts["cuda_memory"]
                  or (opts["cuda_memory"] is None and "torch" in sys.modules))
        if not wanted:
            return []
        from tprof.torch import _parts  # imports torch

        return _parts.build(cfg, effective, opts)

    # ---- steps ----

    def step(self) -> None:
        """Ends step k and begins step k+1 (the schedule moves; a window may close)."""
        if self._start_pending():
            _tprof.step()  # ends step 1, which ran before the rank was known (unrecorded)
            self._each_part("window_changed")
        elif self.running:
            self._each_part("step")
            _tprof.step()
            self._each_part("window_changed")  # parts that follow windows (the op observer)
        elif _current is None:
            _tprof.step()  # no session: the library reports the misuse

    def _each_part(self, method: str) -> None:
        """Calls each part's `method` (those that have one); an exception is one warning, never
        raised into the training loop."""
        for part in self._parts:
            call = getattr(part, method, None)
            if call is not None:
                try:
                    call()
                except Exception as e:
                    _tprof.warn("%s: %s: %s (ignored)" % (part.name, type(e).__name__, e))

    def epoch(self, n: int) -> None:
        """Marks the start of epoch n (epoch windows: docs/CONFIG.md)."""
        self._start_pending()
        if self.running or _current is None:
            _tprof.epoch(n)
            self._each_part("window_changed")

    # ---- results ----

    def summary(self) -> Analysis | None:
        """The run's summary.json as a tprof.Analysis (a dict, its tables as DataFrames), or None
        when the run wrote none."""
        path = self.run_dir and os.path.join(_files_dir(self.run_dir), "summary.json")
        if not path or not os.path.exists(path):
            return None
        with open(path, encoding="utf-8") as f:
            return Analysis(json.load(f), "tprof summary: %s" % self.run_dir)

    @property
    def torch_traces(self) -> list[str]:
        """The traces torch.profiler saved (torch_profiler=True), oldest first."""
        return [path for part in self._parts for path in getattr(part, "traces", ())]

    def _repr_html_(self) -> str:
        """A notebook's view: the analysis of the run's traces (tprof.analyze of run_dir), or
        one line saying why there is none yet."""
        if not self.running and self.run_dir and _trace_files(self.run_dir):
            return analyze(self)._repr_html_()
        why = ("running" if self.running else self.error or "no trace written"
               if self.run_dir or self.error else "not started")
        return _html.note("tprof.profile: %s" % why)

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped"
        return "<tprof.profile %s run_dir=%r>" % (state, self.run_dir)


profile = Profile


def step() -> None:
    """Ends the current step of the running profile (tprof.profile's step())."""
    current = _current
    if current is not None:
        current.step()
    else:
        _tprof.step()


def epoch(n: int) -> None:
    """Marks the start of epoch n in the running profile."""
    current = _current
    if current is not None:
        current.epoch(n)
    else:
        _tprof.epoch(n)


def flight_save(reason: str = "explicit") -> bool:
    """Asks the flight recorder to save its ring now, as trace_<n>_flight_<reason>_steps_<a>-<b>
    .json in the run directory (docs/FLIGHT.md). reason: 1 to 32 ASCII letters, digits, '_' or
    '-'. True when asked; False, after one `tprof:` line, when the recorder is off, reason is not
    such a name, or flight_cooldown_steps / flight_max_saves refuse it."""
    return _tprof.flight_save(reason)


def stage(name: str) -> _tprof.range:
    """A range for one of the summary's stages (dataloader, forward, backward, optimizer by
    default; the `stages` key sets others). It is a tprof.range: `with tprof.stage("forward"):`."""
    return _tprof.range(name)


@atexit.register
def _stop_at_exit() -> None:
    current = _current
    if current is not None:
        current.stop()
