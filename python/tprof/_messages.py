"""The C library's lines in a Python process: the summary on sys.stderr, warnings and errors
through logging.getLogger("tprof"), errors the user must act on also through warnings.

C programs write these lines to file descriptor 2. In Python that would bypass sys.stderr (and
so contextlib.redirect_stderr, Jupyter's cell output, Lightning's and the user's logging), so the
extension hands every line to deliver() instead (python/ext/py_messages.c says when, from which
thread, and what falls back to file descriptor 2). Each line is shown once:

- output (the summary, a flight save's note): written to sys.stderr as it is;
- a warning: logger "tprof", level WARNING, its message the whole "tprof: ..." line. Without any
  logging configuration Python's last-resort handler prints it on sys.stderr, as before;
- an error the user must act on (a configuration error: the run goes on unprofiled): a
  tprof.ConfigWarning through warnings (at the user's line; shown each time it is reported),
  and a log record at level ERROR when logging is configured (a handler on "tprof" or above).
"""
import logging
import sys
import types
import warnings

from tprof import _tprof

__all__ = ["ConfigWarning", "logger"]

logger = logging.getLogger("tprof")

_OUTPUT, _WARNING, _ERROR = 0, 1, 2  # tp_msg_kind (src/util/msg.h)
_INSIDE = ("tprof", "lightning", "pytorch_lightning", "contextlib")  # not the user's frames


class ConfigWarning(UserWarning):
    """A tprof configuration error: the run goes on unprofiled (the message says why)."""


def _inside(module: str) -> bool:
    """Whether module is tprof's, Lightning's or contextlib's (not the user's code)."""
    return any(module == name or module.startswith(name + ".") for name in _INSIDE)


def _warn(line: str) -> None:
    """line as a ConfigWarning at the user's line that led to it (the first frame outside tprof
    and Lightning), shown each time it is reported: the library says it once per session, and a
    notebook runs the same cell again. A filter turning it into an error cannot raise into the
    training: the line is then written to sys.stderr."""
    frame: types.FrameType = sys._getframe(1)
    while frame.f_back is not None and _inside(frame.f_globals.get("__name__") or ""):
        frame = frame.f_back
    try:
        warnings.warn_explicit(line, ConfigWarning, frame.f_code.co_filename, frame.f_lineno,
                               module=frame.f_globals.get("__name__"), registry=None)
    except Warning:
        sys.stderr.write(line + "\n")


def _deliver(kind: int, text: str) -> bool:
    """Shows the library's text (whole lines) as kind says; False when it could not (the
    extension then writes it to file descriptor 2)."""
    stream = sys.stderr
    if stream is None:
        return False
    if kind == _OUTPUT:
        stream.write(text)
        stream.flush()
        return True
    for line in text.splitlines():
        if kind != _ERROR:
            logger.warning(line)
            continue
        if logger.hasHandlers():
            logger.error(line)
        _warn(line)
    return True


_tprof.set_message_handler(_deliver)
