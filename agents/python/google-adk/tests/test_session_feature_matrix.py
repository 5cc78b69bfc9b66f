"""The shared feature matrix (dex_agents.testing.features) on this package's features app
(tests/apps/session_features.py), through real Worker processes on SQLite and Postgres."""

from __future__ import annotations

from pathlib import Path

from dex_agents.testing.features import FeatureApp, FeatureSuite

from .adk_view import adk_chat_completions


class TestSessionFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="tests.apps.session_features:flows",
        worker_cwd=Path(__file__).parent.parent,
        model_view=adk_chat_completions,
    )
    supports_mcp = False
    unsupported_reason = (
        "google-adk 1.x requires the 1.x MCP SDK and dex_agents.McpToolSource the 2.x: "
        "ADK's McpToolset carries the idempotency key instead (tests/test_toolsets.py)"
    )
