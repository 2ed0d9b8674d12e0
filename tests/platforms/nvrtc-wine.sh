#!/usr/bin/env bash
# Windows' NVRTC, found by GPU Lab's loader where a learner's `pip install` put it, and
# used, under Wine: NVIDIA's nvidia-cuda-nvrtc-cu12 win_amd64 wheel (pinned) goes into
# a `.venv\Lib\site-packages` that is not activated (as `uv venv` leaves one) beside
# the folder `gpulab doctor` runs in. The doctor must report "NVRTC loads" from
# ...\.venv\Lib\site-packages\nvidia\cuda_nvrtc\bin\nvrtc64_120_0.dll (the file the
# loader opened, asked of Windows' loader) and, with the CUDA headers of the Linux
# runtime wheel tests/setup.sh installed (headers are the same on every OS), compile
# every kernel. There is no driver under Wine, so the layers that need one are skipped.
#
# Usage: bash tests/platforms/nvrtc-wine.sh target/x86_64-pc-windows-gnu/cross/gpulab.exe
set -euo pipefail
cd "$(dirname "$0")/../.."
exe=$(realpath "$1")
root=$(pwd)/target/nvrtc-wine
packages=$root/.venv/Lib/site-packages
if [[ ! -f $packages/.installed-12.9.86 ]]; then
  rm -rf "$packages"
  python3 -m pip install -q --disable-pip-version-check --no-deps --only-binary=:all: \
    --platform win_amd64 --target "$packages" nvidia-cuda-nvrtc-cu12==12.9.86
  touch "$packages/.installed-12.9.86"
fi
mkdir -p "$root/course"
headers=$(pwd)/target/cuda-wheels/nvidia/cuda_runtime/include
export WINEPREFIX=${WINEPREFIX:-$(pwd)/target/wine-prefix}
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
# A Windows path for Wine (Z: is /): the headers, if setup.sh installed them.
[[ -f $headers/cuda_fp16.h ]] && export GPULAB_CUDA_INCLUDE="Z:${headers//\//\\}"
report=$(cd "$root/course" && wine "$exe" doctor --json)
python3 - "$report" <<'EOF'
import json, sys
report = json.loads(sys.argv[1])
layers = {layer["name"]: layer for layer in report["layers"]}
for layer in report["layers"]:
    print(f"  {layer['status']:8} {layer['name']}: {layer['detail'][:300]}")
nvrtc = layers["NVRTC loads"]
assert nvrtc["status"] == "ok", nvrtc
want = r"\.venv\Lib\site-packages\nvidia\cuda_nvrtc\bin\nvrtc64_120_0.dll"
assert want.lower() in nvrtc["detail"].lower(), f"not loaded from the wheel's folder: {nvrtc['detail']}"
compiled = layers["NVRTC compiles every kernel"]
assert compiled["status"] == "ok", compiled
assert report["backend"] == "cpu", report["backend"]
print("NVRTC found in the wheel's folder, loaded from there, every kernel compiled")
EOF
