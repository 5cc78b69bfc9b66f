#!/usr/bin/env bash
# Runs a TypeScript package's end-to-end suite (pytest, in the Python core's environment) on
# SQLite and, when DEX_AGENTS_TEST_POSTGRES_URL is set, on Postgres at the same time, in two
# pytest processes: each half starts its own Worker and Node runner, so the suite takes the
# time of its longer half. Each half's output is printed once both ended.
# Usage: scripts/e2e-by-backend.sh E2E_DIR  (a directory with the suite's pytest.ini)
set -euo pipefail
core=(uv run --project "$(cd "$(dirname "$0")/../agents/python/core" && pwd)" --no-sync)
cd "$1"
pytest_args=(pytest -c pytest.ini -q -p no:cacheprovider)
if [ -z "${DEX_AGENTS_TEST_POSTGRES_URL:-}" ]; then
  exec "${core[@]}" "${pytest_args[@]}" .
fi
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
"${core[@]}" "${pytest_args[@]}" -k "not postgres" . >"$logs/sqlite" 2>&1 &
sqlite=$!
"${core[@]}" "${pytest_args[@]}" -k postgres . >"$logs/postgres" 2>&1 &
postgres=$!
status=0
wait "$sqlite" || status=1
wait "$postgres" || status=1
echo "--- on SQLite (and the tests of no backend)"
cat "$logs/sqlite"
echo "--- on Postgres"
cat "$logs/postgres"
exit "$status"
