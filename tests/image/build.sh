#!/usr/bin/env bash
# Builds GPU Lab's image from docker/Dockerfile with podman and tags it gpulab:local (the
# name docker/compose*.yaml use), the way CI does: the runtime stage is fed the release
# binary this checkout builds (`cargo build --release`, once per CI run: a build that is
# already fresh costs nothing), through the Dockerfile's `prebuilt` stage
# (`--build-arg GPULAB_BINARY=prebuilt --build-context gpulab-bin=DIR`), so the Rust
# toolchain image is not needed and the server is not compiled twice. Everything else is
# the Dockerfile as users build it: Debian 12 slim (a local stand-in made from Debian's
# packages, tests/image/lib.sh), NVIDIA's CUDA 12 wheels from PyPI checked by hash, the
# build-time doctor check.
#
# The machine's CA bundle is handed to pip as the build secret `pip-ca`, so a network
# that inspects TLS with its own authority (as this project's machines do) still reaches
# PyPI; the secret is not stored in the image. Podman keeps the layers between runs: once
# the wheels are fetched (about 670 MB, once per machine), a rebuild only copies the new
# binary in and runs the doctor.
#
#   bash tests/image/build.sh        # prints the image's size; the build log is in
#                                    # target/image/build.log
#   GPULAB_IMAGE_BIN=target/debug/gpulab bash tests/image/build.sh   # that binary instead
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/image/lib.sh
source tests/image/lib.sh

started=$SECONDS
ensure_debian_image

# GPULAB_IMAGE_BIN: a binary built already (another profile, another checkout) to put in
# the image instead; by default the release binary, built here if it is not fresh.
binary=${GPULAB_IMAGE_BIN:-target/release/gpulab}
if [[ -z ${GPULAB_IMAGE_BIN:-} ]]; then
  echo "== release build of gpulab (cargo build --release --locked --bin gpulab)"
  cargo_started=$SECONDS
  cargo build --release --locked --bin gpulab
  echo "   release build: $(elapsed "$cargo_started") s"
fi
[[ -x $binary ]] || { echo "build: no executable $binary" >&2; exit 1; }

# The build context named gpulab-bin: a folder with nothing but the binary, stripped as
# tests/gpu/pack.sh strips it (the image needs no debug symbols).
mkdir -p target/image
rm -rf target/image/bin
mkdir target/image/bin
cp "$binary" target/image/bin/gpulab
if command -v strip >/dev/null; then
  strip --strip-all target/image/bin/gpulab
fi

secret=()
ca_bundle=${PIP_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
if [[ -s $ca_bundle ]]; then
  secret=(--secret "id=pip-ca,src=$ca_bundle")
fi

previous=$(pm image inspect --format '{{.Id}}' "$GPULAB_IMAGE" 2>/dev/null || true)
echo "== podman build -f docker/Dockerfile --build-arg GPULAB_BINARY=prebuilt -t $GPULAB_IMAGE ."
build_started=$SECONDS
status=0
PM_TIMEOUT=1200 pm build --pull=never --format docker -f docker/Dockerfile \
  --build-arg GPULAB_BINARY=prebuilt --build-context gpulab-bin=target/image/bin \
  "${secret[@]}" -t "$GPULAB_IMAGE" . >target/image/build.log 2>&1 || status=$?
if ((status)); then
  tail -n 60 target/image/build.log >&2
  echo "podman build failed (exit $status); the whole log: target/image/build.log" >&2
  exit "$status"
fi
# The image this tag named before is now untagged: remove it (its own layers only), so
# that a box that runs the tests every day does not keep a gigabyte per run (CI's disk is
# this machine's). Not `image prune`: that also drops the CUDA stage's cached layers,
# which nothing tagged names, and the next build pays about 45 s to remake them.
if [[ -n $previous && $previous != "$(pm image inspect --format '{{.Id}}' "$GPULAB_IMAGE" 2>/dev/null)" ]]; then
  pm rmi "$previous" >/dev/null 2>&1 || true
fi
cached=$(grep -c '^--> Using cache' target/image/build.log || true)
echo "   image built in $(elapsed "$build_started") s ($cached steps from podman's cache)"
# The build-time doctor's verdict, as the build printed it (nothing when podman took
# that step from its cache: then the same binary passed it in an earlier build).
if grep -qE '^[0-9]+\. \[' target/image/build.log; then
  grep -E '^[0-9]+\. \[' target/image/build.log | sed 's/^/   doctor at build time: /'
else
  echo "   doctor at build time: cached (this binary passed it in an earlier build)"
fi

size=$(image_mb "$GPULAB_IMAGE")
base=$(image_mb "$DEBIAN_IMAGE")
cuda=$(pm run --rm --no-healthcheck --entrypoint du "$GPULAB_IMAGE" -s -B 1000000 /opt/cuda | cut -f1)
echo "== image size: $GPULAB_IMAGE is $size MB uncompressed (Debian 12 slim $base MB, NVIDIA's libraries in /opt/cuda $cuda MB)"
echo "   built in $(elapsed "$started") s in all"
