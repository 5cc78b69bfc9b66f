#!/usr/bin/env bash
# Builds a wheel of every Python package into dist/, so they install from this repository
# before they are published:   scripts/build.sh && pip install --find-links dist dex-agents
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null || python3 -m pip install --quiet uv
mkdir -p dist
for dir in agents/python/*/; do
  [ -f "$dir/pyproject.toml" ] || continue
  uv build --quiet --wheel --out-dir dist "$dir"
done
ls -1 dist/*.whl
