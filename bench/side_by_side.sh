#!/bin/sh
# bench/side_by_side.sh [BUILD] [TIMEOUT]: three tools on the same traces, in the same run: the
# whole `tprof analyze --json`; traceinsight (PyPI, package hta: load the trace, its GPU kernel
# breakdown and temporal breakdown; bench/hta_breakdowns.py); and the Python reference,
# tests/lib/tprof_ref.py analyze (json.loads and the same figures as tprof). Traces: 100 MB and
# 1.1 GB of a GPU job (bench/make_big_trace.py from the NCCL fixture, which traceinsight loads).
# One run each (the Python tools take minutes), wall time and peak RSS from GNU time; a tool
# still running after TIMEOUT seconds (default 600) is stopped and reported as not finished.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
LIMIT=${2:-600}
OUT=$ROOT/bench/out
TPROF=$BUILD/tprof
PYTHON=${PYTHON:-$ROOT/.venv/bin/python}
TIME=/usr/bin/time
[ -x "$TPROF" ] || { echo "bench/side_by_side.sh: build $TPROF first (make)" >&2; exit 1; }
[ -x "$TIME" ] || { echo "bench/side_by_side.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
mkdir -p "$OUT"
[ -s "$OUT/t100.json" ] || "$PYTHON" "$ROOT/bench/make_big_trace.py" --mb 100 "$OUT/t100.json"
[ -s "$OUT/big.json" ] || "$PYTHON" "$ROOT/bench/make_big_trace.py" --mb 1100 "$OUT/big.json"

# one NAME TRACE CMD...: a line "NAME: S s wall, peak RSS M MB (x the JSON)" or "did not finish"
one() {
    name=$1
    trace=$2
    shift 2
    size=$(stat -L -c %s "$trace")
    cat "$trace" > /dev/null
    if "$TIME" -f "%e %M" -o "$OUT/.time" timeout "$LIMIT" "$@" > /dev/null 2> "$OUT/.err"; then
        awk -v n="$name" -v b="$size" '{printf "  %-28s %8.2f s wall  %7.1f MB/s  peak RSS %6.0f MB = %.2f x the JSON\n", n, $1, b/1e6/$1, $2/1024, $2*1024/b}' "$OUT/.time"
    else
        rc=$?
        if [ $rc -eq 124 ]; then
            printf "  %-28s did not finish in %s s\n" "$name" "$LIMIT"
        else
            printf "  %-28s failed (exit %s): %s\n" "$name" "$rc" "$(tail -1 "$OUT/.err")"
        fi
    fi
}

echo "bench/side_by_side.sh: $(nproc) cores, time limit $LIMIT s, $(date -u +%Y-%m-%dT%H:%MZ)"
for trace in "$OUT/t100.json" "$OUT/big.json"; do
    echo "$(basename "$trace"): $(($(stat -L -c %s "$trace") / 1000000)) MB"
    one "tprof analyze --json" "$trace" "$TPROF" analyze --json "$trace"
    one "tprof analyze --threads 1" "$trace" "$TPROF" analyze --json --threads 1 "$trace"
    one "traceinsight (hta)" "$trace" "$PYTHON" "$ROOT/bench/hta_breakdowns.py" "$trace"
    one "python tprof_ref.py" "$trace" "$PYTHON" "$ROOT/tests/lib/tprof_ref.py" analyze "$trace"
done
rm -f "$OUT/.time" "$OUT/.err"
