"""The shared features suite (`dex_agents.testing.features`) on the Claude Agent SDK runner,
through one real Worker per backend, the real Claude Code CLI and the scripted Anthropic
server: built-in tools (a question across a Worker restart, a durable wait that outlives the
Worker), plan mode, session settings, and an `McpToolSource` (its read runs inside the CLI
run, its approved write in a tool Step). Compaction is not offered by this runner (README,
Limits): the suite skips those rows.

The model sees the tools as `mcp__<server key>__<tool>` (MODEL_NAMES); see
`dex_agents.testing.anthropic_features`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import pytest
from dex_agents.builtins import BUILT_IN_TOOL_NAMES
from dex_agents.testing.anthropic_features import AnthropicFeatureView, FeatureAnthropicServer
from dex_agents.testing.anthropic_server import no_tools
from dex_agents.testing.features import (
    MCP_LOOKUP,
    MCP_REFUND,
    MCP_SERVER,
    FeatureApp,
    FeatureSuite,
)

from dex_agents_claude_agent_sdk.built_ins import SERVER_KEY as BUILT_INS_KEY
from tests.apps.features import SERVER_KEY as APP_KEY

MODEL_NAMES: Mapping[str, str] = {
    "get_weather": f"mcp__{APP_KEY}__get_weather",
    **{name: f"mcp__{BUILT_INS_KEY}__{name}" for name in BUILT_IN_TOOL_NAMES},
    **{name: f"mcp__{MCP_SERVER}__{name}" for name in (MCP_LOOKUP, MCP_REFUND)},
}
"""The names the model sees for the tools the suite names."""


class TestClaudeFeatures(FeatureSuite):
    app = FeatureApp(
        worker_target="tests.apps.features:flows",
        worker_cwd=Path(__file__).parent.parent,
        model_view=AnthropicFeatureView(),
    )
    supports_compaction: ClassVar[bool] = False
    unsupported_reason: ClassVar[str] = (
        "the Claude Code CLI compacts its own transcript: see the README's Limits"
    )
    mcp_reads_run_in_tool_steps: ClassVar[bool] = False
    model_names: ClassVar[Mapping[str, str]] = MODEL_NAMES

    @pytest.fixture(scope="class")
    @classmethod
    def shared_model(cls, shared_database: str) -> Iterator[FeatureAnthropicServer]:  # type: ignore[override]
        with FeatureAnthropicServer(MODEL_NAMES, side=no_tools) as server:
            yield server
