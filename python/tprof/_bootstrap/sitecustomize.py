"""tprof run's bootstrap: `tprof run` puts this folder first on PYTHONPATH, so that every Python
process of the profiled command imports this module at startup (site.py imports sitecustomize)
and, under TPROF_AUTORUN=1, sets up tprof run (tprof/_autorun.py) before the script runs.

It hides any other sitecustomize of the interpreter (Debian's, a venv's): that one is run here
first, as site.py would have run it, and is sys.modules["sitecustomize"] afterwards. This folder
then leaves sys.path again, so the script sees the path it would have seen (PYTHONPATH keeps it,
for the command's child processes: torchrun's ranks, Lightning's, multiprocessing's).
"""
import importlib.machinery
import importlib.util
import os
import sys

__all__: list[str] = []

_HERE = os.path.dirname(os.path.abspath(__file__))


def _others() -> list[str]:
    """sys.path without this folder."""
    return [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]


def _run_hidden_sitecustomize() -> None:
    """The sitecustomize this one hides, run and registered as site.py would have."""
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", _others())
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _tprof_package() -> None:
    """The tprof package: the importable one, else the one around this folder (a build tree's,
    loaded from there without adding its folder to sys.path)."""
    if importlib.util.find_spec("tprof") is None:
        root = os.path.dirname(_HERE)
        spec = importlib.util.spec_from_file_location(
            "tprof", os.path.join(root, "__init__.py"), submodule_search_locations=[root])
        if spec is None or spec.loader is None:
            raise ImportError("no tprof package in %s" % root)
        module = importlib.util.module_from_spec(spec)
        sys.modules["tprof"] = module
        spec.loader.exec_module(module)


def _start() -> None:
    """Leaves sys.path as the script would see it, then sets up tprof run when asked for."""
    sys.path[:] = _others()
    if os.environ.get("TPROF_AUTORUN") != "1":
        return
    try:
        _tprof_package()
        from tprof import _autorun

        _autorun.install()
    except Exception as e:  # the command runs unprofiled, never stopped by tprof
        print("tprof: run: not profiled: %s: %s" % (type(e).__name__, e), file=sys.stderr)


try:
    _run_hidden_sitecustomize()
finally:
    _start()
