#!/bin/sh
# bench/reader.sh [BUILD] [RUNS] [BASE]: the trace reader's speed and memory on a large realistic
# trace.
#
# Builds bench/out/big.json (>= 1.1 GB, bench/make_big_trace.py: a Kineto fixture's events
# replicated) and its .gz once, then runs build/bench/bench_read RUNS times on each and prints
# medians, as ratios to baselines measured in the same run: Python's json.load (on a 110 MB
# slice of the same content: the whole file would take minutes and ~6 GB), `zcat > /dev/null`
# for the gzip file, and a plain read() of the file (the floor for any reader).
#
# BASE, when given, is another bench_read (say the reader before a change, built from its own
# checkout: `git worktree add /tmp/base REV && cmake -S /tmp/base -B /tmp/base/build &&
# cmake --build /tmp/base/build --target bench_read`); it runs in turn with this one, on the
# same files, and the ratios are printed. CPU time is what counts here: the machine is shared,
# so the wall clock moves with everyone else's work; user and system time are shown apart (the
# system time is mostly the copy out of the page cache, plus interrupts the kernel charges to
# whoever runs).
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
RUNS=${2:-5}
BASE=${3:-}
OUT=$ROOT/bench/out
BIG=$OUT/big.json
SLICE=$OUT/slice.json
BENCH=$BUILD/bench/bench_read
[ -x "$BENCH" ] || { echo "bench/reader.sh: build $BENCH first (make)" >&2; exit 1; }
[ -z "$BASE" ] || [ -x "$BASE" ] || { echo "bench/reader.sh: no program $BASE" >&2; exit 1; }
mkdir -p "$OUT"
[ -s "$BIG" ] || python3 "$ROOT/bench/make_big_trace.py" --mb 1100 "$BIG"
[ -s "$SLICE" ] || python3 "$ROOT/bench/make_big_trace.py" --mb 110 "$SLICE"
[ -s "$BIG.gz" ] || gzip -6 -c "$BIG" > "$BIG.gz"
cat "$BIG" "$BIG.gz" > /dev/null # into the page cache: every contender reads from memory

# median FIELD: the median of " FIELD=value" over the lines on stdin
median() { sed -n "s/.* $1=\([0-9.]*\).*/\1/p" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
runs() { i=0; while [ $i -lt "$RUNS" ]; do "$@"; i=$((i + 1)); done; }
now() { date +%s.%N; }
# one line per run of each program, prefixed by "new" or "base", in turn
alternate() {
    i=0
    while [ $i -lt "$RUNS" ]; do
        "$BENCH" "$1" | sed 's/^/new /'
        [ -z "$BASE" ] || "$BASE" "$1" | sed 's/^/base /'
        i=$((i + 1))
    done
}

big_lines=$(alternate "$BIG")
slice_lines=$(alternate "$SLICE")
read_lines=$(echo "$big_lines" | sed -n 's/^new //p')
gz_lines=$(runs "$BENCH" "$BIG.gz")
raw_lines=$(runs "$BENCH" "$BIG" raw)
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

big=$(stat -L -c %s "$BIG"); slice=$(stat -L -c %s "$SLICE") # (-L: the inputs may be links)
r_mbs=$(echo "$read_lines" | median mb_s); r_s=$(echo "$read_lines" | median seconds)
r_cmbs=$(echo "$read_lines" | median cpu_mb_s); r_rss=$(echo "$read_lines" | median peak_rss_kb)
r_umbs=$(echo "$read_lines" | median user_mb_s); r_cs=$(echo "$read_lines" | median cpu_s)
r_us=$(echo "$read_lines" | median user_s); r_ss=$(echo "$read_lines" | median sys_s)
g_s=$(echo "$gz_lines" | median seconds); g_rss=$(echo "$gz_lines" | median peak_rss_kb)
raw_mbs=$(echo "$raw_lines" | median mb_s)
s_new=$(echo "$slice_lines" | sed -n 's/^new //p')
s_mbs=$(echo "$s_new" | median mb_s); s_cmbs=$(echo "$s_new" | median cpu_mb_s)
s_rss=$(echo "$s_new" | median peak_rss_kb)
p_mbs=$(echo "$py_lines" | median mb_s); p_cmbs=$(echo "$py_lines" | median cpu_mb_s)
p_rss=$(echo "$py_lines" | median peak_rss_kb)
z_s=$(echo "$zcat_lines" | median seconds)
events=$(echo "$read_lines" | sed -n '1s/.* input_events=\([0-9]*\).*/\1/p')

echo "bench/reader.sh: medians of $RUNS runs, $(nproc) cores, load average $(cut -d' ' -f1 /proc/loadavg) at the end"
echo "$big" "$events" | awk '{printf "  input: %s, %.1f MB of JSON, %d events (%.0f bytes/event)\n", "'"$BIG"'", $1/1e6, $2, $1/$2}'
awk -v c="$r_cmbs" -v w="$r_mbs" -v s="$r_s" -v raw="$raw_mbs" 'BEGIN {
    printf "  reader, plain:   %.1f MB per CPU second (budget >= 1000); wall %.1f MB/s (%.2f s); read() alone %.0f MB/s\n", c, w, s, raw}'
awk -v u="$r_umbs" -v us="$r_us" -v ss="$r_ss" -v cs="$r_cs" -v e="$events" 'BEGIN {
    printf "                   user %.2f s + system %.2f s (%.1f MB per user second); %.1f M events per CPU second\n", us, ss, u, e/cs/1e6}'
awk -v r="$r_rss" -v b="$big" 'BEGIN {printf "  reader peak RSS: %.1f MB = %.3f x the JSON size (budget <= 0.25)\n", r/1024, r*1024/b}'
awk -v s="$s_cmbs" -v p="$p_cmbs" -v sw="$s_mbs" -v pw="$p_mbs" -v sr="$s_rss" -v pr="$p_rss" -v sz="$slice" 'BEGIN {
    printf "  110 MB slice:    reader %.1f, python json.load %.1f MB per CPU second: %.1fx (wall %.1f vs %.1f MB/s: %.1fx)\n", s, p, s/p, sw, pw, sw/pw
    printf "                   peak RSS reader %.3f x, python %.2f x the JSON size\n", sr*1024/sz, pr*1024/sz}'
awk -v g="$g_s" -v z="$z_s" -v gr="$g_rss" 'BEGIN {printf "  reader, gzip:    %.2f s wall; zcat > /dev/null %.2f s: ratio %.2f (budget <= 1.2); peak RSS %.1f MB\n", g, z, g/z, gr/1024}'
if [ -n "$BASE" ]; then
    b_big=$(echo "$big_lines" | sed -n 's/^base //p'); b_slice=$(echo "$slice_lines" | sed -n 's/^base //p')
    for f in big slice; do
        if [ $f = big ]; then new=$read_lines; old=$b_big; else new=$s_new; old=$b_slice; fi
        awk -v f=$f -v nc="$(echo "$new" | median cpu_mb_s)" -v oc="$(echo "$old" | median cpu_mb_s)" \
            -v nu="$(echo "$new" | median user_mb_s)" -v ou="$(echo "$old" | median user_mb_s)" \
            -v nr="$(echo "$new" | median peak_rss_kb)" -v orss="$(echo "$old" | median peak_rss_kb)" 'BEGIN {
            printf "  against BASE, %-5s %.1f vs %.1f MB per CPU second: %.2fx; per user second %.1f vs %.1f: %.2fx; peak RSS %.1f vs %.1f MB\n",
                f ":", nc, oc, nc/oc, nu, ou, (ou > 0 ? nu/ou : 0), nr/1024, orss/1024}'
    done
fi
