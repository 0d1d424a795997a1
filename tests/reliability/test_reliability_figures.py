"""Figures that hostile or unlucky input used to make absurd (issue 10, item 10): GPU utilization
above 100% when a kernel ends after the last step, and sums turned into null by overflow. Busy
time is clipped to the window (docs/METRICS.md) and sums saturate with a warning."""

import json
import math

from hostile import tprof

import tprof_ref


def trace_file(tmp_path, events):
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def analyze(path):
    p = tprof("analyze", "--json", path, rc=0)
    return json.loads(p.stdout)


def step(n, ts, dur):
    return {"ph": "X", "name": "ProfilerStep#%d" % n, "ts": ts, "dur": dur, "pid": 1, "tid": 1}


def kernel(ts, dur, device=0, stream=7):
    return {"ph": "X", "name": "k", "cat": "kernel", "ts": ts, "dur": dur, "pid": device,
            "tid": stream}


def test_kernel_ending_after_the_last_step_keeps_utilization_at_most_100(tmp_path):
    """Before: 1000 us of kernel in a 100 us window gave 1000%."""
    path = trace_file(tmp_path, [step(1, 0, 100), kernel(20, 1000), kernel(-50, 60, stream=8),
                                 kernel(500, 10, device=1)])
    got = analyze(path)["gpu"]
    # independently: device 0 covers [0, 100) from 20 and from [-50, 10) -> 10 + 80 = 90 us;
    # device 1 works only outside the window
    assert got["busy_us"] == 90 and got["capacity_us"] == 200
    assert got["utilization_pct"] == 45
    ref = tprof_ref.analyze(tprof_ref.load(str(path)))["gpu"]
    assert ref["busy_us"] == got["busy_us"] and math.isclose(ref["utilization_pct"], 45)


def test_utilization_never_exceeds_100_on_any_layout(tmp_path):
    events = [step(1, 0, 50), step(2, 50, 50)]
    events += [kernel(t, 70, stream=t % 3) for t in range(-100, 200, 13)]
    got = analyze(trace_file(tmp_path, events))["gpu"]
    assert 0 <= got["utilization_pct"] <= 100
    assert got["busy_us"] <= got["capacity_us"]


def test_absurd_flops_saturate_with_a_warning(tmp_path):
    """Before: flops 1e999 (inf) made the totals null in the JSON."""
    text = ('{"traceEvents": ['
            '{"ph": "X", "name": "a", "ts": 0, "dur": 5, "pid": 1, "tid": 1,'
            ' "args": {"flops": 1e999}},'
            '{"ph": "X", "name": "b", "ts": 10, "dur": 5, "pid": 1, "tid": 1,'
            ' "args": {"flops": 1.5e308}},'
            '{"ph": "X", "name": "b", "ts": 20, "dur": 5, "pid": 1, "tid": 1,'
            ' "args": {"flops": 1.5e308}}]}')
    path = tmp_path / "t.json"
    path.write_text(text)
    p = tprof("analyze", "--json", path, rc=0)
    assert b"null" not in p.stdout.split(b'"flops"', 1)[1].split(b"}", 1)[0]
    got = json.loads(p.stdout)
    big = 1.7976931348623157e308
    assert got["flops"]["total"] == big and got["flops"]["per_second"] == big
    assert {r["name"]: r["flops"] for r in got["top_cpu_ops"]} == {"a": big, "b": big}
    assert any("FLOP count overflowed" in w for w in got["warnings"]), got["warnings"]
    text_report = tprof("analyze", path, rc=0).stdout.decode()
    assert "FLOP count overflowed" in text_report


def test_absurd_durations_saturate_with_a_warning(tmp_path):
    """Ten ranges of 1e15 us (1e18 ns each): their sum passes 2^63 ns."""
    events = [{"ph": "X", "name": "long", "ts": i, "dur": 1e15, "pid": 1, "tid": 1}
              for i in range(10)]
    got = analyze(trace_file(tmp_path, events))
    [row] = got["top_cpu_ops"]
    assert row["total_us"] == (2**63 - 1) // 1000 or row["total_us"] == (2**63 - 1) / 1000
    assert any("sum of durations overflowed" in w for w in got["warnings"]), got["warnings"]
