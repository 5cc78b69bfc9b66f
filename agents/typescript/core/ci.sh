#!/usr/bin/env bash
# CI for @superdurable/dex-agents: locked install, strict type check (sources and tests),
# lint and format check, build, tests. The AgentClient's live tests run the Python core's
# `dex-agents serve` and a Worker through uv (skipped where uv is missing).
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npx tsc --noEmit -p tsconfig.json
npx tsc --noEmit -p tsconfig.test.json
npx biome ci .
npm run build
if command -v uv >/dev/null; then
  uv sync --locked --all-extras --project ../../python/core --quiet
fi
npm test
