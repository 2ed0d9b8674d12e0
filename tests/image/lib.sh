# Shared by the image tests (tests/image/*.sh), sourced from the repository root: podman
# with this folder's containers.conf, every podman call bounded in time, a free loopback
# port, a bounded wait for an HTTP answer, and the local stand-in for Debian's base image.
# shellcheck shell=bash

export CONTAINERS_CONF="$PWD/tests/image/containers.conf"

# The image docker/compose*.yaml name; the tests build it under that name.
GPULAB_IMAGE=${GPULAB_IMAGE:-localhost/gpulab:local}
# Debian's base image as docker/Dockerfile names it, made here when it is missing.
DEBIAN_IMAGE=docker.io/library/debian:12-slim
DEBIAN_SUITE=bookworm

command -v podman >/dev/null || {
  echo "image tests: podman is missing (bash tests/setup.sh installs it)" >&2
  exit 1
}

# podman, killed after PM_TIMEOUT seconds (default 300): no call can hang CI. Podman
# tries to set up a systemd timer for every container with a HEALTHCHECK and logs an
# error when there is no systemd (as on these machines) even with --health-interval
# disable; those lines are dropped, everything else it prints is kept.
pm() {
  timeout --kill-after=10 "${PM_TIMEOUT:-300}" podman "$@" \
    2> >(grep -v 'unable to get systemd connection' >&2)
}

# Seconds since the script started, for the timings it prints.
elapsed() {
  echo "$((SECONDS - ${1:-0}))"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_http URL SECS [CONTAINER]: until URL answers 2xx, at most SECS seconds; with
# CONTAINER, stop early (and fail) when it is no longer running, and show its log.
wait_http() {
  local url=$1 secs=$2 container=${3:-} deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    curl -fsS -o /dev/null --max-time 5 "$url" 2>/dev/null && return 0
    if [[ -n $container ]] && [[ $(pm inspect --format '{{.State.Running}}' "$container" 2>/dev/null) != true ]]; then
      echo "$container stopped before $url answered; its log:" >&2
      pm logs --tail 40 "$container" >&2 || true
      return 1
    fi
    sleep 1
  done
  echo "$url did not answer within $secs s" >&2
  [[ -z $container ]] || pm logs --tail 40 "$container" >&2 || true
  return 1
}

# Debian 12's slim image, made from Debian's own packages when this machine has none
# (no registry holds it here): mmdebstrap's minbase with the slim image's settings
# (no manuals, translations or documentation but the copyright files; apt keeps no
# package cache), imported under the name the Dockerfile asks for and labelled as a
# stand-in. Made once per machine: podman's image store keeps it between runs.
ensure_debian_image() {
  if pm image exists "$DEBIAN_IMAGE"; then
    return 0
  fi
  command -v mmdebstrap >/dev/null || {
    echo "image tests: mmdebstrap is missing (bash tests/setup.sh installs it)" >&2
    exit 1
  }
  local started=$SECONDS rootfs
  rootfs=$(mktemp -d "${TMPDIR:-/tmp}/gpulab-rootfs.XXXXXX")
  echo "image tests: making $DEBIAN_IMAGE from Debian's packages (mmdebstrap $DEBIAN_SUITE minbase)"
  # The hooks' "$1" (the new root) is mmdebstrap's to expand, not this shell's.
  # shellcheck disable=SC2016
  timeout 900 mmdebstrap --quiet --variant=minbase --mode=root \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --customize-hook='printf "%s\n" "Dir::Cache::pkgcache \"\";" "Dir::Cache::srcpkgcache \"\";" > "$1/etc/apt/apt.conf.d/docker-clean"' \
    --customize-hook='printf "%s\n" "Acquire::Languages \"none\";" > "$1/etc/apt/apt.conf.d/docker-no-languages"' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
    "$DEBIAN_SUITE" "$rootfs/rootfs.tar" \
    "deb http://deb.debian.org/debian $DEBIAN_SUITE main" \
    "deb http://deb.debian.org/debian $DEBIAN_SUITE-updates main" \
    "deb http://deb.debian.org/debian-security $DEBIAN_SUITE-security main"
  pm import --change 'CMD ["bash"]' \
    --change 'LABEL org.gpulab.stand-in="mmdebstrap --variant=minbase '"$DEBIAN_SUITE"' (tests/image/lib.sh)"' \
    "$rootfs/rootfs.tar" "$DEBIAN_IMAGE" >/dev/null
  rm -rf "$rootfs"
  echo "image tests: $DEBIAN_IMAGE made in $(elapsed "$started") s ($(image_mb "$DEBIAN_IMAGE") MB)"
}

# An image's size in MB (10^6 bytes), as podman stores it (uncompressed).
image_mb() {
  echo $(($(pm image inspect --format '{{.Size}}' "$1") / 1000000))
}
