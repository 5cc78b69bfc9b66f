"""A run's listing of its tool sources, without the CLI: the source server of a run answers a
call of a tool it did not list with the model-visible NOT_RUNNER_TOOL error and calls nothing,
and lists and calls the tools it did list (the real stdio MCP server of the features suite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from dex_agents.testing import RunnerDriver
from dex_agents.testing.features import MCP_LOOKUP, feature_mcp_source
from dex_agents.testing.mcp_server import TOOL_LOG_ENV
from dex_agents.testing.tool_log import ToolRunLog
from mcp import Client
from mcp.types import TextContent

from dex_agents_claude_agent_sdk import ClaudeAgentRunner
from dex_agents_claude_agent_sdk.sources import SourceTools
from dex_agents_claude_agent_sdk.texts import NOT_RUNNER_TOOL
from dex_agents_claude_agent_sdk.tools import RecordedResults
from tests.apps.harness import options


async def test_a_runs_source_server_refuses_a_tool_it_did_not_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = ToolRunLog(tmp_path / "tools.jsonl")
    monkeypatch.setenv(TOOL_LOG_ENV, str(tmp_path / "tools.jsonl"))
    listing = await SourceTools({"shop": feature_mcp_source()}).listing()
    driver = RunnerDriver(ClaudeAgentRunner(options=options("http://127.0.0.1:9")))
    turn = driver.context(driver.start_turn("Where is order A-1?"), None)
    server = listing.serving(RecordedResults(), turn)["shop"]["instance"]
    async with Client(server) as client:
        listed = await client.list_tools()
        assert MCP_LOOKUP in [tool.name for tool in listed.tools]
        refused = await client.call_tool("orders__no_such_tool", {})
        assert refused.is_error
        expected = NOT_RUNNER_TOOL.format(tool_name="mcp__shop__orders__no_such_tool")
        assert refused.content == [TextContent(type="text", text=expected)]
        found = await client.call_tool(MCP_LOOKUP, {"order_id": "A-1"})
        assert not found.is_error
        assert isinstance(found.content[0], TextContent) and "A-1" in found.content[0].text
    # The listed tool ran once, with the key of its call; the unlisted one reached no server.
    entries = log.entries()
    assert [(entry["tool"], entry["key"]) for entry in entries] == [
        ("lookup_order", f"{turn.flow_id}/{turn.turn_id}/{turn.step_execution_id}")
    ]
