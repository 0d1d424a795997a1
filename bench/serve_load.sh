#!/bin/sh
# bench/serve_load.sh [BUILD] [SECONDS]: `tprof serve` under load (issue 12): wrk with 100
# connections on 2 threads for SECONDS (default 30) on loopback, against three URLs of a served
# demo run in turn: api/data (the report data, from the server's cache), a trace file (a static
# artifact, sent with sendfile) and api/runs (the folder scanned on every request). For each it
# prints requests/s, the latency percentiles (wrk --latency) and the errors (non-2xx/3xx answers
# and socket errors, which must be zero), and the server's resident memory (VmRSS) before and
# after. Exits 1 when any request failed. Wall-clock figures: on a shared machine they move with
# everyone else's work; wrk and the server share the same cores.
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(cd "${1:-$ROOT/build}" && pwd)
SECONDS_EACH=${2:-30}
command -v wrk >/dev/null || { echo "bench/serve_load.sh: wrk is missing (apt-get install wrk)" >&2; exit 2; }
if "$BUILD/tprof" serve /nonexistent/serve-probe 2>&1 | grep -q "built without libmicrohttpd"; then
    echo "bench/serve_load.sh: skipped: $BUILD/tprof was built without tprof serve"
    exit 0
fi
WORK=$(mktemp -d)
SERVER=
cleanup() {
    [ -n "$SERVER" ] && kill -INT "$SERVER" 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$BUILD/examples/train_mlp" --steps 100 --profile --profiling.output_dir="$WORK/runs" \
    --profiling.run_id=demo --profiling.wait=5 --profiling.warmup=2 --profiling.active=20 \
    --profiling.repeat=2 --profiling.profile_memory=true --profiling.record_shapes=true \
    --profiling.summary=false >/dev/null
"$BUILD/tprof" serve "$WORK/runs" --port 0 >"$WORK/url" 2>"$WORK/stderr" &
SERVER=$!
for _ in 1 2 3 4 5 6 7 8 9 10; do
    grep -q http "$WORK/url" 2>/dev/null && break
    sleep 0.2
done
URL=$(grep -o 'http://[^ ]*' "$WORK/url")
TRACE=$(cd "$WORK/runs/demo" && ls trace_*.json | head -1)

rss() { awk '/^VmRSS/ {print $2 " kB"}' "/proc/$SERVER/status"; }

echo "tprof serve $URL on $(nproc) cores ($(uname -m)), wrk -c100 -t2 -d${SECONDS_EACH}s --latency"
echo "server RSS at start: $(rss)"
curl -s -o /dev/null "${URL}api/data?run=demo" # the first analysis, cached from here on
echo "server RSS after the first analysis: $(rss)"
failed=0
for path in "api/data?run=demo" "runs/demo/$TRACE" "api/runs"; do
    bytes=$(curl -s "${URL}$path" | wc -c)
    echo
    echo "== GET /$path ($bytes bytes)"
    wrk -c100 -t2 -d"${SECONDS_EACH}s" --latency "${URL}$path" >"$WORK/wrk.txt"
    grep -E "Requests/sec|Transfer/sec|requests in|^ +(50|90|99)%|Non-2xx|Socket errors" "$WORK/wrk.txt"
    if grep -qE "Non-2xx|Socket errors" "$WORK/wrk.txt"; then failed=1; fi
    echo "server RSS: $(rss)"
done
kill -INT "$SERVER"
status=0
wait "$SERVER" || status=$?
SERVER=
echo
echo "server exit status after SIGINT: $status"
if [ "$failed" = 1 ]; then
    echo "bench/serve_load.sh: some requests failed (see above)" >&2
    exit 1
fi
