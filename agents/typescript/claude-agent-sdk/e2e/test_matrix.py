"""The adapters' spec matrix through a real Python Worker that calls the Claude Agent SDK runner
in a real Node process (flows.py), the real Claude Code CLI and the scripted Anthropic server,
on SQLite and on Postgres; then what only a runner in its own process can do (the suites of
`dex_agents.testing.node_runner`).

The model sees the tools as `mcp__matrix__<tool>`, and the rows a whole-turn harness cannot
produce are skipped with the reason: `dex_agents.testing.claude_matrix`, which the Python
runner's matrix shares.
"""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.anthropic_features import AnthropicFeatureView
from dex_agents.testing.claude_matrix import (
    READS_IN_THE_CLI,
    AnthropicMatrixModel,
    ClaudeHarnessMatrix,
    cannot,
)
from dex_agents.testing.node_runner import (
    NodeRunnerMatrixSuite,
    RunnerOfItsOwnSuite,
    node_matrix_app,
    runner_of_its_own_app,
)

E2E = Path(__file__).resolve().parent
APP = E2E.parent / "dist-test" / "e2e" / "matrix-app.js"
RESUME_PROMPT = "Continue."
"""The runner's prompt of a run that resumes a deferred call (src/texts.ts), not a user's text."""


class TestMatrix(ClaudeHarnessMatrix, NodeRunnerMatrixSuite):
    app = node_matrix_app(E2E, AnthropicFeatureView(runner_texts=[RESUME_PROMPT]))


class TestRunnerOfItsOwn(AnthropicMatrixModel, RunnerOfItsOwnSuite):
    runner_app = APP
    app = runner_of_its_own_app(E2E, AnthropicFeatureView(runner_texts=[RESUME_PROMPT]))

    test_a_worker_killed_in_run_model_reruns_it_against_the_same_runner = cannot(READS_IN_THE_CLI)
