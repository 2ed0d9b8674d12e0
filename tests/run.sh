#!/usr/bin/env bash
# The whole test suite, from a fresh clone: set-up, formatting, lints, then every test.
# This is the test command named in README.md; CI runs it through .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."

bash tests/setup.sh
echo "== cargo fmt --check"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --locked --all-targets -- -D warnings
echo "== cargo test"
cargo test --locked --all-targets
echo "== gpulab check"
cargo run --locked --quiet -- check --content content
