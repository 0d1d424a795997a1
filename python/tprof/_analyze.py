"""tprof.analyze and tprof.compare: the C reader and analysis over trace files, as `tprof analyze
--json` and `tprof compare --json`; in a notebook their results display as tables (_html).

An analysis is an Analysis: the dict of that JSON (docs/ANALYZE_JSON.md), whose tables are also
pandas DataFrames (ops(), ops_by_shape(), kernels(), stages(), steps(), memory(), ranks()): one
row per JSON row, one column per key, the same numbers (null as NaN or None); the module tree and
the call stacks, nested in the JSON, are flattened (modules(), module_ops(), call_stacks()).
pandas is optional: it is imported by those methods only, and its absence is an ImportError
naming it.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Union

from tprof import _html, _tprof

if TYPE_CHECKING:
    import pandas

__all__ = ["Analysis", "Comparison", "analyze", "compare"]

# What the trace writers name their files: tprof's windows (JSON or Perfetto), Kineto/TensorBoard's,
# plain exports.
_TRACE_SUFFIXES = (".json", ".json.gz", ".pftrace")
_NOT_TRACES = ("config.json", "summary.json", "stage_times.json")
# The folder of a run directory with tprof's own files (src/run/runfiles.h, TP_RUN_FILES_DIR); its
# top level then holds one trace per rank for TensorBoard and traceinsight, a copy of its windows.
_FILES_DIR = "tprof"

# The columns of each table when it has no row (docs/ANALYZE_JSON.md); a table with rows takes
# its columns from them, in the JSON's order. tests/python/test_dataframes.py checks both agree.
_OP_COLUMNS = ["name", "calls", "total_us", "self_us", "self_pct", "mean_us", "min_us", "max_us",
               "flops", "flops_fcm", "gpu_us", "kernels"]
_COLUMNS = {
    "ops": _OP_COLUMNS,
    "ops_by_shape": _OP_COLUMNS[:3] + ["input_shapes", "input_types"] + _OP_COLUMNS[3:],
    "kernels": ["name", "calls", "total_us", "pct", "mean_us", "min_us", "max_us"],
    "stages": ["stage", "count", "total_us", "mean_us", "min_us", "p50_us", "p95_us", "max_us",
               "pct"],
    "steps": ["name", "number", "start_us", "dur_us", "other_us", "lead_us", "flops", "mfu_pct",
              "flops_fcm", "mfu_fcm_pct"],
    "memory": ["device_type", "device_id", "peak_bytes", "peak_ts_us", "capacity_bytes",
               "capacity_pct"],
    "ranks": ["rank", "steps", "step_mean_ns", "step_p95_ns", "compute_ns", "communication_ns",
              "idle_ns", "overlap_pct", "collectives", "clock_offset_ns", "collective_wait_ns"],
    "modules": ["path", "name", "parent", "depth", "calls", "forward_us", "forward_self_us",
                "backward_calls", "backward_us", "backward_self_us", "flops", "flops_self",
                "gpu_us", "gpu_self_us", "kernels"],
    "module_ops": ["path", "name", "pass", "calls", "total_us", "flops", "gpu_us", "kernels"],
    "call_stacks": ["kind", "name", "total_us", "python_pct", "stacks", "stack", "calls",
                    "time_us", "pct"],
}

# A module's path in modules() and module_ops(): its name and its ancestors', root first.
_PATH_SEP = "/"


def _module_rows(modules: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    """(path, node) for the nodes of the JSON's module tree, depth first, as it lists them: a
    parent comes before its children, so each path is its parent's and its name."""
    rows: list[tuple[str, dict[str, Any]]] = []
    for node in (modules or {}).get("nodes", []):
        parent = node["parent"]
        path = node["name"] if parent is None else rows[parent][0] + _PATH_SEP + node["name"]
        rows.append((path, node))
    return rows


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as e:
        raise ImportError("tprof.Analysis's tables are pandas DataFrames, and pandas is not "
                          "installed (pip install pandas); the dict itself needs no pandas",
                          name="pandas") from e
    return pandas


def _flat(row: dict[str, Any]) -> dict[str, Any]:
    """A JSON row with its objects spread into columns named by their path, as
    pandas.json_normalize names them: steps.list[].stages {"forward": 1.5} -> "stages.forward"."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        if isinstance(value, dict):
            for sub, v in _flat(value).items():
                out["%s.%s" % (key, sub)] = v
        else:
            out[key] = value
    return out


def _frame(rows: list[dict[str, Any]], table: str) -> pandas.DataFrame:
    pd = _pandas()
    if not rows:
        empty: pandas.DataFrame = pd.DataFrame(columns=_COLUMNS[table])
        return empty
    flat = [_flat(r) for r in rows]
    columns: list[str] = []
    for r in flat:
        columns += [c for c in r if c not in columns]
    frame: pandas.DataFrame = pd.DataFrame.from_records(flat, columns=columns)
    return frame


class Analysis(dict[str, Any]):
    """The analysis of `tprof analyze --json` as a dict (docs/ANALYZE_JSON.md), with its tables
    as pandas DataFrames, shown in a notebook as the report's overview, stage and op tables and
    recommendations (title: the heading there). Each table method returns a new DataFrame, one
    row per row of the JSON's list, in the same order; a key holding an object becomes columns
    "key.member"."""

    def __init__(self, data: dict[str, Any], title: str = "tprof analysis") -> None:
        super().__init__(data)
        self._title = title

    def _repr_html_(self) -> str:
        return _html.analysis(self, self._title)

    def ops(self) -> pandas.DataFrame:
        """top_cpu_ops: ops by self time, descending (--top rows)."""
        return _frame(self["top_cpu_ops"], "ops")

    def ops_by_shape(self) -> pandas.DataFrame:
        """top_cpu_ops_by_shape: the op table by (name, input shapes); empty without shapes."""
        return _frame(self["top_cpu_ops_by_shape"], "ops_by_shape")

    def kernels(self) -> pandas.DataFrame:
        """top_gpu_kernels: kernels by total time, descending; empty without GPU work."""
        return _frame(self["top_gpu_kernels"], "kernels")

    def stages(self) -> pandas.DataFrame:
        """stages, in definition order, then the `other` row (the step time no stage covers)."""
        return _frame(self["stages"] + [self["other"]], "stages")

    def steps(self) -> pandas.DataFrame:
        """steps.list: every step in start order; its stage times as columns "stages.<name>"."""
        return _frame(self["steps"]["list"], "steps")

    def memory(self) -> pandas.DataFrame:
        """memory: the peak per device, by device type then id."""
        return _frame(self["memory"], "memory")

    def ranks(self) -> pandas.DataFrame:
        """ranks.per_rank: one row per rank (times in ns, stage times as "stages_ns.<name>" and
        per step as "stages_per_step_ns.<name>"); empty for a single rank."""
        ranks = self.get("ranks")
        return _frame(ranks["per_rank"] if ranks else [], "ranks")


    def modules(self) -> pandas.DataFrame:
        """modules.nodes: the module tree, depth first, one row per node: "path" (the names
        from its root, joined by "/": "Net/Net.encoder" for tprof's paths, "Sequential_0/Conv2d_0"
        for Kineto's), "name", "parent" (its parent's path, None for a root), "depth", then the
        node's figures as the JSON has them (calls, forward and backward times, total and self,
        FLOPs, GPU time, kernels); its ops are module_ops(). Empty without module ranges."""
        rows = _module_rows(self.get("modules"))
        paths = [p for p, _ in rows]
        return _frame([{"path": p, "name": n["name"],
                        "parent": None if n["parent"] is None else paths[n["parent"]],
                        **{k: v for k, v in n.items() if k not in ("name", "parent", "ops")}}
                       for p, n in rows], "modules")

    def module_ops(self) -> pandas.DataFrame:
        """modules.nodes[].ops: the ops directly inside each module's forward, then the backward
        nodes joined to it, one row per (module, op): "path" (the module's, as modules()),
        "name", "pass" ("forward" or "backward"), calls, total_us, flops, gpu_us, kernels; in
        the tree's order. Empty without module ranges."""
        return _frame([{"path": p, **op} for p, n in _module_rows(self.get("modules"))
                       for op in n["ops"]], "module_ops")

    def call_stacks(self) -> pandas.DataFrame:
        """call_stacks: one row per (op or kernel, calling stack): "kind" ("op", "kernel"),
        "name", its total_us, python_pct and stacks, then the caller's "stack" (a tuple of its
        frames, outermost first), calls, time_us and pct; ops first, in the JSON's order. An op
        that ran under no Python frame has no row. Empty without python_function ranges."""
        stacks = self.get("call_stacks") or {}
        rows = []
        for kind, key in (("op", "ops"), ("kernel", "kernels")):
            for item in stacks.get(key, []):
                head = {"kind": kind, **{k: v for k, v in item.items() if k != "callers"}}
                rows += [{**head, **caller, "stack": tuple(caller["stack"])}
                         for caller in item["callers"]]
        return _frame(rows, "call_stacks")


class Comparison(dict[str, Any]):
    """tprof.compare's result: a dict with the keys of `tprof compare --json`, shown in a
    notebook as its step time change and its stage, op and kernel tables."""

    def _repr_html_(self) -> str:
        return _html.comparison(self)


def _files_dir(run_dir: str | os.PathLike[str]) -> str:
    """The folder of a run directory that holds tprof's files (summary.json, the windows'
    traces...): its tprof/ folder when it has one (a real folder, not a link: as the C reader,
    src/run/rundir.c), else the directory itself (a run of tprof before that folder, any folder
    of traces)."""
    sub = os.path.join(run_dir, _FILES_DIR)
    return sub if os.path.isdir(sub) and not os.path.islink(sub) else os.fspath(run_dir)


def _trace_files(path: str | os.PathLike[str]) -> list[str]:
    """The trace files of a run directory (those of its tprof/ folder when it has one, not the
    top-level copies for other tools), in name order, or [path] for a file. Other sub-folders
    are not read: a run's torch.profiler traces (torch/) are another view of the same steps and
    would count them twice."""
    if not os.path.isdir(path):
        return [os.fspath(path)]
    path = _files_dir(path)
    return [os.path.join(path, name) for name in sorted(os.listdir(path))
            if name.endswith(_TRACE_SUFFIXES) and name not in _NOT_TRACES
            and os.path.isfile(os.path.join(path, name))]


_Run = Union[str, "os.PathLike[str]", Any]  # a trace file, a folder of traces, a tprof.profile


def _files(run: _Run) -> list[str]:
    """The trace files of a path or of a tprof.profile (its run directory); ValueError when
    there are none."""
    path = getattr(run, "run_dir", run)
    if path is None:
        raise ValueError("%r wrote no run directory" % (run,))
    files = _trace_files(path)
    if not files:
        raise ValueError("%s: no trace files (*.json, *.json.gz, *.pftrace) in this folder"
                         % os.fspath(path))
    return files


def analyze(path: _Run, top_k: int = 10, stages: list[str] | None = None) -> Analysis:
    """The analysis of a trace file, or of every trace in a folder read as one run (a
    tprof.profile: its run directory): an Analysis, the dict with the keys of `tprof analyze
    --json` (docs/ANALYZE_JSON.md), its tables also as pandas DataFrames; a notebook displays it
    as tables. Any Chrome/Kineto trace works: tprof's own (also as .pftrace), torch.profiler's,
    plain or gzip. stages: a list of "name" or "name=pattern|pattern" as the stages key and
    `tprof analyze --stage` take (None: those the run was recorded with, its config.json's stages
    key, else the default stages). An unreadable file raises ValueError
    naming the file, the byte offset and the problem."""
    title = "tprof analyze: %s" % os.fspath(getattr(path, "run_dir", None) or path)
    return Analysis(json.loads(_tprof.analyze(_files(path), top_k, stages)), title)


def compare(a: _Run, b: _Run, top_k: int = 10) -> Comparison:
    """Run a (the baseline) against run b, each a trace file, a folder of traces or a
    tprof.profile, as a dict with the keys of `tprof compare --json`: the mean step time's
    change, and per stage, op and kernel the change (docs/SEMANTICS.md §5); a notebook displays
    it as tables. Errors as for analyze."""
    return Comparison(json.loads(_tprof.compare(_files(a), _files(b), top_k)))
