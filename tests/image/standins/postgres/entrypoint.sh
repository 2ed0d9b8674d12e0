#!/bin/bash
# The stand-in's start (see Containerfile): on an empty data folder, initdb with the
# POSTGRES_* settings and a temporary server on a socket only (as the official image
# does) to create the database; then PostgreSQL itself, as the postgres user, listening
# on every address of the container's network.
set -euo pipefail
: "${POSTGRES_PASSWORD:?the stand-in, like the official image, needs POSTGRES_PASSWORD}"
user=${POSTGRES_USER:-postgres}
database=${POSTGRES_DB:-$user}
as_postgres() {
  setpriv --reuid=postgres --regid=postgres --init-groups "$@"
}
install -d -o postgres -g postgres -m 0700 "$PGDATA"
chown postgres:postgres "$PGDATA"
if [[ ! -s $PGDATA/PG_VERSION ]]; then
  pwfile=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb -D "$PGDATA" --username="$user" --pwfile="$pwfile" \
    --auth-local=trust --auth-host=scram-sha-256 >/dev/null
  rm -f "$pwfile"
  echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
  if [[ $database != postgres ]]; then
    as_postgres pg_ctl -D "$PGDATA" -w -o "-c listen_addresses='' -k /tmp" start >/dev/null
    as_postgres psql -h /tmp -U "$user" -d postgres -v ON_ERROR_STOP=1 -q \
      -c "CREATE DATABASE \"$database\" OWNER \"$user\""
    as_postgres pg_ctl -D "$PGDATA" -w -m fast stop >/dev/null
  fi
  echo "stand-in postgres: created role $user and database $database in $PGDATA"
fi
if [[ ${1:-} == postgres ]]; then
  shift
  exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" "$@"
fi
exec "$@"
