#!/bin/sh
# bench/ranks.sh [BUILD] [N]: `tprof analyze` and `tprof merge` of N ranks (default 64) made from
# the two real ranks of an NCCL job (bench/make_ranks.py: copies with offset clocks), their wall
# time and peak RSS (GNU time), next to one rank's analyze as the baseline of the same run. Each
# figure is one run; the machine may be shared (say so with the figures).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
N=${2:-64}
TPROF=$BUILD/tprof
TIME=/usr/bin/time
PYTHON=${PYTHON:-python3}
OUT=$ROOT/bench/out/ranks$N
[ -x "$TPROF" ] || { echo "bench/ranks.sh: build $TPROF first (make)" >&2; exit 1; }
[ -x "$TIME" ] || { echo "bench/ranks.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
[ -s "$OUT/worker0.rank0.pt.trace.json" ] || "$PYTHON" "$ROOT/bench/make_ranks.py" "$N" "$OUT"
cat "$OUT"/*.json > /dev/null # into the page cache
MB=$(du -sm "$OUT" | cut -f1)

# measure LABEL CMD...: "LABEL: wall S, peak RSS K KiB"
measure() {
    label=$1
    shift
    "$TIME" -f "%e %M" -o "$OUT.time" "$@" > /dev/null 2> "$OUT.err"
    awk -v l="$label" '{printf "  %-28s wall %6.2f s   peak RSS %7d KiB\n", l, $1, $2}' "$OUT.time"
}
echo "$N ranks, $MB MB of JSON in $OUT"
measure "analyze, 1 rank (baseline)" "$TPROF" analyze --json "$OUT/worker0.rank0.pt.trace.json"
measure "analyze, $N ranks" "$TPROF" analyze --json "$OUT"
measure "merge, $N ranks (.json.gz)" "$TPROF" merge "$OUT" -o "$OUT.merged.json.gz"
grep -c "clock offset" "$OUT.err" | awk '{printf "  ranks aligned from collectives: %s\n", $1}'
"$TPROF" analyze --json "$OUT.merged.json.gz" |
    "$PYTHON" -c 'import json, sys; r = json.load(sys.stdin)["ranks"]; print("  merged trace read back as %d ranks" % r["count"])'
rm -f "$OUT.time" "$OUT.err" "$OUT.merged.json.gz"
