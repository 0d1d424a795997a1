"""tprof.analyze and tprof.compare: the C reader and analysis over trace files, as `tprof analyze
--json` and `tprof compare --json`; in a notebook their results display as tables (_html)."""
import json
import os
from typing import Any, Dict, List, Optional, Union

from tprof import _html, _tprof

# What the trace writers name their files: tprof's windows (JSON or Perfetto), Kineto/TensorBoard's,
# plain exports.
_TRACE_SUFFIXES = (".json", ".json.gz", ".pftrace")
_NOT_TRACES = ("config.json", "summary.json", "stage_times.json")


def trace_files(path):
    """The trace files directly in a folder (a run directory), in name order, or [path] for a
    file. Sub-folders are not read: a run's torch.profiler traces (torch/) are another view of
    the same steps and would count them twice."""
    if not os.path.isdir(path):
        return [os.fspath(path)]
    return [os.path.join(path, name) for name in sorted(os.listdir(path))
            if name.endswith(_TRACE_SUFFIXES) and name not in _NOT_TRACES
            and os.path.isfile(os.path.join(path, name))]


_Run = Union[str, "os.PathLike[str]", Any]  # a trace file, a folder of traces, a tprof.profile


class Analysis(Dict[str, Any]):
    """tprof.analyze's result: a dict with the keys of `tprof analyze --json`, shown in a
    notebook as the report's overview, stage and op tables and recommendations."""

    def __init__(self, data: Dict[str, Any], title: str) -> None:
        super().__init__(data)
        self._title = title

    def _repr_html_(self) -> str:
        return _html.analysis(self, self._title)


class Comparison(Dict[str, Any]):
    """tprof.compare's result: a dict with the keys of `tprof compare --json`, shown in a
    notebook as its step time change and its stage, op and kernel tables."""

    def _repr_html_(self) -> str:
        return _html.comparison(self)


def _files(run: _Run) -> List[str]:
    """The trace files of a path or of a tprof.profile (its run directory); ValueError when
    there are none."""
    path = getattr(run, "run_dir", run)
    if path is None:
        raise ValueError("%r wrote no run directory" % (run,))
    files = trace_files(path)
    if not files:
        raise ValueError("%s: no trace files (*.json, *.json.gz, *.pftrace) in this folder"
                         % os.fspath(path))
    return files


def analyze(path: _Run, top_k: int = 10, stages: Optional[List[str]] = None) -> Analysis:
    """The analysis of a trace file, or of every trace in a folder read as one run (a
    tprof.profile: its run directory), as a dict with the keys of `tprof analyze --json`
    (docs/ANALYZE_JSON.md); a notebook displays it as tables. Any Chrome/Kineto trace works:
    tprof's own (also as .pftrace), torch.profiler's, plain or gzip. stages: a list of "name" or
    "name=pattern|pattern" as the stages key and `tprof analyze --stage` take (None: the default
    stages). An unreadable file raises ValueError naming the file, the byte offset and the
    problem."""
    title = "tprof analyze: %s" % os.fspath(getattr(path, "run_dir", None) or path)
    return Analysis(json.loads(_tprof.analyze(_files(path), top_k, stages)), title)


def compare(a: _Run, b: _Run, top_k: int = 10) -> Comparison:
    """Run a (the baseline) against run b, each a trace file, a folder of traces or a
    tprof.profile, as a dict with the keys of `tprof compare --json`: the mean step time's
    change, and per stage, op and kernel the change (docs/SEMANTICS.md §5); a notebook displays
    it as tables. Errors as for analyze."""
    return Comparison(json.loads(_tprof.compare(_files(a), _files(b), top_k)))
