"""A CUPTI installed from a wheel (nvidia-cuda-cupti-cu12, which pip's torch depends on) lives in
site-packages/nvidia/cuda_cupti/lib, where the C library's search does not look: its folder is
passed to the library once, before the first session starts."""
import os
import site
import sys

from tprof import _tprof

_passed = False


def wheel_cupti_dirs() -> list[str]:
    """The nvidia/cuda_cupti/lib folders under this interpreter's package folders."""
    bases = list(sys.path)
    try:
        bases += site.getsitepackages() + [site.getusersitepackages()]
    except AttributeError:  # a virtualenv's old site module
        pass
    dirs: list[str] = []
    for base in bases:
        d = os.path.join(base or ".", "nvidia", "cuda_cupti", "lib")
        if os.path.isdir(d) and os.path.realpath(d) not in map(os.path.realpath, dirs):
            dirs.append(os.path.abspath(d))
    return dirs


def pass_wheel_cupti_dirs() -> None:
    """Passes the wheel's CUPTI folders to the library, once per process."""
    global _passed
    if not _passed:
        _passed = True
        dirs = wheel_cupti_dirs()
        if dirs:
            _tprof.set_cupti_dirs(dirs)
