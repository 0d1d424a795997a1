#!/bin/sh
# bench/formats.sh TRACE [RUNS] [BUILD] [BASELINE]: the whole `tprof analyze` command (one
# thread) on one window written three ways, JSON, gzip JSON and Perfetto's protobuf: each file's
# size, the command's wall time and peak RSS (GNU time), the median of RUNS runs (default 5),
# the formats taking turns so that the machine's load falls on all alike. bench_perfetto (its
# in-process figures printed first) writes the three files from TRACE (bench/make_big_trace.py
# makes a big one). BASELINE, another build's tprof (e.g. main's), is timed on the same files in
# the same turns, for a before/after ratio measured in one run.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TRACE=${1:?usage: bench/formats.sh TRACE [RUNS] [BUILD] [BASELINE]}
RUNS=${2:-5}
BUILD=${3:-$ROOT/build}
BASE=${4:-}
[ -x /usr/bin/time ] || { echo "bench/formats.sh: needs GNU time (apt-get install time)" >&2; exit 1; }
DIR=$(mktemp -d /tmp/tprof_formats_XXXXXX)
trap 'rm -rf "$DIR"' EXIT
"$BUILD/bench/bench_perfetto" "$TRACE" 3 "$DIR"
FILES="t.json t.json.gz t.pftrace"
cat "$DIR"/t.* > /dev/null # into the page cache: every run reads from memory
for _ in $(seq "$RUNS"); do
    for f in $FILES; do
        /usr/bin/time -a -o "$DIR/times" -f "tprof $f %e %M" \
            "$BUILD/tprof" analyze --threads 1 --no-progress "$DIR/$f" > /dev/null
        [ -z "$BASE" ] || /usr/bin/time -a -o "$DIR/times" -f "baseline $f %e %M" \
            "$BASE" analyze --threads 1 --no-progress "$DIR/$f" > /dev/null
    done
done
echo "bench/formats.sh: tprof analyze --threads 1, median of $RUNS runs (wall s, peak RSS MB)"
for who in tprof baseline; do
    [ "$who" = tprof ] || [ -n "$BASE" ] || continue
    for f in $FILES; do
        size=$(stat -c %s "$DIR/$f")
        mid=$(((RUNS + 1) / 2))
        t=$(grep "^$who $f " "$DIR/times" | awk '{ print $3 }' | sort -n | sed -n "${mid}p")
        rss=$(grep "^$who $f " "$DIR/times" | awk '{ print $4 }' | sort -n | sed -n "${mid}p")
        printf '  %-8s %-10s %11d bytes %8.3f s %8.1f MB\n' "$who" "$f" "$size" "$t" \
            "$(echo "$rss" | awk '{ print $1 / 1024 }')"
    done
done
