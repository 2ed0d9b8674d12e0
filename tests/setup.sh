#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine, and nothing when it is
# already there (safe to run every time). Called by tests/run.sh and .ci/run.
set -euo pipefail

need_apt=()
command -v cargo >/dev/null || { echo "setup: a Rust toolchain (cargo) is required: https://rustup.rs" >&2; exit 1; }
command -v cc >/dev/null || need_apt+=(build-essential)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)

if ((${#need_apt[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: please install: ${need_apt[*]} (apt-get install -y ${need_apt[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$component"
  fi
done

# NVRTC from NVIDIA's pip wheels (pinned): it runs without a GPU, so the test suite can
# prove every kernel in kernels/ compiles. Installed into target/, not system-wide.
NVRTC_DIR="${NVRTC_DIR:-target/cuda-wheels}"
NVRTC_WHEELS=(nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79)
if [[ ! -f "$NVRTC_DIR/.installed-12.9.86" ]]; then
  command -v python3 >/dev/null || { echo "setup: python3 is required to fetch the NVRTC wheel" >&2; exit 1; }
  echo "setup: installing ${NVRTC_WHEELS[*]} into $NVRTC_DIR"
  rm -rf "$NVRTC_DIR"
  python3 -m pip install -q --disable-pip-version-check --no-deps --target "$NVRTC_DIR" "${NVRTC_WHEELS[@]}"
  touch "$NVRTC_DIR/.installed-12.9.86"
fi
