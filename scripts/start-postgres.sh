#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on loopback for the tests and prints its URL.
# Installs Debian's postgresql package when it is missing (needs root, as in CI).
# Usage: eval "$(scripts/start-postgres.sh)"   -> exports DEX_AGENTS_TEST_POSTGRES_URL
set -euo pipefail
port="${DEX_AGENTS_TEST_POSTGRES_PORT:-55432}"
data="${DEX_AGENTS_TEST_POSTGRES_DIR:-/tmp/dex-agents-postgres}"

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  echo "installing postgresql from Debian's packages" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi
bin="$(dirname "$(ls -d /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n 1)")"

as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

if ! as_postgres "$bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
  rm -rf "$data"
  mkdir -p "$data"
  [ "$(id -u)" = 0 ] && chown postgres:postgres "$data"
  as_postgres "$bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 >/dev/null
  as_postgres "$bin/pg_ctl" -D "$data" -l "$data/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $port -k /tmp -c max_connections=400 -c fsync=off" start >&2
fi
echo "export DEX_AGENTS_TEST_POSTGRES_URL=postgresql://postgres@127.0.0.1:$port/postgres"
