#!/usr/bin/env bash
# NVIDIA's NVRTC for another platform, found by GPU Lab's loader where a learner's
# `pip install` put it, and used: nvidia-cuda-nvrtc-cu12 12.9.86's wheel for that
# platform (win_amd64, or manylinux aarch64 as on a GH200 or Jetson) goes into a `.venv`
# that is not activated (as `uv venv` leaves one) above the folder `gpulab doctor` runs
# in, under Wine or qemu-aarch64. The doctor must report "NVRTC loads" from the wheel's
# folder (the file the loader opened, as the OS's loader names it) and, with the CUDA
# headers of the Linux runtime wheel tests/setup.sh installed (headers are the same on
# every OS), compile every kernel. There is no driver here, so the layers that need one
# fail or are skipped, and the backend stays the CPU.
#
# Usage: bash tests/platforms/nvrtc.sh windows|arm BINARY
set -euo pipefail
cd "$(dirname "$0")/../.."
platform=$1
binary=$(realpath "$2")
root=$(pwd)/target/nvrtc-$platform
headers=$(pwd)/target/cuda-wheels/nvidia/cuda_runtime/include
case $platform in
  windows)
    packages=$root/.venv/Lib/site-packages
    pip_platform=(--platform win_amd64)
    want='\.venv\Lib\site-packages\nvidia\cuda_nvrtc\bin\nvrtc64_120_0.dll'
    export WINEPREFIX=${WINEPREFIX:-$(pwd)/target/wine-prefix}
    export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
    # A Windows path for Wine (Z: is /).
    [[ -f $headers/cuda_fp16.h ]] && export GPULAB_CUDA_INCLUDE="Z:${headers//\//\\}"
    run=(wine "$binary")
    ;;
  arm)
    packages=$root/.venv/lib/python3.12/site-packages
    pip_platform=(--platform manylinux2014_aarch64 --platform manylinux_2_17_aarch64)
    want='/.venv/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12'
    export QEMU_LD_PREFIX=${QEMU_LD_PREFIX:-/usr/aarch64-linux-gnu}
    [[ -f $headers/cuda_fp16.h ]] && export GPULAB_CUDA_INCLUDE=$headers
    run=(qemu-aarch64-static "$binary")
    ;;
  *) echo "usage: $0 windows|arm BINARY" >&2; exit 2 ;;
esac
if [[ ! -f $packages/.installed-12.9.86 ]]; then
  rm -rf "$packages"
  python3 -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: \
    "${pip_platform[@]}" --target "$packages" nvidia-cuda-nvrtc-cu12==12.9.86
  touch "$packages/.installed-12.9.86"
fi
mkdir -p "$root/course"
report=$(cd "$root/course" && "${run[@]}" doctor --json)
python3 - "$report" "$want" <<'EOF'
import json, sys
report, want = json.loads(sys.argv[1]), sys.argv[2]
layers = {layer["name"]: layer for layer in report["layers"]}
for layer in report["layers"]:
    print(f"  {layer['status']:8} {layer['name']}: {layer['detail'][:240]}")
nvrtc = layers["NVRTC loads"]
assert nvrtc["status"] == "ok", nvrtc
assert want.lower() in nvrtc["detail"].lower(), f"not loaded from the wheel's folder: {nvrtc['detail']}"
compiled = layers["NVRTC compiles every kernel"]
assert compiled["status"] == "ok", compiled
assert report["backend"] == "cpu", report["backend"]
print("NVRTC found in the wheel's folder, loaded from there, every kernel compiled")
EOF
