"""`make install` (cmake --install, cmake/install.cmake) into a temporary prefix, then a small
llm.c-style training loop built against the installed files the ways a C user would: with
pkg-config (shared libtprof.so, and static libtprof.a with the Libs.private it lists) and with
CMake's find_package(tprof) (tprof::tprof and tprof::tprof_static). Each program runs and must
write a trace whose recorded steps are the ones its schedule asks for, read back with json."""
import glob
import gzip
import json
import os
import re
import subprocess

import pytest

BUILD = os.environ["TPROF_BUILD_DIR"]
SOURCE = os.environ["TPROF_SOURCE_DIR"]
# a library built with sanitizers (make sanitize) links only into programs built with them
SANITIZE = ["-fsanitize=address,undefined"] if os.environ.get("TPROF_SANITIZE") == "1" else []

TRAIN_C = r"""
/* An llm.c-style loop: init from argv, a few steps of forward/backward/update zones. */
#include <stdio.h>
#include <tprof.h>

static float work(int n) {
    volatile float acc = 0;
    for (int i = 0; i < n; i++)
        acc += (float)i * 0.5f;
    return acc;
}

int main(int argc, char **argv) {
    if (tprof_init(&argc, argv) != 0) {
        fprintf(stderr, "train: %s\n", tprof_last_error());
        return 1;
    }
    for (int step = 0; step < 6; step++) {
        tprof_begin("forward");
        work(20000);
        tprof_end();
        tprof_begin("backward");
        work(40000);
        tprof_end();
        tprof_begin("optimizer");
        work(5000);
        tprof_end();
        tprof_step();
    }
    tprof_shutdown();
    printf("%s\n", TPROF_VERSION);
    return 0;
}
"""

CMAKELISTS = """
cmake_minimum_required(VERSION 3.18)
project(train C)
find_package(tprof 0.1 REQUIRED)
add_executable(train_shared train.c)
target_link_libraries(train_shared PRIVATE tprof::tprof)
add_executable(train_static train.c)
target_link_libraries(train_static PRIVATE tprof::tprof_static)
"""


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    root = tmp_path_factory.mktemp("install")
    prefix = root / "prefix"
    r = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return prefix


def libdir(prefix):
    (pc,) = glob.glob(str(prefix / "**" / "pkgconfig" / "tprof.pc"), recursive=True)
    return os.path.dirname(os.path.dirname(pc))


def version():
    with open(os.path.join(SOURCE, "include", "tprof.h"), encoding="utf-8") as f:
        return re.search(r'#define TPROF_VERSION\s+"([^"]+)"', f.read()).group(1)


def run_and_check(program, tmp_path, env=None):
    out = tmp_path / "runs"
    r = subprocess.run([str(program), "--profile", "--profiling.output_dir", str(out),
                        "--profiling.run_id", "r", "--profiling.wait", "1",
                        "--profiling.active", "3", "--profiling.repeat", "1",
                        "--profiling.summary", "false"],
                       capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == version()
    steps = set()
    for path in glob.glob(str(out / "r" / "*")):
        opener = gzip.open if path.endswith(".gz") else open
        if not re.search(r"\.json(\.gz)?$", path):
            continue
        with opener(path, "rt", encoding="utf-8") as f:
            doc = json.load(f)
        events = doc.get("traceEvents", []) if isinstance(doc, dict) else doc
        if not isinstance(events, list):
            continue
        for e in events:
            m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name", "")))
            if m and e.get("ph") == "X":
                steps.add(int(m.group(1)))
    assert sorted(steps) == [1, 2, 3]


def test_installed_files(prefix):
    lib = libdir(prefix)
    assert (prefix / "include" / "tprof.h").is_file()
    assert os.path.isfile(os.path.join(lib, "libtprof.a"))
    assert os.path.isfile(os.path.join(lib, "libtprof.so"))
    assert os.path.isfile(os.path.join(lib, "cmake", "tprof", "tprofConfig.cmake"))
    assert os.path.isfile(os.path.join(lib, "cmake", "tprof", "tprofConfigVersion.cmake"))
    r = subprocess.run([str(prefix / "bin" / "tprof"), "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "analyze" in r.stdout + r.stderr


def pkg_config(prefix, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(libdir(prefix), "pkgconfig"))
    r = subprocess.run(["pkg-config", *args, "tprof"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_pkg_config_shared(prefix, tmp_path):
    (tmp_path / "train.c").write_text(TRAIN_C)
    assert pkg_config(prefix, "--modversion") == [version()]
    flags = pkg_config(prefix, "--cflags", "--libs")
    assert "-ltprof" in flags
    exe = tmp_path / "train"
    r = subprocess.run(["cc", *SANITIZE, "-o", str(exe), str(tmp_path / "train.c"), *flags],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    assert "libtprof.so" in needed
    # as a user runs it: no LD_LIBRARY_PATH (issue 22, finding 19: before, tprof.pc gave no
    # rpath and the program did not start: libtprof.so.0: cannot open shared object file)
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    run_and_check(exe, tmp_path, env)


def test_pkg_config_static(prefix, tmp_path):
    """The archive in place of -ltprof, and the private libraries pkg-config --static lists."""
    (tmp_path / "train.c").write_text(TRAIN_C)
    flags = pkg_config(prefix, "--cflags", "--libs", "--static")
    for lib in ("-lz", "-lyaml", "-lpthread", "-ldl", "-lm"):
        assert lib in flags
    flags = [os.path.join(libdir(prefix), "libtprof.a") if f == "-ltprof" else f for f in flags]
    exe = tmp_path / "train"
    r = subprocess.run(["cc", *SANITIZE, "-o", str(exe), str(tmp_path / "train.c"), *flags],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    needed = subprocess.run(["readelf", "-d", str(exe)], capture_output=True, text=True).stdout
    assert "libtprof" not in needed
    run_and_check(exe, tmp_path)


def test_cmake_find_package(prefix, tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    (src / "train.c").write_text(TRAIN_C)
    (src / "CMakeLists.txt").write_text(CMAKELISTS)
    build = tmp_path / "build"
    r = subprocess.run(["cmake", "-S", str(src), "-B", str(build),
                        "-DCMAKE_PREFIX_PATH=" + str(prefix),
                        "-DCMAKE_C_FLAGS=" + " ".join(SANITIZE)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    # the shared one finds libtprof.so through the RPATH CMake gives an imported location
    run_and_check(build / "train_shared", tmp_path / "shared")
    needed = subprocess.run(["readelf", "-d", str(build / "train_static")],
                            capture_output=True, text=True).stdout
    assert "libtprof" not in needed
    run_and_check(build / "train_static", tmp_path / "static")
