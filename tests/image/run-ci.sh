#!/usr/bin/env bash
# The class box for real: builds GPU Lab's image from docker/Dockerfile with podman
# (tests/image/build.sh) and checks the built image as an instructor would run it on one
# machine with `docker run` / compose.yaml (no GPU here: the CPU path):
#
#   1. `gpulab doctor` in the image: NVRTC loads and compiles for Blackwell (sm_120), it
#      compiles every kernel, cuBLAS loads; no driver, so experiments run on the CPU;
#   2. the container runs as the unprivileged user 10001, not root;
#   3. started with a named volume on /data and a loopback port: /healthz answers, the
#      image's HEALTHCHECK passes when run (`podman healthcheck run`: podman's own timer
#      needs systemd, which these machines lack), a lesson is served, an experiment runs
#      to its end, a student's quiz attempt is recorded;
#   4. a training run is running when `podman stop` sends SIGTERM: the server drains, the
#      run finishes, and the container exits 0;
#   5. `podman start` again: the run is `done` and the quiz attempt is still there;
#      then the container is removed and a new one started on the same volume: the
#      attempt is still there (it lives on the volume, not in the container);
#   6. a last SIGTERM with nothing running: exit 0;
#   7. the image's size, printed and held to a budget (GPULAB_IMAGE_BUDGET_MB, 1400).
#
# Every podman call and every wait is bounded; containers and the volume are removed on
# the way out, on failure too. Prints how long each part took.
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/image/lib.sh
source tests/image/lib.sh

started=$SECONDS
bash tests/image/build.sh

NAME=gpulab-ci-box
VOLUME=gpulab-ci-box-data
STATE=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-image.XXXXXX")
cleanup() {
  local status=$?
  pm rm -f -t 0 "$NAME" >/dev/null 2>&1 || true
  pm volume rm -f "$VOLUME" >/dev/null 2>&1 || true
  rm -rf "$STATE"
  exit "$status"
}
trap cleanup EXIT
pm rm -f -t 0 "$NAME" >/dev/null 2>&1 || true
pm volume rm -f "$VOLUME" >/dev/null 2>&1 || true

fail() {
  echo "image: FAIL: $*" >&2
  exit 1
}

checks_started=$SECONDS
echo "== 1. gpulab doctor in the image (no GPU here)"
doctor=$(pm run --rm --no-healthcheck "$GPULAB_IMAGE" doctor)
while IFS= read -r line; do echo "   $line"; done <<<"$doctor"
grep -Eq '\[ok +\] NVRTC loads: NVRTC 12\.9 .*compiles for sm_[0-9]+ … sm_1[2-9][0-9]' <<<"$doctor" ||
  fail "NVRTC 12.9 did not load from the image, or cannot compile for Blackwell (sm_120)"
grep -Eq '\[ok +\] NVRTC compiles every kernel' <<<"$doctor" || fail "NVRTC did not compile every kernel"
grep -Eq '\[ok +\] cuBLAS loads: cuBLAS 12\.9' <<<"$doctor" || fail "cuBLAS 12.9 did not load"
grep -q 'Experiments run on the CPU instead' <<<"$doctor" || fail "with no driver, the doctor should say the CPU runs the experiments"
echo "   ok   NVRTC (compiles for Blackwell) and cuBLAS work in the image; no driver: CPU"

echo "== 2. the container's user"
user=$(pm image inspect --format '{{.Config.User}}' "$GPULAB_IMAGE")
uid=$(pm run --rm --no-healthcheck --entrypoint id "$GPULAB_IMAGE" -u)
[[ $user == 10001:10001 && $uid == 10001 ]] || fail "the container runs as '$user' (id -u: $uid), not 10001"
echo "   ok   runs as uid $uid (USER $user), not root"

echo "== 3. started with a volume on /data: health, a lesson, an experiment, a quiz"
PORT=$(free_port)
BASE="http://127.0.0.1:$PORT"
TOKEN=$(openssl rand -hex 32)
# --health-interval disable: keep the image's HEALTHCHECK but set up no timer (podman's
# timers are systemd units); `podman healthcheck run` runs it below. The drain timeout
# is raised so a slow, busy CI machine cannot turn a drained run into a cancelled one.
run_box() {
  pm run -d --name "$NAME" -p "127.0.0.1:$PORT:8000" -v "$VOLUME:/data" \
    --health-interval disable \
    -e GPULAB_INSTRUCTOR_TOKEN="$TOKEN" -e GPULAB_DRAIN_TIMEOUT_SECS=100 \
    "$GPULAB_IMAGE" >/dev/null
}
run_box
up_started=$SECONDS
wait_http "$BASE/healthz" 120 "$NAME"
echo "   ok   /healthz answers $(elapsed "$up_started") s after the start"
pm healthcheck run "$NAME" || fail "the image's HEALTHCHECK failed on a running server"
[[ $(pm inspect --format '{{.State.Healthcheck.Status}}' "$NAME") == healthy ]] ||
  fail "podman does not record the container as healthy after its HEALTHCHECK passed"
echo "   ok   the image's HEALTHCHECK passes (podman healthcheck run: healthy)"
node tests/image/student.mjs lesson "$BASE"
node tests/image/student.mjs experiment "$BASE" timing
node tests/image/student.mjs quiz "$BASE" "$STATE/quiz.json"
node tests/image/student.mjs grades "$BASE" "$TOKEN" "$STATE/grades-before.csv"

echo "== 4. SIGTERM while a training run is running: drain, finish it, exit 0"
node tests/image/student.mjs start-training "$BASE" "$STATE/training.json"
stop_started=$SECONDS
PM_TIMEOUT=200 pm stop -t 130 "$NAME" >/dev/null
exit_code=$(pm inspect --format '{{.State.ExitCode}}' "$NAME")
pm logs "$NAME" 2>&1 | grep -q 'SIGTERM received' || fail "the server's log does not show the SIGTERM"
((exit_code == 0)) || {
  pm logs --tail 30 "$NAME" >&2
  fail "the server exited $exit_code on SIGTERM, not 0"
}
echo "   ok   stopped by SIGTERM after $(elapsed "$stop_started") s, exit code 0"

echo "== 5. podman start: the drained run and the quiz attempt are there; a new container on the same volume too"
pm start "$NAME" >/dev/null
wait_http "$BASE/healthz" 120 "$NAME"
node tests/image/student.mjs finished "$BASE" "$STATE/training.json"
node tests/image/student.mjs progress "$BASE" "$STATE/quiz.json"
PM_TIMEOUT=200 pm stop -t 130 "$NAME" >/dev/null
pm rm "$NAME" >/dev/null
run_box
wait_http "$BASE/healthz" 120 "$NAME"
node tests/image/student.mjs progress "$BASE" "$STATE/quiz.json"
node tests/image/student.mjs grades "$BASE" "$TOKEN" "$STATE/grades-after.csv"
cmp -s "$STATE/grades-before.csv" "$STATE/grades-after.csv" ||
  fail "the gradebook changed across the new container: $(diff "$STATE/grades-before.csv" "$STATE/grades-after.csv" | head -5)"
echo "   ok   a new container on the volume has the same gradebook"

echo "== 6. SIGTERM with nothing running"
stop_started=$SECONDS
PM_TIMEOUT=200 pm stop -t 130 "$NAME" >/dev/null
exit_code=$(pm inspect --format '{{.State.ExitCode}}' "$NAME")
((exit_code == 0)) || fail "the server exited $exit_code on SIGTERM, not 0"
echo "   ok   exit code 0 after $(elapsed "$stop_started") s"

echo "== 7. the image's size"
# A budget, not a measurement of anything else: about 30% above the 1093 MB this image
# had when the budget was set (Debian 12 slim 77 MB, NVIDIA's libraries 973 MB, curl and
# sqlite3, the stripped binary), so a layer that grows it by hundreds of MB fails here.
size=$(image_mb "$GPULAB_IMAGE")
((size <= ${GPULAB_IMAGE_BUDGET_MB:-1400})) ||
  fail "$GPULAB_IMAGE is $size MB, over its budget of ${GPULAB_IMAGE_BUDGET_MB:-1400} MB"
echo "   ok   $size MB uncompressed, within the ${GPULAB_IMAGE_BUDGET_MB:-1400} MB budget"

echo "image: every check passed (build $((checks_started - started)) s, checks $(elapsed "$checks_started") s, $(elapsed "$started") s in all; image $size MB)"
