#!/usr/bin/env bash
# GPU Lab on the computers learners have, proved from this Linux x86-64 machine:
#
#   windows  build for x86_64-pc-windows-gnu (Debian's MinGW-w64) and, under Wine, serve
#            the home page, a lesson, the device card, a CPU experiment to the end and a
#            quiz attempt, stop on Ctrl-C, then `gpulab selftest` (tests/platforms/smoke.py)
#   arm      build for aarch64-unknown-linux-gnu (Debian's cross gcc) and do the same under
#            qemu-aarch64 (user-mode emulation: a GH200, DGX Spark or Jetson runs this binary)
#   macos    `cargo clippy -D warnings` (a check, and the lints) for aarch64-apple-darwin
#            and x86_64-apple-darwin, the C parts (SQLite, tree-sitter) compiled by zig cc
#            through cargo-zigbuild; it does not link (zig has no Apple frameworks) and no
#            Mac is here to run it
#   units    every unit test of the library (`cargo test --lib`: the per-OS library names
#            and search order, the loader's own calls, host facts, the SQLite file's
#            identity, …) built for Windows and run under Wine, and built for aarch64 and
#            run under qemu (not part of --ci: a cold build of the test binary costs
#            about 7 minutes more per target)
#   nvrtc    NVRTC found by the loader in a pip wheel's folder and every kernel compiled
#            with it, for Windows under Wine and for Linux on Arm under qemu: `gpulab
#            doctor` with nvidia-cuda-nvrtc-cu12's win_amd64 and aarch64 wheels in a
#            .venv (tests/platforms/nvrtc.sh; downloaded with pip when missing, about
#            75 MB and 40 MB; not part of --ci)
#
# Usage: bash tests/platforms/run.sh [--ci] [windows] [arm] [macos] [units] [nvrtc]
# (default: windows arm macos). --ci is what CI runs (tests/run.sh): windows, arm and
# macOS for aarch64-apple-darwin only, with the other targets' build folder kept between
# runs in ${GPULAB_CROSS_CACHE:-~/.cache/gpulab/cross-target} (as cargo keeps its
# registry), since one cold build of the whole dependency tree for one target takes
# 12-15 minutes on 2 cores; a warm one rebuilds only GPU Lab's crate. With --ci and a
# cold cache, windows and arm are `cargo check`ed instead of built and run (a few
# minutes each), and say so. Times: README.md.
# Builds use the `cross` profile (dev without debug info) into <target-dir>/<triple>/cross/.
# Each step prints its wall time; the last lines list them.
set -euo pipefail
cd "$(dirname "$0")/../.."

ci=0
steps=()
for arg in "$@"; do
  case $arg in
    --ci) ci=1 ;;
    windows | arm | macos | units | nvrtc) steps+=("$arg") ;;
    *) echo "usage: $0 [--ci] [windows] [arm] [macos] [units] [nvrtc]" >&2; exit 2 ;;
  esac
done
((${#steps[@]})) || steps=(windows arm macos)
mac_targets=(aarch64-apple-darwin x86_64-apple-darwin)
if ((ci)); then
  mac_targets=(aarch64-apple-darwin)
  export CARGO_TARGET_DIR=${GPULAB_CROSS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/gpulab/cross-target}
  mkdir -p "$CARGO_TARGET_DIR"
  echo "== other platforms' builds in $CARGO_TARGET_DIR (kept between runs)"
fi
target_dir=${CARGO_TARGET_DIR:-target}

summary=()
timed() { # NAME COMMAND...: runs it, records its wall time and outcome
  local name=$1 start status=0
  shift
  start=$(date +%s)
  "$@" || status=$?
  local seconds=$(($(date +%s) - start))
  summary+=("$(printf '%-44s %4d s  %s' "$name" "$seconds" "$( ((status)) && echo "FAILED ($status)" || echo ok)")")
  echo "-- $name: ${seconds} s, exit $status"
  return "$status"
}

export WINEPREFIX=${WINEPREFIX:-$(pwd)/target/wine-prefix}
export WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
WIN_BIN=$target_dir/x86_64-pc-windows-gnu/cross/gpulab.exe
ARM_BIN=$target_dir/aarch64-unknown-linux-gnu/cross/gpulab
export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc
export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
# qemu-user finds the aarch64 loader and libc that gcc-aarch64-linux-gnu brought.
export QEMU_LD_PREFIX=/usr/aarch64-linux-gnu

# A Wine prefix of our own under target/, with the one export Debian 12's Wine 8 lacks
# and Rust's standard library needs (ProcessPrng: tests/platforms/wine/).
wine_prefix() {
  [[ -d $WINEPREFIX/drive_c ]] || wineboot --init >/dev/null 2>&1 || true
  [[ -d $WINEPREFIX/drive_c/windows/system32 ]] || return 1
  local shim=target/wine-shims/bcryptprimitives.dll
  if [[ ! -f $shim || tests/platforms/wine/bcryptprimitives.c -nt $shim ]]; then
    mkdir -p target/wine-shims
    x86_64-w64-mingw32-gcc -O2 -shared -o "$shim" tests/platforms/wine/bcryptprimitives.c \
      tests/platforms/wine/bcryptprimitives.def -ladvapi32
  fi
  cp "$shim" "$WINEPREFIX/drive_c/windows/system32/bcryptprimitives.dll"
}

# CI on a machine whose cache of these builds is cold: a build of every dependency for a
# target costs 12–15 minutes here, which CI's 45 minutes cannot spare, so CI checks the
# crate for those targets instead, in one `cargo check` for all of them (the build
# scripts and proc-macros, built for this machine, are shared: Windows and Arm together
# took 4 min 36 s cold here, Windows alone 3 min 40 s), and says their smokes were not
# run; on a warm cache (an earlier run on this machine, or `bash tests/platforms/run.sh`
# by hand, which builds and runs the smokes in full) it builds and runs the smokes.
failed=0
if ((ci)); then
  cold=() warm=()
  for step in "${steps[@]}"; do
    case $step in
      windows) [[ -f $WIN_BIN ]] && warm+=(windows) || cold+=(--target x86_64-pc-windows-gnu) ;;
      arm) [[ -f $ARM_BIN ]] && warm+=(arm) || cold+=(--target aarch64-unknown-linux-gnu) ;;
      *) warm+=("$step") ;;
    esac
  done
  if ((${#cold[@]})); then
    echo "== cold build cache: cargo check ${cold[*]} (the smokes under Wine and qemu run once a build is cached: bash tests/platforms/run.sh)"
    timed "cargo check ${cold[*]} (cold cache)" cargo check --locked --profile cross "${cold[@]}" --bin gpulab || failed=1
  fi
  steps=("${warm[@]}")
fi

for step in "${steps[@]}"; do
  case $step in
    windows)
      echo "== Windows (x86_64-pc-windows-gnu) under Wine"
      timed "windows: cargo build --profile cross" \
        cargo build --locked --profile cross --target x86_64-pc-windows-gnu --bin gpulab || { failed=1; continue; }
      timed "windows: Wine prefix" wine_prefix || { failed=1; continue; }
      timed "windows: smoke under Wine" \
        python3 tests/platforms/smoke.py --name windows --runner wine "$WIN_BIN" || failed=1
      ;;
    arm)
      echo "== Linux on Arm (aarch64-unknown-linux-gnu) under qemu-aarch64"
      timed "arm: cargo build --profile cross" \
        cargo build --locked --profile cross --target aarch64-unknown-linux-gnu --bin gpulab || { failed=1; continue; }
      timed "arm: smoke under qemu-aarch64" \
        python3 tests/platforms/smoke.py --name arm --runner qemu-aarch64-static "$ARM_BIN" || failed=1
      ;;
    macos)
      echo "== macOS (${mac_targets[*]}): cargo clippy -D warnings with zig cc"
      for target in "${mac_targets[@]}"; do
        timed "macos: cargo-zigbuild clippy $target" \
          env PATH="$(pwd)/target/cross-venv/bin:$PATH" \
          cargo-zigbuild clippy --locked --profile cross --target "$target" --lib --bins -- -D warnings || failed=1
      done
      ;;
    units)
      echo "== the library's unit tests under Wine and under qemu-aarch64"
      for target in x86_64-pc-windows-gnu aarch64-unknown-linux-gnu; do
        runner=(wine)
        [[ $target == aarch64* ]] && runner=(qemu-aarch64-static)
        [[ $target == x86_64-pc-windows-gnu ]] && { timed "windows: Wine prefix" wine_prefix || { failed=1; continue; }; }
        timed "units: cargo test --no-run $target" \
          cargo test --locked --profile cross --target "$target" --lib --no-run || { failed=1; continue; }
        test_binary=$(cargo test --locked --profile cross --target "$target" --lib --no-run --message-format=json 2>/dev/null |
          python3 -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["lib"]:
        print(m["executable"])')
        timed "units: cargo test --lib under ${runner[0]}" "${runner[@]}" "$test_binary" || failed=1
      done
      ;;
    nvrtc)
      echo "== NVRTC from a pip wheel's folder, found and used under Wine and qemu-aarch64"
      [[ -f $WIN_BIN ]] || timed "windows: cargo build --profile cross" \
        cargo build --locked --profile cross --target x86_64-pc-windows-gnu --bin gpulab || { failed=1; continue; }
      timed "windows: Wine prefix" wine_prefix || { failed=1; continue; }
      timed "nvrtc: gpulab doctor under Wine" bash tests/platforms/nvrtc.sh windows "$WIN_BIN" || failed=1
      [[ -f $ARM_BIN ]] || timed "arm: cargo build --profile cross" \
        cargo build --locked --profile cross --target aarch64-unknown-linux-gnu --bin gpulab || { failed=1; continue; }
      timed "nvrtc: gpulab doctor under qemu-aarch64" bash tests/platforms/nvrtc.sh arm "$ARM_BIN" || failed=1
      ;;
  esac
done

echo "== platforms: wall time per step"
printf '%s\n' "${summary[@]}"
exit "$failed"
