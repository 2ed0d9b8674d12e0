#!/usr/bin/env bash
# CPU SGEMM, GPU Lab against numpy (OpenBLAS) on this machine, interleaved in one run: each
# round runs `gpulab bench matmul` (the matmul experiment's CPU column: 1 warm-up, median
# of 5 products per size) and then numpy's `a @ b` the same way, alternating which goes
# first, ROUNDS times, with a pause before ours so numpy's threads have stopped polling.
# Prints the CPU, our kernel and threading threshold, numpy's OpenBLAS kernel and
# threads, the load average before and after, and per size the median over rounds of
# each side's time and of ours ÷ numpy as speed (1.00 = level).
# A benchmark, not a test: it fails only when something could not run. The table also
# goes to target/bench/sgemm.md, and the medians to target/bench/cpu-reference.json, the
# record a server started from here reads (--cpu-reference) for the matmul panel's
# "N% of OpenBLAS's speed on this machine".
#
#   bash tests/bench/sgemm.sh            # 7 rounds, n = 128 … 2048
#   BENCH_ROUNDS=11 BENCH_MAX=1024 bash tests/bench/sgemm.sh
# Environment: GPULAB_BIN (default target/release/gpulab, built when missing), PYTHON
# (default target/reference-venv/bin/python, which tests/setup.sh makes). This workplace
# sets OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE for old OpenBLAS builds; they pin a current
# numpy to an older kernel, so they are unset here, and the kernel numpy uses is printed.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${GPULAB_BIN:-target/release/gpulab}"
PYTHON="${PYTHON:-target/reference-venv/bin/python}"
[[ -x $PYTHON ]] || { echo "sgemm.sh: no $PYTHON: run bash tests/setup.sh" >&2; exit 1; }
if [[ ! -x $BIN ]]; then
  echo "== building the release binary"
  cargo build --release --locked --quiet --bin gpulab
fi
mkdir -p target/bench
env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "$PYTHON" - "$BIN" "${BENCH_ROUNDS:-7}" "${BENCH_MAX:-2048}" <<'EOF' | tee target/bench/sgemm.md
import json, os, statistics, subprocess, sys, time
import numpy

bin_, rounds, max_size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
PAUSE_S = 1.0
sizes = [n for n in (128, 256, 512, 1024, 2048, 4096) if n <= max_size]


def numpy_ms(n):
    rng = numpy.random.default_rng(n)
    a = (rng.random((n, n), dtype=numpy.float32) * 2 - 1).astype(numpy.float32)
    b = (rng.random((n, n), dtype=numpy.float32) * 2 - 1).astype(numpy.float32)
    c = numpy.empty_like(a)
    numpy.matmul(a, b, out=c)  # warm-up, as ours
    times = []
    for _ in range(5):
        start = time.perf_counter()
        numpy.matmul(a, b, out=c)
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def cpu_part(method):
    """The method's CPU clause: the kernels and the threading threshold."""
    return method[method.find("CPU:"):method.find(", host clock")] if "CPU:" in method else method


def ours():
    # numpy's OpenBLAS threads keep polling for work for a while after a product ends,
    # and in this process they would take the second core from our products: measured
    # on the 2-core Xeon VM, ours right after numpy ran n = 512 at 0.53–0.58× numpy,
    # and at 0.95–1.08× after a one-second pause. So numpy's threads go idle first.
    time.sleep(PAUSE_S)
    out = subprocess.run([bin_, "bench", "matmul", "--max-size", str(max_size), "--json"],
                         check=True, capture_output=True, text=True).stdout
    doc = json.loads(out)
    return doc["provenance"]["method"], {r["size"]: r["cpu_ms"]["median"] for r in doc["rows"] if r["cpu_ms"]}


card = json.loads(subprocess.run([bin_, "device"], check=True, capture_output=True, text=True).stdout)
cpu = card.get("cpu", {})
try:
    from threadpoolctl import threadpool_info
    blas = ", ".join(f"{i.get('internal_api')} {i.get('version')} {i.get('architecture')} kernel, {i.get('num_threads')} threads"
                     for i in threadpool_info() if i.get("user_api") == "blas")
except ImportError:
    blas = "threadpoolctl missing: kernel unknown"
load_before = os.getloadavg()
mine, theirs, ratios = {n: [] for n in sizes}, {n: [] for n in sizes}, {n: [] for n in sizes}
method = ""
for r in range(rounds):
    if r % 2 == 0:
        method, got = ours()
        ref = {n: numpy_ms(n) for n in sizes}
    else:
        ref = {n: numpy_ms(n) for n in sizes}
        method, got = ours()
    for n in sizes:
        if n in got:
            mine[n].append(got[n])
            theirs[n].append(ref[n])
            ratios[n].append(ref[n] / got[n])
load_after = os.getloadavg()
print(f"# CPU SGEMM: GPU Lab against numpy, {rounds} interleaved rounds\n")
print(f"- CPU: {cpu.get('model')} ({cpu.get('logical_cores')} logical cores)")
print(f"- GPU Lab: {cpu_part(method)}")
print(f"- numpy {numpy.__version__}: {blas}")
print(f"- load average (1, 5, 15 min) before: {', '.join(f'{x:.2f}' for x in load_before)}; after: {', '.join(f'{x:.2f}' for x in load_after)}\n")
print("| n | GPU Lab ms | numpy ms | speed vs numpy (median of rounds) | range over rounds |")
print("|---:|---:|---:|---:|---|")
for n in sizes:
    if not ratios[n]:
        print(f"| {n} | skipped | | | |")
        continue
    print(f"| {n} | {statistics.median(mine[n]):.4g} | {statistics.median(theirs[n]):.4g} | "
          f"{statistics.median(ratios[n]):.2f}× | {min(ratios[n]):.2f}–{max(ratios[n]):.2f}× |")

# The record the server reads (`--cpu-reference`, default target/bench/cpu-reference.json,
# server/host/blas_reference.rs): the matmul panel divides numpy's median here by its live
# CPU time. It names the CPU exactly as `gpulab device` does, so a server on another CPU
# model or core count refuses it; the date and load averages say when, and how busy.
import datetime

BLAS_NAMES = {"openblas": "OpenBLAS", "mkl": "MKL", "blis": "BLIS", "accelerate": "Accelerate"}
try:
    from threadpoolctl import threadpool_info
    pools = [i for i in threadpool_info() if i.get("user_api") == "blas"]
except ImportError:
    pools = []
if pools:
    pool = pools[0]
    blas_name = f"{BLAS_NAMES.get(pool.get('internal_api'), pool.get('internal_api'))} {pool.get('version')}"
    kernel = f"{pool['architecture']} kernel, " if pool.get("architecture") else ""
    library = f"numpy {numpy.__version__} with {blas_name} ({kernel}{pool.get('num_threads')} threads)"
else:
    blas_name = "numpy's BLAS"
    library = f"numpy {numpy.__version__} (BLAS unknown: threadpoolctl missing)"
record_rows = [{"size": n,
                "numpy_ms": float(f"{statistics.median(theirs[n]):.4g}"),
                "gpulab_ms": float(f"{statistics.median(mine[n]):.4g}"),
                "ratio": float(f"{statistics.median(ratios[n]):.3g}")} for n in sizes if ratios[n]]
if record_rows and cpu.get("model") and cpu.get("logical_cores"):
    record = {
        "format": 1,
        "cpu": {"model": cpu["model"], "logical_cores": cpu["logical_cores"]},
        "blas": blas_name,
        "library": library,
        "recorded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "load_average": {"before": [round(x, 2) for x in load_before], "after": [round(x, 2) for x in load_after]},
        "rounds": rounds,
        "rows": record_rows,
    }
    with open("target/bench/cpu-reference.json", "w") as f:
        json.dump(record, f, indent=1)
        f.write("\n")
    print("sgemm.sh: wrote target/bench/cpu-reference.json, the matmul panel's CPU reference "
          "(a server reads it when it starts)", file=sys.stderr)
else:
    print("sgemm.sh: no CPU reference written: no size was measured on both sides, or the card names no CPU",
          file=sys.stderr)
EOF
