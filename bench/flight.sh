#!/bin/sh
# bench/flight.sh [BUILD]: the flight recorder's cost on the example (docs/FLIGHT.md).
#
# build/examples/train_mlp runs STEPS steps (10,000; batch 8, about 2 ms a step) unprofiled and
# with flight_recorder: true (every step recorded into the ring; slow_step_factor 0, so no save
# adds its writing to the figure), alternating, PAIRS pairs (BENCH_RUNS, default 3). Each
# flight run's CPU time (user + system, all threads: the writer's too) is divided by the
# unprofiled run just before it, and the median ratio is printed: on a shared machine the speed
# drifts between minutes, much less within a pair. Wall figures are printed too, as a check.
#
# Memory of the ring: the peak RSS of two more flight runs (2,000 steps), with flight_steps 20 and
# 420: their difference over the 400 more steps kept is what one step of the ring holds resident
# (the session's own memory cancels out); per event, over the events of a step counted in a trace
# saved by SIGUSR1 halfway through one more run. Allocated (virtual): one 64 KiB chunk per step per
# recording thread (record/flight.h).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd) || exit 2
PAIRS=${BENCH_RUNS:-3}
STEPS=${FLIGHT_STEPS:-10000}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK" || exit 2

# "wall cpu maxrss_kb" of one run
train() {
    /usr/bin/time -f "%e %U %S %M" -o "$WORK/.t" "$BUILD/examples/train_mlp" --steps "$STEPS" \
        --epochs 1 --batch 8 --log-every 1000000 "$@" > /dev/null 2>&1 &&
        awk '{print $1, $2 + $3, $4}' "$WORK/.t"
}
median() { cut -d' ' -f"$1" "$2" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
FLIGHT="--profile --profiling.flight_recorder true --profiling.slow_step_factor 0 \
--profiling.summary false --profiling.output_dir $WORK/runs"

: > pairs
i=0
while [ $i -lt "$PAIRS" ]; do
    p=$(train) || exit 1
    # shellcheck disable=SC2086
    q=$(train $FLIGHT) || exit 1
    rm -rf "$WORK/runs"
    echo "$p $q" | awk '{print $1, $2, $3, $4, $5, $6, $5 / $2, $4 / $1}' >> pairs
    [ -n "${BENCH_VERBOSE:-}" ] && tail -1 pairs
    i=$((i + 1))
done

# one more flight run, saved by SIGUSR1 halfway, for the events per step
# shellcheck disable=SC2086
"$BUILD/examples/train_mlp" --steps "$STEPS" --epochs 1 --batch 8 --log-every 1000000 $FLIGHT \
    --profiling.flight_signal true --profiling.run_id sig > /dev/null 2>&1 &
pid=$!
sleep 1
kill -USR1 $pid
wait $pid
trace=$(ls "$WORK"/runs/sig/trace_*_flight_signal_* 2> /dev/null | head -1)
per_step=$(python3 -c '
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
steps = [e for e in ev if e.get("name", "").startswith("ProfilerStep#")]
rest = [e for e in ev if e.get("ph") in ("X", "i", "C") and e not in steps]
print("%.1f" % (len(rest) / max(len(steps), 1)))' "$trace")

rss() {
    # shellcheck disable=SC2086
    /usr/bin/time -f "%M" -o "$WORK/.m" "$BUILD/examples/train_mlp" --steps 2000 --epochs 1 \
        --batch 8 --log-every 1000000 $FLIGHT --profiling.flight_steps "$1" > /dev/null 2>&1 &&
        cat "$WORK/.m"
}
small=$(rss 20) big=$(rss 420)

awk -v n="$PAIRS" -v steps="$STEPS" -v pc="$(median 2 pairs)" -v qc="$(median 5 pairs)" \
    -v r="$(median 7 pairs)" -v pw="$(median 1 pairs)" -v qw="$(median 4 pairs)" \
    -v w="$(median 8 pairs)" -v pm="$(median 3 pairs)" -v qm="$(median 6 pairs)" \
    -v ev="$per_step" -v small="$small" -v big="$big" 'BEGIN {
    printf "train_mlp --batch 8, %d steps, %d alternating pairs\n", steps, n
    printf "  CPU time: unprofiled %.2f s, flight recorder %.2f s; median ratio within a pair %.4f: %+.2f%% (goal < 1%%)\n", pc, qc, r, (r - 1) * 100
    printf "  wall time: unprofiled %.2f s, flight recorder %.2f s; median ratio %.4f: %+.2f%%\n", pw, qw, w, (w - 1) * 100
    printf "  peak RSS: unprofiled %d KiB, flight recorder %d KiB (the session and its ring: %+d KiB)\n", pm, qm, qm - pm
    step = (big - small) * 1024 / 400
    printf "  ring: peak RSS %d KiB with flight_steps 20, %d KiB with 420: %.0f bytes resident per ring step\n", small, big, step
    printf "  events per step %s: %.0f bytes resident per event (16 per record: 32 per range)\n", ev, step / ev
}'
