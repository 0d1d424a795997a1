#!/bin/sh
# bench/report.sh [BUILD] [RUNS]: what `tprof report` costs against `tprof analyze --json` on the
# same input, measured in the same run, alternating (analyze, report, analyze, ...), so the ratio
# holds on a loaded machine better than either time (bench/report_time.py: wall to the
# microsecond, pairwise ratios). Budget (issue 12): the report takes at most 1.2x the time of
# analyze, and its file stays under 5 MB.
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
PYTHON=${PYTHON:-python3}
[ -x "$TPROF" ] || { echo "bench/report.sh: build $TPROF first (make)" >&2; exit 1; }
mkdir -p "$OUT"
[ -s "$BIG" ] || "$PYTHON" "$ROOT/bench/make_big_trace.py" --mb "${REPORT_MB:-200}" "$BIG" >&2
HTML=$(mktemp "$OUT/.report.XXXXXX")
trap 'rm -f "$HTML"' EXIT
INPUTS="$BIG $(ls "$ROOT"/tests/fixtures/*/*.json*)"

echo "bench/report.sh: medians of $RUNS alternating runs, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the start"
# shellcheck disable=SC2086 # INPUTS: paths without spaces, one per word
"$PYTHON" "$ROOT/bench/report_time.py" "$TPROF" "$OUT" "$RUNS" $INPUTS
echo "  (budget: report <= 1.2x analyze, report < 5 MB; load average $(cut -d' ' -f1 /proc/loadavg) at the end)"

# instructions CMD...: the instructions one run executes, under callgrind
instructions() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 > /dev/null |
        sed -n 's/.*Collected : *\([0-9]*\).*/\1/p; s/.*I *refs: *\([0-9,]*\).*/\1/p' | tr -d , | head -n 1
}
command -v valgrind > /dev/null || exit 0
echo "instructions (valgrind --tool=callgrind), one run each:"
for f in $INPUTS; do
    ia=$(instructions "$TPROF" analyze --json "$f")
    ir=$(instructions "$TPROF" report -o "$HTML" "$f")
    awk -v n="$(basename "$f")" -v a="$ia" -v r="$ir" 'BEGIN {
        printf "  %-48s analyze %13.0f  report %13.0f  ratio %.3f\n", n, a, r, r / a }'
done
