"""tprof.analyze: the C reader and analysis over trace files, as `tprof analyze --json`."""
import json
import os

from tprof import _tprof

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


def analyze(path, top_k=10):
    """The analysis of a trace file, or of every trace in a folder read as one run, as a dict with
    the keys of `tprof analyze --json` (docs/ANALYZE_JSON.md). Any Chrome/Kineto trace works:
    tprof's own (also as .pftrace), torch.profiler's, plain or gzip. An unreadable file raises ValueError naming the
    file, the byte offset and the problem."""
    files = trace_files(path)
    if not files:
        raise ValueError(f"{os.fspath(path)}: no trace files (*.json, *.json.gz, *.pftrace) in "
                         "this folder")
    return json.loads(_tprof.analyze(files, top_k))
