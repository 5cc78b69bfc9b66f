#!/usr/bin/env bash
# Installs (npm ci) and builds the TypeScript core that a TypeScript adapter's ci.sh depends on
# (`file:../core`), unless it is already installed and built from the same lockfile, settings
# and sources: CI checks the adapters one after another, and each would otherwise install and
# build the same core again. A stamp in the core's node_modules (which `npm ci` empties) says
# what it was built from.
set -euo pipefail
cd "$(dirname "$0")/../agents/typescript/core"
stamp=node_modules/.dex-agents-core-built-from
sources="$(
  {
    cat package.json package-lock.json tsconfig.json
    find src -type f -name '*.ts' | LC_ALL=C sort | xargs cat
  } | sha256sum | cut -d' ' -f1
)"
if [ -f "$stamp" ] && [ -d dist ] && [ "$(cat "$stamp")" = "$sources" ]; then
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
npm run build
echo "$sources" >"$stamp"
