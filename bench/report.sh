#!/bin/sh
# bench/report.sh [BUILD] [RUNS]: what `tprof report` costs against `tprof analyze --json` on the
# same input, measured in the same run, alternating (analyze, report, analyze, ...), so the ratio
# holds on a loaded machine better than either time. Budget (issue 12): the report takes at most
# 1.2x the time of analyze, and its file stays under 5 MB.
# Inputs: bench/out/report.json (made once by bench/make_big_trace.py, REPORT_MB MB, default 200;
# BIG=path takes another, e.g. bench/out/big.json) and every fixture trace. Prints, per input, the
# median wall and CPU seconds of each command, their ratio, and the report's size in bytes.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-5}
OUT=$ROOT/bench/out
BIG=${BIG:-$OUT/report.json}
TPROF=$BUILD/tprof
TIME=/usr/bin/time
PYTHON=${PYTHON:-python3}
[ -x "$TPROF" ] || { echo "bench/report.sh: build $TPROF first (make)" >&2; exit 1; }
[ -x "$TIME" ] || { echo "bench/report.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
mkdir -p "$OUT"
[ -s "$BIG" ] || "$PYTHON" "$ROOT/bench/make_big_trace.py" --mb "${REPORT_MB:-200}" "$BIG" >&2
HTML=$(mktemp "$OUT/.report.XXXXXX")
trap 'rm -f "$HTML" "$OUT/.time"' EXIT

# one CMD...: "wall cpu" of one run (output discarded)
one() {
    "$TIME" -f "%e %U %S" -o "$OUT/.time" "$@" > /dev/null
    awk '{printf "%s %.2f\n", $1, $2 + $3}' "$OUT/.time"
}
# median COLUMN: the median of a column of the lines on stdin
median() { awk -v c="$1" '{print $c}' | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

# bench INPUT RUNS: the analyze and report lines of one input
bench_input() {
    cat "$1" > /dev/null # into the page cache
    a="" r=""
    i=0
    while [ $i -lt "$2" ]; do
        a="$a$(one "$TPROF" analyze --json "$1")
"
        r="$r$(one "$TPROF" report -o "$HTML" "$1")
"
        i=$((i + 1))
    done
    aw=$(printf %s "$a" | median 1) ac=$(printf %s "$a" | median 2)
    rw=$(printf %s "$r" | median 1) rc=$(printf %s "$r" | median 2)
    awk -v n="$(basename "$1")" -v in_b="$(stat -L -c %s "$1")" -v aw="$aw" -v ac="$ac" \
        -v rw="$rw" -v rc="$rc" -v size="$(stat -c %s "$HTML")" 'BEGIN {
        ratio = aw > 0 ? rw / aw : 0
        printf "  %-48s %9.1f MB  analyze %6.2f s (cpu %6.2f)  report %6.2f s (cpu %6.2f)  ratio %.2f  report %d bytes\n",
               n, in_b / 1e6, aw, ac, rw, rc, ratio, size }'
}

echo "bench/report.sh: medians of $RUNS alternating runs, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the start"
bench_input "$BIG" "$RUNS"
for f in "$ROOT"/tests/fixtures/kineto/*.json* "$ROOT"/tests/fixtures/*.json*; do
    [ -f "$f" ] && bench_input "$f" "$RUNS"
done
echo "  (budget: report <= 1.2x analyze, report < 5 MB; load average $(cut -d' ' -f1 /proc/loadavg) at the end)"

# instructions CMD...: the instructions one run executes, under callgrind
instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 > /dev/null |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p; s/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d , | head -n 1
}
command -v valgrind > /dev/null || exit 0
echo "instructions (valgrind --tool=callgrind), one run each:"
for f in "$BIG" "$ROOT"/tests/fixtures/kineto/*.json* "$ROOT"/tests/fixtures/*.json*; do
    [ -f "$f" ] || continue
    ia=$(instructions "$TPROF" analyze --json "$f")
    ir=$(instructions "$TPROF" report -o "$HTML" "$f")
    awk -v n="$(basename "$f")" -v a="$ia" -v r="$ir" 'BEGIN {
        printf "  %-48s analyze %13.0f  report %13.0f  ratio %.3f\n", n, a, r, r / a }'
done
