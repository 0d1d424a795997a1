"""Where a tprof run directory keeps its files, for the tests: tprof's own (config.json,
summary.json, stage_times.json, op_stats.csv, report.html and each window's trace) in its tprof/
folder, its top level holding one trace per rank for TensorBoard and traceinsight; a run of tprof
before that folder has them at its top level, and is read so still (src/run/rundir.c)."""
import os
import pathlib

__all__ = ["artifact", "files_dir"]


def files_dir(run_dir):
    """The folder of run_dir holding tprof's files: run_dir/tprof when it is a folder (not a
    link), else run_dir; a pathlib.Path for a Path, else a str."""
    sub = os.path.join(run_dir, "tprof")
    path = sub if os.path.isdir(sub) and not os.path.islink(sub) else os.fspath(run_dir)
    return pathlib.Path(path) if isinstance(run_dir, pathlib.PurePath) else path


def artifact(run_dir, name):
    """The path of tprof's file `name` (e.g. "summary.json") of run_dir, as files_dir types it."""
    d = files_dir(run_dir)
    return d / name if isinstance(d, pathlib.Path) else os.path.join(d, name)
