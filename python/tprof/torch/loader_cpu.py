"""The CPU time of the DataLoader's workers and of the training process, read while windows
record, for the dataloader advice (docs/METRICS.md, "The run's setup").

Whether more workers would help depends on what the workers wait for. Workers that keep the CPUs
busy are CPU-bound: more of them only share the same CPUs. Workers that wait on storage, the
network or a lock leave the CPUs idle, and more of them hide that wait. A trace cannot tell the two
apart, so at a step of a recording window, at most every READ_EVERY_NS, LoaderCpu reads the CPU
time of the process (time.process_time_ns: all its threads) and of its daemonic multiprocessing
children (a DataLoader's workers are daemonic; /proc/<pid>/stat's utime + stime), and records
what the interval added as a "tprof.setup" range: loader_cpu_ns, process_cpu_ns, reading_ns (the
interval's wall time) and loader_workers (the workers read). The analysis sums the intervals of
the window. It only reads /proc and the multiprocessing module's list of children (without
reaping them, as multiprocessing.active_children would): the workers run as they would.
"""
from __future__ import annotations

import multiprocessing.process
import os
import time
from typing import NamedTuple

from tprof import _tprof
from tprof.torch.setup import record_setup

__all__ = ["LoaderCpu", "READ_EVERY_NS", "workers_cpu_ns"]

READ_EVERY_NS = 200_000_000
"""The shortest interval between two readings: a reading costs about 15 us per worker."""

_TICK_NS = 1_000_000_000 // (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def _cpu_ns(pid: int) -> int | None:
    """A process's user + system CPU time in ns (all its threads), None once it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as f:
            text = f.read()
    except OSError:
        return None
    try:  # the name, in parentheses, may hold spaces and parentheses: the last ")" ends it
        fields = text[text.rindex(b")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) * _TICK_NS  # utime, stime: fields 14, 15
    except (ValueError, IndexError):  # not the stat file of Linux's proc(5)
        return None


def workers_cpu_ns() -> dict[int, int] | None:
    """Each live daemonic multiprocessing child's CPU time in ns, by pid; None when another
    thread was changing the list of children (a reading to skip)."""
    found = {}
    try:
        children = list(getattr(multiprocessing.process, "_children", ()))
    except RuntimeError:  # the set changed size while it was copied
        return None
    for child in children:
        try:
            if not child.daemon or child.pid is None:
                continue
            pid = int(child.pid)
        except (ValueError, AttributeError):  # a closed Process object
            continue
        ns = _cpu_ns(pid)
        if ns is not None:
            found[pid] = ns
    return found


class _Reading(NamedTuple):
    wall_ns: int  # time.monotonic_ns
    process_ns: int  # time.process_time_ns
    workers: dict[int, int]  # each worker's CPU time in ns, by pid


class LoaderCpu:
    """The profile part that reads the workers' and the process's CPU time in recording windows."""

    name = "loader_cpu"

    def __init__(self) -> None:
        self.last: _Reading | None = None

    def start(self) -> None:
        pass

    def step(self) -> None:
        """Before the library's step: the interval since the last reading, when long enough."""
        self._read(READ_EVERY_NS)

    def _read(self, every_ns: int) -> None:
        if not _tprof.is_recording():
            self.last = None
            return
        now = time.monotonic_ns()
        if self.last is not None and now - self.last.wall_ns < every_ns:
            return
        workers = workers_cpu_ns()
        if workers is None:
            return
        reading = _Reading(now, time.process_time_ns(), workers)
        # an interval with workers, none of which exited in it (_record says why)
        if self.last is not None and reading.workers and \
                self.last.workers.keys() <= reading.workers.keys():
            self._record(self.last, reading)
        self.last = reading

    @staticmethod
    def _record(before: _Reading, after: _Reading) -> None:
        """One interval as a setup range; a worker started within it counts from zero. (An
        interval in which a worker exited is not recorded (_read): its CPU time since the last
        reading went with it, and the interval would read as idle CPUs: an epoch's end without
        persistent_workers, the session's last reading after the loader stopped them.)"""
        loader = sum(ns - before.workers.get(pid, 0) for pid, ns in after.workers.items())
        record_setup({"loader_cpu_ns": max(0, loader),
                      "process_cpu_ns": after.process_ns - before.process_ns,
                      "reading_ns": after.wall_ns - before.wall_ns,
                      "loader_workers": len(after.workers)})

    def window_changed(self) -> None:
        if not _tprof.is_recording():
            self.last = None

    def stop(self) -> None:
        """A window that ends with the session: its last interval, however short."""
        self._read(1)
        self.last = None
