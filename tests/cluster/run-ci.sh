#!/usr/bin/env bash
# The scale-out test at CI size: 40 students for 15 seconds over two web nodes and three
# workers sharing a throwaway PostgreSQL server, then one worker and one web node
# SIGKILLed (see tests/cluster/cluster.mjs). Uses the gpulab binary the test run already
# built (target/release/gpulab when present, else target/debug/gpulab, or $GPULAB_BIN).
# Sizes can be raised with CLUSTER_STUDENTS / CLUSTER_DURATION_SECS; the full class-size
# run is `CLUSTER_FULL=1 node tests/cluster/cluster.mjs` (200 students x 60 s). Writes
# target/cluster-report.json; exits non-zero when any check fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
export CLUSTER_STUDENTS="${CLUSTER_STUDENTS:-40}"
export CLUSTER_DURATION_SECS="${CLUSTER_DURATION_SECS:-15}"
command -v psql >/dev/null || { echo "cluster: needs psql and a PostgreSQL server (bash tests/setup.sh installs them)" >&2; exit 1; }
# Bounded: the class runs CLUSTER_DURATION_SECS plus the fault phase, wind-down and checks
# (a minute or two; start-up alone can take minutes on a busy box with a debug build). On timeout, SIGTERM lets the script stop its processes and
# the PostgreSQL server.
exec timeout --kill-after=20 "$((CLUSTER_DURATION_SECS + 360))" node tests/cluster/cluster.mjs "$@"
