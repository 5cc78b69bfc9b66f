#!/usr/bin/env bash
# What CI runs for this package: a locked install, the strict type check, lint and format,
# the build, and the tests. The runner contract comes from the TypeScript core beside it
# (`file:../core`), built first; the tests start the Python core's scripted model server, so
# the Python core's environment is synced too. Then the end-to-end tests (e2e/): the spec's
# matrix through a real Python Worker calling this runner in a Node process, on SQLite, and
# on Postgres when DEX_AGENTS_TEST_POSTGRES_URL is set.
set -euo pipefail
cd "$(dirname "$0")"
command -v uv >/dev/null || python3 -m pip install --quiet uv
(cd ../../python/core && uv sync --locked --all-extras --quiet)
../../../scripts/build-ts-core.sh  # the core (file:../core), unless built from these sources
npm ci --no-audit --no-fund --loglevel=error
npx tsc --noEmit
npx biome check .
npm run build
npm test
core=(uv run --project "$(cd ../../python/core && pwd)" --no-sync)
"${core[@]}" ruff check e2e
"${core[@]}" ruff format --check e2e
"${core[@]}" mypy --strict e2e
../../../scripts/e2e-by-backend.sh e2e  # SQLite and Postgres at once
