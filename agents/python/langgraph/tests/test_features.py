"""The shared feature matrix (dex_agents.testing.features) on this package's features app:
built-in tools, plan mode, session settings, compaction and an MCP tool source through real
Worker processes on SQLite and Postgres."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.features import FeatureApp, FeatureSuite
from dex_agents.testing.shared_worker import chat_completions


class TestFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="tests.apps.features:flows",
        worker_cwd=Path(__file__).parent.parent,
        model_view=chat_completions,
    )
