#!/usr/bin/env bash
# Packs everything a GPU machine needs to run the GPU chain into one folder, because the
# GPU machines have Python and PyTorch but no Rust toolchain: the `gpulab` binary, the
# integration-test binary that holds tests/gpu.rs, gpu-run.sh with verdict.py and
# env_capture.py, reference.py and its modules, and a MANIFEST (commit, profile, sizes, checksums). The lessons and static
# files need no copy: they are built into the binaries (rust-embed embeds them in
# release builds). The binaries are stripped; a release pack must stay within 64 MiB
# (what the device runner carries), and this script fails when it does not.
#
#   bash tests/gpu/pack.sh            # release build into target/gpu-pack (for a GPU machine)
#   bash tests/gpu/pack.sh --debug    # reuse the debug build `cargo test` made, into
#                                     # target/gpu-pack-debug (tests/run.sh's check of the
#                                     # chain on the CPU: no second, release build in CI)
# Then: copy target/gpu-pack to the GPU machine and run `bash gpu-run.sh` in it
# (tests/gpu/README.md).
set -euo pipefail
cd "$(dirname "$0")/../.."

PROFILE=release
DEST=
LIMIT_BYTES=$((64 << 20))
while (($#)); do
  case "$1" in
    --debug) PROFILE=debug ;;
    --dest) DEST="$2"; shift ;;
    *) echo "usage: $0 [--debug] [--dest DIR]" >&2; exit 2 ;;
  esac
  shift
done
cargo_profile=()
[[ $PROFILE == release ]] && cargo_profile=(--release)
# A debug pack goes elsewhere, so CI's check never overwrites a release pack.
if [[ -z $DEST ]]; then
  DEST=target/gpu-pack
  [[ $PROFILE == release ]] || DEST=target/gpu-pack-debug
fi

echo "== pack: building gpulab and the GPU test binary ($PROFILE)"
cargo build --locked "${cargo_profile[@]}" --bin gpulab
# The test executable's path is only known to cargo: ask it (one JSON line per artifact).
test_exe="$(cargo test --locked "${cargo_profile[@]}" --no-run --test main --message-format=json \
  | python3 -c '
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    target = message.get("target", {})
    if message.get("reason") == "compiler-artifact" and target.get("name") == "main" \
            and "test" in target.get("kind", []) and message.get("executable"):
        print(message["executable"])
')"
[[ -x "$test_exe" ]] || { echo "pack: cargo did not report the test executable for tests/main.rs" >&2; exit 1; }

rm -rf "$DEST"
mkdir -p "$DEST"
cp "target/$PROFILE/gpulab" "$DEST/gpulab"
cp "$test_exe" "$DEST/gpulab-tests"
if command -v strip >/dev/null; then
  strip --strip-all "$DEST/gpulab" "$DEST/gpulab-tests"
else
  echo "pack: no strip (binutils) here: the binaries keep their symbols" >&2
fi
cp tests/gpu/gpu-run.sh tests/gpu/verdict.py tests/gpu/env_capture.py tests/gpu/reference.py \
  tests/gpu/ref_*.py tests/gpu/probe_*.py tests/gpu/allocator_sequences.json tests/gpu/README.md tests/gpu/requirements.txt "$DEST/"

total=$(find "$DEST" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
{
  echo "gpulab GPU chain pack"
  echo "commit:  $(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "profile: $PROFILE"
  echo "built:   $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -m)"
  echo "size:    $total bytes without this MANIFEST (limit $LIMIT_BYTES for the folder)"
  (cd "$DEST" && sha256sum -- *)
} >"$DEST/MANIFEST"
total=$(find "$DEST" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')
ls -l "$DEST"
echo "pack: $DEST holds $((total / 1024)) KiB in $(find "$DEST" -type f | wc -l) files"
# The limit is what the device runner carries to a GPU machine. A debug pack never goes
# there (and its unoptimised binaries are near the limit on their own): size reported only.
if [[ $PROFILE == debug ]]; then
  echo "pack: debug pack, not for a GPU machine: the 64 MiB limit is not checked"
elif ((total > LIMIT_BYTES)); then
  echo "pack: $DEST is $total bytes, over the $LIMIT_BYTES-byte (64 MiB) limit" >&2
  exit 1
fi
