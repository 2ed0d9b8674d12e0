#!/usr/bin/env bash
# Page serving, GPU Lab against nginx on this machine in one run: the same lesson page
# (its bytes fetched from GPU Lab, written to disk with a precompressed .gz beside it for
# nginx's gzip_static), loaded with wrk (2 threads, 100 connections) with and without a
# browser's Accept-Encoding, the two servers alternating, ROUNDS times. Prints req/s and
# p99 latency per server (median over rounds) and GPU Lab ÷ nginx, checks that a reload
# with If-None-Match gets 304 with no body, and reports GPU Lab's idle resident memory
# with every encoding held. The table also goes to target/bench/pages.md.
#
#   bash tests/bench/pages.sh                      # 10 s per load, 2 rounds
#   BENCH_SECS=30 BENCH_ROUNDS=3 bash tests/bench/pages.sh
# Environment: GPULAB_BIN (default target/release/gpulab, built when missing), BENCH_PAGE
# (a lesson slug, default inside-the-gpu), BENCH_SECS, BENCH_ROUNDS, BENCH_CONNECTIONS;
# GPULAB_BASELINE (another gpulab binary, e.g. main's) adds it to the alternation and
# the table, so a change is compared with what it changes under the same load.
# Installs Debian's wrk and nginx when missing (as root). Traffic stays on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"
SECS="${BENCH_SECS:-10}"
ROUNDS="${BENCH_ROUNDS:-2}"
CONNECTIONS="${BENCH_CONNECTIONS:-100}"
PAGE="${BENCH_PAGE:-inside-the-gpu}"
BROWSER_AE="gzip, deflate, br, zstd"

need=()
command -v wrk >/dev/null || need+=(wrk)
command -v nginx >/dev/null || [[ -x /usr/sbin/nginx ]] || need+=(nginx)
if ((${#need[@]})); then
  [[ $(id -u) -eq 0 ]] || { echo "bench: please install ${need[*]}" >&2; exit 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
NGINX="$(command -v nginx || echo /usr/sbin/nginx)"

BIN="${GPULAB_BIN:-target/release/gpulab}"
if [[ ! -x "$BIN" ]]; then
  echo "== building the release binary"
  cargo build --release --locked --quiet
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/gpulab-bench-XXXXXX")"
gpulab_pid=""
baseline_pid=""
nginx_pid=""
cleanup() {
  [[ -n "$gpulab_pid" ]] && kill "$gpulab_pid" 2>/dev/null || true
  [[ -n "$baseline_pid" ]] && kill "$baseline_pid" 2>/dev/null || true
  [[ -n "$nginx_pid" ]] && kill "$nginx_pid" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start NAME BINARY: runs a GPU Lab on a free port; sets started_pid and started_url.
start() {
  echo "== starting $1 ($2)"
  RUST_LOG=warn,gpulab=info "$2" serve --addr 127.0.0.1:0 --database "$WORK/$1.db" 2>"$WORK/$1.log" &
  started_pid=$!
  started_url=""
  for _ in $(seq 1 300); do
    started_url="$(sed -n 's/.*serving .* on \(http:\/\/127\.0\.0\.1:[0-9]*\).*/\1/p' "$WORK/$1.log" | head -n1 || true)"
    [[ -n "$started_url" ]] && return 0
    sleep 0.1
  done
  cat "$WORK/$1.log" >&2
  exit 1
}
start gpulab "$BIN"
gpulab_pid=$started_pid
gpulab=$started_url
servers=(nginx gpulab)
if [[ -n "${GPULAB_BASELINE:-}" ]]; then
  start baseline "$GPULAB_BASELINE"
  baseline_pid=$started_pid
  baseline="$started_url/lessons/$PAGE"
  servers+=(baseline)
fi
url="$gpulab/lessons/$PAGE"

mkdir -p "$WORK/www/lessons"
curl -fsS "$url" -o "$WORK/www/lessons/$PAGE"
gzip -9 -k "$WORK/www/lessons/$PAGE"
# nginx's workers drop root: they must be able to read the page (mktemp -d is 0700).
chmod -R a+rX "$WORK"
nginx_port="$(free_port)"
cat >"$WORK/nginx.conf" <<EOF
worker_processes auto;
pid $WORK/nginx.pid;
error_log $WORK/nginx-error.log warn;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  default_type text/html;
  gzip_static on;
  server {
    listen 127.0.0.1:$nginx_port;
    root $WORK/www;
    location / { add_header Cache-Control no-cache; }
  }
}
EOF
"$NGINX" -p "$WORK" -c "$WORK/nginx.conf" -g 'daemon off;' &
nginx_pid=$!
sleep 1
nginx="http://127.0.0.1:$nginx_port"

# Both serve the same page; GPU Lab's reload with its ETag is a 304 with no body.
cmp <(curl -fsS "$nginx/lessons/$PAGE") <(curl -fsS "$url") || { echo "bench: the two servers differ" >&2; exit 1; }
[[ -z "$baseline_pid" ]] || cmp <(curl -fsS "$url") <(curl -fsS "$baseline") || { echo "bench: the baseline serves other bytes" >&2; exit 1; }
etag="$(curl -fsS -D - -o /dev/null -H "Accept-Encoding: $BROWSER_AE" "$url" | tr -d '\r' | sed -n 's/^etag: //Ip')"
reload="$(curl -sS -o "$WORK/reload" -w '%{http_code}' -H "Accept-Encoding: $BROWSER_AE" -H "If-None-Match: $etag" "$url")"
[[ "$reload" == 304 && ! -s "$WORK/reload" ]] || { echo "bench: reload answered $reload" >&2; exit 1; }
sleep 3  # let the start-up precompression finish before reading the idle memory
rss_kib="$(awk '/^VmRSS/ {print $2}' "/proc/$gpulab_pid/status")"

# One wrk run: prints "req/s p99_ms".
load() {
  local target="$1" accept="$2" out
  if [[ -n "$accept" ]]; then
    out="$(wrk -t2 -c"$CONNECTIONS" -d"${SECS}s" --latency -H "Accept-Encoding: $accept" "$target")"
  else
    out="$(wrk -t2 -c"$CONNECTIONS" -d"${SECS}s" --latency "$target")"
  fi
  local rps p99
  rps="$(awk '/^Requests\/sec/ {print $2}' <<<"$out")"
  p99="$(awk '$1 == "99%" {v=$2; if (v ~ /us$/) {sub(/us$/,"",v); v=v/1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v=v*1000}; print v}' <<<"$out")"
  echo "$rps $p99"
}

declare -A results
for round in $(seq 1 "$ROUNDS"); do
  for mode in plain browser; do
    accept=""
    [[ $mode == browser ]] && accept="$BROWSER_AE"
    for server in "${servers[@]}"; do
      case $server in
        nginx) target="$nginx/lessons/$PAGE" ;;
        gpulab) target="$url" ;;
        baseline) target="$baseline" ;;
      esac
      results[$mode,$server]+="$(load "$target" "$accept");"
      echo "   round $round, $mode, $server: ${results[$mode,$server]##*;}" >/dev/null
    done
  done
  echo "== round $round of $ROUNDS done"
done

median() { tr ';' '\n' | awk 'NF' | sort -g | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
column_of() { tr ';' '\n' | awk -v c="$1" 'NF {print $c}' | tr '\n' ';'; }

mkdir -p target/bench
{
  echo "| request | server | req/s | nginx req/s | ratio | p99 | nginx p99 | p99 ratio |"
  echo "|---|---|---|---|---|---|---|---|"
  for mode in plain browser; do
    n_rps="$(column_of 1 <<<"${results[$mode,nginx]}" | median)"
    n_p99="$(column_of 2 <<<"${results[$mode,nginx]}" | median)"
    label="no Accept-Encoding"
    [[ $mode == browser ]] && label="Accept-Encoding: $BROWSER_AE (nginx: gzip_static)"
    for server in "${servers[@]:1}"; do
      g_rps="$(column_of 1 <<<"${results[$mode,$server]}" | median)"
      g_p99="$(column_of 2 <<<"${results[$mode,$server]}" | median)"
      name="GPU Lab"
      [[ $server == baseline ]] && name="baseline"
      awk -v l="$label" -v s="$name" -v gr="$g_rps" -v nr="$n_rps" -v gp="$g_p99" -v np="$n_p99" 'BEGIN {
        printf "| %s | %s | %.0f | %.0f | %.2f× | %.2f ms | %.2f ms | %.2f× |\n", l, s, gr, nr, gr / nr, gp, np, gp / np }'
    done
  done
  echo
  echo "Page: /lessons/$PAGE ($(wc -c <"$WORK/www/lessons/$PAGE") bytes; gzip $(wc -c <"$WORK/www/lessons/$PAGE.gz"))."
  echo "wrk -t2 -c$CONNECTIONS -d${SECS}s, median of $ROUNDS rounds, servers alternating (${servers[*]}); $(nproc) cores; load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)."
  [[ -z "$baseline_pid" ]] || echo "baseline: $GPULAB_BASELINE."
  echo "Reload with If-None-Match: $reload, empty body. GPU Lab idle RSS with every encoding held: $((rss_kib / 1024)) MiB."
} | tee target/bench/pages.md
