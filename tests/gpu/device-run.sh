#!/usr/bin/env bash
# The GPU chain, run from the folder tests/gpu/pack.sh made, on the machine to measure:
#   1. gpulab doctor            the layered GPU check, each layer ok or failed
#   2. backend                  which backend our binary opens (gpulab device)
#   3. gpulab selftest          every experiment against its reference, GPU checks included
#   4. GPU tests                tests/gpu.rs from the packed test binary, GPULAB_REQUIRE_GPU=1
#   5. gpulab bench all --json  every experiment at its default size → OUT/ours.json
#   6. reference.py             the same measurements in PyTorch on the same device, the
#                               ratio table → OUT/comparison.{md,json}
# Every step runs even when an earlier one failed (its log is in OUT/logs/), except the
# comparison, which needs step 5's output; the script exits 1 when any step failed.
#
#   bash device-run.sh [--cpu] [--quick] [--no-compile] [OUT_DIR]
#
# OUT_DIR defaults to $OUT, else ./device-run-out. Without --cpu a GPU is required: no
# GPU, or a CPU backend, is a failure. --cpu is for a machine without one (CI checks the
# whole chain this way): the GPU tests still run, unforced, and print SKIPPED, and our CPU
# backend is compared with PyTorch on the CPU. --quick runs each compared experiment at
# small sizes instead of `bench all` at the defaults. PYTHON names the Python that has
# torch (default python3). Without --cpu, NVIDIA libraries that pip wheels put in that
# Python's site-packages (nvidia/*/lib, and the CUDA headers NVRTC needs) are added to
# LD_LIBRARY_PATH and GPULAB_CUDA_INCLUDE.
set -uo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"

CPU_ONLY=0
QUICK=0
REFERENCE_ARGS=()
OUT_DIR="${OUT:-}"
while (($#)); do
  case "$1" in
    --cpu) CPU_ONLY=1 ;;
    --quick) QUICK=1 ;;
    --no-compile) REFERENCE_ARGS+=(--no-compile) ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
    -*) echo "device-run.sh: unknown option $1" >&2; exit 2 ;;
    *) OUT_DIR="$1" ;;
  esac
  shift
done
OUT_DIR="$(mkdir -p "${OUT_DIR:-device-run-out}" && cd "${OUT_DIR:-device-run-out}" && pwd)"
mkdir -p "$OUT_DIR/logs"
PYTHON="${PYTHON:-python3}"
GPULAB="$HERE/gpulab"
for file in gpulab gpulab-tests reference.py; do
  [[ -e "$HERE/$file" ]] || { echo "device-run.sh: $HERE/$file is missing: run tests/gpu/pack.sh" >&2; exit 2; }
done

# CUDA libraries from pip wheels (PyTorch's own, or nvidia-*), when there are any: our
# loader finds NVRTC and cuBLAS 12 or 13 on the loader path. Not with --cpu, where no
# GPU library is wanted and a set unlike the one already configured could only confuse.
if ((!CPU_ONLY)); then
  wheel_paths="$("$PYTHON" - <<'EOF' 2>/dev/null
import pathlib, site, sys
roots = [pathlib.Path(p) for p in sys.path + site.getsitepackages() if p.endswith("-packages")]
libs, includes = set(), set()
for root in roots:
    for lib in (root / "nvidia").glob("**/lib"):
        libs.add(str(lib))
    for header in (root / "nvidia").glob("**/include/cuda_fp16.h"):
        includes.add(str(header.parent))
print(":".join(sorted(libs)))
print(":".join(sorted(includes)))
EOF
  )"
  wheel_libs="$(sed -n 1p <<<"$wheel_paths")"
  wheel_includes="$(sed -n 2p <<<"$wheel_paths")"
  [[ -n $wheel_libs ]] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$wheel_libs"
  [[ -n $wheel_includes ]] && export GPULAB_CUDA_INCLUDE="${GPULAB_CUDA_INCLUDE:+$GPULAB_CUDA_INCLUDE:}$wheel_includes"
fi

declare -a SUMMARY=()
FAILED=0
# step NAME COMMAND…: runs it with its output on the console and in OUT/logs/NAME.log.
step() {
  local name="$1"
  shift
  local log="$OUT_DIR/logs/$name.log"
  echo
  echo "== $name: $*"
  "$@" 2>&1 | tee "$log"
  local status=${PIPESTATUS[0]}
  if ((status == 0)); then
    SUMMARY+=("ok       $name")
  else
    SUMMARY+=("FAILED   $name (exit $status; $log)")
    FAILED=1
  fi
  return "$status"
}
skip() {
  echo
  echo "== $1: SKIPPED: $2"
  SUMMARY+=("skipped  $1: $2")
}

require_backend() {
  local kind
  kind="$("$GPULAB" device | "$PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["kind"])')" || return 1
  echo "our backend: $kind"
  if ((CPU_ONLY)); then
    [[ $kind == cpu ]] && echo "(--cpu: the GPU-only steps below are skipped or run unforced)"
    return 0
  fi
  [[ $kind == cuda ]] || { echo "a GPU is required (run with --cpu on a machine without one)"; return 1; }
}

gpu_tests() {
  if ((CPU_ONLY)); then
    echo "--cpu: GPULAB_REQUIRE_GPU is not set, so each GPU test prints SKIPPED when there is no GPU"
    "$HERE/gpulab-tests" gpu:: --test-threads=1 --nocapture
  else
    GPULAB_REQUIRE_GPU=1 "$HERE/gpulab-tests" gpu:: --test-threads=1 --nocapture
  fi
}

# --quick: the four compared experiments at small sizes, in bench all's document shape.
quick_bench() {
  local parts="$OUT_DIR/quick-parts"
  mkdir -p "$parts"
  "$GPULAB" device >"$parts/device.json" || return 1
  "$GPULAB" bench matmul --max-size 256 --json >"$parts/matmul.json" || return 1
  "$GPULAB" bench transfer --max-bytes 1048576 --json >"$parts/transfer.json" || return 1
  "$GPULAB" bench training --steps 30 --log-every 10 --json >"$parts/training.json" || return 1
  "$GPULAB" bench precision --size 256 --json >"$parts/precision.json" || return 1
  "$PYTHON" - "$parts" "$("$GPULAB" --version)" <<'EOF'
import json, pathlib, sys, time
parts, version = pathlib.Path(sys.argv[1]), sys.argv[2].split()[-1]
load = lambda name: json.loads((parts / f"{name}.json").read_text())
print(json.dumps({
    "gpulab_version": version,
    "generated_at_unix": int(time.time()),
    "device": load("device"),
    "reduced": "tests/gpu/device-run.sh --quick",
    "experiments": [{"name": n, "result": load(n)} for n in ("matmul", "transfer", "training", "precision")],
}, indent=2))
EOF
}

bench() {
  if ((QUICK)); then
    quick_bench >"$OUT_DIR/ours.json"
  else
    "$GPULAB" bench all --json >"$OUT_DIR/ours.json"
  fi
  local status=$?
  echo "wrote $OUT_DIR/ours.json"
  return "$status"
}

echo "device-run.sh: $(uname -n), out: $OUT_DIR, mode: $( ((CPU_ONLY)) && echo --cpu || echo GPU required)$( ((QUICK)) && echo ', --quick')"
"$GPULAB" --version
step doctor "$GPULAB" doctor
step backend require_backend
step selftest "$GPULAB" selftest
step gpu-tests gpu_tests
if step bench bench; then
  step reference "$PYTHON" "$HERE/reference.py" "$OUT_DIR/ours.json" --out "$OUT_DIR" "${REFERENCE_ARGS[@]}"
else
  skip reference "our bench run failed, so there is nothing to compare"
  FAILED=1
fi

echo
echo "== device-run.sh summary (logs in $OUT_DIR/logs)"
printf '  %s\n' "${SUMMARY[@]}"
if ((FAILED)); then
  echo "device-run.sh: FAILED" >&2
  exit 1
fi
echo "device-run.sh: every step passed; the table is $OUT_DIR/comparison.md"
