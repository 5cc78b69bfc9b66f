"""The adapters' spec matrix through a real Python Worker that calls pi-ai models and Pi tools
on TypeScript Stepwise in a real Node process (flows.py), on SQLite and on Postgres; then what
only a runner in its own process can do: die alone, be aborted, restart with no cache, outlive
the Worker (the suites of `dex_agents.testing.node_runner`)."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.node_runner import (
    NodeRunnerMatrixSuite,
    RunnerOfItsOwnSuite,
    node_matrix_app,
    runner_of_its_own_app,
)

E2E = Path(__file__).resolve().parent
APP = E2E.parent / "dist-test" / "e2e" / "matrix-app.js"


class TestMatrix(NodeRunnerMatrixSuite):
    app = node_matrix_app(E2E)


class TestRunnerOfItsOwn(RunnerOfItsOwnSuite):
    runner_app = APP
    app = runner_of_its_own_app(E2E)
