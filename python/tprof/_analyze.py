"""tprof.analyze: the C reader and analysis over trace files, as `tprof analyze --json`."""
import json
import os

from tprof import _tprof

# What the trace writers name their files: tprof's windows, Kineto/TensorBoard's, plain exports.
_TRACE_SUFFIXES = (".json", ".json.gz")
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


def analyze(path, top_k=10, stages=None):
    """The analysis of a trace file, or of every trace in a folder read as one run, as a dict with
    the keys of `tprof analyze --json` (docs/ANALYZE_JSON.md). Any Chrome/Kineto trace works:
    tprof's own, torch.profiler's, plain or gzip. stages: a list of "name" or
    "name=pattern|pattern" as the stages key and `tprof analyze --stage` take (None: the default
    stages). An unreadable file raises ValueError naming the file, the byte offset and the
    problem."""
    files = trace_files(path)
    if not files:
        raise ValueError("%s: no trace files (*.json, *.json.gz) in this folder" % os.fspath(path))
    return json.loads(_tprof.analyze(files, top_k, stages))
