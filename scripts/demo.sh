#!/usr/bin/env bash
# Runs a durable agent session on the embedded SQLite default (dex_agents.sqlite in the
# current directory) and prints its Step history. No model key needed: a scripted model answers.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
command -v uv >/dev/null || python3 -m pip install --quiet uv
uv sync --quiet --project "$root/agents/python/core"
exec uv run --quiet --project "$root/agents/python/core" dex-agents demo "$@"
