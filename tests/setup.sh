#!/usr/bin/env bash
# Installs what the test suite needs on a fresh Debian machine, and nothing when it is
# already there (safe to run every time). Called by tests/run.sh and .ci/run.
# Besides the Rust toolchain and NVRTC, the end-to-end tests (tests/e2e) need Debian's
# Chromium, Node.js >= 20 (playwright-core's minimum) and the pinned npm packages; the
# Rust tests need Debian's PostgreSQL server (tests/pg/cluster.sh starts a private one).
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v cargo >/dev/null || { echo "setup: a Rust toolchain (cargo) is required: https://rustup.rs" >&2; exit 1; }
# build-essential: cc links Rust crates with C parts; c++ compiles the kernels' CPU
# emulation (tests/kernel_emulation).
{ command -v cc && command -v c++; } >/dev/null || need_apt+=(build-essential)
command -v pkg-config >/dev/null || need_apt+=(pkg-config)
# Headless browser for tests/e2e (CHROMIUM may name another build).
if [[ -z ${CHROMIUM:-} || ! -x ${CHROMIUM:-} ]]; then
  command -v chromium >/dev/null || need_apt+=(chromium)
fi
# Python with venv: the notebook checks' nbformat (and tests/fuzz) live in virtualenvs.
if ! command -v python3 >/dev/null; then
  need_apt+=(python3 python3-venv)
elif ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  need_apt+=(python3-venv)
fi
# PostgreSQL's server for the throwaway cluster the Rust tests use (tests/pg/cluster.sh).
# Debian keeps initdb in /usr/lib/postgresql/VERSION/bin, off PATH.
if ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null && ! command -v initdb >/dev/null; then
  need_apt+=(postgresql)
fi
if ! command -v node >/dev/null; then
  need_apt+=(nodejs npm)
elif ! command -v npm >/dev/null; then
  need_apt+=(npm)
fi
# Other platforms, built and run here (tests/platforms/run.sh): MinGW-w64 and Wine for
# Windows, the aarch64 cross compiler (with its libc, which qemu-user loads) and qemu's
# user-mode emulator for Linux on Arm.
command -v x86_64-w64-mingw32-gcc >/dev/null || need_apt+=(gcc-mingw-w64-x86-64)
command -v aarch64-linux-gnu-gcc >/dev/null || need_apt+=(gcc-aarch64-linux-gnu)
command -v qemu-aarch64-static >/dev/null || need_apt+=(qemu-user-static)
command -v wine >/dev/null || need_apt+=(wine64)

# The image tests (tests/image/): podman builds docker/Dockerfile and runs the image and
# the PostgreSQL deployment; runc (Debian 12's crun refuses these VMs' cgroup layout,
# tests/image/containers.conf), netavark and aardvark-dns (containers find each other by
# name), catatonit (compose's `init: true`), and mmdebstrap for the local stand-in of
# Debian's base image (no registry holds it here).
# iptables for netavark's port forwarding. Without their recommends: the tests need none of
# what podman recommends (buildah, dbus-user-session).
need_apt_alone=()
for package in podman runc uidmap slirp4netns fuse-overlayfs catatonit netavark aardvark-dns iptables \
  mmdebstrap; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
    need_apt_alone+=("$package")
done

if ((${#need_apt[@]} + ${#need_apt_alone[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "setup: please install: ${need_apt[*]} ${need_apt_alone[*]} (apt-get install -y ${need_apt[*]}; apt-get install -y --no-install-recommends ${need_apt_alone[*]})" >&2
    exit 1
  fi
  echo "setup: installing ${need_apt[*]} ${need_apt_alone[*]}"
  apt-get update -qq
  if ((${#need_apt[@]})); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
  fi
  if ((${#need_apt_alone[@]})); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt_alone[@]}"
  fi
fi

# The standard library for each other platform's target (rustup skips what it has).
cross_targets=(x86_64-pc-windows-gnu aarch64-unknown-linux-gnu aarch64-apple-darwin x86_64-apple-darwin)
installed_targets=$(rustup target list --installed)
for target in "${cross_targets[@]}"; do
  grep -qx "$target" <<<"$installed_targets" || rustup target add "$target"
done
# zig's C compiler (with macOS's libc headers) and cargo-zigbuild, for the macOS checks:
# pinned, in a virtualenv under target/.
CROSS_VENV=target/cross-venv
if ! "$CROSS_VENV/bin/cargo-zigbuild" --version 2>/dev/null | grep -q ' 0\.24\.0$' ||
  ! "$CROSS_VENV/bin/python" -c "import ziglang" 2>/dev/null; then
  echo "setup: installing ziglang 0.17.0 and cargo-zigbuild 0.24.0 into $CROSS_VENV"
  rm -rf "$CROSS_VENV"
  python3 -m venv "$CROSS_VENV"
  "$CROSS_VENV/bin/pip" install -q --disable-pip-version-check --only-binary=:all: \
    ziglang==0.17.0 cargo-zigbuild==0.24.0
fi

for component in rustfmt clippy; do
  if ! cargo "${component/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$component"
  fi
done

# NVRTC and cuBLAS from NVIDIA's pip wheels (pinned), both CUDA 12 and CUDA 13 sets:
# they load without a GPU, so the test suite proves every kernel compiles with each
# NVRTC and that the loader finds and uses each set on its own (tests/cuda_libraries.rs).
# Installed into target/, not system-wide.
install_wheels() { # DIR MARKER WHEEL...
  local dir=$1 marker=$2
  shift 2
  if [[ ! -f "$dir/$marker" ]]; then
    command -v python3 >/dev/null || { echo "setup: python3 is required to fetch the CUDA wheels" >&2; exit 1; }
    echo "setup: installing $* into $dir"
    rm -rf "$dir"
    python3 -m pip install -q --disable-pip-version-check --no-deps --target "$dir" "$@"
    touch "$dir/$marker"
  fi
}
# (nvcc-cu12/crt and cccl only for headers the C check of cublas_api.h includes.)
install_wheels "${CUDA12_DIR:-target/cuda-wheels}" .installed-12.9.86-cublas-12.9.1.4-nvcc-cccl \
  nvidia-cuda-nvrtc-cu12==12.9.86 nvidia-cuda-runtime-cu12==12.9.79 nvidia-cublas-cu12==12.9.1.4 \
  nvidia-cuda-nvcc-cu12==12.9.86 nvidia-cuda-cccl-cu12==12.9.27
install_wheels "${CUDA13_DIR:-target/cuda-wheels-13}" .installed-13.0.88-cublas-13.0.2.14-crt-cccl \
  nvidia-cuda-nvrtc==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cublas==13.0.2.14 \
  nvidia-cuda-crt==13.0.88 nvidia-cuda-cccl==13.0.85

# podman-compose for the class deployment's test (tests/image/class-ci.sh): from PyPI,
# pinned and checked by hash (Debian 12's 1.0.3 predates the compose features
# docker/compose.postgres.yaml uses), in a virtualenv under target/.
COMPOSE_VENV=target/compose-venv
if ! cmp -s tests/image/compose-requirements.txt "$COMPOSE_VENV/.installed-requirements.txt"; then
  command -v python3 >/dev/null || { echo "setup: python3 is required for podman-compose" >&2; exit 1; }
  echo "setup: installing tests/image/compose-requirements.txt (podman-compose) into $COMPOSE_VENV"
  rm -rf "$COMPOSE_VENV"
  python3 -m venv "$COMPOSE_VENV"
  "$COMPOSE_VENV/bin/pip" install -q --disable-pip-version-check --no-deps --require-hashes \
    -r tests/image/compose-requirements.txt
  cp tests/image/compose-requirements.txt "$COMPOSE_VENV/.installed-requirements.txt"
fi

# The wheel (tests/wheel/run-ci.sh): maturin builds it, nbformat and nbclient (with an
# ipykernel kernel) check and run the Colab notebook; pinned in
# tests/wheel/requirements.txt, in a virtualenv under target/, again only when it changes.
WHEEL_VENV=target/wheel-venv
if ! cmp -s tests/wheel/requirements.txt "$WHEEL_VENV/.installed-requirements.txt"; then
  command -v python3 >/dev/null || { echo "setup: python3 is required for the wheel's tests" >&2; exit 1; }
  echo "setup: installing tests/wheel/requirements.txt (maturin, nbclient, ipykernel) into $WHEEL_VENV"
  rm -rf "$WHEEL_VENV"
  python3 -m venv "$WHEEL_VENV"
  "$WHEEL_VENV/bin/pip" install -q --disable-pip-version-check -r tests/wheel/requirements.txt
  cp tests/wheel/requirements.txt "$WHEEL_VENV/.installed-requirements.txt"
fi

# Python's own parser and nbformat's validator check the lessons' .py and .ipynb
# downloads in the end-to-end tests, and pre-commit validates the script doctor's hook
# manifest (.pre-commit-hooks.yaml): both pinned, in a virtualenv under target/.
NBFORMAT_VERSION=5.10.4
PRE_COMMIT_VERSION=4.3.0
E2E_VENV=target/e2e-venv
if ! "$E2E_VENV/bin/python" -c "import nbformat, sys; sys.exit(nbformat.__version__ != '$NBFORMAT_VERSION')" 2>/dev/null; then
  command -v python3 >/dev/null || { echo "setup: python3 is required for the notebook checks" >&2; exit 1; }
  echo "setup: installing nbformat $NBFORMAT_VERSION into $E2E_VENV"
  python3 -m venv "$E2E_VENV"
  "$E2E_VENV/bin/pip" install --quiet --disable-pip-version-check "nbformat==$NBFORMAT_VERSION"
fi
if [[ $("$E2E_VENV/bin/pre-commit" --version 2>/dev/null) != "pre-commit $PRE_COMMIT_VERSION" ]]; then
  echo "setup: installing pre-commit $PRE_COMMIT_VERSION into $E2E_VENV"
  "$E2E_VENV/bin/pip" install --quiet --disable-pip-version-check "pre-commit==$PRE_COMMIT_VERSION"
fi

# Node.js packages for the end-to-end tests, pinned by tests/e2e/package-lock.json.
# `npm ci` again only when node_modules is missing or the lock file changed since.
node_major=$(node -p 'process.versions.node.split(".")[0]')
if ((node_major < 20)); then
  echo "setup: the end-to-end tests need Node.js >= 20 (found $(node --version); Debian 12's" \
    "nodejs is 18): install Node.js 20 or newer from https://nodejs.org" >&2
  exit 1
fi
E2E_DIR=tests/e2e
if [[ ! -d $E2E_DIR/node_modules || $E2E_DIR/package-lock.json -nt $E2E_DIR/node_modules/.package-lock.json ]]; then
  echo "setup: npm ci in $E2E_DIR"
  (cd "$E2E_DIR" && npm ci --no-audit --no-fund)
fi

# The GPU chain's reference side (tests/gpu/reference.py, run on the CPU by tests/run.sh):
# PyTorch and numpy, every package pinned in tests/gpu/requirements.txt, in their own
# venv under target/ (not system-wide; about 5 GiB, as PyPI's torch brings its CUDA
# libraries). Installed again only when that file changes.
REFERENCE_VENV=target/reference-venv
if ! cmp -s tests/gpu/requirements.txt "$REFERENCE_VENV/.installed-requirements.txt"; then
  # PyTorch's wheels unpack to about 5.4 GiB (and pip needs room to unpack them): say so
  # plainly instead of failing halfway with pip's "No space left on device".
  mkdir -p target
  free_kib=$(df -Pk target | awk 'NR == 2 { print $4 }')
  if ((free_kib < 8 * 1024 * 1024)); then
    echo "setup: the reference venv (PyTorch, numpy; about 5.4 GiB) needs 8 GiB free beside target/, and $((free_kib / 1024)) MiB are free: free some disk space and run again" >&2
    exit 1
  fi
  command -v python3 >/dev/null || { echo "setup: python3 is required for the GPU chain's reference venv" >&2; exit 1; }
  echo "setup: installing tests/gpu/requirements.txt (PyTorch, numpy) into $REFERENCE_VENV"
  rm -rf "$REFERENCE_VENV"
  python3 -m venv "$REFERENCE_VENV"
  "$REFERENCE_VENV/bin/pip" install -q --disable-pip-version-check --no-cache-dir --no-deps -r tests/gpu/requirements.txt
  cp tests/gpu/requirements.txt "$REFERENCE_VENV/.installed-requirements.txt"
fi
