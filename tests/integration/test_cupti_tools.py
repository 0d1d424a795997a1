"""The GPU source at process level, without a GPU: exit with the source alive, Nsight mirroring,
the occupancy estimate against Kineto's values in real traces, and that libtprof links no CUDA
library and builds without CUDA's headers.

The helper programs and stand-in CUDA libraries are built by tests/tools/gpu/CMakeLists.txt."""
import ctypes
import gzip
import json
import os
import shlex
import subprocess

import pytest

BUILD = os.environ["TPROF_BUILD_DIR"]
SOURCE = os.environ["TPROF_SOURCE_DIR"]
FIXTURES = os.environ["TPROF_FIXTURES"]
TOOLS = os.path.join(BUILD, "tests", "gpu")
FAKE_CUPTI = os.path.join(TOOLS, "fake_cuda_home", "lib64", "libcupti.so")
FAKE_DRIVER_DIR = os.path.join(TOOLS, "fake_driver")
FAKE_RUNTIME = os.path.join(TOOLS, "fake_runtime", "libcudart.so.13")
FAKE_NVTX = os.path.join(TOOLS, "fake_nvtx", "libfake_nvtx.so")

pytestmark = pytest.mark.skipif(not os.path.exists(os.path.join(TOOLS, "cupti_exit")),
                                reason="built without CUDA's CUPTI headers")


def run(args, env=None, timeout=30):
    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, env=full_env)


def have_driver():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


# ---- exit -------------------------------------------------------------------------------------

@pytest.mark.skipif(have_driver(), reason="a machine with the NVIDIA driver: CUPTI may start")
def test_real_libcupti_without_driver_fails_once_and_exits():
    p = run([os.path.join(TOOLS, "cupti_exit"), "real"])
    assert p.returncode == 0, p.stdout + p.stderr
    lines = p.stdout.splitlines()
    assert lines[0] == "create=0 warnings=1"  # CUPTI is claimed, and fails, at the first window
    assert "cannot start: no NVIDIA driver (libcuda.so.1" in lines[1]
    assert lines[1].endswith("; continuing CPU-only")


def test_exit_without_shutdown_flushes_before_cuda_teardown():
    """exit() with a window recording: tprof's exit hook flushes while "CUDA" still works, and
    the later shutdown (from an atexit handler registered before the source, as tprof_init's)
    still writes the flushed records without calling CUPTI again."""
    p = run([os.path.join(TOOLS, "cupti_exit"), "fake", FAKE_CUPTI])
    assert p.returncode == 0, p.stdout + p.stderr
    assert "create=0 warnings=0" in p.stdout
    assert "collected=2" in p.stdout
    assert "after CUDA teardown" not in p.stderr


def test_exit_in_a_window_that_recorded_nothing():
    """CUDA started before the window (its driver is loaded), and the window recorded nothing:
    tprof's exit hook, registered when the window began, still runs before CUDA's teardown, so
    the late shutdown makes no CUPTI call (it would turn the kinds off)."""
    p = run([os.path.join(TOOLS, "cupti_exit"), "idle", FAKE_CUPTI],
            env={"LD_LIBRARY_PATH": FAKE_DRIVER_DIR})
    assert p.returncode == 0, p.stdout + p.stderr
    assert "collected=0" in p.stdout
    assert "after CUDA teardown" not in p.stderr


def test_exit_control_catches_cupti_calls_after_teardown():
    """The same exit, but the late handler calls CUPTI itself: the fake must notice, or the test
    above would prove nothing."""
    p = run([os.path.join(TOOLS, "cupti_exit"), "naive", FAKE_CUPTI])
    assert p.returncode == 97
    assert "cuptiActivityFlushAll called after CUDA teardown" in p.stderr


# ---- Nsight -----------------------------------------------------------------------------------

@pytest.mark.parametrize("mode,profiler", [
    ("off", []),
    ("driver", ["cuProfilerStart", "cuProfilerStop"]),
    ("runtime", ["cudaProfilerStart", "cudaProfilerStop"]),
])
def test_nsight_mirroring(tmp_path, mode, profiler):
    nvtx_log, cuda_log = tmp_path / "nvtx.log", tmp_path / "cuda.log"
    env = {"NVTX_INJECTION64_PATH": FAKE_NVTX, "FAKE_NVTX_LOG": str(nvtx_log),
           "FAKE_CUDA_LOG": str(cuda_log), "LD_LIBRARY_PATH": FAKE_DRIVER_DIR}
    p = run([os.path.join(TOOLS, "nsight_check"), mode, FAKE_RUNTIME], env=env)
    assert p.returncode == 0, p.stderr

    def read(f):
        return f.read_text().splitlines() if f.exists() else []

    want_nvtx = [] if mode == "off" else ["push forward", "push inner", "pop", "pop"]
    assert read(nvtx_log) == want_nvtx
    assert read(cuda_log) == profiler


# ---- occupancy --------------------------------------------------------------------------------

# Per-SM block limit by compute capability (CUDA C Programming Guide, "Technical Specifications
# per Compute Capability"); Kineto's deviceProperties do not carry it.
MAX_BLOCKS_PER_SM = {(7, 0): 32, (7, 5): 16, (8, 0): 32, (8, 6): 16, (8, 7): 16, (8, 9): 24,
                     (9, 0): 32}


def kernel_launches(name):
    """(device properties, args) of every kernel Kineto gave an occupancy, in a fixture."""
    with gzip.open(os.path.join(FIXTURES, "kineto", name), "rt") as f:
        trace = json.load(f)
    devices = {d["id"]: d for d in trace["deviceProperties"]}
    for ev in trace["traceEvents"]:
        args = ev.get("args", {})
        if ev.get("cat") == "kernel" and "est. achieved occupancy %" in args:
            yield devices[args["device"]], args


@pytest.mark.parametrize("fixture", ["gaunernst_bert-small-uncased__1016001.json.gz",
                                     "nccl_data.json.gz"])
def test_occupancy_matches_kineto(fixture):
    """Kineto computed these with CUDA's occupancy calculator. It calls the calculator without
    the opt-in for more than 48 KB of shared memory per block, fails there and writes 0, so only
    launches within the default limit can be compared."""
    lines, want = [], []
    for dev, a in kernel_launches(fixture):
        if a["shared memory"] > dev["sharedMemPerBlock"]:
            continue
        cc = (dev["computeMajor"], dev["computeMinor"])
        reserved = 1024 if cc >= (8, 0) else 0
        threads = a["block"][0] * a["block"][1] * a["block"][2]
        blocks = a["grid"][0] * a["grid"][1] * a["grid"][2]
        lines.append(" ".join(str(v) for v in (
            dev["warpSize"], dev["maxThreadsPerMultiprocessor"], MAX_BLOCKS_PER_SM[cc],
            dev["regsPerMultiprocessor"], dev["sharedMemPerMultiprocessor"], reserved,
            dev["numSms"], a["registers per thread"], a["shared memory"], threads, blocks)))
        want.append(a["est. achieved occupancy %"])
    assert len(want) > 40
    p = subprocess.run([os.path.join(TOOLS, "cupti_occupancy")], input="\n".join(lines) + "\n",
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    got = [int(v) for v in p.stdout.split()]
    mismatches = [(line, w, g) for line, w, g in zip(lines, want, got) if w != g]
    assert len(got) == len(want)
    assert not mismatches, mismatches[:5]


# ---- build ------------------------------------------------------------------------------------

def test_libtprof_links_no_cuda_library():
    lib = os.path.join(BUILD, "lib", "libtprof.so")
    p = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True, check=True)
    needed = [line.split("[")[1].rstrip("]") for line in p.stdout.splitlines()
              if "(NEEDED)" in line]
    assert needed, p.stdout
    assert not [n for n in needed if n.startswith(("libcupti", "libcuda", "libcudart", "libnv"))]


def test_stub_builds_without_cuda_headers():
    """Where CUDA's headers are absent CMake builds src/gpu/stub.c instead of the GPU sources: it
    compiles warning-free with no CUDA include path."""
    cc = os.environ.get("CC", "cc")
    cmd = [cc, "-std=gnu11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Wpedantic", "-Wshadow",
           "-Wstrict-prototypes", "-Wmissing-prototypes", "-Werror", "-fsyntax-only",
           "-I" + os.path.join(SOURCE, "include"), "-I" + os.path.join(SOURCE, "src"),
           os.path.join(SOURCE, "src", "gpu", "stub.c")]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, shlex.join(cmd) + "\n" + p.stderr
