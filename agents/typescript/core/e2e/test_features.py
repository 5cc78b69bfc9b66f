"""The shared session-features suite (`dex_agents.testing.features`) on TypeScript Stepwise,
through a real Python Worker calling it in a real Node process (features_flows.py): the
built-ins, plan mode, session settings and compaction, the rows Python's Stepwise passes.

The MCP row is skipped: the TypeScript core has no MCP tool source (`McpToolSource` is the
Python core's), so a TypeScript Stepwise agent has no MCP tools to offer."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from dex_agents.testing.features import FeatureApp, FeatureSuite
from dex_agents.testing.shared_worker import chat_completions


class TestFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="features_flows:flows",
        worker_cwd=Path(__file__).resolve().parent,
        model_view=chat_completions,
    )
    supports_mcp: ClassVar[bool] = False
    unsupported_reason: ClassVar[str] = "the TypeScript core has no MCP tool source"
