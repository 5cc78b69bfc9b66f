#!/usr/bin/env bash
# CI for @superdurable/dex-agents: locked install, strict type check (sources and tests),
# lint and format check, build, tests.
set -euo pipefail
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
npx tsc --noEmit -p tsconfig.json
npx tsc --noEmit -p tsconfig.test.json
npx biome ci .
npm run build
npm test
