#!/usr/bin/env python3
"""The wall-time half of bench/report.sh: `tprof report` against `tprof analyze --json` on the same
input, alternating in one run, timed to the microsecond (GNU time's 10 ms steps hide the traces
that matter here, which take 5 to 50 ms).

  report_time.py TPROF OUTDIR RUNS INPUT...

Per input and run, three commands in turn: analyze --json to /dev/null, analyze --json -o a file
in OUTDIR, report -o a file in OUTDIR. The two files replace the previous run's, as a re-run
does, and both commands write them the same way (a temporary file renamed over the old one, which
ext4 makes flush). Prints per input the median wall times, the medians of the pairwise ratios
report / analyze (the budget: at most 1.2) against either form, the median CPU ratio, and the
report's size. Standard library only."""
import os
import resource
import statistics
import subprocess
import sys
import time


def timed(cmd, stdout):
    """Wall and CPU (user + system, children) seconds of one run of cmd."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    rc = subprocess.run(cmd, stdout=stdout, stderr=subprocess.DEVNULL).returncode
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        sys.exit(f"report_time.py: {' '.join(cmd)} exited with {rc}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def bench(tprof, outdir, runs, path):
    json_out = os.path.join(outdir, ".analyze.json")
    html = os.path.join(outdir, ".report.html")
    rows = {"analyze": [], "analyze_file": [], "report": []}
    with open(os.devnull, "wb") as null:
        for _ in range(runs + 1):  # the first round warms the page cache and is not counted
            a = timed([tprof, "analyze", "--json", path], null)
            af = timed([tprof, "analyze", "--json", "-o", json_out, path], null)
            r = timed([tprof, "report", "-o", html, path], null)
            for key, v in (("analyze", a), ("analyze_file", af), ("report", r)):
                rows[key].append(v)
    for key in rows:
        rows[key] = rows[key][1:]
    wall = {k: statistics.median(w for w, _ in v) for k, v in rows.items()}
    pair = statistics.median(r[0] / a[0] for r, a in zip(rows["report"], rows["analyze"]))
    pair_file = statistics.median(r[0] / a[0] for r, a in zip(rows["report"], rows["analyze_file"]))
    cpu = statistics.median(r[1] / a[1] if a[1] else float("nan")
                            for r, a in zip(rows["report"], rows["analyze"]))
    size = os.path.getsize(html)
    for f in (json_out, html):
        os.unlink(f)
    print(f"  {os.path.basename(path)[:46]:46s} {os.path.getsize(path) / 1e6:8.2f} MB  "
          f"analyze {wall['analyze'] * 1e3:7.2f} ms (-o {wall['analyze_file'] * 1e3:7.2f})  "
          f"report {wall['report'] * 1e3:7.2f} ms  ratio {pair:.3f} (-o {pair_file:.3f}, "
          f"cpu {cpu:.2f})  {size} bytes", flush=True)
    return pair, pair_file


def main(argv):
    if len(argv) < 5:
        sys.exit(__doc__)
    tprof, outdir, runs = argv[1], argv[2], int(argv[3])
    ratios = [bench(tprof, outdir, runs, p) for p in argv[4:]]
    for i, what in enumerate(("analyze to stdout", "analyze -o a file")):
        r = [pair[i] for pair in ratios]
        print(f"  against {what}: worst ratio {max(r):.3f}, median {statistics.median(r):.3f} "
              f"over {len(r)} inputs")


if __name__ == "__main__":
    main(sys.argv)
