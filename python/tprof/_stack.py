"""with_stack: Python call stacks as python_function ranges (the hook is python/ext/stack.c).

The part installs CPython's C profiling hook on the thread that starts the profile and removes it
at stop; while a window records, each Python call on that thread is a range named as
torch.profiler(with_stack=True) names it: "<file>(<first line>): <function>", the file relative to
the longest of the same folders torch strips (site-packages, sys.path, the user base, torch's
parent folder). tprof's own functions (its step(), stop()) are not recorded. A child process
forked while the hook is installed (a DataLoader worker) drops it at once.
"""
import os
import site
import sys

from tprof import _tprof

if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_tprof.stack_forget)


def path_prefixes() -> list[str]:
    """The folders removed from file names, each ending with a separator (torch's list)."""
    raw: list[str] = list(sys.path)
    for fn in ("getsitepackages", "getuserbase", "getusersitepackages"):
        try:
            got = getattr(site, fn)()
        except Exception:  # site's functions are missing in some virtual environments
            continue
        raw.extend([got] if isinstance(got, str) else got)
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if torch_file:
        raw.append(os.path.dirname(os.path.dirname(torch_file)))
    return sorted({os.path.abspath(p) + os.sep for p in raw if isinstance(p, str)})


class PythonStacks:
    """The profile part behind with_stack=True."""

    name = "with_stack"

    def start(self) -> None:
        _tprof.stack_start(path_prefixes(), os.path.dirname(os.path.abspath(__file__)) + os.sep)

    def step(self) -> None:
        pass

    def stop(self) -> None:
        _tprof.stack_stop()
