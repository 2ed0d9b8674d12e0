#!/usr/bin/env bash
# The load test at CI size: 20 students for 10 seconds against the gpulab binary that
# the test run already built (target/release/gpulab when present, else target/debug/gpulab,
# or $GPULAB_BIN). Sizes can be raised with LOAD_STUDENTS / LOAD_DURATION_SECS; the full
# class-size run is `node tests/load/load.mjs` (200 students x 60 s). Writes
# target/load-report.json; exits non-zero when any check fails (lost attempts, 5xx, ...).
set -euo pipefail
cd "$(dirname "$0")/../.."
export LOAD_STUDENTS="${LOAD_STUDENTS:-20}"
export LOAD_DURATION_SECS="${LOAD_DURATION_SECS:-10}"
# Bounded: the run itself is LOAD_DURATION_SECS plus at most a minute of wind-down.
exec timeout --kill-after=10 "$((LOAD_DURATION_SECS + 240))" node tests/load/load.mjs "$@"
