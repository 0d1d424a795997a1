#!/usr/bin/env python3
"""Checks of GPU traces for bench/gpu/check.sh, with the Python standard library only (summary:
the source tree's tests/lib too).

  check_trace.py events TRACE EVENTS.jsonl     kernels of the trace's steps vs CUDA events
  check_trace.py analyze TRACE ANALYZE.json    `tprof analyze --json` top_gpu_kernels vs the trace
  check_trace.py compare TPROF_TRACE TORCH_TRACE   top kernels and per-step GPU work side by side
  check_trace.py same_kernels TRACE_A TRACE_B   the same program's kernels per step in both
  check_trace.py kernel_ops TRACE_A TRACE_B     the same ops launch the same kernels in both
  check_trace.py graph TRACE ANALYZE.json LEVEL [NODES]   CUDA graph replays in the steps
                                                (NODES "any": graphs of any count a step, as
                                                torch.compile's reduce-overhead mode makes)
  check_trace.py compiled TRACE TORCH_TRACE ANALYZE.json   torch.compile's Triton kernels
  check_trace.py subscribers TORCH_TRACE REFERENCE LOG [TPROF_TRACE]   tprof beside torch.profiler
  check_trace.py overhead RUNS.txt             step times of unprofiled vs profiled runs
  check_trace.py summary RUN_DIR BUILD_DIR     a streamed run's summary files vs its traces
  check_trace.py find DIR                      prints the first trace file under DIR

Each prints a human summary and one JSON object (last line) with "status": PASS, FAIL or SKIP.
Exit status 1 on FAIL."""
import gzip
import json
import os
import statistics
import sys
from collections import defaultdict

KERNEL_CATS = {"kernel"}
WORK_CATS = {"kernel", "gpu_memcpy", "gpu_memset"}
GRAPH_LAUNCHES = {"cudaGraphLaunch", "cudaGraphLaunch_ptsz", "cuGraphLaunch"}
LAUNCH_CATS = {"cuda_runtime", "cuda_driver", "runtime", "driver"}


def load_json(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        return json.load(f)


def load(path):
    """The event list of a trace in object or array form."""
    data = load_json(path)
    return data["traceEvents"] if isinstance(data, dict) else data


def steps_of(events):
    """ProfilerStep#k ranges: list of (k, pid, tid, start_us, end_us)."""
    out = []
    for e in events:
        name = e.get("name", "")
        if e.get("ph") == "X" and name.startswith("ProfilerStep#"):
            ts = float(e["ts"])
            out.append((int(name.split("#")[1]), e.get("pid"), e.get("tid"), ts,
                        ts + float(e["dur"])))
    return sorted(out)


def kernels(events):
    return [e for e in events
            if e.get("ph") == "X" and str(e.get("cat", "")).lower() in KERNEL_CATS]


def launches_of(events):
    """The trace's launches (runtime or driver calls with a correlation id), by that id."""
    launches = {}
    for e in events:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() in LAUNCH_CATS:
            corr = e.get("args", {}).get("correlation")
            if corr is not None:
                launches[corr] = e
    return launches


def launched_twice(events):
    """Correlation ids that two launch records carry: a launch recorded twice (the runtime's
    call and the driver call inside it, both called back on an H100 before the reduction
    dropped the inner one)."""
    seen = defaultdict(int)
    for e in events:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() in LAUNCH_CATS:
            corr = e.get("args", {}).get("correlation")
            if corr is not None:
                seen[corr] += 1
    return sorted(c for c, n in seen.items() if n > 1)


def kernels_by_step(events):
    """Each kernel goes to the step whose range holds its launch (same correlation id)."""
    steps = steps_of(events)
    launches = launches_of(events)
    per_step = defaultdict(lambda: [0, 0.0])
    unplaced = 0
    for k in kernels(events):
        launch = launches.get(k.get("args", {}).get("correlation"))
        step = None
        if launch is not None:
            t = float(launch["ts"])
            for n, pid, tid, start, end in steps:
                if pid == launch.get("pid") and tid == launch.get("tid") and start <= t < end:
                    step = n
                    break
        if step is None:
            unplaced += 1
            continue
        per_step[step][0] += 1
        per_step[step][1] += float(k["dur"])
    return steps, dict(per_step), unplaced


def result(status, **fields):
    fields["status"] = status
    print(json.dumps(fields))
    return 1 if status == "FAIL" else 0


def cmd_events(trace_path, events_path):
    """Kernel count must match exactly. CUDA events recorded on the kernel's stream just before
    and after it time the kernel plus the gaps between it and the two events, so the trace's
    total must not exceed the events' (0.5% for rounding), and may fall short of it by at most
    6 us per kernel (measured on an H200: 3.7 us per kernel, docs/GPU.md)."""
    events = load(trace_path)
    steps, per_step, unplaced = kernels_by_step(events)
    timed = {}
    with open(events_path) as f:
        for line in f:
            row = json.loads(line)
            timed[row["step"]] = row
    recorded = [n for n, *_ in steps]
    if not recorded:
        return result("FAIL", reason="no ProfilerStep ranges in the trace")
    missing = [n for n in recorded if n not in timed]
    if missing:
        return result("FAIL", reason=f"steps {missing} have no CUDA-event row")
    n_trace = sum(per_step.get(n, [0, 0])[0] for n in recorded)
    us_trace = sum(per_step.get(n, [0, 0.0])[1] for n in recorded)
    n_events = sum(timed[n]["kernels"] for n in recorded)
    us_events = sum(timed[n]["kernel_us"] for n in recorded)
    all_kernels = len(kernels(events))
    print(f"steps {recorded[0]}..{recorded[-1]} ({len(recorded)}): kernels trace {n_trace} "
          f"(+{unplaced} outside steps, {all_kernels} in all) vs CUDA events {n_events}; "
          f"kernel time trace {us_trace:.1f} us vs events {us_events:.1f} us "
          f"(ratio {us_trace / us_events if us_events else float('nan'):.3f})")
    tolerance = 6.0 * n_events
    gap = us_events - us_trace
    print(f"events minus trace: {gap / n_events if n_events else float('nan'):.2f} us per kernel")
    ok = n_trace == n_events and -0.005 * us_events <= gap <= tolerance
    return result("PASS" if ok else "FAIL", steps=len(recorded), kernels_trace=n_trace,
                  kernels_events=n_events, kernels_outside_steps=unplaced, kernel_us_trace=us_trace,
                  kernel_us_events=us_events, tolerance_us=tolerance)


def kernel_table(events):
    table = defaultdict(lambda: [0, 0.0])
    for k in kernels(events):
        table[k["name"]][0] += 1
        table[k["name"]][1] += float(k["dur"])
    return table


def cmd_analyze(trace_path, analyze_path):
    """tprof analyze's kernel table against the trace read here: same calls, total within 1 ns
    per call (both sum integer nanoseconds, the trace prints microseconds with 3 decimals)."""
    want = kernel_table(load(trace_path))
    with open(analyze_path) as f:
        got = json.load(f).get("top_gpu_kernels", [])
    if not want:
        return result("FAIL", reason="the trace has no kernels")
    if not got:
        return result("FAIL", reason="tprof analyze reports no kernels")
    bad = []
    for row in got:
        calls, total = want.get(row["name"], (0, 0.0))
        if row["calls"] != calls or abs(row["total_us"] - total) > 0.001 * calls + 1e-6:
            bad.append((row["name"][:60], row["calls"], calls, row["total_us"], total))
    # sorted by total, descending, starting with the largest kernel of the trace
    totals = [r["total_us"] for r in got]
    order_ok = totals == sorted(totals, reverse=True) and \
        abs(totals[0] - max(t for _, t in want.values())) <= 0.001 * len(want) + 1e-6
    for row in got[:5]:
        print(f"  {row['calls']:6d} calls {row['total_us']:12.3f} us  {row['name'][:90]}")
    return result("PASS" if not bad and order_ok else "FAIL", rows=len(got), mismatches=bad[:5],
                  order_ok=order_ok)


def cmd_compare(tprof_trace, torch_trace):
    """Informational: both runs' top kernels and GPU work per step (different kernels: tprof's
    example has its own, PyTorch calls cuBLAS), and that each trace has steps and kernels."""
    summary = {}
    for label, path in (("tprof", tprof_trace), ("torch", torch_trace)):
        events = load(path)
        steps, per_step, _ = kernels_by_step(events)
        n = len(steps) or 1
        table = kernel_table(events)
        summary[label] = {
            "steps": len(steps),
            "kernels_per_step": sum(v[0] for v in per_step.values()) / n,
            "kernel_us_per_step": sum(v[1] for v in per_step.values()) / n,
            "top": [(name[:80], c, round(t, 3)) for name, (c, t) in
                    sorted(table.items(), key=lambda kv: -kv[1][1])[:5]],
        }
        print(f"{label}: {len(steps)} steps, {summary[label]['kernels_per_step']:.1f} kernels and "
              f"{summary[label]['kernel_us_per_step']:.1f} us of kernels per step")
        for name, c, t in summary[label]["top"]:
            print(f"    {c:6d} {t:12.3f} us  {name}")
    ok = all(s["steps"] > 0 and s["kernels_per_step"] > 0 for s in summary.values())
    return result("PASS" if ok else "FAIL", **summary)


def cmd_same_kernels(trace_a, trace_b):
    """One program profiled twice (tprof.torch with tprof's CUPTI source, torch.profiler with
    Kineto's): the same steps, the same kernels launched in each (names and counts exact), and
    kernel time per step within 25% (two runs of one program, not one run measured twice)."""
    runs = {}
    for label, path in (("a", trace_a), ("b", trace_b)):
        events = load(path)
        steps, per_step, unplaced = kernels_by_step(events)
        names = {name: calls for name, (calls, _) in kernel_table(events).items()}
        n = len(steps) or 1
        runs[label] = {"steps": len(steps), "kernels": sum(v[0] for v in per_step.values()),
                       "kernels_outside_steps": unplaced,
                       "kernel_us_per_step": sum(v[1] for v in per_step.values()) / n,
                       "names": names}
        print(f"{label} ({path}): {len(steps)} steps, {runs[label]['kernels']} kernels in steps "
              f"(+{unplaced} outside), {runs[label]['kernel_us_per_step']:.1f} us per step")
    a, b = runs["a"], runs["b"]
    differ = sorted(set(a["names"]) ^ set(b["names"]))
    counts_differ = [(n[:60], a["names"][n], b["names"][n]) for n in a["names"]
                     if n in b["names"] and a["names"][n] != b["names"][n]]
    us_ratio = a["kernel_us_per_step"] / b["kernel_us_per_step"] if b["kernel_us_per_step"] else 0
    ok = (a["steps"] == b["steps"] > 0 and a["kernels"] == b["kernels"] > 0 and not differ
          and not counts_differ and 0.75 <= us_ratio <= 1.25)
    return result("PASS" if ok else "FAIL", steps=[a["steps"], b["steps"]],
                  kernels=[a["kernels"], b["kernels"]], kernel_us_ratio=us_ratio,
                  names_in_one_only=[n[:60] for n in differ[:5]], counts_differ=counts_differ[:5])


def kernel_ops(events):
    """Per (op, kernel) name, how many kernels of the trace's steps the op launched: a kernel's
    launch (same correlation) lies on a thread, inside the innermost cpu_op range there; and,
    where the trace's ops carry External ids (Kineto's; tprof's with its CUPTI source and torch's
    observer, which push them to CUPTI), through that link too (the kernel's External id is its
    op's), which must agree and leave no kernel out. Returns (the counts, kernels in steps without
    an op, disagreements, kernels whose External id names no op while ops have ids)."""
    steps = steps_of(events)
    launches, ops_by_thread, by_external = {}, defaultdict(list), {}
    for e in events:
        cat, args = str(e.get("cat", "")).lower(), e.get("args", {})
        if e.get("ph") != "X":
            continue
        if cat in LAUNCH_CATS and args.get("correlation") is not None:
            launches[args["correlation"]] = e
        elif cat == "cpu_op":
            ops_by_thread[(e.get("pid"), e.get("tid"))].append(e)
            if "External id" in args:
                by_external[args["External id"]] = e["name"]
    counts, orphans, disagree, unlinked = defaultdict(int), 0, 0, 0
    for k in kernels(events):
        launch = launches.get(k.get("args", {}).get("correlation"))
        if launch is None:
            continue
        t, where = float(launch["ts"]), (launch.get("pid"), launch.get("tid"))
        if not any(p == where[0] and tid == where[1] and a <= t < b for _, p, tid, a, b in steps):
            continue
        around = [o for o in ops_by_thread[where]
                  if float(o["ts"]) <= t <= float(o["ts"]) + float(o["dur"])]
        if not around:
            orphans += 1
            continue
        op = min(around, key=lambda o: float(o["dur"]))["name"]
        ext = k.get("args", {}).get("External id")
        if ext is not None and ext in by_external and by_external[ext] != op:
            disagree += 1
        elif by_external and ext not in by_external:
            unlinked += 1
        counts[(op, k["name"])] += 1
    return dict(counts), orphans, disagree, unlinked


def cmd_kernel_ops(trace_a, trace_b):
    """One program profiled twice (tprof.torch through torch's op observer, torch.profiler):
    every kernel of the steps charged to the same op in both, pair by pair, as counts."""
    runs = {}
    for label, path in (("a", trace_a), ("b", trace_b)):
        counts, orphans, disagree, unlinked = kernel_ops(load(path))
        runs[label] = counts
        print(f"{label} ({path}): {sum(counts.values())} kernels in steps on {len(counts)} "
              f"(op, kernel) pairs, {orphans} without an op, {disagree} whose External id "
              f"names another op, {unlinked} whose External id names no op")
        if not counts or orphans or disagree or unlinked:
            return result("FAIL", trace=path, pairs=len(counts), without_op=orphans,
                          external_id_disagrees=disagree, external_id_unlinked=unlinked)
    a, b = runs["a"], runs["b"]
    differ = [(op[:40], k[:40], a.get((op, k), 0), b.get((op, k), 0))
              for op, k in sorted(set(a) | set(b)) if a.get((op, k), 0) != b.get((op, k), 0)]
    for (op, k), n in sorted(a.items(), key=lambda kv: -kv[1])[:5]:
        print(f"  {n:6d}  {op[:40]:40s} {k[:60]}")
    return result("PASS" if not differ else "FAIL", pairs=len(a), differ=differ[:5])


def launched_before(events):
    """Microseconds of GPU work in the trace whose launch is not in it: work the GPU still ran
    after the window opened, launched before it (the last warm-up step's graph, queued behind
    the CPU). No analysis can charge it to a range; the rest it must."""
    launched = launches_of(events)
    return sum(float(e["dur"]) for e in events
               if e.get("ph") == "X" and str(e.get("cat", "")).lower() in WORK_CATS
               and e.get("args", {}).get("correlation") not in launched)


def attribution(events, analyze_path):
    """`tprof analyze`'s gpu figures, whether it charged to ranges all GPU work launched in the
    window (to 0.1%), and the work launched before it."""
    with open(analyze_path) as f:
        gpu = json.load(f)["gpu"]
    before = launched_before(events)
    ok = gpu["attributed_us"] >= 0.999 * (gpu["work_us"] - before) and gpu["work_us"] > 0
    return gpu, ok, before


def cmd_graph(trace_path, analyze_path, level, nodes=None):
    """A program replaying one CUDA graph a step (cuda_graphs LEVEL: node or graph): in every
    step, one graph launch, and the GPU work with its correlation id: per node, its kernels, copies
    and sets, each with `graph id` (one graph throughout) and a distinct `graph node id`, NODES of
    them when given, the same count every step; per graph, one `CUDA graph <id>` event. NODES
    "any": the same number of graph launches every step (at least one), each with its work as
    above, any number of graphs (torch.compile's reduce-overhead mode: forward and backward).
    Then `tprof analyze` charges to ops all GPU work launched in the window (to 0.1%)."""
    several = nodes == "any"
    nodes = None if several else nodes
    events = load(trace_path)
    steps = steps_of(events)
    launches = [e for e in events if e.get("ph") == "X" and e.get("name") in GRAPH_LAUNCHES
                and str(e.get("cat", "")).lower() in LAUNCH_CATS]
    work = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and str(e.get("cat", "")).lower() in WORK_CATS:
            work[e.get("args", {}).get("correlation")].append(e)
    per_step, problems, graph_ids = [], [], set()
    for n, pid, tid, start, end in steps:
        mine = [e for e in launches if e.get("pid") == pid and e.get("tid") == tid
                and start <= float(e["ts"]) < end]
        if not mine or (len(mine) != 1 and not several):
            problems.append(f"step {n}: {len(mine)} graph launches")
            continue
        step_work = 0
        for launch in mine:
            done = work.get(launch.get("args", {}).get("correlation"), [])
            ids = [e.get("args", {}).get("graph id") for e in done]
            graph_ids.update(ids)
            if level == "graph":
                ok = len(done) == 1 and done[0]["name"] == f"CUDA graph {ids[0]}"
            else:
                node_ids = [e.get("args", {}).get("graph node id") for e in done]
                ok = (done and None not in node_ids and len(set(node_ids)) == len(done)
                      and (nodes is None or len(done) == int(nodes)))
            if not ok:
                problems.append(f"step {n}: {len(done)} records of a graph launch")
            step_work += len(done)
        per_step.append(step_work)
    gpu, attributed, before = attribution(events, analyze_path)
    print(f"{len(steps)} steps, graph work per step {sorted(set(per_step))}, graph ids "
          f"{sorted(graph_ids, key=str)}, attributed {gpu['attributed_us']} of {gpu['work_us']} us "
          f"({before:.3f} us launched before the window)")
    twice = launched_twice(events)
    if twice:
        problems.append(f"{len(twice)} launches recorded twice (correlation {twice[0]}, ...)")
    ok = (steps and not problems and len(set(per_step)) == 1
          and (len(graph_ids) >= 1 if several else len(graph_ids) == 1)
          and None not in graph_ids and attributed)
    return result("PASS" if ok else "FAIL", steps=len(steps), work_per_step=sorted(set(per_step)),
                  graph_ids=len(graph_ids), attributed_us=gpu["attributed_us"],
                  work_us=gpu["work_us"], problems=problems[:5])


def ancestors(events):
    """Per (pid, tid), the ranges there, for looking up what a launch lies in."""
    by_thread = defaultdict(list)
    for e in events:
        if e.get("ph") == "X" and "dur" in e:
            by_thread[(e.get("pid"), e.get("tid"))].append(e)
    return by_thread


def cmd_compiled(trace_path, torch_trace, analyze_path):
    """A torch.compile'd model profiled by tprof.torch and by torch.profiler: inductor's Triton
    kernels (named as inductor names them, `triton_...`) in tprof's trace, the same kernels per
    step as torch.profiler's (names and counts), each launched (through the driver) inside the
    compiled region's ranges, and `tprof analyze` charging all GPU work launched in the window."""
    events = load(trace_path)
    launches = launches_of(events)
    by_thread = ancestors(events)
    triton, unlaunched, outside, launch_names, regions = 0, 0, 0, defaultdict(int), defaultdict(int)
    for k in kernels(events):
        if not k["name"].startswith("triton"):
            continue
        triton += 1
        launch = launches.get(k.get("args", {}).get("correlation"))
        if launch is None:
            unlaunched += 1
            continue
        launch_names[launch["name"]] += 1
        t = float(launch["ts"])
        around = [r["name"] for r in by_thread[(launch.get("pid"), launch.get("tid"))]
                  if r is not launch and float(r["ts"]) <= t <= float(r["ts"]) + float(r["dur"])]
        compiled = [n for n in around if "Compiled" in n or "compiled" in n]
        if compiled:
            regions[compiled[0][:60]] += 1
        else:
            outside += 1
    same = cmd_same_kernels(trace_path, torch_trace) == 0  # prints its own line first
    gpu, attributed, before = attribution(events, analyze_path)
    twice = launched_twice(events)
    print(f"{triton} Triton kernels; launches {dict(launch_names)}; {unlaunched} without their "
          f"launch, {outside} launched outside a compiled region; regions {dict(regions)}; "
          f"attributed {gpu['attributed_us']} of {gpu['work_us']} us ({before:.3f} before); "
          f"{len(twice)} launches recorded twice")
    ok = (triton > 0 and unlaunched == 0 and outside == 0 and attributed
          and same and not twice)
    return result("PASS" if ok else "FAIL", triton_kernels=triton, launches=dict(launch_names),
                  without_launch=unlaunched, outside_compiled=outside, regions=dict(regions),
                  launched_twice=len(twice),
                  same_as_torch=same, attributed_us=gpu["attributed_us"], work_us=gpu["work_us"])


def cmd_subscribers(torch_trace, reference_trace, log_path, tprof_trace=None):
    """torch.profiler and tprof.profile (gpu: on) recording the same steps in one process, one
    started first. CUPTI's activity buffers are the process's: where two profilers cannot share
    them, the first holds CUPTI and records every kernel its run alone records (REFERENCE: the
    same program under torch.profiler alone), and the other says so once (tprof: "another
    profiler holds CUPTI"; Kineto: "CUPTI initialization failed") with no kernel; where they
    can, both record every kernel. Never partial, never silent."""
    with open(log_path, errors="replace") as f:
        log = f.read()
    tprof_warnings = log.count("another profiler holds CUPTI")
    kineto_warned = "CUPTI initialization failed" in log or "MULTIPLE_SUBSCRIBERS" in log
    ref_steps, ref_per_step, _ = kernels_by_step(load(reference_trace))
    ref = sum(v[0] for v in ref_per_step.values())
    counts = {"torch": sum(v[0] for v in kernels_by_step(load(torch_trace))[1].values()),
              "tprof": 0}
    if tprof_trace:
        counts["tprof"] = sum(v[0] for v in kernels_by_step(load(tprof_trace))[1].values())
    warned = {"torch": kineto_warned, "tprof": tprof_warnings == 1}
    complete = [k for k in counts if counts[k] == ref > 0]
    lost = [k for k in counts if counts[k] == 0 and warned[k]]
    print(f"kernels in steps: torch.profiler {counts['torch']}, tprof {counts['tprof']} (torch "
          f"alone {ref}); tprof's CUPTI warnings {tprof_warnings}, Kineto's {kineto_warned}")
    ok = len(complete) == 2 or (len(complete) == 1 and len(lost) == 1)
    return result("PASS" if ok else "FAIL", kernels=counts, reference=ref,
                  holder=complete[0] if len(complete) == 1 else "both" if complete else None,
                  tprof_warnings=tprof_warnings, kineto_warned=kineto_warned)


def cmd_overhead(runs_path):
    """RUNS.txt lines: "<mode>[@<batch>] <step_ms>". Modes: off, cpu, gpu (the example unprofiled,
    profiled CPU-only, profiled with CUPTI), torch, torch_prof. Reports median step times and
    ratios to the unprofiled run of the same program and batch (measured, not asserted)."""
    times = defaultdict(list)
    with open(runs_path) as f:
        for line in f:
            mode, ms = line.split()
            times[mode].append(float(ms))
    med = {m: statistics.median(v) for m, v in times.items()}
    if not med:
        return result("FAIL", reason="no run printed its step time (see overhead.err)")

    def baseline(mode):
        name, _, batch = mode.partition("@")
        base = "torch" if name.startswith("torch") else "off"
        return base + ("@" + batch if batch else "")

    missing = sorted({baseline(m) for m in med} - set(med))
    if missing:
        return result("FAIL", reason=f"no baseline run for {missing}")
    ratios = {m: med[m] / med[baseline(m)] for m in med}
    # The modes alternate, so a mode's i-th run and its baseline's i-th ran side by side: their
    # ratio cancels the machine's drift between rounds (on a VM, "off" alone spread by 40%).
    paired = {m: statistics.median(a / b for a, b in zip(times[m], times[baseline(m)]))
              for m in med}
    lowest = {m: min(times[m]) / min(times[baseline(m)]) for m in med}
    for m in sorted(med):
        print(f"  {m:16s} median step {med[m]:.4f} ms over {len(times[m])} runs, "
              f"ratio to {baseline(m)} {ratios[m]:.4f} (paired {paired[m]:.4f}, "
              f"by minimum {lowest[m]:.4f})")
    return result("PASS", median_step_ms=med, ratio=ratios, paired_ratio=paired,
                  min_ratio=lowest, runs=dict(times))


def cmd_find(directory):
    """The first file under directory (sorted) holding a trace: .json or .json.gz with
    traceEvents at the top (not config.json, summary.json, ...); in a run directory, a window's
    trace in its tprof/ folder, not the top-level copy of every window."""
    for root, dirs, files in sorted(os.walk(directory)):
        for name in sorted(files):
            if not name.endswith((".json", ".json.gz")):
                continue
            if "tprof" in dirs and ".pt.trace.json" in name:
                continue
            path = os.path.join(root, name)
            try:
                data = load_json(path)
            except (OSError, ValueError):
                continue
            if isinstance(data, dict) and "traceEvents" in data:
                print(path)
                return 0
    return 1


def cmd_summary(run_dir, build_dir):
    """A run directory's summary files (summary.json, op_stats.csv, stage_times.json) against
    `tprof analyze` of its window traces and the reference reader, as the streamed-window tests
    check them (tests/lib/summary_files.py, found beside this script in the source tree): a
    streamed window's summary is computed in pieces while it records."""
    os.environ["TPROF_BUILD_DIR"] = build_dir
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "tests", "lib"))
    from summary_files import check_summary_files  # noqa: E402 (the path set just above)

    traces = sorted(os.path.join(run_dir, "tprof", n) for n in os.listdir(
        os.path.join(run_dir, "tprof")) if n.startswith("trace_") and ".json" in n)
    if not traces:
        return result("FAIL", reason=f"no window trace in {run_dir}/tprof")
    try:
        summary = check_summary_files(run_dir, traces)
    except AssertionError as e:
        problem = str(e)[:300] or "the summary files differ from `tprof analyze` of the traces"
        return result("FAIL", traces=len(traces), problem=problem)
    steps = summary.get("steps", {}).get("count")
    print(f"{len(traces)} window trace(s), {steps} steps: summary files = tprof analyze")
    return result("PASS", traces=len(traces), steps=steps)


def main(argv):
    cmds = {"events": cmd_events, "analyze": cmd_analyze, "compare": cmd_compare,
            "same_kernels": cmd_same_kernels, "kernel_ops": cmd_kernel_ops, "graph": cmd_graph,
            "compiled": cmd_compiled, "subscribers": cmd_subscribers, "overhead": cmd_overhead,
            "summary": cmd_summary, "find": cmd_find}
    if len(argv) < 2 or argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        return 2
    return cmds[argv[1]](*argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv))
