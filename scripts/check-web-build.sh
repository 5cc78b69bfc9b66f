#!/usr/bin/env bash
# Checks that the committed viewer build (agents/python/core/src/dex_agents/web/static) is what
# the Vite project in agents/python/core/web builds from its lockfile: a Python install serves
# those files and never runs Node, so they must not fall behind the sources.
set -euo pipefail
cd "$(dirname "$0")/../agents/python/core"
(cd web && npm ci --no-audit --no-fund && npm run build)
changes="$(git status --porcelain -- src/dex_agents/web/static)"
if [ -n "$changes" ]; then
  echo "The built viewer differs from the committed one:" >&2
  echo "$changes" >&2
  echo "Fix: (cd agents/python/core/web && npm ci && npm run build), then commit" \
    "agents/python/core/src/dex_agents/web/static." >&2
  exit 1
fi
echo "The committed viewer build is up to date."
