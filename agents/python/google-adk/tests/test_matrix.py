"""The adapters' spec matrix (dex_agents.testing.matrix) on this package's matrix app."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.matrix import MatrixApp, MatrixSuite

from .adk_view import adk_chat_completions


class TestMatrix(MatrixSuite):
    app = MatrixApp(
        worker_target="tests.apps.matrix:flows",
        worker_cwd=Path(__file__).parent.parent,
        model_view=adk_chat_completions,
    )
