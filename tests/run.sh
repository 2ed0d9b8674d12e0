#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set-up, formatting, lints, then every test.
# This is the test command named in README.md; CI runs it through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tests/setup.sh
# The NVRTC wheel installed by setup.sh: the loader must see it before tests start.
NVRTC_DIR="$(pwd)/target/cuda-wheels"
export LD_LIBRARY_PATH="$NVRTC_DIR/nvidia/cuda_nvrtc/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPULAB_CUDA_INCLUDE="$NVRTC_DIR/nvidia/cuda_runtime/include"
export GPULAB_REQUIRE_NVRTC=1
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --locked --all-targets -- -D warnings
echo "== cargo test"
cargo test --locked --all-targets
echo "== GPU tests (they run only where a GPU is present)"
cargo test --locked --test main gpu:: -- --nocapture 2>&1 | grep -E "SKIPPED|^test |test result" || true
echo "== gpulab doctor"
cargo run --locked --quiet -- doctor
echo "== gpulab check"
cargo run --locked --quiet -- check --content content
