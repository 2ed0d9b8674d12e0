#!/usr/bin/env bash
# The wheel a learner installs with `pip install gpulab` (pyproject.toml, maturin's
# `bindings = "bin"`), built and used as they would use it (tests/wheel/README.md):
#
#   1. built by maturin from the dev profile with the course embedded (`--profile dev
#      --features embed`), the same cargo invocation as the class image's binary, so
#      cargo reuses what tests/run.sh already built: this step fails if maturin makes
#      cargo compile any crate but gpulab's own (a second build of every dependency is
#      what CI's 45 minutes cannot pay); maturin's auditwheel check picks the wheel's
#      manylinux tag from the glibc symbols the binary needs, printed here;
#   2. installed into a fresh virtual environment (no index: only this file), and from
#      that install, run outside the repository: `gpulab --version` (Cargo.toml's
#      version), `gpulab selftest`, and `gpulab serve`: /healthz, the home page and a
#      lesson, an experiment queued and polled to its end over HTTP, then SIGTERM and
#      exit 0;
#   3. the course's Colab notebook (content/notebooks/gpulab-colab.ipynb) validated with
#      nbformat and run to its end by nbclient on the CPU, its install cell given this
#      wheel (GPULAB_WHEEL), in target/wheel-venv's kernel (tests/wheel/notebook.py).
#
# target/wheel-venv (maturin, nbclient, ipykernel, nbformat; pinned) comes from
# tests/setup.sh. The wheel is left in target/wheel-dist/.
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=target/wheel-venv
DIST=target/wheel-dist
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-wheel.XXXXXX")
SERVER_PID=
cleanup() {
  local status=$?
  [[ -z $SERVER_PID ]] || kill "$SERVER_PID" 2>/dev/null || true
  rm -rf "$WORK"
  exit "$status"
}
trap cleanup EXIT
fail() {
  echo "wheel: FAIL: $*" >&2
  exit 1
}
[[ -x $VENV/bin/maturin ]] || fail "$VENV has no maturin: run bash tests/setup.sh"
started=$SECONDS

echo "== 1. the wheel: maturin build --profile dev --features embed --locked"
# A no-op right after tests/run.sh's image step; run alone, this is the build maturin
# must then reuse.
cargo build --locked --features embed --bin gpulab
rm -rf "$DIST"
build_started=$SECONDS
"$VENV/bin/maturin" build --locked --profile dev --features embed --auditwheel check \
  --out "$DIST" 2>&1 | tee "$WORK/maturin.log"
recompiled=$(grep -E '^ *Compiling ' "$WORK/maturin.log" | grep -v ' gpulab v' || true)
[[ -z $recompiled ]] || fail "maturin made cargo compile dependencies again (it must reuse cargo's dev build): $(head -5 <<<"$recompiled")"
shopt -s nullglob
wheels=("$DIST"/gpulab-*.whl)
shopt -u nullglob
((${#wheels[@]} == 1)) || fail "expected one wheel in $DIST, found ${#wheels[@]}"
WHEEL=$(realpath "${wheels[0]}")
tag=$(basename "$WHEEL" .whl | cut -d- -f5)
[[ $tag =~ ^manylinux_2_[0-9]+_x86_64 ]] || fail "the wheel's platform tag is '$tag', not manylinux (maturin's auditwheel check)"
echo "   ok   $(basename "$WHEEL"): $(($(stat -c %s "$WHEEL") / 1024 / 1024)) MiB, tag $tag, built in $((SECONDS - build_started)) s with no dependency compiled again"

echo "== 2. installed into a fresh virtual environment, run from there"
python3 -m venv "$WORK/venv"
"$WORK/venv/bin/pip" install --quiet --disable-pip-version-check --no-index "$WHEEL"
GPULAB="$WORK/venv/bin/gpulab"
mkdir "$WORK/elsewhere"
cd "$WORK/elsewhere"
expected="gpulab $(sed -n 's/^version = "\(.*\)"$/\1/p' "$OLDPWD/Cargo.toml" | head -1)"
version=$("$GPULAB" --version)
[[ $version == "$expected" ]] || fail "gpulab --version printed '$version', not '$expected'"
echo "   ok   $version"
"$GPULAB" selftest >"$WORK/selftest.log" 2>&1 || {
  tail -20 "$WORK/selftest.log" >&2
  fail "gpulab selftest from the wheel failed"
}
echo "   ok   gpulab selftest: $(tail -1 "$WORK/selftest.log")"
PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
BASE="http://127.0.0.1:$PORT"
"$GPULAB" serve --addr "127.0.0.1:$PORT" --database "$WORK/elsewhere/gpulab.db" >"$WORK/serve.log" 2>&1 &
SERVER_PID=$!
cd "$OLDPWD"
deadline=$((SECONDS + 120))
until curl -fsS -o /dev/null --max-time 5 "$BASE/healthz" 2>/dev/null; do
  kill -0 "$SERVER_PID" 2>/dev/null || { tail -20 "$WORK/serve.log" >&2; fail "gpulab serve exited before /healthz answered"; }
  ((SECONDS < deadline)) || { tail -20 "$WORK/serve.log" >&2; fail "/healthz did not answer within 120 s"; }
  sleep 1
done
echo "   ok   gpulab serve from the wheel answers /healthz"
node tests/image/student.mjs lesson "$BASE"
node tests/image/student.mjs experiment "$BASE" timing
kill -TERM "$SERVER_PID"
serve_status=0
wait "$SERVER_PID" || serve_status=$?
SERVER_PID=
((serve_status == 0)) || { tail -20 "$WORK/serve.log" >&2; fail "gpulab serve exited $serve_status on SIGTERM, not 0"; }
echo "   ok   SIGTERM: gpulab serve exited 0"
echo "== 3. the Colab notebook, validated and run to its end on the CPU with this wheel"
GPULAB_WHEEL=$WHEEL "$VENV/bin/python" tests/wheel/notebook.py content/notebooks/gpulab-colab.ipynb
echo "== wheel: done in $((SECONDS - started)) s"
