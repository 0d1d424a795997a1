"""The PyTorch parts a tprof.profile drives, chosen from its options. Each part has a name and
start(), step() (before the library's step) and stop() (before the session ends)."""
import os
from typing import Any

import torch

from tprof import _autorun, _tprof
from tprof.torch import distributed, observer
from tprof.torch.loader_cpu import LoaderCpu
from tprof.torch.memory import CudaMemory
from tprof.torch.modules import ModuleRanges
from tprof.torch.ops import OpRecording
from tprof.torch.profiler import TorchProfiler
from tprof.torch.setup import GcRanges, SetupRecord


def _torch_profiler_running() -> bool:
    enabled = (getattr(torch.autograd, "_profiler_enabled", None)
               or getattr(torch._C._autograd, "_profiler_enabled", None))
    return bool(enabled and enabled())


def _one_cupti_subscriber(cfg: _tprof.Config, effective: dict[str, Any],
                          torch_profiler: bool) -> None:
    """tprof's CUPTI source stays off while torch.profiler runs: driven by this profile, or
    already running when it starts. gpu=on cannot be honoured then, and says so."""
    running = _torch_profiler_running()
    if not (torch_profiler or running) or effective["gpu"] == "off":
        return
    why = "torch_profiler=True" if torch_profiler else "a torch.profiler is already running"
    if effective["gpu"] == "on":
        raise _tprof.ConfigError(
            "profiling.gpu is on, but %s: only one CUPTI subscriber can run in a process; use "
            "gpu=off (torch.profiler records the GPU) or no torch.profiler" % why)
    cfg.set("gpu", "off", "tprof.profile (%s)" % why)
    effective["gpu"] = "off"


def _op_parts(opts: dict[str, Any], effective: dict[str, Any]) -> list[Any]:
    """Ops and allocations: through torch's C++ observer where it loads, else ops through the
    dispatch mode (record_ops on) and one line saying why. record_ops=None (the default) takes
    the `record_ops` key: auto records ops where the observer is there and a model is given, or
    under `tprof run` (whose profile of an unchanged script knows no model: the ops, autograd's
    backward nodes and the script's record_function ranges are what it would lack)."""
    if opts["torch_profiler"]:
        return []  # torch.profiler records the ops and allocations itself
    record_ops = opts["record_ops"]
    has_observer = observer.available()
    if record_ops is None:
        mode = effective.get("record_ops", "auto")
        record_ops = mode == "on" or (mode == "auto" and has_observer and (
            opts["model"] is not None or _autorun.installed()))
    parts: list[Any] = []
    if record_ops and has_observer:
        parts.append(observer.OpObserver(effective["record_shapes"], effective["with_flops"]))
    elif record_ops:
        _tprof.warn("record_ops: %s; ops are recorded through the dispatch mode instead (ops "
                    "below autograd only; in torch.compile'd code only the aten ops it calls)"
                    % observer.why_not())
        parts.append(OpRecording(effective["record_shapes"], effective["with_flops"]))
    elif effective["record_shapes"]:
        _tprof.warn("record_shapes: the shapes are those of recorded ops, and no ops are "
                    "recorded (pass record_ops=True or model=...)")
    if effective["profile_memory"] and has_observer:
        parts.append(observer.MemoryReports())
    elif effective["profile_memory"]:
        _tprof.warn("profile_memory: torch's allocations need the op observer: %s"
                    % observer.why_not())
    return parts


def build(cfg: _tprof.Config, effective: dict[str, Any], opts: dict[str, Any]) -> list[Any]:
    """The parts for opts (tprof.profile's PyTorch options); may turn cfg's gpu off."""
    _one_cupti_subscriber(cfg, effective, opts["torch_profiler"])
    # the setup the recommendations read, the loader's CPU time, and garbage collections, in
    # every window
    parts: list[Any] = [SetupRecord(opts["model"]), LoaderCpu(), GcRanges()]
    if opts["model"] is not None and opts["with_modules"]:
        parts.append(ModuleRanges(opts["model"]))
    op_parts = _op_parts(opts, effective)
    parts += op_parts
    if opts["torch_profiler"]:
        run_dir = os.path.join(effective["output_dir"], effective["run_id"])
        parts.append(TorchProfiler(cfg, effective, run_dir))
    if distributed.initialized():
        distributed.pass_rank_to_library()
        # the observer records the collectives (record_param_comms) where torch does: no
        # function of torch.distributed is wrapped and DDP keeps its own reduction
        if not any(isinstance(p, observer.OpObserver) for p in op_parts):
            parts.append(distributed.CollectiveRanges(opts["model"]))
    cuda = opts["cuda_memory"]
    if cuda or (cuda is None and torch.cuda.is_available()):
        parts.append(CudaMemory())
    return parts
