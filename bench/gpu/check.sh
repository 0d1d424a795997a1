#!/usr/bin/env bash
# bench/gpu/check.sh - every check of tprof's GPU support, in one call, on a machine with an
# NVIDIA GPU and driver, CUDA 13 (nvcc, CUPTI) and PyTorch; about 5 minutes (docs/GPU.md).
#
#   bench/gpu/check.sh            results in $OUT (default bench/out/gpu), build in $BUILD;
#                                 STEPS_OVERHEAD (300) and REPS_OVERHEAD (3) size step 6
#   DEBS=.debs bench/gpu/check.sh  on a machine without apt: the build dependencies from the .deb
#                                  files bench/gpu/deps.sh fetched, unpacked under $BUILD-deps
#
# 1. builds tprof (Release) with the CUDA example and runs the unit tests;
# 2. runs the example profiled (steps 7..16 recorded, CUPTI on) with every kernel also timed by
#    CUDA events, and checks the trace's kernel count (exact) and time (tolerance) against them;
# 3. runs the same MLP in PyTorch under torch.profiler for a Kineto trace;
#    and under tprof.profile (tprof.torch, tprof's own CUPTI source; when the Python package
#    built), whose kernels per step must be torch.profiler's; and again streamed (stream: true:
#    CUPTI's records in the segments while the window records), with the same kernels and ops
#    and its summary files what `tprof analyze` finds in its trace; and once more unchanged under
#    `tprof run` (autorun: no profiler in the script, gpu: auto), with the same kernels;
# 4. runs `tprof analyze --json` on the traces and checks its kernel table against the traces
#    themselves, then shows the example's and PyTorch's top kernels side by side;
# 5. writes `tprof report` of each trace (report_tprof.html, report_torch.html, ...);
# 6. measures overhead: step time unprofiled, profiled CPU-only and profiled with CUPTI (every
#    step recorded), three alternating runs each, at the demo's batch (64: launch-bound) and at
#    1024; PyTorch without and with its profiler the same way;
# 7. CUPTI's floor: the example at batch 64 unprofiled, with CUPTI alone (kernels; + runtime
#    API; exactly tprof's kinds and callbacks: bench/gpu/cupti_floor.c, injected by the driver),
#    under tprof CPU-only and with CUPTI; STEPS_FLOOR (3000) steps, REPS_FLOOR (9) alternating
#    runs of the FLOOR_MODES (more: torch, torch_prof, the modes below);
# 8. CUDA graphs: the example's graph per node and graph-level, torch.cuda.graph,
#    torch.compile's reduce-overhead mode (a crash is rerun with its stack printed:
#    bench/gpu/stack_on_fault.c);
# 9. torch.compile: inductor's Triton kernels in tprof's trace as in torch.profiler's, launched
#    inside the compiled region, all GPU work attributed;
# 10. tprof.profile and torch.profiler recording the same steps at once, each started first:
#     the first holds CUPTI and the other says so, or both record every kernel;
# 11. with nsys (on the PATH, else Nsight Compute's): captures the window through
#     cudaProfilerStart/Stop (nsight: true); tprof says once that Nsight holds CUPTI.
# CHECKS="floor graphs" runs only those sections (after the build; names in want() below).
# Writes results.json (one entry per check: PASS, FAIL or SKIP, with its numbers) and logs.
# Exit status 1 when a check failed.
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/bench/out/gpu}
BUILD=${BUILD:-$ROOT/build-gpu}
PY=${PYTHON:-python3}
STEPS_OVERHEAD=${STEPS_OVERHEAD:-300}
REPS_OVERHEAD=${REPS_OVERHEAD:-3}
# 9 rounds of 3000 steps: on the lent VMs the unprofiled runs alone spread by 40%, and 5 of 1000
# put CUPTI's kernel records alone at 1.46x in one call and 1.14x in the next (BENCHMARKS.md)
STEPS_FLOOR=${STEPS_FLOOR:-3000}
REPS_FLOOR=${REPS_FLOOR:-9}
FLOOR_MODES=${FLOOR_MODES:-off kernel kernel_runtime cupti:tprof cpu gpu}
mkdir -p "$OUT"
RESULTS=$OUT/results.jsonl
: > "$RESULTS"
failed=0
EXAMPLE=$BUILD/examples/train_mlp_cuda
CHECK="$PY $ROOT/bench/gpu/check_trace.py"
WINDOW=(--profile --profiling.wait 5 --profiling.warmup 2 --profiling.active 10 --profiling.repeat 1)

say() { printf '\n== %s\n' "$*"; }

# record NAME STATUS JSON: one line of results
record() {
  printf '{"check": "%s", "status": "%s", "detail": %s}\n' "$1" "$2" "${3:-null}" >> "$RESULTS"
  echo "-> $1: $2"
  [ "$2" = FAIL ] && failed=1
  return 0
}

# run_check NAME COMMAND...: runs a check_trace.py command, records its last line
run_check() {
  local name=$1; shift
  local out
  out=$("$@" 2>&1); local rc=$?
  printf '%s\n' "$out" | sed '$d'
  local last
  last=$(printf '%s\n' "$out" | tail -n 1)
  local status
  status=$(printf '%s' "$last" | $PY -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2>/dev/null) || status=FAIL
  [ $rc -ne 0 ] && status=FAIL
  record "$name" "$status" "$(printf '%s' "$last" | $PY -c 'import json,sys; json.dump(json.load(sys.stdin), sys.stdout)' 2>/dev/null || echo null)"
}

# trace_in DIR: the trace file a tprof run wrote in DIR
trace_in() { $CHECK find "$1" 2>/dev/null; }

# trace_of WHICH: the trace of the tprof example, torch.profiler's, or tprof.torch's
trace_of() {
  case $1 in
    tprof) echo "${TPROF_TRACE:-}" ;;
    torch) echo "$OUT/torch_trace.json" ;;
    torch_tprof) echo "${TORCH_TPROF_TRACE:-}" ;;
  esac
}

# want SECTION: whether SECTION runs; CHECKS (a space-separated list of sections) picks some,
# default all: unit events torch torch_tprof stream autorun analyze report overhead floor graphs
# compiled subscribers nsys. The build always runs.
want() { [ -z "${CHECKS:-}" ] || [[ " $CHECKS " == *" $1 "* ]]; }

say "machine"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  nvcc --version | tail -n 1 || true
  $PY -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' || true
} | tee "$OUT/machine.txt"

say "build"
: > "$OUT/build.log"
if [ -n "${DEBS:-}" ]; then
  "$ROOT/bench/gpu/deps.sh" unpack "$DEBS" "$BUILD-deps" >> "$OUT/build.log" 2>&1 || {
    cat "$OUT/build.log"; record build FAIL '"cannot unpack the .deb files of DEBS"'; exit 1; }
  . "$BUILD-deps/env.sh"
fi
# The CUDA whose CUPTI headers tprof compiles against: the first of TPROF_CUDA_HOME, CUDA_HOME,
# /usr/local/cuda and the folder above nvcc's that has them.
cuda_dir() {
  local nvcc d
  nvcc=$(command -v nvcc) && nvcc=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  for d in "${TPROF_CUDA_HOME:-}" "${CUDA_HOME:-}" /usr/local/cuda "$nvcc"; do
    if [ -n "$d" ] && { [ -f "$d/include/cupti.h" ] || [ -f "$d/extras/CUPTI/include/cupti.h" ]; }; then
      echo "$d"; return
    fi
  done
  echo /usr/local/cuda
}
CUDA_DIR=$(cuda_dir)
# shellcheck disable=SC2086 # CMAKE_FLAGS holds several flags
# MAKEFLAGS=-k: one target that fails (a torch whose C++ API moved breaks the observer) still
# leaves the others built, so the checks that need only them run.
if cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DTPROF_CUDA_HOME="$CUDA_DIR" ${CMAKE_FLAGS:-} \
     >> "$OUT/build.log" 2>&1 &&
   { MAKEFLAGS=-k cmake --build "$BUILD" -j"$(nproc)" >> "$OUT/build.log" 2>&1 ||
     { grep -E -B2 -A3 'error|Error [0-9]' "$OUT/build.log" | tail -n 30
       record build FAIL '"some targets failed: see build.log"'; }; } && [ -x "$EXAMPLE" ]; then
  grep -q '"build", "status": "FAIL"' "$RESULTS" || record build PASS
  # a build without CUPTI's headers has only the GPU stub: every check below would be CPU-only
  grep -q 'GPU sources built with the CUPTI headers' "$OUT/build.log" ||
    { record cupti_headers FAIL "\"no $CUDA_DIR/include/cupti.h: the GPU stub was built\""; exit 1; }
else
  tail -n 30 "$OUT/build.log"
  record build FAIL '"see build.log (is nvcc found? is the public API implemented?)"'
  exit 1
fi

if want unit; then
say "unit tests"
if (cd "$BUILD" && timeout 300 ctest -L unit -j"$(nproc)" --output-on-failure) > "$OUT/ctest.log" 2>&1; then
  record unit_tests PASS
else
  tail -n 30 "$OUT/ctest.log"
  record unit_tests FAIL '"see ctest.log"'
fi
fi

if want events; then
say "profiled example vs CUDA events"
rm -rf "$OUT/runs"
timeout 300 "$EXAMPLE" --steps 30 --batch 1024 --cuda-events "$OUT/events.jsonl" "${WINDOW[@]}" \
  --profiling.gpu on --profiling.output_dir "$OUT/runs" --profiling.run_id events \
  > "$OUT/events_run.log" 2>&1
rc=$?
cat "$OUT/events_run.log" | tail -n 5
TPROF_TRACE=$(trace_in "$OUT/runs/events")
if [ $rc -ne 0 ] || [ -z "$TPROF_TRACE" ]; then
  record events FAIL "\"the example exited with $rc or wrote no trace; see events_run.log\""
else
  if grep -E 'tprof: .*(GPU|CUPTI)' "$OUT/events_run.log"; then
    record cupti_clean FAIL '"tprof warned about the GPU source"'
  else
    record cupti_clean PASS
  fi
  run_check events $CHECK events "$TPROF_TRACE" "$OUT/events.jsonl"
fi
fi

if want torch; then
say "PyTorch under torch.profiler"
if timeout 300 $PY bench/gpu/torch_mlp.py --steps 30 --batch 1024 --trace "$OUT/torch_trace.json" > "$OUT/torch_run.log" 2>&1; then
  tail -n 2 "$OUT/torch_run.log"
  record torch_trace PASS
else
  tail -n 20 "$OUT/torch_run.log"
  record torch_trace FAIL '"see torch_run.log"'
fi
fi

# same_as_torch NAME LOG TRACE: a tprof run of torch_mlp.py (its log, its trace) against
# torch.profiler's trace of the same program: a FAIL where tprof warned about the GPU source or
# wrote no trace, a SKIP without torch.profiler's trace, else check_trace.py same_kernels (the
# same kernels in the steps); status 0 when it compared, so that the caller's checks follow.
same_as_torch() {
  local name=$1 log=$2 trace=$3
  if grep -E 'tprof: .*(GPU|CUPTI)' "$log"; then
    record "$name" FAIL '"tprof warned about the GPU source"'
  elif [ -z "$trace" ]; then
    record "$name" FAIL '"no trace in the run directory"'
  elif [ ! -f "$OUT/torch_trace.json" ]; then
    record "$name" SKIP '"no torch.profiler trace to compare with (CHECKS: add torch)"'
  else
    run_check "$name" $CHECK same_kernels "$trace" "$OUT/torch_trace.json"
    return 0
  fi
  return 1
}

# torch_tprof_run NAME OPS_NAME DIR [ARGS...]: torch_mlp.py under tprof.profile (the Python
# package, tprof's own CUPTI source) into DIR, with ARGS; its kernels per step must be
# torch.profiler's (NAME) and each charged to the same op (OPS_NAME, issue 21: ops through torch's
# observer); tprof must not warn about the GPU source. Leaves the trace in RUN_TRACE ("": none).
torch_tprof_run() {
  local name=$1 ops=$2 dir=$3; shift 3
  RUN_TRACE=
  if [ ! -d "$BUILD/python/tprof" ]; then
    record "$name" SKIP '"the Python package was not built (see build.log)"'
  elif PYTHONPATH=$BUILD/python timeout 300 $PY bench/gpu/torch_mlp.py --steps 30 --batch 1024 \
         --tprof "$dir" "$@" > "${dir}_run.log" 2>&1; then
    tail -n 2 "${dir}_run.log"
    RUN_TRACE=$(trace_in "$dir/torch_mlp")
    same_as_torch "$name" "${dir}_run.log" "$RUN_TRACE" &&
      run_check "$ops" $CHECK kernel_ops "$RUN_TRACE" "$OUT/torch_trace.json"
  else
    tail -n 20 "${dir}_run.log"
    record "$name" FAIL "\"see $(basename "$dir")_run.log\""
  fi
}

if want torch_tprof; then
say "PyTorch under tprof.profile (the Python package, tprof's own CUPTI source)"
torch_tprof_run torch_tprof torch_kernel_ops "$OUT/torch_tprof"
TORCH_TPROF_TRACE=$RUN_TRACE
fi

if want stream; then
say "a streamed window with the GPU (issue 25): CUPTI's records in the segments as it records"
# tprof.profile(stream=True): the same steps as torch_tprof's, the trace written while the window
# records and its summary computed in pieces; its kernels must be torch.profiler's, each charged
# to the same op, and its summary files what `tprof analyze` finds in its trace
torch_tprof_run torch_stream torch_stream_ops "$OUT/torch_stream" --stream
[ -n "$RUN_TRACE" ] && run_check torch_stream_summary $CHECK summary "$OUT/torch_stream/torch_mlp" "$BUILD"
fi

if want autorun; then
say "tprof run: the PyTorch script unchanged, profiled on the GPU (gpu: auto)"
# the same MLP with no profiler of its own, under tprof run with torch.profiler's schedule (steps
# 5-14): its steps are its optimizer steps; the kernels of those steps must be torch.profiler's,
# and its summary files what `tprof analyze` finds
rm -rf "$OUT/autorun"
if [ ! -d "$BUILD/python/tprof" ]; then
  record autorun SKIP '"the Python package was not built (see build.log)"'
elif PYTHONPATH=$BUILD/python timeout 300 "$BUILD/tprof" run --output_dir "$OUT/autorun" --wait 3 \
       --warmup 2 --active 10 --repeat 1 --top_k 1000 -- $PY bench/gpu/torch_mlp.py --steps 30 \
       --batch 1024 \
       > "$OUT/autorun.log" 2>&1; then
  run_dir=$(sed -n 's/^tprof: run directory: //p' "$OUT/autorun.log" | tail -n 1)
  trace=$(trace_in "$run_dir")
  same_as_torch autorun "$OUT/autorun.log" "$trace" &&
    run_check autorun_summary $CHECK summary "$run_dir" "$BUILD"
else
  tail -n 20 "$OUT/autorun.log"
  record autorun FAIL '"tprof run failed: see autorun.log"'
fi
fi

if want analyze; then
say "tprof analyze on the traces"
for which in tprof torch torch_tprof; do
  trace=$(trace_of $which)
  if [ ! -x "$BUILD/tprof" ]; then record "analyze_$which" SKIP '"no tprof command in this build"'
  elif [ ! -f "$trace" ]; then record "analyze_$which" SKIP '"no trace"'
  elif timeout 120 "$BUILD/tprof" analyze "$trace" --json --top 20 > "$OUT/analyze_$which.json" 2> "$OUT/analyze_$which.err"; then
    run_check "analyze_$which" $CHECK analyze "$trace" "$OUT/analyze_$which.json"
  else
    cat "$OUT/analyze_$which.err"
    record "analyze_$which" FAIL '"tprof analyze failed"'
  fi
done
if [ -n "${TPROF_TRACE:-}" ] && [ -f "$OUT/torch_trace.json" ]; then
  run_check compare $CHECK compare "$TPROF_TRACE" "$OUT/torch_trace.json"
fi
fi

if want report; then
say "tprof report on the traces"
for which in tprof torch torch_tprof; do
  trace=$(trace_of $which)
  html=$OUT/report_$which.html
  if [ ! -f "$trace" ]; then record "report_$which" SKIP '"no trace"'
  elif timeout 120 "$BUILD/tprof" report "$trace" -o "$html" > "$OUT/report_$which.log" 2>&1; then
    record "report_$which" PASS "{\"bytes\": $(stat -c %s "$html")}"
  else
    cat "$OUT/report_$which.log"
    record "report_$which" FAIL '"tprof report failed"'
  fi
done
fi

if want overhead; then
say "overhead ($REPS_OVERHEAD alternating runs of $STEPS_OVERHEAD steps per mode)"
: > "$OUT/overhead_runs.txt"
for _ in $(seq "$REPS_OVERHEAD"); do
  for batch in 64 1024; do
    for mode in off cpu gpu torch torch_prof; do
      case $mode in
        off) cmd=("$EXAMPLE") ;;
        cpu) cmd=("$EXAMPLE" --profile --profiling.gpu off --profiling.output_dir "$OUT/overhead"
                  --profiling.summary false) ;;
        gpu) cmd=("$EXAMPLE" --profile --profiling.gpu on --profiling.output_dir "$OUT/overhead"
                  --profiling.summary false) ;;
        torch) cmd=($PY bench/gpu/torch_mlp.py) ;;
        torch_prof) cmd=($PY bench/gpu/torch_mlp.py --profile-all) ;;
      esac
      ms=$(timeout 300 "${cmd[@]}" --steps "$STEPS_OVERHEAD" --batch "$batch" 2>> "$OUT/overhead.err" |
           grep -o 'step_ms=[0-9.]*' | cut -d= -f2)
      [ -n "$ms" ] && echo "$mode@$batch $ms" >> "$OUT/overhead_runs.txt"
    done
  done
done
run_check overhead $CHECK overhead "$OUT/overhead_runs.txt"
fi

if want floor; then
say "CUPTI's floor (issue 26): the example at batch 64, every step, $REPS_FLOOR alternating runs of $STEPS_FLOOR steps"
# off: unprofiled; kernel, kernel_callback (+ a callback on each launch, no runtime records),
# kernel_launch (+ the runtime's launches only), kernel_driver, cupti:KIND,KIND... (any set of
# cupti_floor.c's kinds),
# kernel_runtime, all (tprof's former kinds, the whole DRIVER kind), cupti:tprof (its kinds and
# callbacks now): CUPTI alone with those kinds on, records counted
# and dropped (bench/gpu/cupti_floor.c, injected by the driver); cpu, gpu: tprof (every step
# recorded) without and with its CUPTI source; torch, torch_prof: PyTorch without and with
# torch.profiler. Ratios against the unprofiled run of the same program.
FLOOR_LIB=$BUILD/bench/libcupti_floor.so
: > "$OUT/floor_runs.txt"
if [ ! -f "$FLOOR_LIB" ]; then
  record floor SKIP '"no build/bench/libcupti_floor.so (no CUPTI headers?)"'
else
  for _ in $(seq "$REPS_FLOOR"); do
    for mode in $FLOOR_MODES; do
      env=(TPROF_FLOOR_KINDS=) cmd=("$EXAMPLE")
      case $mode in
        kernel) env=(CUDA_INJECTION64_PATH="$FLOOR_LIB" TPROF_FLOOR_KINDS=kernel) ;;
        kernel_launch) env=(CUDA_INJECTION64_PATH="$FLOOR_LIB" TPROF_FLOOR_KINDS=kernel,runtime_launch) ;;
        cupti:*) env=(CUDA_INJECTION64_PATH="$FLOOR_LIB" TPROF_FLOOR_KINDS="${mode#cupti:}") ;;
        kernel_callback) env=(CUDA_INJECTION64_PATH="$FLOOR_LIB" TPROF_FLOOR_KINDS=kernel,launch_callback) ;;
        kernel_driver) env=(CUDA_INJECTION64_PATH="$FLOOR_LIB" TPROF_FLOOR_KINDS=kernel,driver) ;;
        kernel_runtime) env=(CUDA_INJECTION64_PATH="$FLOOR_LIB" TPROF_FLOOR_KINDS=kernel,runtime) ;;
        all) env=(CUDA_INJECTION64_PATH="$FLOOR_LIB" TPROF_FLOOR_KINDS=all) ;;
        cpu|gpu) cmd+=(--profile --profiling.gpu "$([ $mode = gpu ] && echo on || echo off)"
                       --profiling.output_dir "$OUT/floor" --profiling.summary false) ;;
        torch) cmd=($PY bench/gpu/torch_mlp.py) ;;
        torch_prof) cmd=($PY bench/gpu/torch_mlp.py --profile-all) ;;
      esac
      ms=$(env "${env[@]}" timeout 120 "${cmd[@]}" --steps "$STEPS_FLOOR" --batch 64 \
             2>> "$OUT/floor.err" | grep -o 'step_ms=[0-9.]*' | cut -d= -f2)
      [ -n "$ms" ] && echo "$mode@64 $ms" >> "$OUT/floor_runs.txt"
    done
  done
  grep cupti_floor "$OUT/floor.err" | sort | uniq -c
  run_check floor $CHECK overhead "$OUT/floor_runs.txt"
fi
fi

if want graphs; then
say "CUDA graphs (issue 26): the example's graph per node and graph-level, torch.cuda.graphs"
# analyze_graph NAME TRACE LEVEL [NODES]: tprof analyze of a graph run, then its check
analyze_graph() {
  if [ -z "$2" ]; then record "$1" FAIL "\"no trace; see $1.log\""
  elif timeout 120 "$BUILD/tprof" analyze "$2" --json --top 1000000 > "$OUT/analyze_$1.json" 2> "$OUT/analyze_$1.err"; then
    run_check "$1" $CHECK graph "$2" "$OUT/analyze_$1.json" "$3" ${4:+"$4"}
  else
    cat "$OUT/analyze_$1.err"; record "$1" FAIL '"tprof analyze failed"'
  fi
}
for level in node graph; do
  timeout 120 "$EXAMPLE" --steps 30 --batch 1024 --cuda-graph on "${WINDOW[@]}" --profiling.gpu on \
    --profiling.cuda_graphs $level --profiling.output_dir "$OUT/runs" --profiling.run_id "graph_$level" \
    > "$OUT/graph_$level.log" 2>&1
  rc=$?
  tail -n 1 "$OUT/graph_$level.log"
  if [ $rc -ge 128 ] && [ $rc -ne 137 ] && [ -f "$BUILD/bench/libstack_on_fault.so" ]; then
    # killed by a signal: again with the stack printed, the example's frames as source lines
    stack=$OUT/graph_${level}_stack.txt
    LD_PRELOAD=$BUILD/bench/libstack_on_fault.so timeout 120 "$EXAMPLE" --steps 30 --batch 1024 \
      --cuda-graph on "${WINDOW[@]}" --profiling.gpu on --profiling.cuda_graphs $level \
      --profiling.output_dir "$OUT/runs" --profiling.run_id "graph_${level}_stack" > "$stack" 2>&1
    grep -o "train_mlp_cuda(+0x[0-9a-f]*)" "$stack" | grep -o '0x[0-9a-f]*' |
      xargs -r addr2line -f -i -C -e "$EXAMPLE" >> "$stack" 2>&1
    sed -n '/stack_on_fault/,$p' "$stack" | head -n 60
    # and CUPTI alone with the graph-level kind, with and without kernel records, no tprof
    for kinds in kernel,runtime,graph runtime,graph; do
      CUDA_INJECTION64_PATH=$BUILD/bench/libcupti_floor.so TPROF_FLOOR_KINDS=$kinds timeout 60 \
        "$EXAMPLE" --steps 30 --batch 1024 --cuda-graph on > "$OUT/graph_cupti_$kinds.log" 2>&1
      echo "CUPTI alone, kinds $kinds: exit $? ($(grep cupti_floor "$OUT/graph_cupti_$kinds.log"))" |
        tee -a "$stack"
    done
  fi
  # the example's graph: the loss's memset and its 25 kernels; per node where tprof refused the
  # graph level for the CUPTI found (13.0 crashed in cudaGraphLaunch), as it says once
  expect=$level
  grep -q 'cuda_graphs: graph needs CUPTI' "$OUT/graph_$level.log" && expect=node
  analyze_graph "graph_$level" "$(trace_in "$OUT/runs/graph_$level")" $expect 26
done
if [ -d "$BUILD/python/tprof" ]; then
  PYTHONPATH=$BUILD/python timeout 300 $PY bench/gpu/torch_mlp.py --steps 30 --batch 1024 \
    --cuda-graph --tprof "$OUT/torch_graph" > "$OUT/torch_graph.log" 2>&1
  tail -n 2 "$OUT/torch_graph.log"
  analyze_graph torch_graph "$(trace_in "$OUT/torch_graph/torch_mlp")" node
  # torch.compile(mode="reduce-overhead"): inductor's CUDA graphs (forward and backward), replayed
  PYTHONPATH=$BUILD/python timeout 300 $PY bench/gpu/torch_mlp.py --steps 30 --batch 1024 \
    --compile --compile-mode reduce-overhead --tprof "$OUT/compiled_graph" \
    > "$OUT/compiled_graph.log" 2>&1
  tail -n 2 "$OUT/compiled_graph.log"
  analyze_graph compiled_graph "$(trace_in "$OUT/compiled_graph/torch_mlp")" node any
else
  record torch_graph SKIP '"the Python package was not built (see build.log)"'
fi
fi

if want compiled; then
say "torch.compile (issue 26): inductor's Triton kernels, named and attributed"
if [ ! -d "$BUILD/python/tprof" ]; then
  record compiled SKIP '"the Python package was not built (see build.log)"'
else
  # torch.profiler first: its run compiles and fills inductor's cache, which the second reuses
  PYTHONPATH=$BUILD/python timeout 300 $PY bench/gpu/torch_mlp.py --steps 30 --batch 1024 \
    --compile --trace "$OUT/compiled_torch.json" > "$OUT/compiled_torch.log" 2>&1
  PYTHONPATH=$BUILD/python timeout 300 $PY bench/gpu/torch_mlp.py --steps 30 --batch 1024 \
    --compile --tprof "$OUT/compiled" > "$OUT/compiled_tprof.log" 2>&1
  tail -n 1 "$OUT/compiled_torch.log" "$OUT/compiled_tprof.log"
  trace=$(trace_in "$OUT/compiled/torch_mlp")
  if [ -z "$trace" ] || [ ! -f "$OUT/compiled_torch.json" ]; then
    record compiled FAIL '"a run wrote no trace: see compiled_*.log"'
  elif timeout 120 "$BUILD/tprof" analyze "$trace" --json > "$OUT/analyze_compiled.json" 2> "$OUT/analyze_compiled.err"; then
    run_check compiled $CHECK compiled "$trace" "$OUT/compiled_torch.json" "$OUT/analyze_compiled.json"
  else
    cat "$OUT/analyze_compiled.err"; record compiled FAIL '"tprof analyze failed"'
  fi
fi
fi

if want subscribers; then
say "Beside torch.profiler (issue 26): both record the same steps, each started first"
if [ ! -d "$BUILD/python/tprof" ] || [ ! -f "$OUT/torch_trace.json" ]; then
  record subscribers SKIP '"needs the Python package and the torch section'"'"'s trace"'
else
  for first in torch tprof; do
    rm -rf "$OUT/beside_$first"
    PYTHONPATH=$BUILD/python timeout 90 $PY bench/gpu/torch_mlp.py --steps 30 --batch 1024 \
      --beside $first --trace "$OUT/beside_${first}_torch.json" --tprof "$OUT/beside_$first" \
      > "$OUT/beside_$first.log" 2>&1
    echo "rc $? (torch.profiler and tprof, $first first)"; grep -i 'cupti\|tprof:' "$OUT/beside_$first.log" | head -n 5
    if [ ! -f "$OUT/beside_${first}_torch.json" ]; then
      record "beside_${first}_first" FAIL '"the torch.profiler trace is missing: see the log"'
    else
      run_check "beside_${first}_first" $CHECK subscribers "$OUT/beside_${first}_torch.json" \
        "$OUT/torch_trace.json" "$OUT/beside_$first.log" "$(trace_in "$OUT/beside_$first/torch_mlp")"
    fi
  done
fi
fi

if want nsys; then
say "Nsight Systems capture range"
# nsys on the PATH, else the one Nsight Compute ships (the lent machines have only that one,
# which captures but cannot make a report: the capture and tprof's warnings are checked alone)
NSYS=$(command -v nsys || ls /opt/nvidia/nsight-*/*/host/target-linux-x64/nsys 2> /dev/null | head -n 1)
if [ -n "$NSYS" ]; then
  rm -rf "$OUT/nsys" && mkdir -p "$OUT/nsys"
  echo "nsys: $NSYS"
  timeout 120 "$NSYS" profile --capture-range=cudaProfilerApi --capture-range-end=stop -f true \
    -o "$OUT/nsys/window" "$EXAMPLE" --steps 30 "${WINDOW[@]}" --profiling.nsight true \
    --profiling.output_dir "$OUT/nsys/runs" > "$OUT/nsys.log" 2>&1
  if ls "$OUT"/nsys/window.* > /dev/null 2>&1; then
    "$NSYS" stats --report nvtx_sum "$OUT"/nsys/window.nsys-rep > "$OUT/nsys_nvtx.txt" 2>&1 || true
    head -n 20 "$OUT/nsys_nvtx.txt"
    # under nsys, CUPTI belongs to Nsight: tprof must say so once and go on CPU-only
    n=$(grep -c 'another profiler holds CUPTI' "$OUT/nsys.log")
    grep 'tprof:' "$OUT/nsys.log" | head -n 3
    files=$(cd "$OUT/nsys" && ls window.* | tr '\n' ' ')
    detail="{\"cupti_warnings\": $n, \"files\": \"$files\"}"
    [ "$n" -le 1 ] && record nsys PASS "$detail" || record nsys FAIL "$detail"
  else
    tail -n 20 "$OUT/nsys.log"
    record nsys FAIL '"no report; see nsys.log"'
  fi
else
  record nsys SKIP '"nsys not installed"'
fi
fi

$PY -c 'import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; json.dump({r["check"]: r for r in rows}, open(sys.argv[2], "w"), indent=1)' \
  "$RESULTS" "$OUT/results.json"
say "summary ($OUT/results.json)"
$PY -c 'import json,sys; [print("%-16s %s" % (k, v["status"])) for k, v in json.load(open(sys.argv[1])).items()]' "$OUT/results.json"
exit $failed
