"""A Claude Agent SDK harness against the scripted Anthropic server (ANTHROPIC_BASE_URL), with
one in-process SDK MCP tool, `lookup`, that records each real run in the tool log (TOOL_LOG)
and, asked about "slow", waits `LOOKUP_SECONDS` (so a test can kill the Worker meanwhile)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, create_sdk_mcp_server, tool
from dex_agents import AgentSessionFlow
from dex_agents.testing import ToolRunLog

from dex_agents_claude_agent_sdk import ClaudeAgentRunner

FLOW_TYPE = "ClaudeHarness"


@tool("lookup", "Look something up.", {"q": str})
async def lookup(args: dict[str, Any]) -> dict[str, Any]:
    ToolRunLog(os.environ["TOOL_LOG"]).record("lookup", q=args["q"])
    if args["q"] == "slow":
        await asyncio.sleep(float(os.environ.get("LOOKUP_SECONDS", "30")))
    return {"content": [{"type": "text", "text": f"found {args['q']}"}]}


def options(base_url: str | None = None, cwd: str | None = None) -> ClaudeAgentOptions:
    """Options for the scripted server: only the `lookup` tool, no built-in tools."""
    return ClaudeAgentOptions(
        model="claude-sonnet-4-5",
        cwd=cwd or tempfile.gettempdir(),
        tools=[],
        mcp_servers={"t": create_sdk_mcp_server("t", tools=[lookup])},
        allowed_tools=["mcp__t__lookup"],
        max_turns=5,
        env={
            "ANTHROPIC_BASE_URL": base_url or os.environ["ANTHROPIC_BASE_URL"],
            "ANTHROPIC_AUTH_TOKEN": "scripted",
            "ANTHROPIC_API_KEY": "",
        },
    )


def flows() -> list[AgentSessionFlow]:
    return [AgentSessionFlow(ClaudeAgentRunner(options=options()), flow_type=FLOW_TYPE)]
