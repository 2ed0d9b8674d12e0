#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set-up, formatting, lints, then every test:
# Rust tests (against a throwaway PostgreSQL server, tests/pg), the JavaScript unit tests
# (tests/js), the end-to-end tests in headless Chromium (tests/e2e, screenshots in
# target/e2e-artifacts/screenshots/), the API fuzz, crash and load tests (tests/fuzz,
# tests/crash, tests/load), the Dockerfile lint, the Windows, Linux-on-Arm and macOS
# builds (tests/platforms), the image built from docker/Dockerfile and the PostgreSQL
# deployment run with podman (tests/image), the GPU chain (tests/gpu) checked end to
# end on the CPU, and the wheel and the Colab notebook (tests/wheel).
# This is the test command named in README.md; CI runs it through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tests/setup.sh
# One throwaway PostgreSQL server for the whole run (tests/pg/cluster.sh: loopback only,
# a free port, removed on exit); the Rust tests create a database of their own in it per
# test, and GPULAB_REQUIRE_POSTGRES=1 makes them fail, not skip, without it.
PG_DIR=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-pg.XXXXXX")
stop_postgres() {
  # Keep the script's own exit status (under set -e a failing command in an EXIT trap
  # would replace it).
  local status=$?
  bash tests/pg/cluster.sh stop "$PG_DIR" || true
  exit "$status"
}
trap stop_postgres EXIT
GPULAB_TEST_POSTGRES=$(bash tests/pg/cluster.sh start "$PG_DIR")
export GPULAB_TEST_POSTGRES
export GPULAB_REQUIRE_POSTGRES=1
echo "== PostgreSQL for the tests: $GPULAB_TEST_POSTGRES"
# The CUDA 12 wheels installed by setup.sh (NVRTC, cuBLAS) on the loader's path, as
# in the Docker image; tests/cuda_libraries.rs also runs with each set on its own.
CUDA12_DIR="$(pwd)/target/cuda-wheels/nvidia"
export LD_LIBRARY_PATH="$CUDA12_DIR/cuda_nvrtc/lib:$CUDA12_DIR/cublas/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPULAB_CUDA_INCLUDE="$CUDA12_DIR/cuda_runtime/include"
export GPULAB_REQUIRE_NVRTC=1
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --locked --all-targets -- -D warnings
echo "== cargo test"
cargo test --locked --all-targets -- --skip abuse::
# Doc tests (not in --all-targets): gpu::copies proves run 1's copy order on an H200
# does not compile (compile_fail, E0502) and the right one does.
cargo test --locked --doc
# The abuse probes measure latency while they attack: one at a time, with nothing else
# running (ABUSE_FULL=1 for the probe's full size).
echo "== abuse probes (tests/abuse, one at a time)"
cargo test --locked --test main abuse:: -- --test-threads=1
# Unit tests of the widgets' logic, when there are any (node's built-in runner).
shopt -s globstar nullglob
js_tests=(tests/js/**/*.test.mjs)
shopt -u globstar nullglob
if ((${#js_tests[@]})); then
  echo "== node --test tests/js (${#js_tests[@]} files)"
  node --test "${js_tests[@]}"
else
  echo "== node --test tests/js: no tests/js/*.test.mjs yet, skipped"
fi
# Every experiment trace parsed by Chrome DevTools' trace engine (tests/e2e's node_modules).
echo "== experiment traces read by Chrome DevTools' trace engine (tests/e2e/trace-reader.mjs)"
(cd tests/e2e && GPULAB_BIN=../../target/debug/gpulab node --test trace-reader.mjs)
# `gpulab lint --format github` compared with the Actions toolkit's own writer.
echo "== script doctor annotations as @actions/core writes them (tests/e2e/github-annotations.mjs)"
(cd tests/e2e && GPULAB_BIN=../../target/debug/gpulab node --test github-annotations.mjs)
# End-to-end: drives target/debug/gpulab (built by cargo test above) in headless Chromium.
echo "== end-to-end tests (tests/e2e/run.mjs)"
e2e_status=0
node tests/e2e/run.mjs || e2e_status=$?
echo "== end-to-end screenshots: $(pwd)/target/e2e-artifacts/screenshots/ (report: target/e2e-artifacts/report.json)"
if ((e2e_status)); then
  echo "end-to-end tests failed (exit $e2e_status); see the summary above" >&2
  exit "$e2e_status"
fi
echo "== bad-input fuzz against /api/openapi.json (tests/fuzz/run.sh)"
GPULAB_BIN=target/debug/gpulab bash tests/fuzz/run.sh
echo "== crash and drain (tests/crash/crash.mjs: SIGKILL mid-stream, SIGTERM mid-experiment)"
GPULAB_BIN=target/debug/gpulab node tests/crash/crash.mjs
echo "== load test at CI size (tests/load/run-ci.sh; full size: node tests/load/load.mjs)"
GPULAB_BIN=target/debug/gpulab bash tests/load/run-ci.sh
echo "== scale-out on PostgreSQL at CI size (tests/cluster/run-ci.sh: 2 web nodes, 3 workers, a worker and a web node killed; full size: CLUSTER_FULL=1)"
GPULAB_BIN=target/debug/gpulab bash tests/cluster/run-ci.sh
echo "== pre-commit validate-manifest .pre-commit-hooks.yaml (the script doctor's hooks, read by pre-commit itself)"
target/e2e-venv/bin/pre-commit validate-manifest .pre-commit-hooks.yaml
echo "== actionlint .github/workflows (tests/lint-workflows.sh)"
bash tests/lint-workflows.sh
echo "== hadolint docker/Dockerfile"
bash tests/lint-docker.sh
echo "== Kubernetes manifests (tests/lint-k8s.sh, offline schemas)"
bash tests/lint-k8s.sh
echo "== GPU tests (they run only where a GPU is present; GPULAB_REQUIRE_GPU=1 makes a missing GPU fail)"
cargo test --locked --test main gpu:: -- --nocapture
echo "== gpulab doctor"
cargo run --locked --quiet -- doctor
echo "== gpulab selftest (every experiment against its reference; GPU checks where there is a GPU)"
cargo run --locked --quiet -- selftest
echo "== gpulab check"
cargo run --locked --quiet -- check --content content
# The learners' other platforms: the Windows build served and self-tested under Wine,
# the aarch64 Linux build under qemu-aarch64, the macOS build checked with zig's C
# compiler (tests/platforms/run.sh; its builds are kept between runs, see README.md).
# CI's whole run must stay under 45 minutes: on a fresh machine the other platforms'
# cold checks cost about 8 minutes (README.md); a run that is already past 30 minutes
# here checks Windows alone, and says so.
platforms=(--ci)
if ((SECONDS > 30 * 60)); then
  platforms=(--ci windows)
  echo "== other platforms: $((SECONDS / 60)) min into the run, so Windows alone this time (tests/platforms/run.sh for all)"
fi
echo "== other platforms (tests/platforms/run.sh ${platforms[*]}: Windows under Wine, Linux on Arm under qemu, macOS checked)"
bash tests/platforms/run.sh "${platforms[@]}"
# The GPU run end to end on this machine's CPU, at small sizes: the judge's unit tests,
# then pack the debug build built above, copy the pack to another folder (as it is
# copied to a GPU machine, where cargo's build folder does not exist), run every step of
# gpu-run.sh with --cpu, and check what it leaves: at most 8 files and a verdict in its
# format (tests/gpu/README.md). On a GPU machine: tests/gpu/pack.sh, then gpu-run.sh.
echo "== GPU run on the CPU (tests/gpu: verdict.py's tests, pack.sh --debug, the pack moved, gpu-run.sh --cpu --quick, verdict.py --check)"
python3 -m unittest discover -s tests/gpu -p 'test_*.py'
bash tests/gpu/pack.sh --debug
PACK_COPY=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-pack.XXXXXX")
cp -r target/gpu-pack-debug/. "$PACK_COPY/"
rm -rf target/gpu-chain-out
# cargo's gpulab is moved aside meanwhile, so the packed tests can only find the pack's.
mv target/debug/gpulab target/debug/gpulab.moved-aside
chain_status=0
PYTHON=target/reference-venv/bin/python bash "$PACK_COPY/gpu-run.sh" --cpu --quick target/gpu-chain-out ||
  chain_status=$?
mv target/debug/gpulab.moved-aside target/debug/gpulab
rm -rf "$PACK_COPY"
((chain_status == 0)) || { echo "gpu-run.sh --cpu: no PASS (exit $chain_status)" >&2; exit "$chain_status"; }
python3 tests/gpu/verdict.py --check target/gpu-chain-out
# The image for real: podman builds docker/Dockerfile, fed a binary built here, then runs
# it. Not a release build (about 13 minutes of every dependency again on a fresh 2-core
# machine, which CI's 45 minutes cannot spare): the debug build above, relinked with the
# course and static files embedded (`--features embed`), as a release build embeds them.
# It runs last, so nothing after it pays for switching the feature back. In the image: doctor, non-root, a lesson, an experiment,
# a quiz attempt kept on the volume across stop/start, SIGTERM drains and exits 0, the
# HEALTHCHECK; it prints the image's size.
echo "== the class box: docker/Dockerfile built with podman and run (tests/image/run-ci.sh)"
cargo build --locked --features embed --bin gpulab
export GPULAB_IMAGE_BIN=target/debug/gpulab
bash tests/image/run-ci.sh
# The class deployment for real: compose.postgres.yaml with podman-compose on that image,
# stand-ins for PostgreSQL and nginx from Debian's packages: a student's experiment through
# the proxy, a web node, PostgreSQL and the worker; the gradebook kept across down/up.
echo "== the class deployment: docker/compose.postgres.yaml with podman-compose (tests/image/class-ci.sh)"
bash tests/image/class-ci.sh
# The wheel (`pip install gpulab`): maturin packs the same debug build with the course
# embedded (it must compile nothing but gpulab's own crate again), installed into a fresh
# virtual environment and served from there; then the Colab notebook, validated and run
# to its end on the CPU with that wheel (tests/wheel/README.md).
echo "== the wheel: built by maturin, installed in a fresh venv, served; the Colab notebook run (tests/wheel/run-ci.sh)"
bash tests/wheel/run-ci.sh
