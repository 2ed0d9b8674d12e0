#!/usr/bin/env bash
# Records real tuning-lab runs on this machine for the grading tests
# (server/experiments/labs/recorded_tests.rs): each case is `gpulab bench lab --json`
# with one setting, kept as the three settings' per-round samples, the load average
# while it ran and the verdict this build gave. The tests re-grade these samples, so a
# change to the grading rule is checked against measurements, not invented numbers.
#
#   bash tests/labs/record.sh [OUT.json]    # default: a file named after this CPU
#
# Needs a release build (cargo build --release). Takes about a minute. Name the file for
# what the box was doing while it ran (…-busy.json, …-quiet.json): the tests say which.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${GPULAB_BIN:-target/release/gpulab}"
[[ -x $BIN ]] || { echo "record.sh: no $BIN: cargo build --release" >&2; exit 1; }
cpu="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
slug="$(echo "$cpu" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '-' | tr -s '-' | sed 's/^-//; s/-$//')"
OUT="${1:-server/experiments/labs/recorded/$slug-$(nproc)-cores.json}"
mkdir -p "$(dirname "$OUT")"

# label | lab | flags (the candidate's knobs)
CASES=(
  "feed-reference|feed-the-gpu|--batch 256 --data-on-device true --pinned true --non-blocking true"
  "feed-pinned-only|feed-the-gpu|--pinned true"
  "feed-batch-64|feed-the-gpu|--batch 64"
  "stop-reference|stop-waiting|--batch 64 --log-every 50 --timer-sync true"
  "stop-no-timer-sync|stop-waiting|--batch 64 --log-every 50"
  "budget-accumulate-4|fit-the-budget|--batch 1024 --accumulation 4 --data-on-device true --log-every 10"
  "budget-bf16-only|fit-the-budget|--batch 1024 --precision bf16 --data-on-device true --log-every 10"
  "precision-bf16|mixed-precision|--batch 256 --precision bf16 --data-on-device true --log-every 10"
  "doctor-reference|slow-loop-doctor|--batch 256 --data-on-device true --pinned true --log-every 50 --precision bf16"
  "doctor-batch-32|slow-loop-doctor|--batch 32"
)
parts="$(mktemp -d)"
trap 'rm -rf "$parts"' EXIT
for case in "${CASES[@]}"; do
  IFS='|' read -r label lab flags <<<"$case"
  echo "== $label"
  load="$(cut -d' ' -f1 /proc/loadavg)"
  # shellcheck disable=SC2086 # the flags are words
  "$BIN" bench lab --lab "$lab" $flags --json >"$parts/$label.json"
  printf '%s\n%s\n%s\n' "$label" "$flags" "$load" >"$parts/$label.meta"
done
python3 - "$parts" "$OUT" "$cpu" "$(nproc)" "$("$BIN" --version)" <<'PY'
import json, pathlib, sys, datetime
parts, out, cpu, cores, version = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
cases = []
for meta in sorted(parts.glob("*.meta")):
    label, flags, load = meta.read_text().splitlines()
    r = json.loads(meta.with_suffix(".json").read_text())
    keep = lambda m: {k: m[k] for k in ("knobs", "samples", "timer_ratio", "first_loss", "final_loss")}
    cases.append({
        "label": label, "lab": r["lab"], "flags": flags, "load_average": float(load),
        "backend": r["backend"], "verdict_then": r["verdict"],
        "baseline": keep(r["baseline"]), "candidate": keep(r["candidate"]),
        "reference": keep(r["reference"]),
    })
doc = {
    "what": "tuning-lab runs recorded by tests/labs/record.sh, re-graded by server/experiments/labs/recorded_tests.rs",
    "cpu": cpu, "logical_cores": cores, "gpulab": version,
    "recorded": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
    "cases": cases,
}
pathlib.Path(out).write_text(json.dumps(doc, indent=1) + "\n")
print(f"wrote {len(cases)} cases to {out}")
for c in cases:
    print(f"  {c['label']:<22} load {c['load_average']:>5}  {c['verdict_then']}")
PY
