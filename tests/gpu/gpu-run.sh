#!/usr/bin/env bash
# The GPU run: one call on a GPU machine that always ends with a verdict. It runs from the
# folder tests/gpu/pack.sh made (the machine has Python and PyTorch, no Rust), every step
# under its own time limit and all of them inside one budget, and leaves at most 8 files
# in OUT_DIR (what the device runner copies back):
#   summary.txt        every step and gate in words, the table's headline
#   verdict.json       PASS / FAIL / INCOMPLETE, each step, each numeric gate (verdict.py)
#   environment.json   nvidia-smi, torch and its CUDA, the libraries ours loaded and where
#   ours.json          `gpulab bench all --json` (or --quick's reduced document)
#   comparison.md      ours against PyTorch on the same device (reference.py)
#   comparison.json
#   recorded-run.json  ours.json stamped as a recorded reference run (a GPU run goes to
#                      content/reference-runs/; a --cpu run is a test fixture only)
#   logs.tar.gz        every step's log and the raw probe results
# Order: environment first; the cold-sensitive probes (timing trap, streams) before
# anything warms the GPU; doctor, backend, selftest, the injected-failure fallback; our
# benches and PyTorch's; the allocator playground's model against PyTorch's caching
# allocator; the five tuning labs (each lab's baseline and known-good reference,
# interleaved in one job); the GPU tests; the same probes again, warm; then the verdict.
# summary.txt, verdict.json and logs.tar.gz are rewritten after every step, so a run cut
# short still says how far it got.
#
#   bash gpu-run.sh [--cpu] [--quick] [--no-compile] [--budget SECONDS] [OUT_DIR]
#
# OUT_DIR defaults to $OUT, else ./gpu-run-out. Without --cpu a GPU is required. --cpu is
# for a machine without one (CI runs the whole chain this way): GPU-only steps are
# skipped or run unforced and the numeric gates do not apply. --quick runs the compared
# experiments at small sizes. --budget (default 540) bounds the whole run; a step that
# would not fit is skipped, not started. PYTHON names the Python with torch (default
# python3). Exit status: 0 for PASS, 1 otherwise.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"

CPU_ONLY=0
QUICK=0
BUDGET=540
REFERENCE_ARGS=()
OUT_DIR="${OUT:-}"
while (($#)); do
  case "$1" in
    --cpu) CPU_ONLY=1 ;;
    --quick) QUICK=1 ;;
    --no-compile) REFERENCE_ARGS+=(--no-compile) ;;
    --budget) BUDGET="$2"; shift ;;
    -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
    -*) echo "gpu-run.sh: unknown option $1" >&2; exit 2 ;;
    *) OUT_DIR="$1" ;;
  esac
  shift
done
OUT_DIR="$(mkdir -p "${OUT_DIR:-gpu-run-out}" && cd "${OUT_DIR:-gpu-run-out}" && pwd)"
PYTHON="${PYTHON:-python3}"
GPULAB="$HERE/gpulab"
for file in gpulab gpulab-tests reference.py verdict.py env_capture.py; do
  [[ -e "$HERE/$file" ]] || { echo "gpu-run.sh: $HERE/$file is missing: run tests/gpu/pack.sh" >&2; exit 2; }
done
# Only the 8 files above go to OUT_DIR; everything else is written here and archived.
WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpu-run.XXXXXX")"
LOGS="$WORK/logs"
mkdir -p "$LOGS"
rm -f "$OUT_DIR"/{summary.txt,verdict.json,environment.json,ours.json,comparison.md,comparison.json,recorded-run.json,logs.tar.gz}
STARTED=$(date +%s)
DEADLINE=$((STARTED + BUDGET))
RESERVE=15 # seconds kept for the verdict and the archive
MODE=gpu
((CPU_ONLY)) && MODE=cpu
export GPULAB_BIN="$GPULAB" # the GPU tests spawn this binary, wherever the pack is

# CUDA libraries from pip wheels (PyTorch's own, or nvidia-*): our loader finds NVRTC
# and cuBLAS 12 or 13 on the loader path. Not with --cpu, where no GPU library is wanted.
if ((!CPU_ONLY)); then
  wheel_paths="$("$PYTHON" "$HERE/env_capture.py" --wheel-paths 2>/dev/null)"
  wheel_libs="$(sed -n 1p <<<"$wheel_paths")"
  wheel_includes="$(sed -n 2p <<<"$wheel_paths")"
  [[ -n $wheel_libs ]] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$wheel_libs"
  [[ -n $wheel_includes ]] && export GPULAB_CUDA_INCLUDE="${GPULAB_CUDA_INCLUDE:+$GPULAB_CUDA_INCLUDE:}$wheel_includes"
fi

# The verdict, the summary and the archive, as far as the run has got.
conclude() {
  "$PYTHON" "$HERE/verdict.py" --work "$WORK" --out "$OUT_DIR" --mode "$MODE" \
    --quick "$QUICK" --started "$STARTED" >"$LOGS/verdict.log" 2>&1 ||
    echo "gpu-run.sh: verdict.py failed (see logs/verdict.log)" >&2
  tar -czf "$OUT_DIR/logs.tar.gz" -C "$WORK" logs 2>/dev/null
}

# step NAME LIMIT COMMAND…: runs COMMAND with its output in logs/NAME.log, for at most
# LIMIT seconds and never past the budget; records ok / failed / timeout / skipped.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$((DEADLINE - $(date +%s) - RESERVE))
  if ((left < 5)); then
    record "$name" skipped 0 - "out of time: the ${BUDGET}s budget is spent"
    echo "== $name: SKIPPED (out of time)"
    return 1
  fi
  ((limit > left)) && limit=$left
  echo "== $name (limit ${limit}s): $*"
  local t0 status
  t0=$(date +%s.%N)
  timeout --kill-after=5 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  status=$?
  local seconds
  seconds=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  if ((status == 0)); then
    record "$name" ok "$seconds" "$status" ""
  elif ((status == 124 || status == 137)); then
    record "$name" timeout "$seconds" "$status" "stopped after its ${limit}s limit"
  else
    record "$name" failed "$seconds" "$status" "$(tail -n 3 "$LOGS/$name.log" | tr -d '\r' | cut -c1-300 | paste -sd' ')"
  fi
  echo "   $(tail -n 1 "$WORK/steps.tsv" | cut -f2,3 | tr '\t' ' ')s"
  conclude
  return "$status"
}
record() { # NAME STATUS SECONDS EXIT DETAIL → one line of steps.tsv
  printf '%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "${5//$'\t'/ }" >>"$WORK/steps.tsv"
}
skip() {
  record "$1" skipped 0 - "$2"
  echo "== $1: SKIPPED: $2"
}

# The steps (each a command, so `timeout` can stop it and everything it started).
export HERE GPULAB PYTHON WORK LOGS OUT_DIR CPU_ONLY QUICK
probes() { # cold|warm: the timing trap and the streams experiment, as JSON
  "$GPULAB" bench timing --json >"$WORK/logs/$1-timing.json" &&
    "$GPULAB" bench streams --json >"$WORK/logs/$1-streams.json"
}
require_backend() {
  local kind
  kind="$("$GPULAB" device | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["kind"])')" || return 1
  echo "our backend: $kind"
  ((CPU_ONLY)) && return 0
  [[ $kind == cuda ]] || { echo "a GPU is required (run with --cpu on a machine without one)"; return 1; }
}
injected_fallback() { # a failing start-up check must put the server on the CPU
  GPULAB_INJECT_SELFTEST_FAILURE=1 "$GPULAB" device >"$WORK/logs/injected-device.json" || return 1
  "$PYTHON" - "$WORK/logs/injected-device.json" <<'PY'
import json, sys
card = json.load(open(sys.argv[1]))
print("with an injected failure the backend is", card["kind"], "-", card.get("note", ""))
sys.exit(0 if card["kind"] == "cpu" and "injected failure" in card.get("note", "") else 1)
PY
}
gpu_tests() {
  if ((CPU_ONLY)); then
    "$HERE/gpulab-tests" gpu:: --test-threads=1 --nocapture
  else
    GPULAB_REQUIRE_GPU=1 "$HERE/gpulab-tests" gpu:: --test-threads=1 --nocapture
  fi
}
packed_binary() { # the packed test binary spawns the packed gpulab, wherever the pack is
  "$HERE/gpulab-tests" support::binary::the_spawned_server_is_the_packed_binary --exact --nocapture
}
quick_bench() { # the compared experiments at small sizes, in bench all's document shape
  local parts="$WORK/quick-parts"
  mkdir -p "$parts"
  "$GPULAB" device >"$parts/device.json" || return 1
  "$GPULAB" bench matmul --max-size 256 --json >"$parts/matmul.json" || return 1
  "$GPULAB" bench transfer --max-bytes 1048576 --json >"$parts/transfer.json" || return 1
  "$GPULAB" bench training --steps 30 --log-every 10 --json >"$parts/training.json" || return 1
  "$GPULAB" bench precision --size 256 --json >"$parts/precision.json" || return 1
  "$GPULAB" bench launch --max-kernels 100 --json >"$parts/launch.json" || return 1
  "$PYTHON" "$HERE/verdict.py" --assemble-quick "$parts" --version "$("$GPULAB" --version)"
}
bench() {
  if ((QUICK)); then quick_bench >"$OUT_DIR/ours.json"; else "$GPULAB" bench all --json >"$OUT_DIR/ours.json"; fi
}
allocator() { # the playground's allocator model against PyTorch's, sequence by sequence
  "$GPULAB" allocator-model "$HERE/allocator_sequences.json" >"$WORK/logs/allocator-model.json" || return 1
  echo "the model's figures: logs/allocator-model.json"
  if ((CPU_ONLY)); then
    echo "--cpu: PyTorch's caching allocator figures exist only on a GPU; the model alone ran"
    return 0
  fi
  "$PYTHON" "$HERE/ref_allocator.py" "$HERE/allocator_sequences.json" --out "$WORK/logs/allocator-torch.json" \
    --compare "$WORK/logs/allocator-model.json"
}
labs() { # each tuning lab's slow baseline and known-good reference, interleaved, graded
  local lab
  for lab in feed-the-gpu stop-waiting fit-the-budget mixed-precision slow-loop-doctor; do
    "$GPULAB" bench lab --lab "$lab" --json >"$WORK/logs/lab-$lab.json" || return 1
    echo "lab $lab: logs/lab-$lab.json"
  done
}
record_run() { # ours.json as a recorded reference run (a --cpu run: a fixture, never a GPU's)
  local dir="$WORK/recorded" fixture=()
  ((CPU_ONLY)) && fixture=(--fixture)
  mkdir -p "$dir/reference-runs"
  "$GPULAB" reference import "$OUT_DIR/ours.json" --content "$dir" "${fixture[@]}" || return 1
  mv "$dir"/reference-runs/recorded-*.json "$OUT_DIR/recorded-run.json"
}
export -f probes require_backend injected_fallback gpu_tests packed_binary quick_bench bench allocator labs record_run

echo "gpu-run.sh: $(uname -n), out: $OUT_DIR, mode: $MODE$( ((QUICK)) && echo ', --quick'), budget ${BUDGET}s"
"$GPULAB" --version
: >"$WORK/steps.tsv"
step environment 60 "$PYTHON" "$HERE/env_capture.py" --gpulab "$GPULAB" --out "$OUT_DIR/environment.json"
step cold-probes 90 bash -c 'probes cold'
step doctor 60 "$GPULAB" doctor
step backend 60 bash -c require_backend
step selftest 120 "$GPULAB" selftest
if ((CPU_ONLY)); then
  skip injected-fallback "--cpu: there is no GPU to fall back from"
else
  step injected-fallback 60 bash -c injected_fallback
fi
if step bench 240 bash -c bench; then
  step reference 240 "$PYTHON" "$HERE/reference.py" "$OUT_DIR/ours.json" --out "$OUT_DIR" "${REFERENCE_ARGS[@]}"
  step recorded-run 30 bash -c record_run
else
  skip reference "our bench run failed, so there is nothing to compare"
  skip recorded-run "our bench run failed, so there is nothing to record"
fi
step allocator 90 bash -c allocator
step labs 90 bash -c labs
step packed-binary 60 bash -c packed_binary
step gpu-tests 240 bash -c gpu_tests
step warm-probes 90 bash -c 'probes warm'
# Last, so it cannot warm or disturb anything measured above: PyTorch's pageable copies
# from buffers that differ in alignment, huge pages and first touch (why ours and
# torch's pageable figures differ); exits 0 without a GPU. Optional in the verdict.
step pageable-probe 60 "$PYTHON" "$HERE/probe_pageable.py"
# Our training step at the labs' GPU sizes, kernel by kernel against this GPU's
# ceilings (optional in the verdict; exits 0 without a GPU).
step training-probe 90 "$PYTHON" "$HERE/probe_training.py"
conclude
echo
cat "$OUT_DIR/summary.txt" 2>/dev/null
verdict="$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["verdict"])' "$OUT_DIR/verdict.json" 2>/dev/null)"
echo "gpu-run.sh: verdict ${verdict:-missing} ($(ls "$OUT_DIR" | wc -l) files in $OUT_DIR)"
rm -rf "$WORK"
[[ $verdict == PASS ]]
