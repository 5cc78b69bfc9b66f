#!/usr/bin/env bash
# CI for @superdurable/dex-agents: locked install, strict type check (sources and tests),
# lint and format check, build, tests. The AgentClient's live tests run the Python core's
# `dex-agents serve` and a Worker, and Stepwise's tests its scripted model server, through uv.
# Then the end-to-end tests (e2e/): TypeScript Stepwise in a Node process called by a real
# Python Worker (the shared matrix, the Node-runner suites, the features suite, the README's
# example, the runner's spans under a traced Worker's), on SQLite, and on Postgres when
# DEX_AGENTS_TEST_POSTGRES_URL is set.
set -euo pipefail
cd "$(dirname "$0")"
command -v uv >/dev/null || python3 -m pip install --quiet uv
(cd ../../python/core && uv sync --locked --all-extras --quiet)
npm ci --no-audit --no-fund
npx tsc --noEmit -p tsconfig.json
npx tsc --noEmit -p tsconfig.test.json
npx biome ci .
npm run build
npm test
core=(uv run --project "$(cd ../../python/core && pwd)" --no-sync)
"${core[@]}" ruff check e2e
"${core[@]}" ruff format --check e2e
"${core[@]}" mypy --strict e2e
../../../scripts/e2e-by-backend.sh e2e  # SQLite and Postgres at once
