#!/usr/bin/env bash
# Packs every TypeScript package into npm tarballs, so that an application installs them from
# this repository before they are published:
#   scripts/pack-typescript.sh && npm install ./dist/*.tgz ai@7.0.173 zod ...
# (the frameworks are peer dependencies: the application installs its own, once).
# Usage: scripts/pack-typescript.sh [OUT_DIR]   (default: the repository's dist/, beside the
# Python wheels of scripts/build.sh)
#
# Each package's `prepack` script builds its dist/ (a package without an up-to-date
# node_modules gets a locked install first, `npm ci`, without optional dependencies: the build
# needs none, and the Claude Agent SDK's CLI platform package is 409 MB). In the repository the
# adapters depend on the core as `file:../core`, which an installed tarball cannot resolve;
# their tarballs depend on the core's version instead, the one this script packs beside them.
# The repository's package.json files are not changed: the rewrite happens in a copy of the
# packed files.
set -euo pipefail
out="${1:-$(dirname "$0")/../dist}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
cd "$(dirname "$0")/.."
root="$(pwd)/agents/typescript"
adapters=(vercel-ai openai-agents mastra pi claude-agent-sdk)
npm_quiet=(--no-audit --no-fund --loglevel=error)
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT

# Installs when node_modules is missing or older than the lockfile (npm writes its
# node_modules/.package-lock.json on each install).
locked_install() {
  if [ ! "$root/$1/node_modules/.package-lock.json" -nt "$root/$1/package-lock.json" ]; then
    (cd "$root/$1" && npm ci "${npm_quiet[@]}" --omit=optional >/dev/null)
  fi
}

# Packs the package in $root/$1 into $stage/$1/ (running its prepack build); prints the tarball.
pack_into_stage() {
  mkdir -p "$stage/$1"
  (cd "$root/$1" && npm pack "${npm_quiet[@]}" --pack-destination "$stage/$1" >/dev/null)
  ls "$stage/$1"/*.tgz
}

locked_install core
core_version="$(node -p 'require(process.argv[1]).version' "$root/core/package.json")"
cp "$(pack_into_stage core)" "$out/"

for adapter in "${adapters[@]}"; do
  locked_install "$adapter"
  tarball="$(pack_into_stage "$adapter")"
  tar -xzf "$tarball" -C "$stage/$adapter"
  (
    cd "$stage/$adapter/package"
    [ "$(npm pkg get 'dependencies.@superdurable/dex-agents')" = '"file:../core"' ] || {
      echo "$adapter: expected the dependency @superdurable/dex-agents to be file:../core" >&2
      exit 1
    }
    npm pkg set "dependencies.@superdurable/dex-agents=$core_version"
    npm pack "${npm_quiet[@]}" --ignore-scripts --pack-destination "$out" >/dev/null
  )
done
ls -1 "$out"/superdurable-dex-agents*.tgz
