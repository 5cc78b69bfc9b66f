#!/usr/bin/env bash
# Runs every package's checks and tests: for a Python package lint, types, then pytest; for a
# TypeScript package its ci.sh (locked install, strict type check, lint, build, tests).
# Postgres tests run when DEX_AGENTS_TEST_POSTGRES_URL is set (see scripts/start-postgres.sh).
# Usage: scripts/test.sh [package-dir ...]   (default: every agents/python/*/ with a pyproject,
# then every agents/typescript/*/ with a ci.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null || python3 -m pip install --quiet uv

packages=("$@")
if [ ${#packages[@]} -eq 0 ]; then
  for dir in agents/python/core agents/python/*/; do
    dir="${dir%/}"
    [ -f "$dir/pyproject.toml" ] || continue
    [[ " ${packages[*]-} " == *" $dir "* ]] || packages+=("$dir")
  done
  for dir in agents/typescript/core agents/typescript/*/; do
    dir="${dir%/}"
    [ -f "$dir/ci.sh" ] || continue
    [[ " ${packages[*]-} " == *" $dir "* ]] || packages+=("$dir")
  done
fi

# Bytecode is compiled once at install (and for the packages' own sources), so that the many
# Worker and CLI processes the tests start import it instead of compiling every module from
# source each time (an environment with PYTHONDONTWRITEBYTECODE set never keeps it otherwise):
# 2 s instead of 4 s per process for the OpenAI Agents adapter.
status=0
for dir in "${packages[@]}"; do
  echo "=== $dir"
  if [ -f "$dir/ci.sh" ] && [ ! -f "$dir/pyproject.toml" ]; then
    "$dir/ci.sh" || status=1
    continue
  fi
  # Chained with && : errexit does not apply inside a command tested with ||.
  (
    cd "$dir" &&
      uv sync --locked --all-extras --quiet --compile-bytecode &&
      uv run --quiet python -m compileall -q src >/dev/null &&
      uv run --quiet ruff check . &&
      uv run --quiet ruff format --check . &&
      uv run --quiet mypy &&
      uv run pytest -q -p no:cacheprovider
  ) || status=1
done
# The examples (examples/) live outside the packages: the core's lint settings check them.
# The session viewer's committed build must be what its sources build (needs Node and npm).
if [[ " ${packages[*]} " == *" agents/python/core "* ]]; then
  echo "=== viewer build"
  scripts/check-web-build.sh || status=1
  echo "=== examples"
  (
    cd agents/python/core &&
      uv run --quiet ruff check ../../../examples &&
      uv run --quiet ruff format --check ../../../examples
  ) || status=1
fi
exit $status
