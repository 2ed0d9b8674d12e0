#!/usr/bin/env bash
# Validates the Kubernetes manifests in docker/k8s/ (every *.yaml, and *.yaml.example,
# which kubectl does not apply but instructors copy) against the Kubernetes API schemas,
# for the oldest and the newest Kubernetes version below. --strict rejects fields the
# schema does not know (a misspelt `readinesProbe` would otherwise pass), and any line
# but an INFO "passed" fails the run: kubernetes-validate only warns, exit 0, about a
# kind or apiVersion it has no schema for.
# The validator is the pinned `kubernetes-validate` PyPI package, which bundles the
# schemas, so validating needs no network and no cluster. It is installed into a virtual
# environment in target/ once and reused: safe to run every time.
set -euo pipefail
cd "$(dirname "$0")/.."

VALIDATE_VERSION=1.37.0
KUBERNETES_VERSIONS=(1.28.0 1.37.0)
VENV="${K8S_VENV:-target/k8s-venv}"
marker="$VENV/.installed-$VALIDATE_VERSION"
if [[ ! -f $marker ]]; then
  command -v python3 >/dev/null || { echo "lint-k8s: python3 is required to install kubernetes-validate" >&2; exit 1; }
  echo "lint-k8s: installing kubernetes-validate==$VALIDATE_VERSION into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
    "kubernetes-validate==$VALIDATE_VERSION"
  touch "$marker"
fi

shopt -s nullglob
manifests=(docker/k8s/*.yaml docker/k8s/*.yaml.example)
shopt -u nullglob
if ((${#manifests[@]} == 0)); then
  echo "lint-k8s: no manifests in docker/k8s/" >&2
  exit 1
fi

versions=()
for version in "${KUBERNETES_VERSIONS[@]}"; do
  versions+=(-k "$version")
done
status=0
report="$("$VENV/bin/kubernetes-validate" --strict "${versions[@]}" "${manifests[@]}" 2>&1)" || status=$?
echo "$report"
if ((status != 0)) || grep -qv '^INFO .* passed for resource ' <<<"$report"; then
  echo "lint-k8s: docker/k8s/ does not validate (see above)" >&2
  exit 1
fi
echo "lint-k8s: ${#manifests[@]} files in docker/k8s/ validate against Kubernetes ${KUBERNETES_VERSIONS[*]}"
