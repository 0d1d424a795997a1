"""What a notebook shows for a profile, an analysis and a comparison (their _repr_html_).

The figures are the JSON of `tprof analyze --json` / `tprof compare --json` (docs/ANALYZE_JSON.md)
as the library computed them, never recomputed here: each number cell shows its value (times in
µs as the JSON has them, percentages to two decimals) and carries the exact JSON number in its
data-value attribute. The page is self-contained: inline style, no script, no external resource,
so it renders offline and in a saved notebook.
"""
import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

__all__: list[str] = []

_STYLE = """<style>
.tprof-report{font-family:system-ui,sans-serif;font-size:13px;line-height:1.4}
.tprof-report h3{font-size:15px;margin:.6em 0 .2em}
.tprof-report h4{font-size:13px;margin:.8em 0 .2em}
.tprof-report table{border-collapse:collapse;margin:.2em 0}
.tprof-report th,.tprof-report td{border-bottom:1px solid #ddd;padding:2px 8px;text-align:left}
.tprof-report td.n{text-align:right;font-variant-numeric:tabular-nums}
.tprof-report .muted{color:#777}
</style>"""

_Column = tuple[str, str, bool]
# (JSON key, column title, percentage?) per table.
_STAGE_COLUMNS: tuple[_Column, ...] = (
    ("stage", "stage", False), ("count", "count", False), ("total_us", "total (µs)", False),
    ("mean_us", "mean (µs)", False), ("min_us", "min (µs)", False), ("p50_us", "p50 (µs)", False),
    ("p95_us", "p95 (µs)", False), ("max_us", "max (µs)", False), ("pct", "% of steps", True))
_OP_COLUMNS: tuple[_Column, ...] = (
    ("name", "op", False), ("calls", "calls", False), ("self_us", "self (µs)", False),
    ("self_pct", "self %", True), ("total_us", "total (µs)", False),
    ("mean_us", "mean (µs)", False), ("gpu_us", "GPU (µs)", False), ("flops", "FLOPs", False))
_KERNEL_COLUMNS: tuple[_Column, ...] = (
    ("name", "kernel", False), ("calls", "calls", False), ("total_us", "total (µs)", False),
    ("pct", "%", True), ("mean_us", "mean (µs)", False), ("min_us", "min (µs)", False),
    ("max_us", "max (µs)", False))
_DELTA_COLUMNS: tuple[_Column, ...] = (
    ("name", "name", False), ("status", "status", False), ("a_calls", "A calls", False),
    ("b_calls", "B calls", False), ("a_us", "A (µs)", False), ("b_us", "B (µs)", False),
    ("delta_us", "change (µs)", False), ("delta_pct", "change %", True))
# Overview rows: (JSON path, title, percentage?).
_OVERVIEW: tuple[tuple[tuple[str, ...], str, bool], ...] = (
    (("steps", "count"), "steps", False), (("steps", "mean_us"), "mean step (µs)", False),
    (("steps", "p50_us"), "p50 step (µs)", False), (("steps", "p95_us"), "p95 step (µs)", False),
    (("steps", "max_us"), "max step (µs)", False),
    (("steps", "window_us"), "recorded time (µs)", False),
    (("dataloader_pct",), "data loading % of steps", True),
    (("gpu", "utilization_pct"), "GPU utilization %", True), (("mfu", "pct"), "MFU %", True),
    (("flops", "per_second"), "FLOP/s", False), (("windows", "count"), "windows", False),
    (("windows", "partial"), "partial", False),
    (("windows", "dropped_events"), "dropped events", False))


def _text(value: Any) -> str:
    return html.escape(str(value))


def _cell(value: Any, pct: bool = False) -> str:
    """A table cell: text as it is, a number as the JSON has it (a percentage to 2 decimals)
    with the exact value in data-value."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        if value is None:
            return '<td class="n muted" data-value="null">–</td>'
        return "<td>%s</td>" % _text(value)
    shown = "%.2f" % value if pct else json.dumps(value)
    return '<td class="n" data-value="%s">%s</td>' % (json.dumps(value), shown)


def _table(key: str, rows: Sequence[Mapping[str, Any]] | None,
           columns: tuple[_Column, ...]) -> str:
    """rows (JSON objects) as a table whose data-key names their JSON array."""
    if not rows:
        return '<p class="muted" data-key="%s">none</p>' % key
    head = "".join("<th>%s</th>" % _text(title) for _, title, _ in columns)
    body = "".join("<tr>%s</tr>" % "".join(
        _cell(row.get(field), pct).replace("<td", '<td data-field="%s"' % field, 1)
        for field, _, pct in columns) for row in rows)
    return '<table data-key="%s"><tr>%s</tr>%s</table>' % (key, head, body)


def _overview(d: Mapping[str, Any]) -> str:
    rows = []
    for path, title, pct in _OVERVIEW:
        value: Any = d
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if value is None and path[0] in ("gpu", "mfu", "flops"):
            continue  # nothing measured there: no row rather than a dash
        cell = _cell(value, pct).replace("<td", '<td data-field="%s"' % ".".join(path), 1)
        rows.append("<tr><th>%s</th>%s</tr>" % (_text(title), cell))
    return '<table data-key="overview">%s</table>' % "".join(rows)


def _recommendations(recs: Sequence[Mapping[str, Any]] | None) -> str:
    if not recs:
        return '<p class="muted" data-key="recommendations">none</p>'
    items = "".join('<li><b>[%s]</b> <span class="muted">(could save up to <span data-value="%s">'
                    '%s</span> µs)</span> %s</li>'
                    % (_text(r.get("id")), json.dumps(r.get("saving_us")),
                       json.dumps(r.get("saving_us")), _text(r.get("message")))
                    for r in recs)
    return '<ul data-key="recommendations">%s</ul>' % items


def note(line: str) -> str:
    """One line in the report's style (a profile without an analysis yet)."""
    return '%s<div class="tprof-report"><p>%s</p></div>' % (_STYLE, _text(line))


def analysis(d: Mapping[str, Any], title: str) -> str:
    """The HTML of an analysis (a dict of `tprof analyze --json`)."""
    parts = [_STYLE, '<div class="tprof-report">', "<h3>%s</h3>" % _text(title), _overview(d),
             "<h4>Stages (per step)</h4>",
             _table("stages", list(d.get("stages") or []) + ([d["other"]] if d.get("other")
                                                             else []), _STAGE_COLUMNS),
             "<h4>Top ops by self time</h4>", _table("top_cpu_ops", d.get("top_cpu_ops"),
                                                      _OP_COLUMNS)]
    if d.get("top_gpu_kernels"):
        parts += ["<h4>Top GPU kernels</h4>",
                  _table("top_gpu_kernels", d["top_gpu_kernels"], _KERNEL_COLUMNS)]
    parts += ["<h4>Recommendations</h4>", _recommendations(d.get("recommendations"))]
    if d.get("warnings"):
        parts.append('<h4>Warnings</h4><ul data-key="warnings">%s</ul>'
                     % "".join("<li>%s</li>" % _text(w) for w in d["warnings"]))
    parts.append("</div>")
    return "".join(parts)


def comparison(d: Mapping[str, Any]) -> str:
    """The HTML of a comparison (a dict of `tprof compare --json`)."""
    sides = "".join("<tr><th>%s</th><td>%s</td>%s%s</tr>"
                    % (side.upper(), _text(d[side].get("path")),
                       _cell(d[side].get("steps")).replace("<td", '<td data-field="%s.steps"'
                                                           % side, 1),
                       _cell(d[side].get("mean_step_us")).replace(
                           "<td", '<td data-field="%s.mean_step_us"' % side, 1))
                    for side in ("a", "b"))
    change = _cell(d.get("step_change_pct"), True).replace(
        "<td", '<td data-field="step_change_pct"', 1)
    parts = [_STYLE, '<div class="tprof-report">', "<h3>tprof compare</h3>",
             '<table data-key="sides"><tr><th></th><th>input</th><th>steps</th>'
             "<th>mean step (µs)</th></tr>%s<tr><th>mean step change %%</th><td></td><td></td>"
             "%s</tr></table>" % (sides, change),
             "<h4>Stages (per step)</h4>", _table("stages", d.get("stages"), _DELTA_COLUMNS),
             "<h4>Ops by change in self time</h4>", _table("ops", d.get("ops"), _DELTA_COLUMNS)]
    if d.get("kernels"):
        parts += ["<h4>Kernels by change in total time</h4>",
                  _table("kernels", d["kernels"], _DELTA_COLUMNS)]
    parts.append("</div>")
    return "".join(parts)
