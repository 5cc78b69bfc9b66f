#!/usr/bin/env bash
# What CI runs for a TypeScript adapter package, called by the package's ci.sh: a locked
# install, the strict type check, lint and format, the build, the unit tests, then the
# end-to-end tests (e2e/: pytest, a real Python Worker calling the package's runner in a Node
# process) on SQLite, and on Postgres when DEX_AGENTS_TEST_POSTGRES_URL is set. The runner
# contract (and Stepwise) come from the TypeScript core beside it (`file:../core`), built first;
# the tests start the Python core's scripted servers, so its environment is synced too.
# Usage: scripts/ts-adapter-ci.sh PACKAGE_DIR [PYTHON_PATH...]
#   PYTHON_PATH: the package's Python code that ruff (with e2e/ruff.toml) and mypy --strict
#   check; e2e by default.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$1"
shift
python_paths=("${@:-e2e}")
command -v uv >/dev/null || python3 -m pip install --quiet uv
(cd "$root/agents/python/core" && uv sync --locked --all-extras --quiet)
"$root/scripts/build-ts-core.sh" # the core (file:../core), unless built from these sources
npm ci --no-audit --no-fund --loglevel=error
npx tsc --noEmit
npx biome check .
npm run build
npm test
core=(uv run --project "$root/agents/python/core" --no-sync)
"${core[@]}" ruff check --config e2e/ruff.toml "${python_paths[@]}"
"${core[@]}" ruff format --config e2e/ruff.toml --check "${python_paths[@]}"
"${core[@]}" mypy --strict "${python_paths[@]}"
"$root/scripts/e2e-by-backend.sh" e2e # SQLite and Postgres at once
