"""The package installs with pip from the repository root (pyproject.toml: scikit-build-core
driving the CMake build) into a fresh virtual environment, each way a user does it:

- `pip install .` (build isolation: the build backend comes from the package index);
- `pip wheel .`, then the wheel installed into another fresh venv with no compiler on the PATH.

Each venv must then give `import tprof` (a profiled loop with a schedule), the `tprof` command on
its PATH (the C program: its `analyze --json` equals the build tree's, byte for byte, and so do its
exit status and message on a bad file) and `python -m tprof` (the same program)."""
import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from conftest import PYTHON, run_traces, step_numbers, trace_events

SOURCE = os.environ.get("TPROF_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TPROF_BUILD_DIR", os.path.join(SOURCE, "build"))
FIXTURE = os.path.join(SOURCE, "tests", "fixtures", "kineto",
                       "mi250_minitoy_train_ROCm6_2_kineto.json.gz")
# what pip needs of the checkout (the rest, tests and benchmarks, stays out of the copy)
PARTS = ("CMakeLists.txt", "pyproject.toml", "README.md", "LICENSE", "cmake", "include", "src",
         "python")

SCRIPT = r"""
import json, sys
import tprof
with tprof.profile(output_dir=sys.argv[1], run_id="venv", wait=1, active=2, summary=False) as p:
    for i in range(3):
        with tprof.stage("forward"):
            tprof.flops(10)
        p.step()
print(json.dumps({"file": tprof.__file__, "version": tprof.__version__,
                  "windows": p.summary()["run"]["windows"]}))
"""


def copy_checkout(dest):
    dest.mkdir()
    for part in PARTS:
        src = os.path.join(SOURCE, part)
        if os.path.isdir(src):
            shutil.copytree(src, dest / part,
                            ignore=shutil.ignore_patterns("build*", "__pycache__", "*.egg-info"))
        else:
            shutil.copy2(src, dest / part)
    return dest


def make_venv(path):
    subprocess.run([PYTHON, "-m", "venv", str(path)], check=True, timeout=300)
    return path


def pip(venv, *args):
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check",
                        *args], capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    return r


def bare_env(venv):
    """The venv's bin/ and nothing else on the PATH: no compiler, no build tree, no other tprof."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "CC", "TPROF_PYTHON")}
    env["PATH"] = str(venv / "bin")
    env["CC"] = "/nonexistent/cc"
    return env


def run(venv, args, tmp_path, **kw):
    return subprocess.run(args, capture_output=True, text=True, env=bare_env(venv),
                          cwd=str(tmp_path), timeout=300, **kw)


def check_installed(venv, tmp_path):
    env = bare_env(venv)
    assert shutil.which("cc", path=env["PATH"]) is None
    assert shutil.which("gcc", path=env["PATH"]) is None

    # import tprof: a profiled loop, the package and extension from the venv
    r = run(venv, ["python", "-c", SCRIPT, str(tmp_path / "out")], tmp_path)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["file"].startswith(str(venv)) and got["windows"] == 1
    with open(os.path.join(SOURCE, "include", "tprof.h"), encoding="utf-8") as f:
        assert '#define TPROF_VERSION       "%s"' % got["version"] in f.read()
    traces = run_traces(str(tmp_path / "out" / "venv"))
    assert [step_numbers(trace_events(t)) for t in traces] == [[1, 2]]

    # the tprof command, on the venv's PATH, is the C program: same report, same exit status
    tprof = shutil.which("tprof", path=env["PATH"])
    assert tprof == str(venv / "bin" / "tprof")
    with open(tprof, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    # no run-time need beyond libc and zlib (libyaml and jansson are linked in from their archives)
    for binary in [tprof] + glob.glob(str(venv / "lib" / "python*" / "site-packages" / "tprof"
                                          / "_tprof*.so")):
        dynamic = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
        needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
        assert needed and all(re.match(r"lib(c|z|m|pthread|dl)\.so\.|ld-linux", n)
                              for n in needed), needed
    r = run(venv, ["tprof", "--help"], tmp_path)
    assert r.returncode == 0 and "analyze" in r.stdout + r.stderr
    reference = subprocess.run([os.path.join(BUILD, "tprof"), "analyze", "--json", FIXTURE],
                               capture_output=True, text=True)
    assert reference.returncode == 0, reference.stderr
    for argv in (["tprof"], ["python", "-m", "tprof"]):
        r = run(venv, argv + ["analyze", "--json", FIXTURE], tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stdout == reference.stdout
        assert json.loads(r.stdout)["steps"]["count"] == 2
        bad = run(venv, argv + ["analyze", str(tmp_path / "missing.json")], tmp_path)
        ref_bad = subprocess.run([os.path.join(BUILD, "tprof"), "analyze",
                                  str(tmp_path / "missing.json")], capture_output=True, text=True)
        assert bad.returncode == ref_bad.returncode != 0
        assert bad.stderr == ref_bad.stderr
        # tprof run finds the installed package's bootstrap: the child Python process has
        # tprof run set up (without torch there is nothing to profile, and nothing is written)
        r = run(venv, argv + ["run", "--", "python", "-c",
                              "import sys; print('tprof._autorun' in sys.modules)"], tmp_path)
        assert r.returncode == 0 and r.stdout == "True\n", r.stdout + r.stderr


@pytest.fixture
def checkout(tmp_path):
    return copy_checkout(tmp_path / "tprof")


def test_pip_install_from_the_repository_root(tmp_path, checkout):
    venv = make_venv(tmp_path / "venv")
    pip(venv, "install", str(checkout))
    check_installed(venv, tmp_path)


def test_pip_wheel_installs_without_a_compiler(tmp_path, checkout):
    builder = make_venv(tmp_path / "builder")
    pip(builder, "wheel", "--no-deps", "-w", str(tmp_path / "dist"), str(checkout))
    (wheel,) = os.listdir(tmp_path / "dist")
    assert wheel.startswith("tprof-") and wheel.endswith(".whl")
    venv = make_venv(tmp_path / "venv")
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index",
                        "--no-deps", str(tmp_path / "dist" / wheel)],
                       capture_output=True, text=True, env=bare_env(venv), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    check_installed(venv, tmp_path)
