#!/usr/bin/env bash
# What CI runs for this package: a locked install, the strict type check, lint and format,
# the build, and the tests. The tests start the Python core's scripted model server, so the
# core's environment is synced first.
set -euo pipefail
cd "$(dirname "$0")"
command -v uv >/dev/null || python3 -m pip install --quiet uv
(cd ../../python/core && uv sync --locked --all-extras --quiet)
npm ci --no-audit --no-fund --loglevel=error
npx tsc --noEmit
npx biome check .
npm run build
npm test
