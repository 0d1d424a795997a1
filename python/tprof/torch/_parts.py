"""The PyTorch parts a tprof.profile drives, chosen from its options. Each part has a name and
start(), step() (before the library's step) and stop() (before the session ends)."""
import os

import torch
from tprof import _tprof
from tprof.torch import distributed
from tprof.torch.memory import CudaMemory
from tprof.torch.modules import ModuleRanges
from tprof.torch.ops import OpRecording
from tprof.torch.profiler import TorchProfiler


def _torch_profiler_running():
    enabled = (getattr(torch.autograd, "_profiler_enabled", None)
               or getattr(torch._C._autograd, "_profiler_enabled", None))
    return bool(enabled and enabled())


def _one_cupti_subscriber(cfg, effective, torch_profiler):
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


def build(cfg, effective, opts):
    """The parts for opts (tprof.profile's PyTorch options); may turn cfg's gpu off."""
    _one_cupti_subscriber(cfg, effective, opts["torch_profiler"])
    parts = []
    if opts["model"] is not None and opts["with_modules"]:
        parts.append(ModuleRanges(opts["model"]))
    if opts["record_ops"]:
        parts.append(OpRecording(effective["record_shapes"], effective["with_flops"]))
    if opts["torch_profiler"]:
        run_dir = os.path.join(effective["output_dir"], effective["run_id"])
        parts.append(TorchProfiler(cfg, effective, run_dir))
    if distributed.initialized():
        distributed.pass_rank_to_library()
        parts.append(distributed.CollectiveRanges(opts["model"]))
    cuda = opts["cuda_memory"]
    if cuda or (cuda is None and torch.cuda.is_available()):
        parts.append(CudaMemory())
    return parts
