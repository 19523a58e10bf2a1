#!/usr/bin/env bash
# Start a throwaway PostgreSQL cluster on loopback (run as root; the server runs as 'postgres').
# Usage:   eval "$(bash pg-start.sh)"      # exports DATABASE_URL, PGROOT, PGSTOP
#          ... run tests ...
#          eval "$PGSTOP"                   # fast shutdown + delete the cluster
# Knobs:   PGPORT (default 55432), PGDB (default app), PGFAST=1 (fsync=off etc. for speed-only test runs)
# All diagnostics go to stderr; stdout carries only the export lines.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
PGPORT="${PGPORT:-55432}"
PGDB="${PGDB:-app}"

# 1. Install the server if missing (no-op when present; measured ~18 s / 29 MB when absent).
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  echo "installing postgresql..." >&2
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2   # policy-rc.d here blocks the auto-start of the 5432 'main' cluster
fi
PGBIN="$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n1)"
id -u postgres >/dev/null 2>&1 || useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres

# Refuse a port that already has a server (e.g. a leftover cluster from an earlier run).
if "$PGBIN/pg_isready" -q -h 127.0.0.1 -p "$PGPORT"; then
  echo "port $PGPORT already has a server; set PGPORT or stop it" >&2
  exit 1
fi

# 2. Fresh cluster in a private dir under /tmp, owned by the non-root user.
PGROOT="$(mktemp -d /tmp/pgci.XXXXXX)"
chown postgres:postgres "$PGROOT"
chmod 700 "$PGROOT"
# cd first: the postgres user cannot enter root's cwd (e.g. /root), which makes every pg tool warn.
pgrun() { (cd "$PGROOT" && runuser -u postgres -- "$@"); }
pgrun "$PGBIN/initdb" -D "$PGROOT/data" -U postgres --auth=trust -E UTF8 --no-locale --no-sync >"$PGROOT/initdb.log" 2>&1 \
  || { cat "$PGROOT/initdb.log" >&2; exit 1; }

# One role logs in with a password (scram) so that tests can see a wrong
# one refused; every other login is trusted. pg_hba.conf is read top down.
{ echo "host all jam_test_pw 127.0.0.1/32 scram-sha-256"; cat "$PGROOT/data/pg_hba.conf"; } >"$PGROOT/pg_hba.new"
mv "$PGROOT/pg_hba.new" "$PGROOT/data/pg_hba.conf"
chown postgres:postgres "$PGROOT/data/pg_hba.conf"

# 3. Start: loopback only, socket inside the private dir (no reliance on /var/run/postgresql).
OPTS="-c listen_addresses=127.0.0.1 -c port=$PGPORT -c unix_socket_directories=$PGROOT"
if [ "${PGFAST:-0}" = 1 ]; then
  OPTS="$OPTS -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
fi
pgrun "$PGBIN/pg_ctl" -D "$PGROOT/data" -l "$PGROOT/server.log" -w -t 60 -o "$OPTS" start >&2 \
  || { cat "$PGROOT/server.log" >&2; rm -rf "$PGROOT"; exit 1; }
pgrun "$PGBIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres "$PGDB" >&2

echo "postgres ready on 127.0.0.1:$PGPORT (data in $PGROOT)" >&2
printf 'export PGROOT=%q\n' "$PGROOT"
printf 'export DATABASE_URL=%q\n' "postgres://postgres@127.0.0.1:$PGPORT/$PGDB?sslmode=disable"
printf 'export PGSTOP=%q\n' "(cd $PGROOT && runuser -u postgres -- $PGBIN/pg_ctl -D $PGROOT/data -m fast -w stop >/dev/null); rm -rf $PGROOT"
