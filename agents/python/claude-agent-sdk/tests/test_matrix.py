"""The adapters' spec matrix (`dex_agents.testing.matrix`) on the Claude Agent SDK runner,
through one real Worker per backend, the real Claude Code CLI and the scripted Anthropic
server. The rows a whole-turn harness cannot produce are skipped with the reason, and the
many-sessions row runs with the harness's Step shapes (`dex_agents.testing.claude_matrix`,
shared with the TypeScript runner's matrix)."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.anthropic_features import AnthropicFeatureView
from dex_agents.testing.claude_matrix import ClaudeHarnessMatrix
from dex_agents.testing.matrix import MatrixApp, MatrixSuite

from dex_agents_claude_agent_sdk.texts import RESUME_PROMPT

CLI_CONTINUE = "Continue from where you left off."
"""The user text the CLI adds of its own when a run resumes a deferred call (README, Limits)."""


class TestMatrix(ClaudeHarnessMatrix, MatrixSuite):
    app = MatrixApp(
        worker_target="tests.apps.matrix:flows",
        worker_cwd=Path(__file__).parent.parent,
        model_view=AnthropicFeatureView(runner_texts=[RESUME_PROMPT, CLI_CONTINUE]),
    )
