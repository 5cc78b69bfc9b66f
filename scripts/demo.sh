#!/usr/bin/env bash
# Runs a durable agent session on the embedded SQLite default (dex_agents.sqlite in the
# current directory) and prints its Step history. No model key needed: a scripted model answers.
# Arguments go to `dex-agents demo` (--database-url URL for another database). The commands it
# prints run as printed from the directory it was started in.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
command -v uv >/dev/null || python3 -m pip install --quiet uv
# `uv run` installs the core package's environment the first time (and adds what is missing).
exec uv run --quiet --project "$root/agents/python/core" dex-agents demo "$@"
