#!/usr/bin/env bash
# Schema-driven fuzzing of the JSON API with Schemathesis: starts gpulab on a free
# loopback port with a fresh database and small experiment caps, runs Schemathesis
# against its own /api/openapi.json (examples, coverage, fuzzing and stateful phases,
# a bounded number of cases per operation), then checks the server is still alive,
# still healthy, and never logged "panicked".
#
# Why: the OpenAPI document is what clients and the course's own scripts trust; this
# finds inputs that crash a handler (any 5xx) and answers that contradict the document.
#
#   bash tests/fuzz/run.sh                        # CI size: 100 cases per operation (~30 s)
#   FUZZ_EXAMPLES=1000 bash tests/fuzz/run.sh     # a deeper run
#   FUZZ_CHECKS=all bash tests/fuzz/run.sh        # also the opinionated checks
#                                                 # (positive/negative data acceptance)
# Environment: GPULAB_BIN (default target/debug/gpulab, else target/release/gpulab),
# FUZZ_EXAMPLES, FUZZ_SEED, FUZZ_CHECKS, FUZZ_TIME_LIMIT_SECS (default 420).
# Schemathesis is pinned and installed once into target/fuzz-venv. Reports (JUnit XML
# and the Schemathesis output) go to target/fuzz-report/. Exit status 0 when clean.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"

ST_VERSION=4.32.5
VALIDATOR_VERSION=0.9.0
VENV=target/fuzz-venv
EXAMPLES="${FUZZ_EXAMPLES:-100}"
TIME_LIMIT="${FUZZ_TIME_LIMIT_SECS:-420}"
# Checks that hold for this API by design. positive_data_acceptance and
# negative_data_rejection are left to FUZZ_CHECKS=all: the server rightly answers 422
# to schema-valid requests that break a rule a schema cannot state (log_every <= steps,
# a tensor that does not exist, a playground that is full).
CHECKS="${FUZZ_CHECKS:-not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance}"
REPORT_DIR=target/fuzz-report

if ! "$VENV/bin/st" --version 2>/dev/null | grep -q "version $ST_VERSION\$"; then
  echo "== installing schemathesis $ST_VERSION into $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet "schemathesis==$ST_VERSION"
fi
if ! "$VENV/bin/pip" show openapi-spec-validator 2>/dev/null | grep -q "^Version: $VALIDATOR_VERSION\$"; then
  echo "== installing openapi-spec-validator $VALIDATOR_VERSION into $VENV"
  "$VENV/bin/pip" install --quiet "openapi-spec-validator==$VALIDATOR_VERSION"
fi

BIN="${GPULAB_BIN:-}"
if [[ -z "$BIN" ]]; then
  for candidate in target/debug/gpulab target/release/gpulab; do
    if [[ -x "$candidate" ]]; then BIN="$candidate"; break; fi
  done
fi
[[ -x "${BIN:-}" ]] || { echo "no gpulab binary (build it, or set GPULAB_BIN)" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpulab-fuzz-XXXXXX")"
LOG="$WORK/server.log"
mkdir -p "$REPORT_DIR"
server_pid=""
cleanup() {
  if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill -KILL "$server_pid" 2>/dev/null || true
  fi
  cp "$LOG" "$REPORT_DIR/server.log" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

echo "== starting $BIN"
: >"$LOG"
NO_COLOR=1 RUST_LOG="${RUST_LOG:-warn,gpulab=info}" "$BIN" serve \
  --addr 127.0.0.1:0 --database "$WORK/fuzz.db" \
  --max-transfer-bytes 1048576 --max-matmul-size 128 --max-train-steps 50 --max-hidden 32 \
  --playground-mib-per-student 64 --playground-mib-total 256 \
  --writes-per-minute-per-address 1000000 --attempts-per-minute 1000000 \
  --job-timeout-secs 20 --drain-timeout-secs 5 2>"$LOG" &
server_pid=$!
base=""
for _ in $(seq 1 600); do
  base="$(sed -n 's/.*serving .* on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$LOG" | head -n1 || true)"
  [[ -n "$base" ]] && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$LOG" >&2; echo "gpulab exited before serving" >&2; exit 1; }
  sleep 0.1
done
[[ -n "$base" ]] || { cat "$LOG" >&2; echo "gpulab did not start within 60 s" >&2; exit 1; }
echo "== validating $base/api/openapi.json against the OpenAPI specification"
curl -fsS --max-time 30 "$base/api/openapi.json" -o "$WORK/openapi.json"
"$VENV/bin/openapi-spec-validator" "$WORK/openapi.json"
echo "== fuzzing $base/api/openapi.json: $EXAMPLES cases per operation, checks $CHECKS"

# One student, as a browser that has loaded a page: writes without the student cookie
# are refused before any validation, which is not what this fuzz is for (tests/abuse
# covers that refusal).
student="$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
st_status=0
seed_args=()
[[ -n "${FUZZ_SEED:-}" ]] && seed_args=(--seed "$FUZZ_SEED")
# Run from the scratch folder: Schemathesis and Hypothesis leave caches in the current
# directory, which belong with the throw-away database, not in the work tree.
(cd "$WORK" && timeout --kill-after=10 "$TIME_LIMIT" "$ROOT/$VENV/bin/st" \
  --config-file "$ROOT/tests/fuzz/schemathesis.toml" run \
  "$base/api/openapi.json" \
  --checks "$CHECKS" \
  --header "Cookie: gpulab_student=$student" \
  --max-examples "$EXAMPLES" \
  --workers 1 \
  --request-timeout 30 \
  --generation-database none \
  --continue-on-failure \
  --no-color \
  --report junit --report-junit-path "$ROOT/$REPORT_DIR/junit.xml" \
  "${seed_args[@]}") 2>&1 | tee "$REPORT_DIR/schemathesis.txt" || st_status=$? # pipefail: st's status

problems=()
((st_status == 0)) || problems+=("schemathesis reported failures (exit $st_status); see $REPORT_DIR/schemathesis.txt")
if ! kill -0 "$server_pid" 2>/dev/null; then
  problems+=("the server is no longer running")
else
  health="$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 "$base/healthz" || true)"
  [[ "$health" == 200 ]] || problems+=("GET /healthz answered $health after fuzzing")
fi
if grep -q "panicked" "$LOG"; then
  problems+=("the server log has \"panicked\": $(grep -m1 panicked "$LOG")")
fi
five_xx="$(curl -s --max-time 10 "$base/metrics" | awk '/^gpulab_http_requests_total\{/ && /status="5[0-9][0-9]"/ {n += $NF} END {print n + 0}' || echo "?")"
[[ "$five_xx" == 0 ]] || problems+=("/metrics counts $five_xx responses >= 500")

# An orderly stop: SIGTERM, at most 30 s.
kill -TERM "$server_pid" 2>/dev/null || true
for _ in $(seq 1 300); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$server_pid" 2>/dev/null; then
  problems+=("the server did not exit within 30 s of SIGTERM")
else
  wait "$server_pid" && code=0 || code=$?
  ((code == 0)) || problems+=("the server exited $code after SIGTERM")
fi
server_pid=""

if ((${#problems[@]})); then
  printf 'fuzz: FAILED: %s\n' "${problems[@]}" >&2
  exit 1
fi
echo "fuzz: no server errors, no schema violations, server alive and clean (report: $REPORT_DIR/)"
