"""The typed API: the extension's stub (tprof/_tprof.pyi) names exactly what tprof._tprof exports,
with the signatures its C functions take (mypy's stubtest against the built module); py.typed
ships in the build tree (and the wheel: test_install.py); tprof.torch.Callback and
LightningProfiler are static classes a checker sees, an ImportError naming Lightning without it;
every public module has __all__ and no public helper outside it; `mypy --strict` passes on
examples/typed_user.py."""
import ast
import importlib
import inspect
import os
import pkgutil
import subprocess

import pytest

import tprof
import tprof._tprof
from conftest import PYTHON, run_python

SOURCE = os.environ.get("TPROF_SOURCE_DIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("TPROF_BUILD_DIR", os.path.join(SOURCE, "build"))
STUB = os.path.join(SOURCE, "python", "tprof", "_tprof.pyi")
PACKAGE = os.path.dirname(tprof.__file__)  # build/python/tprof
# members every object or type has, which a stub leaves out
IMPLICIT = {"__doc__", "__repr__", "__dict__", "__module__", "__weakref__", "__file__",
            "__loader__", "__name__", "__package__", "__spec__"}


def stub_names():
    """{name: set of member names (a class) or None} of the stub's top level."""
    with open(STUB, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names[node.name] = {n.name for n in node.body
                                if isinstance(n, (ast.FunctionDef, ast.AnnAssign))} | {
                n.target.id for n in node.body if isinstance(n, ast.AnnAssign)}
        elif isinstance(node, ast.FunctionDef):
            names[node.name] = None
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names[node.target.id] = None
    return {k: ({m for m in v if isinstance(m, str)} if v is not None else None)
            for k, v in names.items()}


def test_stub_names_every_export_of_the_extension():
    names = stub_names()
    module = tprof._tprof
    assert set(names) == set(dir(module)) - IMPLICIT
    for name, members in names.items():
        obj = getattr(module, name)
        if members is None:
            assert not isinstance(obj, type), name
        elif issubclass(obj, BaseException):
            assert members == set(), name  # an exception type: its base is checked by stubtest
        else:
            assert members == set(vars(obj)) - IMPLICIT, name


def stubtest(stub_root):
    env = dict(os.environ, MYPYPATH=stub_root)
    return subprocess.run([PYTHON, "-m", "mypy.stubtest", "--mypy-config-file", os.devnull,
                           "tprof._tprof"], capture_output=True, text=True, env=env, timeout=600)


def test_stub_signatures_match_the_module(tmp_path):
    """mypy's stubtest imports the built extension and compares every signature (the C
    functions' __text_signature__: parameter names, kinds, defaults) and every name."""
    pytest.importorskip("mypy")
    r = stubtest(os.path.dirname(PACKAGE))
    assert r.returncode == 0, r.stdout + r.stderr
    # and it sees a difference: the same stub with one parameter too many fails
    with open(STUB, encoding="utf-8") as f:
        wrong = f.read().replace("def flops(n: int, /)", "def flops(n: int, m: int, /)")
    (tmp_path / "tprof").mkdir()
    (tmp_path / "tprof" / "__init__.pyi").write_text("")
    (tmp_path / "tprof" / "_tprof.pyi").write_text(wrong)
    r = stubtest(str(tmp_path))
    assert r.returncode == 1 and "tprof._tprof.flops is inconsistent" in r.stdout, r.stdout


def test_every_function_has_a_text_signature():
    """What stubtest compares: without __text_signature__ it could only check the names."""
    module = tprof._tprof
    callables = [getattr(module, n) for n in dir(module)
                 if callable(getattr(module, n)) and not n.startswith("_")
                 and n not in ("ConfigError", "ranged_function")]
    for cls in (module.Config, module.range):
        callables += [v for k, v in vars(cls).items() if callable(v) and k not in IMPLICIT
                      and k not in ("__new__", "__call__")]
    for fn in callables:
        assert inspect.signature(fn) is not None, fn


def test_stub_return_types_of_side_effect_free_calls():
    m = tprof._tprof
    assert isinstance(m.version, str) and isinstance(m.is_active(), bool)
    assert isinstance(m.is_recording(), bool) and isinstance(m.run_dir(), str)
    assert isinstance(m.last_error(), str) and isinstance(m.messages(), list)
    assert isinstance(m.stack_installed(), bool)
    cfg = m.Config()
    assert isinstance(cfg.to_json(), str) and isinstance(cfg.copy(), m.Config)
    assert isinstance(cfg.schedule(), dict) and cfg.validate() is None
    assert isinstance(m.range("x"), m.range) and m.range("x").name == "x"
    assert isinstance(m.range(len), m.ranged_function) and m.range(len)([1]) == 1
    assert isinstance(m.analyze([os.path.join(SOURCE, "tests", "fixtures", "torch2",
                                              "cnn_cpu_3steps.pt.trace.json.gz")]), str)


def test_py_typed_and_the_stub_are_in_the_build_tree():
    assert os.path.isfile(os.path.join(PACKAGE, "py.typed"))
    with open(os.path.join(PACKAGE, "_tprof.pyi"), encoding="utf-8") as built, \
            open(STUB, encoding="utf-8") as source:
        assert built.read() == source.read()


def public_modules():
    names = ["tprof"]
    for info in pkgutil.walk_packages(tprof.__path__, "tprof."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return names


@pytest.mark.parametrize("name", public_modules())
def test_public_modules_have_all_and_private_helpers(name):
    """__all__ names real objects; every public function or class defined in the module is in
    it (a helper is _private). tprof.torch.lightning_classes needs Lightning."""
    if name == "tprof.torch.lightning_classes":
        pytest.importorskip("lightning")
    module = importlib.import_module(name)
    assert isinstance(module.__all__, list), name
    for n in module.__all__:
        assert hasattr(module, n) or n in ("Callback", "LightningProfiler"), (name, n)
    defined = [n for n, v in vars(module).items()
               if not n.startswith("_") and (inspect.isfunction(v) or inspect.isclass(v))
               and getattr(v, "__module__", None) == name]
    # tprof.range (the C type's __module__ is "tprof") stays out of `import *`: it would hide
    # the builtin range (tprof/__init__.py)
    assert sorted(set(defined) - set(module.__all__) - {"range"}) == [], name


def test_lightning_classes_are_static():
    pytest.importorskip("lightning")
    import lightning.pytorch as pl

    from tprof.torch import Callback, LightningProfiler, lightning_classes

    assert Callback is lightning_classes.Callback and issubclass(Callback, pl.Callback)
    assert issubclass(LightningProfiler, pl.profilers.Profiler)
    assert issubclass(Callback, tprof.torch.CallbackLogic)
    assert issubclass(LightningProfiler, tprof.torch.ProfilerLogic)
    assert Callback.__module__ == LightningProfiler.__module__ == "tprof.torch.lightning_classes"
    # defined by a class statement of that module's source, which a checker reads
    tree = ast.parse(inspect.getsource(lightning_classes))
    assert {n.name for n in tree.body if isinstance(n, ast.ClassDef)} == {
        "Callback", "LightningProfiler"}
    with open(os.path.join(PACKAGE, "torch", "__init__.py"), encoding="utf-8") as f:
        assert ("from tprof.torch.lightning_classes import Callback, LightningProfiler"
                in f.read())


BLOCK_LIGHTNING = """
    import sys
    class NoLightning:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("lightning", "pytorch_lightning", "lightning_fabric"):
                raise ImportError("No module named %r (hidden by the test)" % name)
    sys.meta_path.insert(0, NoLightning())
"""


def test_without_lightning_the_classes_raise_an_import_error_naming_it(out_dir):
    r = run_python(BLOCK_LIGHTNING + """
    import tprof, tprof.torch
    cb = tprof.torch.CallbackLogic(output_dir=sys.argv[1])  # the logic needs no Lightning
    print("LOGIC", type(cb).__name__)
    for stmt in ("from tprof.torch import Callback", "from tprof.torch import LightningProfiler",
                 "tprof.torch.Callback", "import tprof.torch.lightning_classes"):
        try:
            exec(stmt)
        except ImportError as e:
            print("ERROR", type(e).__name__, e.name, "|", e)
        else:
            print("NO ERROR", stmt)
    print("LIGHTNING", any(m.split(".")[0] == "lightning" for m in sys.modules))
    """, args=[out_dir])
    assert r.returncode == 0, r.stderr
    assert "LOGIC CallbackLogic" in r.stdout
    errors = [line for line in r.stdout.splitlines() if line.startswith("ERROR")]
    assert len(errors) == 4 and "NO ERROR" not in r.stdout, r.stdout
    for line in errors:
        assert line.startswith("ERROR ImportError lightning |") and "pip install lightning" in line
    assert "tprof.torch.Callback and tprof.torch.LightningProfiler need PyTorch Lightning" in (
        errors[0])
    assert "LIGHTNING False" in r.stdout


def test_mypy_strict_passes_on_a_typed_user_script():
    """examples/typed_user.py, checked as a user's script is: the installed-like build tree
    (py.typed, the stub) on the path, --strict. A wrong call in it would fail: the same run on
    a copy with one fails (so the check is not vacuous)."""
    pytest.importorskip("mypy")
    example = os.path.join(SOURCE, "examples", "typed_user.py")
    env = dict(os.environ, MYPYPATH=os.path.dirname(PACKAGE))
    # the cache (torch's types take a minute to read) in the build tree, outside the sources
    cmd = [PYTHON, "-m", "mypy", "--strict", "--cache-dir", os.path.join(BUILD, ".mypy_cache"),
           "--config-file", os.path.join(SOURCE, "pyproject.toml")]
    r = subprocess.run(cmd + [example], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Success" in r.stdout
    wrong = ("import tprof\n"
             "tprof.flight_save(3)\n"
             "a: int = tprof.analyze('x')\n"
             "from tprof.torch import Callback\n"
             "Callback().nonexistent()\n")
    r = subprocess.run(cmd + ["-c", wrong], capture_output=True, text=True, env=env, timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.count("error:") == 3, r.stdout


def test_the_example_runs(tmp_path):
    pytest.importorskip("lightning")
    r = subprocess.run([PYTHON, os.path.join(SOURCE, "examples", "typed_user.py"),
                        str(tmp_path)], capture_output=True, text=True, timeout=600,
                       env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-4000:]
    assert "steps analysed: 3" in r.stdout
    assert "Profiler Report" in r.stdout
