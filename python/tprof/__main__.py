"""python -m tprof: runs the tprof command, the C program itself (not a Python copy of it).

    python -m tprof analyze run/trace.json

pip installs the program into the environment's scripts directory (a venv's bin/, beside python);
a build tree has it at build/tprof, next to build/python/tprof/. The first one that exists
replaces this process (os.execv), so options, output and exit status are the program's.

    python -m tprof run [--KEY VALUE ...] -- python train.py ARGS

`run` is told where this package is (TPROF_PYTHON_PACKAGE: its bootstrap, docs/PYTHON.md) and
which interpreter runs a COMMAND that is a .py file (TPROF_RUN_PYTHON: this one).
"""
import os
import shutil
import sys
import sysconfig

__all__ = ["main"]


def _program() -> str | None:
    """The path of the tprof program that belongs to this package, or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    candidates = [
        os.path.join(sysconfig.get_path("scripts"), "tprof"),  # pip install, in a venv or not
        os.path.join(sysconfig.get_path("scripts", os.name + "_user"), "tprof"),  # pip --user
        os.path.join(here, os.pardir, os.pardir, "tprof"),  # build/python/tprof -> build/tprof
    ]
    for path in candidates:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    return shutil.which("tprof")


def main() -> None:
    """Runs the tprof program with this process's arguments (it replaces the process)."""
    path = _program()
    if path is None:
        sys.exit("tprof: the tprof program is not installed beside this package "
                 "(pip install tprof puts it in the environment's bin/)")
    if sys.argv[1:2] == ["run"]:
        os.environ["TPROF_PYTHON_PACKAGE"] = os.path.dirname(os.path.abspath(__file__))
        os.environ["TPROF_RUN_PYTHON"] = sys.executable
    os.execv(path, [path] + sys.argv[1:])


if __name__ == "__main__":
    main()
