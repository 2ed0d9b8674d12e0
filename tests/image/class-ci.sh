#!/usr/bin/env bash
# The class deployment for real: docker/compose.postgres.yaml (PostgreSQL, two web nodes
# behind the nginx proxy, a worker) brought up with podman-compose on the image
# tests/image/build.sh builds, with docker/compose.cpu.yaml on top (CI has no GPU: the
# worker runs on the CPU). Checks, through the proxy on a loopback port:
#
#   1. a lesson is served; a student's experiment goes web node -> PostgreSQL's queue ->
#      the worker, and comes back done, measured by that worker (provenance); both web
#      nodes answered requests through the proxy;
#   2. a quiz attempt is recorded; the instructor's gradebook (grades.csv) has it;
#   3. `down` (containers gone, the volume kept) and `up` again: the student's attempt
#      and the gradebook are the same.
#
# No registry is reached: PostgreSQL and nginx are local stand-ins built from Debian's
# packages (tests/image/standins/, named through POSTGRES_IMAGE and PROXY_IMAGE), which
# keep the official images' interface that the compose file uses. The compose files run
# as they are, from a copy of docker/ with its own .env (a developer's docker/.env is
# never touched). Every wait is bounded; everything is taken down on the way out, the
# volume too, which the script refuses to do for a `gpulab-postgres` volume it did not
# make (an instructor's gradebook).
set -euo pipefail
cd "$(dirname "$0")/../.."
# shellcheck source=tests/image/lib.sh
source tests/image/lib.sh

started=$SECONDS
COMPOSE_BIN=${PODMAN_COMPOSE:-target/compose-venv/bin/podman-compose}
[[ -x $COMPOSE_BIN ]] || {
  echo "class: no podman-compose at $COMPOSE_BIN (bash tests/setup.sh installs it)" >&2
  exit 1
}
ensure_debian_image
pm image exists "$GPULAB_IMAGE" || bash tests/image/build.sh

echo "== stand-ins for the PostgreSQL and nginx images, from Debian's packages"
mkdir -p target/image
export POSTGRES_IMAGE=localhost/gpulab-standin-postgres:15
export PROXY_IMAGE=localhost/gpulab-standin-nginx:1.22
for standin in postgres:"$POSTGRES_IMAGE" proxy:"$PROXY_IMAGE"; do
  dir=tests/image/standins/${standin%%:*}
  image=${standin#*:}
  build_started=$SECONDS
  PM_TIMEOUT=900 pm build --pull=never --format docker -t "$image" "$dir" >"target/image/standin-${standin%%:*}.log" 2>&1 || {
    tail -n 30 "target/image/standin-${standin%%:*}.log" >&2
    echo "class: building $image failed" >&2
    exit 1
  }
  echo "   $image: $(image_mb "$image") MB, built in $(elapsed "$build_started") s"
done

# A copy of docker/'s compose files and proxy.conf, with a .env of its own.
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-class.XXXXXX")
cp -p docker/compose.postgres.yaml docker/compose.cpu.yaml docker/proxy.conf docker/proxy-resolver.envsh "$WORK/"
PORT=$(free_port)
TOKEN=$(openssl rand -hex 32)
cat >"$WORK/.env" <<EOF
GPULAB_INSTRUCTOR_TOKEN=$TOKEN
POSTGRES_PASSWORD=$(openssl rand -hex 24)
GPU_BOX=ci
PROXY_PORT=127.0.0.1:$PORT
POSTGRES_IMAGE=$POSTGRES_IMAGE
PROXY_IMAGE=$PROXY_IMAGE
EOF
BASE="http://127.0.0.1:$PORT"
PROJECT=gpulab-postgres
VOLUME=gpulab-postgres
MARKER=.made-by-tests-image-class-ci

compose() {
  # --in-pod false: one container per service replica on the project's network, as
  # Docker Compose does (in one pod, the two web nodes would share port 8000).
  timeout --kill-after=10 "${PM_TIMEOUT:-300}" "$COMPOSE_BIN" --in-pod false \
    -f "$WORK/compose.postgres.yaml" -f "$WORK/compose.cpu.yaml" "$@" \
    > >(grep -v 'unable to get systemd connection' >>"$WORK/compose.log") 2>&1
}

# `down`, and the anonymous volumes podman made for the image's VOLUME /data in the web
# nodes and workers (they mount nothing there, and podman-compose's `down` leaves those).
take_down() {
  local anonymous=() container
  for container in $(pm ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.ID}}'); do
    mapfile -t -O "${#anonymous[@]}" anonymous < <(pm inspect --format \
      '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}}{{"\n"}}{{end}}{{end}}' "$container" |
      grep -E '^[0-9a-f]{64}$' || true)
  done
  compose down "$@"
  if ((${#anonymous[@]})); then
    pm volume rm -f "${anonymous[@]}" >/dev/null
  fi
}

# The volume is the class's gradebook: only one this script made may be removed.
volume_is_ours() {
  local mountpoint
  mountpoint=$(pm volume inspect --format '{{.Mountpoint}}' "$VOLUME" 2>/dev/null) || return 1
  [[ -e $mountpoint/$MARKER ]]
}
cleanup() {
  local status=$?
  if ((status)); then
    echo "class: the compose log (last lines):" >&2
    tail -n 40 "$WORK/compose.log" >&2 || true
    for c in $(pm ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}' 2>/dev/null); do
      echo "--- $c" >&2
      pm logs --tail 15 "$c" >&2 2>&1 || true
    done
  fi
  take_down -t 30 >/dev/null 2>&1 || true
  if volume_is_ours; then
    pm volume rm -f "$VOLUME" >/dev/null 2>&1 || true
  fi
  rm -rf "$WORK"
  exit "$status"
}
if pm volume exists "$VOLUME" && ! volume_is_ours; then
  echo "class: a volume $VOLUME is here that this test did not make (an instructor's gradebook?): not touching it; stop here" >&2
  exit 1
fi
trap cleanup EXIT
take_down -t 30 >/dev/null 2>&1 || true
if volume_is_ours; then
  pm volume rm -f "$VOLUME" >/dev/null
fi

# PostgreSQL first, until it is ready (podman's health timers need systemd, so the
# compose file's `condition: service_healthy` cannot be waited on: the script runs the
# postgres service's own health check until it passes, at most 120 s).
wait_postgres() {
  local deadline=$((SECONDS + 120)) container
  container=$(pm ps --filter "label=io.podman.compose.project=$PROJECT" \
    --filter "label=io.podman.compose.service=postgres" --format '{{.Names}}' | head -n 1)
  [[ -n $container ]] || { echo "class: no postgres container" >&2; return 1; }
  while ((SECONDS < deadline)); do
    pm healthcheck run "$container" >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "class: $container did not pass its health check within 120 s" >&2
  pm logs --tail 30 "$container" >&2 || true
  return 1
}
up() {
  local up_started=$SECONDS
  compose up -d --no-build postgres
  wait_postgres
  compose up -d --no-build web proxy worker-gpu0
  wait_http "$BASE/readyz" 180
  echo "   up in $(elapsed "$up_started") s: $(pm ps --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}' | sort | tr '\n' ' ')"
}

STATE=$WORK/state
mkdir -p "$STATE"
checks_started=$SECONDS
echo "== 1. up: postgres, 2 web nodes, the proxy on 127.0.0.1:$PORT, worker-gpu0 (on the CPU)"
up
mountpoint=$(pm volume inspect --format '{{.Mountpoint}}' "$VOLUME")
touch "$mountpoint/$MARKER"
node tests/image/student.mjs lesson "$BASE"
node tests/image/student.mjs experiment "$BASE" timing ci-gpu0
# The proxy spreads the requests over both web nodes: each one counts some (its /metrics,
# asked inside its container, not counting the /metrics requests themselves). The proxy
# looks `web` up again every 10 s (proxy.conf), so a node that joined the network after
# its last lookup gets requests from the next one on: the script keeps asking /healthz
# through the proxy for up to 45 s until both have answered some.
mapfile -t webs < <(pm ps --filter "label=io.podman.compose.project=$PROJECT" \
  --filter "label=io.podman.compose.service=web" --format '{{.Names}}' | sort)
((${#webs[@]} == 2)) || { echo "class: FAIL: ${#webs[@]} web nodes running, not 2: ${webs[*]}" >&2; exit 1; }
served_by() {
  pm exec "$1" curl -fsS --max-time 10 http://127.0.0.1:8000/metrics |
    awk '/^gpulab_http_requests_total\{/ && !/route="\/metrics"/ { s += $NF } END { print s + 0 }'
}
deadline=$((SECONDS + 45))
while :; do
  served=()
  idle=0
  for web in "${webs[@]}"; do
    count=$(served_by "$web")
    ((count > 0)) || idle=$((idle + 1))
    served+=("$web: $count")
  done
  ((idle == 0)) && break
  ((SECONDS < deadline)) || { echo "class: FAIL: a web node answered no request through the proxy in 45 s (${served[*]})" >&2; exit 1; }
  for _ in 1 2 3 4 5; do curl -fsS -o /dev/null --max-time 5 "$BASE/healthz" || true; done
  sleep 1
done
echo "   ok   both web nodes answered requests through the proxy (${served[*]})"

echo "== 2. a quiz attempt, in the instructor's gradebook"
node tests/image/student.mjs quiz "$BASE" "$STATE/quiz.json"
node tests/image/student.mjs grades "$BASE" "$TOKEN" "$STATE/grades-before.csv"

echo "== 3. down (the volume stays) and up again"
down_started=$SECONDS
take_down -t 60
pm volume exists "$VOLUME" || { echo "class: FAIL: down removed the volume $VOLUME" >&2; exit 1; }
[[ -z $(pm ps -a --filter "label=io.podman.compose.project=$PROJECT" --format '{{.Names}}') ]] ||
  { echo "class: FAIL: containers left after down" >&2; exit 1; }
echo "   down in $(elapsed "$down_started") s; the volume $VOLUME is kept"
up
node tests/image/student.mjs progress "$BASE" "$STATE/quiz.json"
node tests/image/student.mjs grades "$BASE" "$TOKEN" "$STATE/grades-after.csv"
cmp -s "$STATE/grades-before.csv" "$STATE/grades-after.csv" || {
  echo "class: FAIL: the gradebook changed across down/up:" >&2
  diff "$STATE/grades-before.csv" "$STATE/grades-after.csv" >&2 || true
  exit 1
}
echo "   ok   the gradebook is the same after down/up"
node tests/image/student.mjs experiment "$BASE" timing ci-gpu0

echo "class: every check passed (checks $(elapsed "$checks_started") s, $(elapsed "$started") s in all)"
