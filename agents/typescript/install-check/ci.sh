#!/usr/bin/env bash
# CI for installing the TypeScript packages as an application does: scripts/pack-typescript.sh
# packs every package (its dist/ built on pack, the adapters depending on the core's version),
# a fresh Node app outside the repository installs the tarballs with the frameworks (one copy
# of each), type-checks one README example per package as the README has it, and runs the
# Vercel AI SDK package's example through a real Python Worker on the scripted model server
# (test_install.py). The Python core's environment runs the test.
set -euo pipefail
cd "$(dirname "$0")"
command -v uv >/dev/null || python3 -m pip install --quiet uv
(cd ../../python/core && uv sync --locked --all-extras --quiet)
core=(uv run --project "$(cd ../../python/core && pwd)" --no-sync)
"${core[@]}" ruff check .
"${core[@]}" ruff format --check .
"${core[@]}" mypy --strict .
"${core[@]}" pytest -c pytest.ini -q -p no:cacheprovider .
