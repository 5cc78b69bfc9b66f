#!/usr/bin/env bash
# What CI runs for this package: what every TypeScript adapter runs (scripts/ts-adapter-ci.sh:
# a locked install, the strict type check, lint and format, the build, the tests, then the
# end-to-end tests on SQLite, and on Postgres when DEX_AGENTS_TEST_POSTGRES_URL is set).
# Its e2e/: the spec's matrix through a real Python Worker calling this runner in a Node
# process.
set -euo pipefail
exec "$(dirname "$0")/../../../scripts/ts-adapter-ci.sh" "$(dirname "$0")"
