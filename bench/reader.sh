#!/bin/sh
# bench/reader.sh [BUILD] [RUNS]: the trace reader's speed and memory on a large realistic trace.
#
# Builds bench/out/big.json (>= 1.1 GB, bench/make_big_trace.py: a Kineto fixture's events
# replicated) and its .gz once, then runs build/bench/bench_read RUNS times on each and prints
# medians, as ratios to baselines measured in the same run: Python's json.load (on a 110 MB
# slice of the same content: the whole file would take minutes and ~6 GB), `zcat > /dev/null`
# for the gzip file, and a plain read() of the file (the floor for any reader).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-5}
OUT=$ROOT/bench/out
BIG=$OUT/big.json
SLICE=$OUT/slice.json
BENCH=$BUILD/bench/bench_read
[ -x "$BENCH" ] || { echo "bench/reader.sh: build $BENCH first (make)" >&2; exit 1; }
mkdir -p "$OUT"
[ -s "$BIG" ] || python3 "$ROOT/bench/make_big_trace.py" --mb 1100 "$BIG"
[ -s "$SLICE" ] || python3 "$ROOT/bench/make_big_trace.py" --mb 110 "$SLICE"
[ -s "$BIG.gz" ] || gzip -6 -c "$BIG" > "$BIG.gz"
cat "$BIG" "$BIG.gz" > /dev/null # into the page cache: every contender reads from memory

# median FIELD: the median of " FIELD=value" over the lines on stdin
median() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
runs() { i=0; while [ $i -lt "$RUNS" ]; do "$@"; i=$((i + 1)); done; }
now() { date +%s.%N; }

read_lines=$(runs "$BENCH" "$BIG")
gz_lines=$(runs "$BENCH" "$BIG.gz")
raw_lines=$(runs "$BENCH" "$BIG" raw)
slice_lines=$(runs "$BENCH" "$SLICE")
py_lines=$(runs python3 -c '
import json, os, resource, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
t, c = time.perf_counter(), cpu()
with open(sys.argv[1], "rb") as f:
    n = len(json.load(f)["traceEvents"])
dt, dc = time.perf_counter() - t, cpu() - c
size = os.path.getsize(sys.argv[1])
print("mode=python seconds=%.4f mb_s=%.1f cpu_s=%.4f cpu_mb_s=%.1f events=%d peak_rss_kb=%d" % (
    dt, size / 1e6 / dt, dc, size / 1e6 / dc, n, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))
' "$SLICE")
zcat_lines=$(i=0; while [ $i -lt "$RUNS" ]; do t0=$(now); zcat "$BIG.gz" > /dev/null; t1=$(now); echo "mode=zcat seconds=$(echo "$t1 - $t0" | bc)"; i=$((i + 1)); done)

big=$(stat -c %s "$BIG"); slice=$(stat -c %s "$SLICE")
r_mbs=$(echo "$read_lines" | median mb_s); r_s=$(echo "$read_lines" | median seconds)
r_cmbs=$(echo "$read_lines" | median cpu_mb_s); r_rss=$(echo "$read_lines" | median peak_rss_kb)
g_s=$(echo "$gz_lines" | median seconds); g_rss=$(echo "$gz_lines" | median peak_rss_kb)
raw_mbs=$(echo "$raw_lines" | median mb_s)
s_mbs=$(echo "$slice_lines" | median mb_s); s_cmbs=$(echo "$slice_lines" | median cpu_mb_s)
s_rss=$(echo "$slice_lines" | median peak_rss_kb)
p_mbs=$(echo "$py_lines" | median mb_s); p_cmbs=$(echo "$py_lines" | median cpu_mb_s)
p_rss=$(echo "$py_lines" | median peak_rss_kb)
z_s=$(echo "$zcat_lines" | median seconds)
events=$(echo "$read_lines" | sed -n '1s/.* input_events=\([0-9]*\).*/\1/p')

echo "bench/reader.sh: medians of $RUNS runs, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the end"
echo "$big" "$events" | awk '{printf "  input: %s, %.1f MB of JSON, %d events (%.0f bytes/event)\n", "'"$BIG"'", $1/1e6, $2, $1/$2}'
awk -v c="$r_cmbs" -v w="$r_mbs" -v s="$r_s" -v raw="$raw_mbs" 'BEGIN {
    printf "  reader, plain:   %.1f MB per CPU second (budget >= 1000); wall %.1f MB/s (%.2f s); read() alone %.0f MB/s\n", c, w, s, raw}'
awk -v r="$r_rss" -v b="$big" 'BEGIN {printf "  reader peak RSS: %.1f MB = %.3f x the JSON size (budget <= 0.25)\n", r/1024, r*1024/b}'
awk -v s="$s_cmbs" -v p="$p_cmbs" -v sw="$s_mbs" -v pw="$p_mbs" -v sr="$s_rss" -v pr="$p_rss" -v sz="$slice" 'BEGIN {
    printf "  110 MB slice:    reader %.1f, python json.load %.1f MB per CPU second: %.1fx (wall %.1f vs %.1f MB/s: %.1fx)\n", s, p, s/p, sw, pw, sw/pw
    printf "                   peak RSS reader %.3f x, python %.2f x the JSON size\n", sr*1024/sz, pr*1024/sz}'
awk -v g="$g_s" -v z="$z_s" -v gr="$g_rss" 'BEGIN {printf "  reader, gzip:    %.2f s wall; zcat > /dev/null %.2f s: ratio %.2f (budget <= 1.2); peak RSS %.1f MB\n", g, z, g/z, gr/1024}'
