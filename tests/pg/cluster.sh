#!/usr/bin/env bash
# A throwaway PostgreSQL server for the test suite: initdb into a fresh folder, start it
# on a free loopback port, stop it and delete the folder afterwards. tests/run.sh starts
# one for the whole run and hands its URL to the Rust tests (GPULAB_TEST_POSTGRES), which
# create a database of their own in it per test.
#
# Why: the PostgreSQL store has to be tested against a real server, and a private one
# (its own port, its own socket folder, nothing under /var/lib/postgresql) can neither
# disturb nor be disturbed by a server the machine already runs, or another test run.
#
#   bash tests/pg/cluster.sh start DIR   # DIR: a new or empty folder (mktemp -d);
#                                        # prints the URL (the only thing on stdout)
#   bash tests/pg/cluster.sh url DIR     # prints the URL again (also in DIR/url)
#   bash tests/pg/cluster.sh stop DIR    # pg_ctl stop -m fast, then removes DIR
#   bash tests/pg/cluster.sh pause DIR   # stops the server, keeps DIR (a restart test)
#   bash tests/pg/cluster.sh resume DIR  # starts it again on the same port
#
# The URL: postgres://postgres@127.0.0.1:PORT/postgres (superuser "postgres", trust
# authentication, loopback only). DIR holds data/ (the cluster), the server's unix
# socket, log (its log) and url. fsync stays on, as in production; only initdb skips its
# final sync (the data is thrown away anyway). max_connections: 300, or
# GPULAB_PG_MAX_CONNECTIONS. PostgreSQL refuses to run as root: as root (CI, the
# development machines) initdb and pg_ctl run as the "postgres" user, which Debian's
# postgresql package creates, and DIR is given to that user. The binaries: PG_BINDIR,
# else `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin (Debian's
# postgresql package, which tests/setup.sh installs), else initdb on PATH.
set -euo pipefail

usage() {
  echo "usage: $0 start DIR | url DIR | stop DIR | pause DIR | resume DIR" >&2
  exit 2
}
die() {
  echo "pg/cluster: $*" >&2
  exit 1
}
(($# == 2)) || usage
command=$1
dir=$2
[[ -n $dir ]] || usage
case $dir in /*) ;; *) dir="$(pwd)/$dir" ;; esac

# As root, run PostgreSQL's programs as "postgres"; otherwise as ourselves. In DIR, as the
# current directory may be one the postgres user cannot enter.
as_pg() {
  if [[ $(id -u) -eq 0 ]]; then
    (cd "$dir" && runuser -u postgres -- "$@")
  else
    (cd "$dir" && "$@")
  fi
}

find_bindir() {
  local candidate
  if [[ -n ${PG_BINDIR:-} ]]; then
    [[ -x $PG_BINDIR/initdb && -x $PG_BINDIR/pg_ctl ]] || die "PG_BINDIR=$PG_BINDIR has no initdb and pg_ctl"
    echo "$PG_BINDIR"
    return
  fi
  # pg_config may come from libpq-dev alone, whose bindir has no server: check it.
  if command -v pg_config >/dev/null && candidate=$(pg_config --bindir 2>/dev/null) &&
    [[ -x $candidate/initdb && -x $candidate/pg_ctl ]]; then
    echo "$candidate"
    return
  fi
  candidate=$(printf '%s\n' /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)
  if [[ -x $candidate && -x ${candidate%/initdb}/pg_ctl ]]; then
    echo "${candidate%/initdb}"
    return
  fi
  if candidate=$(command -v initdb) && [[ -x ${candidate%/initdb}/pg_ctl ]]; then
    echo "${candidate%/initdb}"
    return
  fi
  die "no PostgreSQL server found (initdb, pg_ctl): install Debian's postgresql package (bash tests/setup.sh does)"
}

# A loopback port free right now (the kernel's choice); a random one without python3.
# Someone may take it before the server binds it: start() then tries another.
free_port() {
  if command -v python3 >/dev/null; then
    python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
  else
    echo $((20000 + RANDOM % 30000))
  fi
}

start() {
  local bindir port attempt url started=0
  bindir=$(find_bindir)
  mkdir -p "$dir"
  [[ -z $(ls -A "$dir") ]] || die "$dir is not empty"
  # The server's socket is DIR/.s.PGSQL.PORT, and a unix socket's path has at most 107 bytes.
  ((${#dir} <= 90)) || die "$dir is too long a path for the server's unix socket (90 bytes at most)"
  if [[ $(id -u) -eq 0 ]]; then
    id -u postgres >/dev/null 2>&1 || die "running as root needs a \"postgres\" user to run the server (Debian's postgresql package creates it)"
    chown postgres: "$dir"
    chmod 700 "$dir"
    as_pg test -w "$dir" -a -x "$dir" || die "the postgres user cannot write to $dir (is a folder above it closed to other users?)"
  fi

  as_pg "$bindir/initdb" --pgdata="$dir/data" --username=postgres --auth=trust \
    --encoding=UTF8 --no-locale --no-sync >"$dir/initdb.log" 2>&1 ||
    { cat "$dir/initdb.log" >&2; die "initdb failed (log above)"; }
  # Trust, and only for the unix socket and IPv4 loopback (the only address it listens on).
  cat >"$dir/data/pg_hba.conf" <<'EOF'
# TYPE  DATABASE  USER  ADDRESS       METHOD
local   all       all                 trust
host    all       all   127.0.0.1/32  trust
EOF
  echo "include = 'gpulab-test.conf'" >>"$dir/data/postgresql.conf"

  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    rm -f "$dir/log"
    cat >"$dir/data/gpulab-test.conf" <<EOF
# Written by tests/pg/cluster.sh.
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir'
max_connections = ${GPULAB_PG_MAX_CONNECTIONS:-300}
fsync = on
logging_collector = off
EOF
    [[ $(id -u) -ne 0 ]] || chown postgres: "$dir/data/gpulab-test.conf" "$dir/data/pg_hba.conf"
    if as_pg "$bindir/pg_ctl" start --pgdata="$dir/data" --log="$dir/log" --wait --timeout=30 --silent >/dev/null 2>>"$dir/pg_ctl.log"; then
      started=1
      break
    fi
    # Another process took the port between free_port and the server's bind: try again.
    grep -q 'Address already in use' "$dir/log" 2>/dev/null || break
    echo "pg/cluster: port $port was taken, trying another (attempt $attempt)" >&2
  done
  if ((!started)); then
    cat "$dir/pg_ctl.log" "$dir/log" >&2 2>/dev/null || true
    die "the server did not start (logs above, and in $dir)"
  fi
  url="postgres://postgres@127.0.0.1:$port/postgres"
  echo "$url" >"$dir/url"
  echo "$url"
}

stop() {
  local bindir
  [[ -e $dir ]] || return 0
  # Remove only what start made: never rm -rf a folder given by mistake.
  [[ -f $dir/data/PG_VERSION || -f $dir/initdb.log || -z $(ls -A "$dir") ]] ||
    die "$dir does not look like a cluster made by tests/pg/cluster.sh start: left alone"
  if [[ -f $dir/data/postmaster.pid ]]; then
    bindir=$(find_bindir)
    as_pg "$bindir/pg_ctl" stop --pgdata="$dir/data" --mode=fast --wait --timeout=30 --silent ||
      as_pg "$bindir/pg_ctl" stop --pgdata="$dir/data" --mode=immediate --wait --timeout=30 --silent ||
      true
    # (Both fail too when the server had already died, leaving its pid file behind.)
    if as_pg "$bindir/pg_ctl" status --pgdata="$dir/data" >/dev/null 2>&1; then
      die "could not stop the server in $dir/data"
    fi
  fi
  rm -rf "$dir"
}

pause() {
  [[ -f $dir/url ]] || die "no server started in $dir"
  as_pg "$(find_bindir)/pg_ctl" stop --pgdata="$dir/data" --mode=fast --wait --timeout=30 --silent
}

resume() {
  [[ -f $dir/url ]] || die "no server started in $dir"
  as_pg "$(find_bindir)/pg_ctl" start --pgdata="$dir/data" --log="$dir/log" --wait --timeout=30 --silent >/dev/null
}

case $command in
start) start ;;
stop) stop ;;
pause) pause ;;
resume) resume ;;
url) [[ -f $dir/url ]] || die "no server started in $dir"; cat "$dir/url" ;;
*) usage ;;
esac
