#!/bin/sh
# bench/analyze.sh [BUILD] [RUNS]: the whole `tprof analyze --json` command on a trace of >= 1 GB
# (reading, analysis and report), its speed and peak memory as ratios to baselines measured in
# the same run:
#   - the Python standard-library equivalent, tests/lib/tprof_ref.py (json.loads and the same
#     figures), on a slice of the same content (the whole file would take many minutes and GBs),
#     against tprof on that same slice;
#   - for the gzip input, `zcat > /dev/null` alone (decompression is the floor).
# Budgets (docs/DESIGN.md): >= 1 GB/s on one core for plain JSON, peak RSS <= 1/4 of the JSON's
# size, gzip within 1.2x of zcat. Inputs are made once in bench/out/ (bench/make_big_trace.py;
# existing files, or links to them, are reused). Each figure is the median of RUNS runs (the
# Python reference: of at most 3). Peak RSS and times come from GNU time (Debian package time).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-5}
OUT=$ROOT/bench/out
BIG=$OUT/big.json
REF_SLICE=$OUT/slice_ref.json
TPROF=$BUILD/tprof
TIME=/usr/bin/time
PYTHON=${PYTHON:-python3}
[ -x "$TPROF" ] || { echo "bench/analyze.sh: build $TPROF first (make)" >&2; exit 1; }
[ -x "$TIME" ] || { echo "bench/analyze.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
mkdir -p "$OUT"
[ -s "$BIG" ] || "$PYTHON" "$ROOT/bench/make_big_trace.py" --mb 1100 "$BIG"
[ -s "$BIG.gz" ] || gzip -6 -c "$BIG" > "$BIG.gz"
[ -s "$REF_SLICE" ] || "$PYTHON" "$ROOT/bench/make_big_trace.py" --mb 25 "$REF_SLICE"
cat "$BIG" "$BIG.gz" "$REF_SLICE" > /dev/null # into the page cache: all read from memory

# measure RUNS CMD...: one line per run, "wall=S cpu=S rss_kb=K" (the output of CMD discarded)
measure() {
    n=$1
    shift
    i=0
    while [ $i -lt "$n" ]; do
        "$TIME" -f "%e %U %S %M" -o "$OUT/.time" "$@" > /dev/null
        awk '{printf "wall=%s cpu=%.2f rss_kb=%s\n", $1, $2 + $3, $4}' "$OUT/.time"
        i=$((i + 1))
    done
}
# median FIELD: the median of "FIELD=value" over the lines on stdin
median() { sed -n "s/.*$1=\([0-9.]*\).*/\1/p" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

py_runs=$RUNS
[ "$py_runs" -gt 3 ] && py_runs=3
plain=$(measure "$RUNS" "$TPROF" analyze --json "$BIG")
gz=$(measure "$RUNS" "$TPROF" analyze --json "$BIG.gz")
zcat=$(measure "$RUNS" zcat "$BIG.gz")
slice=$(measure "$RUNS" "$TPROF" analyze --json "$REF_SLICE")
py=$(PYTHONPATH="$ROOT/tests/lib" measure "$py_runs" "$PYTHON" "$ROOT/tests/lib/tprof_ref.py" analyze "$REF_SLICE")

big=$(stat -L -c %s "$BIG")
ref=$(stat -L -c %s "$REF_SLICE")
echo "bench/analyze.sh: medians of $RUNS runs (python: $py_runs), $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the end"
awk -v b="$big" -v w="$(echo "$plain" | median wall)" -v c="$(echo "$plain" | median cpu)" \
    -v r="$(echo "$plain" | median rss_kb)" 'BEGIN {
    printf "  tprof analyze --json, %.0f MB of JSON: %.2f s wall, %.0f MB/s (%.0f MB per CPU second; budget >= 1000)\n", b/1e6, w, b/1e6/w, b/1e6/c
    printf "  peak RSS: %.0f MB = %.3f x the JSON size (budget <= 0.25)\n", r/1024, r*1024/b}'
awk -v g="$(echo "$gz" | median wall)" -v z="$(echo "$zcat" | median wall)" \
    -v r="$(echo "$gz" | median rss_kb)" 'BEGIN {
    printf "  gzip input: %.2f s wall; zcat > /dev/null alone %.2f s: ratio %.2f (budget <= 1.2); peak RSS %.0f MB\n", g, z, g/z, r/1024}'
awk -v s="$ref" -v tw="$(echo "$slice" | median wall)" -v pw="$(echo "$py" | median wall)" \
    -v tr="$(echo "$slice" | median rss_kb)" -v pr="$(echo "$py" | median rss_kb)" 'BEGIN {
    printf "  %.0f MB slice: tprof %.2f s, python tprof_ref.py %.2f s: %.0fx faster (%.0f vs %.1f MB/s)\n", s/1e6, tw, pw, pw/tw, s/1e6/tw, s/1e6/pw
    printf "                 peak RSS tprof %.2f x, python %.2f x the JSON size\n", tr*1024/s, pr*1024/s}'
rm -f "$OUT/.time"
