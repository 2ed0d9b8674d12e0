#!/usr/bin/env bash
# The CPU path's own figures against reference tools, on this machine, in one run — a
# benchmark, not a test (it fails only when something could not run):
#   - our CPU SGEMM (server/cpu/, the matmul experiment's CPU column, n = 16 … 2048)
#     against numpy's `a @ b` (OpenBLAS) and `torch.matmul` on the CPU;
#   - our CPU training step (batch 32 / hidden 128 and batch 256 / hidden 1024, 200 Adam
#     steps) against the same step in PyTorch, eager and torch.compile.
# The comparison is reference.py's, fed with our results (tests/gpu/README.md). It names
# the CPU, the SGEMM kernels ours ran (AVX-512 or AVX2, chosen at run time) and the
# measured size from which our products use every core. For ours and numpy interleaved
# in one run, see tests/bench/sgemm.sh.
#
#   bash tests/gpu/cpu-reference.sh [--baseline BIN] [OUT_DIR]
#
# --baseline BIN measures another gpulab binary (an older build) in the same run, against
# the same reference measurements: its rows are marked [baseline]. OUT_DIR defaults to
# target/cpu-reference. Needs the venv tests/setup.sh makes (target/reference-venv).
# This workplace sets OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE for old OpenBLAS builds;
# they pin a current numpy to an older kernel, so they are unset for the reference run
# alone, and the kernel numpy then uses is printed (threadpoolctl).
set -euo pipefail
cd "$(dirname "$0")/../.."

BASELINE=""
OUT_DIR=target/cpu-reference
while (($#)); do
  case "$1" in
    --baseline) BASELINE="$2"; shift ;;
    -*) echo "usage: $0 [--baseline BIN] [OUT_DIR]" >&2; exit 2 ;;
    *) OUT_DIR="$1" ;;
  esac
  shift
done
PYTHON="${PYTHON:-target/reference-venv/bin/python}"
[[ -x $PYTHON ]] || { echo "cpu-reference.sh: no $PYTHON: run bash tests/setup.sh" >&2; exit 1; }
cargo build --locked --release --bin gpulab
mkdir -p "$OUT_DIR"

# ours BIN NAME: our three runs with BIN, as one bench-all-shaped document OUT_DIR/NAME.json.
ours() {
  local bin="$1" parts="$OUT_DIR/$2-parts"
  mkdir -p "$parts"
  echo "== $2: $bin"
  "$bin" device >"$parts/device.json"
  "$bin" bench matmul --max-size 2048 --json >"$parts/matmul.json"
  "$bin" bench training --batch 32 --hidden 128 --json >"$parts/training-32-128.json"
  "$bin" bench training --batch 256 --hidden 1024 --json >"$parts/training-256-1024.json"
  "$PYTHON" - "$parts" "$("$bin" --version)" >"$OUT_DIR/$2.json" <<'EOF'
import json, pathlib, sys
parts, version = pathlib.Path(sys.argv[1]), sys.argv[2].split()[-1]
load = lambda name: json.loads((parts / f"{name}.json").read_text())
print(json.dumps({
    "gpulab_version": version,
    "device": load("device"),
    "experiments": [{"name": name.split("-")[0], "result": load(name)}
                    for name in ("matmul", "training-32-128", "training-256-1024")],
}, indent=2))
EOF
}

[[ -n $BASELINE ]] && ours "$BASELINE" baseline
ours target/release/gpulab ours
# Which CPU, which SGEMM kernels and from which size our products use every core.
"$PYTHON" - "$OUT_DIR/ours.json" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
cpu = doc["device"].get("cpu", {})
matmul = next(e["result"] for e in doc["experiments"] if e["name"] == "matmul")
method = matmul["provenance"]["method"]
cpu_part = lambda m: m[m.find("CPU:"):m.find(", host clock")] if "CPU:" in m else m
print(f"== CPU: {cpu.get('model')} ({cpu.get('logical_cores')} logical cores); "
      f"{cpu_part(method) or 'SGEMM: ' + cpu.get('sgemm_kernel', 'kernel not reported')}")
EOF
baseline_args=()
[[ -n $BASELINE ]] && baseline_args=(--baseline "baseline=$OUT_DIR/baseline.json")
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE \
  "$PYTHON" tests/gpu/reference.py "$OUT_DIR/ours.json" --numpy --out "$OUT_DIR" "${baseline_args[@]}"
