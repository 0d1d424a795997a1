"""The text tables tprof's Lightning integrations print: a profiled epoch's lines (the callback,
after each epoch it recorded) and the step, stage and op tables that LightningProfiler.summary()
puts under Lightning's action table.

Everything is read from an analysis dict (tprof.analyze, the keys of `tprof analyze --json`):
nothing here measures. Stage shares add up to the step time; what no stage covers is "other".
"""
from collections.abc import Mapping
from typing import Any

__all__ = ["epoch_report", "run_tables"]

_Analysis = Mapping[str, Any]


def _ms(us: float | None) -> str:
    return "n/a" if us is None else "%.3f ms" % (us / 1000.0)


def _stage_shares(analysis: _Analysis) -> list[tuple[str, float, float]]:
    """[(stage, total_us, % of step time)] in definition order, then ("other", ...): step time
    no stage covers. Empty without steps."""
    step_us = analysis["steps"]["total_us"]
    if not analysis["steps"]["count"] or step_us <= 0:
        return []
    rows = [(s["stage"], s["total_us"], 100.0 * s["total_us"] / step_us)
            for s in analysis["stages"]]
    other = max(0.0, step_us - sum(total for _, total, _ in rows))
    return rows + [("other", other, 100.0 * other / step_us)]


def _step_table(analysis: _Analysis) -> list[str]:
    s = analysis["steps"]
    return ["Steps: %d, total %s, mean %s, p50 %s, p95 %s, max %s"
            % (s["count"], _ms(s["total_us"]), _ms(s["mean_us"]), _ms(s["p50_us"]),
               _ms(s["p95_us"]), _ms(s["max_us"]))]


def _stage_table(analysis: _Analysis) -> list[str]:
    rows = _stage_shares(analysis)
    if not rows:
        return ["Stages: n/a (no steps)"]
    width = max(len(name) for name, _, _ in rows)
    lines = ["Stages (share of step time)"]
    lines += ["  %-*s %12s %6.1f%%" % (width, name, _ms(total), pct) for name, total, pct in rows]
    return lines


def _op_table(analysis: _Analysis, top_k: int) -> list[str]:
    ops = analysis["top_cpu_ops"][:top_k]
    if not ops:
        return ["Top ops: none recorded"]
    width = max(len(op["name"]) for op in ops)
    lines = ["Top %d ops by self time" % len(ops),
             "  %-*s %7s %12s %7s %12s" % (width, "op", "calls", "self", "self %", "total")]
    lines += ["  %-*s %7d %12s %6.1f%% %12s" % (width, op["name"], op["calls"], _ms(op["self_us"]),
                                               op["self_pct"], _ms(op["total_us"]))
              for op in ops]
    return lines


def _bottleneck_lines(analysis: _Analysis) -> list[str]:
    recs = analysis["recommendations"]
    if not recs:
        return ["Bottlenecks: none (no figure crossed a threshold)"]
    return ["Bottleneck [%s] %s" % (r["id"], r["message"]) for r in recs]


def epoch_report(analysis: _Analysis, epoch: int, top_k: int) -> str:
    """The lines the callback prints after a profiled epoch."""
    shares = ", ".join("%s %.1f%%" % (name, pct) for name, _, pct in _stage_shares(analysis))
    head = "tprof: epoch %d: %d steps, mean %s" % (epoch, analysis["steps"]["count"],
                                                   _ms(analysis["steps"]["mean_us"]))
    lines = [head + ("; " + shares if shares else "")]
    lines += _op_table(analysis, top_k) + _bottleneck_lines(analysis)
    return "\n".join(lines)


def run_tables(analysis: _Analysis, top_k: int) -> str:
    """The step, stage and op tables of a whole run, and its bottleneck lines."""
    return "\n".join(["tprof report"] + _step_table(analysis) + _stage_table(analysis)
                     + _op_table(analysis, top_k) + _bottleneck_lines(analysis))
