"""The adapters' spec matrix (dex_agents.testing.matrix) through a real Python Worker that calls
the Vercel AI SDK runner in a real Node process (flows.py), on SQLite and on Postgres."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.matrix import MatrixApp, MatrixSuite, chat_completions


class TestMatrix(MatrixSuite):
    app = MatrixApp(
        worker_target="flows:flows",
        worker_cwd=Path(__file__).parent,
        model_view=chat_completions,
    )
