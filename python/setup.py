"""Builds and installs the tprof Python package from a tprof checkout:

    python3 -m venv --system-site-packages .venv
    .venv/bin/pip install --no-build-isolation ./python

The extension tprof._tprof is the library's C sources (../src) compiled with python/ext/*.c, so
the package needs no libtprof at run time; it links zlib and libyaml (Debian: zlib1g-dev,
libyaml-dev, python3-dev, python3-setuptools). CUPTI's headers, when found under TPROF_CUDA_HOME
(default /usr/local/cuda), enable the GPU source, as in the CMake build. CMake builds the same
package into build/python/ (cmake/python.cmake) for the tests.
"""
import glob
import os
import re

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
# The library's parts, as CMakeLists.txt lists them (src/cli is the command, not the library);
# "gpu" is src/gpu without its stub where CUPTI's headers are, else src/gpu/stub.c alone.
LIBRARY_AREAS = ("util", "model", "config", "record", "gpu", "export", "trace", "analysis",
                 "report")
CUDA_HOME = os.environ.get("TPROF_CUDA_HOME", "/usr/local/cuda")
HAVE_CUPTI = os.path.exists(os.path.join(CUDA_HOME, "include", "cupti.h"))


def version():
    with open(os.path.join(ROOT, "include", "tprof.h"), encoding="utf-8") as f:
        return re.search(r'#define TPROF_VERSION\s+"([^"]+)"', f.read()).group(1)


def area_sources(area):
    files = sorted(glob.glob(os.path.join(ROOT, "src", area, "*.c")))
    if area == "gpu":
        stub = os.path.join(ROOT, "src", "gpu", "stub.c")
        files = [p for p in files if p != stub] if HAVE_CUPTI else [stub]
    return files


def sources():
    lib = [p for area in LIBRARY_AREAS for p in area_sources(area)]
    return lib + sorted(glob.glob(os.path.join(HERE, "ext", "*.c")))


def cupti_options():
    if not HAVE_CUPTI:
        return {}
    # Headers only: libcupti is loaded with dlopen at run time.
    return {"include_dirs": [os.path.join(CUDA_HOME, "include")],
            "define_macros": [("TPROF_CUDA_HOME", '"%s"' % CUDA_HOME)]}


class parallel_build_ext(build_ext):
    """The library is some sixty C files: compiled on every core."""

    def finalize_options(self):
        super().finalize_options()
        if not self.parallel:
            self.parallel = os.cpu_count() or 1


cupti = cupti_options()
extension = Extension(
    "tprof._tprof",
    sources=sources(),
    include_dirs=[os.path.join(ROOT, "include"), os.path.join(ROOT, "src")]
    + cupti.get("include_dirs", []),
    define_macros=[("_GNU_SOURCE", None), ("TPROF_BUILDING", None)]
    + cupti.get("define_macros", []),
    extra_compile_args=["-std=gnu11", "-fvisibility=hidden", "-O2"],
    libraries=["z", "yaml", "pthread", "dl", "m"],
)

setup(
    name="tprof",
    version=version(),
    description="A profiler for machine-learning training loops (libtprof for Python)",
    packages=["tprof", "tprof.torch"],
    ext_modules=[extension],
    cmdclass={"build_ext": parallel_build_ext},
    python_requires=">=3.10",  # Py_NewRef, PyModule_AddObjectRef
)
