#!/usr/bin/env bash
# Runs every package's checks and tests: for a Python package lint, types, then pytest; for a
# TypeScript package its ci.sh (locked install, strict type check, lint, build, tests).
# Postgres tests run when DEX_AGENTS_TEST_POSTGRES_URL is set (see scripts/start-postgres.sh).
# Usage: scripts/test.sh [package-dir ...]   (default: every agents/python/*/ with a pyproject,
# then every agents/typescript/*/ with a ci.sh)
# Takes some 30 minutes for everything on 2 cores (the Python packages' tests in parallel
# processes, the packages after the core in two lanes: see lane below); one package's
# directory (agents/python/core) or a few make it shorter.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null || python3 -m pip install --quiet uv

# Each step runs as a job in a process group of its own (set -m), and SIGTERM or Ctrl-C to this
# script stops that whole group (pytest, uv, npm and what they started) before it exits: a
# signal to a shell script alone would leave its children running. The tests' Worker and server
# processes, in sessions of their own, exit when pytest does (dex_agents.testing.processes).
set -m
step_pid=""
stop_step() {
  trap - TERM INT
  if [ -n "$step_pid" ]; then kill -TERM -- "-$step_pid" 2>/dev/null || true; fi
  exit "$1"
}
trap 'stop_step 143' TERM
trap 'stop_step 130' INT
step() {
  "$@" &
  step_pid=$!
  local code=0
  wait "$step_pid" || code=$?
  step_pid=""
  return "$code"
}

packages=("$@")
if [ ${#packages[@]} -eq 0 ]; then
  for dir in agents/python/core agents/python/*/; do
    dir="${dir%/}"
    [ -f "$dir/pyproject.toml" ] || continue
    [[ " ${packages[*]-} " == *" $dir "* ]] || packages+=("$dir")
  done
  for dir in agents/typescript/core agents/typescript/*/; do
    dir="${dir%/}"
    [ -f "$dir/ci.sh" ] && [ "$dir" != agents/typescript/install-check ] || continue
    [[ " ${packages[*]-} " == *" $dir "* ]] || packages+=("$dir")
  done
  # The install check packs every TypeScript package: last, once their ci.sh installed them.
  [ ! -f agents/typescript/install-check/ci.sh ] || packages+=(agents/typescript/install-check)
fi

# Python writes the bytecode of each module it imports, so that the many Worker and CLI
# processes the tests start import it instead of compiling every module from source each time
# (2 s instead of 4 s per process for the OpenAI Agents adapter): an environment with
# PYTHONDONTWRITEBYTECODE set never keeps it otherwise. Only what some process imports is
# compiled, once; compiling every installed module at install (`uv sync --compile-bytecode`)
# cost some two minutes of CPU for the six environments, most of it for modules no test loads.
unset PYTHONDONTWRITEBYTECODE
# A package whose dev group has pytest-xdist runs its tests in parallel processes: most tests
# wait on Worker and server processes, so 3 keep 2 cores busy (the core's suite took 22 CPU
# minutes, 27 minutes serially; more processes only crowd the Workers' starts). Each process has its own databases, ports and files; a test module
# runs whole in one process, so what it shares (a Worker, a server) starts once. The core's
# tests hand out their longest modules first (agents/python/core/tests/scheduling.py), so that
# its three processes end together rather than one running a long module alone at the end.
# DEX_AGENTS_TEST_PROCESSES sets their number (1: serial).
processes="${DEX_AGENTS_TEST_PROCESSES:-3}"
parallel_args() {
  if [ "$processes" -gt 1 ] && grep -q '"pytest-xdist' "$1/pyproject.toml"; then
    echo "-n $processes --dist loadfile"
  fi
}

run_package() {
  local dir="$1"
  if [ -f "$dir/ci.sh" ] && [ ! -f "$dir/pyproject.toml" ]; then
    "$dir/ci.sh"
    return
  fi
  local args
  args="$(parallel_args "$dir")"
  (
    cd "$dir" &&
      uv sync --locked --all-extras --quiet &&
      uv run --quiet ruff check . &&
      uv run --quiet ruff format --check . &&
      uv run --quiet mypy &&
      uv run pytest -q -p no:cacheprovider $args
  )
}

# With every package and DEX_AGENTS_TEST_LANES unset or 2: the Python core first (its 3 test
# processes keep both cores busy) with only the TypeScript core beside it, then the other
# Python packages and the TypeScript packages in two lanes at once, each lane one package
# after another. A TypeScript package's
# time is mostly installs, builds and waits on processes, which a Python package's tests fill
# (.ci/run: 34.8 minutes in one lane; 34.1 in two, with some 5 minutes more of tests; 27.9
# and 30.2 with the TypeScript core beside the Python core and more tests again, on
# 2026-12-06; 29.1, then 28.0 with bytecode written on import, on 2026-12-07: both cores
# 89-99% busy throughout). Each package's output is kept and printed whole
# when it ends. DEX_AGENTS_TEST_LANES=1: one package after another, output as it comes.
lane() {
  local logs="$1" failed="$2"
  shift 2
  for dir in "$@"; do
    local log="$logs/$(echo "$dir" | tr / _)"
    local code=0
    run_package "$dir" >"$log" 2>&1 || code=$?
    [ "$code" -eq 0 ] || echo "$dir" >>"$failed"
    (
      flock 9
      echo "=== $dir"
      cat "$log"
      [ "$code" -eq 0 ] || echo "=== $dir failed (exit $code)"
    ) 9>"$logs/print.lock"
  done
}

status=0
python_rest=()
typescript=()
first=()
beside_first=()
for dir in "${packages[@]}"; do
  if [ "$dir" = agents/python/core ]; then
    first+=("$dir")
  elif [ -f "$dir/pyproject.toml" ]; then
    python_rest+=("$dir")
  elif [ "$dir" = agents/typescript/core ]; then
    beside_first+=("$dir")
  else
    typescript+=("$dir")
  fi
done
[ ${#first[@]} -gt 0 ] || { typescript=("${beside_first[@]}" "${typescript[@]}"); beside_first=(); }
if [ "${DEX_AGENTS_TEST_LANES:-2}" = 1 ] || [ ${#python_rest[@]} -eq 0 ] ||
  [ ${#typescript[@]} -eq 0 ]; then
  for dir in "${packages[@]}"; do
    echo "=== $dir"
    step run_package "$dir" || status=1
  done
else
  logs="$(mktemp -d)"
  lane_pids=()
  stop_lanes() {
    trap - TERM INT
    for pid in "${lane_pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    [ -z "$step_pid" ] || kill -TERM -- "-$step_pid" 2>/dev/null || true
    exit "$1"
  }
  trap 'stop_lanes 143' TERM
  trap 'stop_lanes 130' INT
  # The TypeScript core (installs, builds, a few Node and Worker processes) runs beside the
  # Python core, whose printed output comes as it runs; the adapters' packages after both.
  if [ ${#beside_first[@]} -gt 0 ]; then
    lane "$logs" "$logs/failed" "${beside_first[@]}" &
    lane_pids+=("$!")
  fi
  for dir in "${first[@]}"; do
    echo "=== $dir"
    step run_package "$dir" || status=1
  done
  for pid in "${lane_pids[@]}"; do wait "$pid" || status=1; done
  lane "$logs" "$logs/failed" "${python_rest[@]}" &
  lane_pids=("$!")
  lane "$logs" "$logs/failed" "${typescript[@]}" &
  lane_pids+=("$!")
  for pid in "${lane_pids[@]}"; do wait "$pid" || status=1; done
  trap 'stop_step 143' TERM
  trap 'stop_step 130' INT
  if [ -s "$logs/failed" ]; then
    echo "=== failed: $(tr '\n' ' ' <"$logs/failed")"
    status=1
  fi
  rm -rf "$logs"
fi
# The examples (examples/) live outside the packages: the core's lint settings check them.
# The session viewer's committed build must be what its sources build (needs Node and npm).
if [[ " ${packages[*]} " == *" agents/python/core "* ]]; then
  echo "=== viewer build"
  step scripts/check-web-build.sh || status=1
  echo "=== examples"
  step bash -c '
    cd agents/python/core &&
      uv run --quiet ruff check ../../../examples &&
      uv run --quiet ruff format --check ../../../examples
  ' || status=1
  # The benchmarks run on demand, not here; their types are checked here against the packages
  # they drive (their own environment, with the peers they measure), so a change of an API
  # they call fails CI rather than the next benchmark run. The core's ruff checks them above.
  echo "=== benchmarks' types"
  step bash -c 'cd agents/python/core/bench && uv sync --locked --quiet && uv run --quiet mypy' ||
    status=1
fi
exit $status
