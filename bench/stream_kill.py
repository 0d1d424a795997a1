"""SIGKILL a streamed window at random times and count the unfinished traces it leaves that
json.load reads whole (docs/CONFIG.md, `stream`), and those cut short that `tprof analyze` reads.

    python3 bench/stream_kill.py BUILD SPIN_NS KILLS [WORK_DIR]

Each kill: build/bench/bench_stream records up to 100 M ranges (SPIN_NS of work inside each) in
one streamed window, SIGKILLed 0.2 to 1.0 s after it starts (seeded, so runs repeat)."""

import glob
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

__all__ = ["main"]


def _one(bench: str, tprof: str, work: str, spin: str, delay: float) -> str:
    """One kill: "valid", "cut" (json.load refuses it, tprof analyze reads it), "bad" or
    "none" (no unfinished trace yet)."""
    shutil.rmtree(work, ignore_errors=True)
    proc = subprocess.Popen([bench, "100000000", "1", "1", "4194304", work, spin],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(delay)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    found = glob.glob(os.path.join(work, "stream", "tprof", "*.partial.json"))
    if not found:
        return "none"
    try:
        with open(found[0], encoding="utf-8") as f:
            json.load(f)
        return "valid"
    except ValueError:
        r = subprocess.run([tprof, "analyze", "--json", found[0]], capture_output=True,
                           timeout=600)
        return "cut" if r.returncode == 0 else "bad"


def main() -> None:
    """Runs the kills and prints the counts."""
    build, spin, kills = sys.argv[1], sys.argv[2], int(sys.argv[3])
    work = sys.argv[4] if len(sys.argv) > 4 else "/tmp/tprof_stream_kill"
    rng = random.Random(1)
    counts = {"valid": 0, "cut": 0, "bad": 0, "none": 0}
    for _ in range(kills):
        counts[_one(os.path.join(build, "bench", "bench_stream"), os.path.join(build, "tprof"),
                    work, spin, rng.uniform(0.2, 1.0))] += 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"SPIN_NS {spin}, {kills} kills: json.load reads {counts['valid']}, cut short and "
          f"read by tprof analyze {counts['cut']}, unreadable {counts['bad']}, none yet "
          f"{counts['none']}")


if __name__ == "__main__":
    main()
