"""A Claude Agent SDK harness against the scripted Anthropic server (ANTHROPIC_BASE_URL), with
two in-process SDK MCP tools that record each real run in the tool log (TOOL_LOG): `lookup`,
read-only by its annotations (it runs inside the harness) and, asked about "slow", waiting
`LOOKUP_SECONDS`; and `send`, a write (unclassified: a CallSingleAttemptTool Step after
approval) that, sending "slow", waits `SEND_SECONDS` (so a test can kill the Worker meanwhile)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ToolAnnotations, create_sdk_mcp_server, tool
from dex_agents import AgentSessionFlow, current_tool_execution
from dex_agents.testing import ToolRunLog

from dex_agents_claude_agent_sdk import ClaudeAgentRunner

FLOW_TYPE = "ClaudeHarness"


@tool("lookup", "Look something up.", {"q": str}, ToolAnnotations(readOnlyHint=True))
async def lookup(args: dict[str, Any]) -> dict[str, Any]:
    ToolRunLog(os.environ["TOOL_LOG"]).record("lookup", q=args["q"])
    if args["q"] == "slow":
        await asyncio.sleep(float(os.environ.get("LOOKUP_SECONDS", "30")))
    return {"content": [{"type": "text", "text": f"found {args['q']}"}]}


@tool("send", "Send a message.", {"text": str})
async def send(args: dict[str, Any]) -> dict[str, Any]:
    try:
        key: str | None = current_tool_execution().idempotency_key
    except LookupError:  # run by the CLI, not in a tool Step
        key = None
    ToolRunLog(os.environ["TOOL_LOG"]).record("send", text=args["text"], key=key)
    if args["text"] == "slow":
        await asyncio.sleep(float(os.environ.get("SEND_SECONDS", "30")))
    if args["text"] == "fail":
        return {"content": [{"type": "text", "text": "mailbox full"}], "is_error": True}
    return {"content": [{"type": "text", "text": f"sent {args['text']}"}]}


def options(base_url: str | None = None, cwd: str | None = None) -> ClaudeAgentOptions:
    """Options for the scripted server: only the `lookup` and `send` tools, no built-ins."""
    return ClaudeAgentOptions(
        model="claude-sonnet-4-5",
        cwd=cwd or tempfile.gettempdir(),
        tools=[],
        mcp_servers={"t": create_sdk_mcp_server("t", tools=[lookup, send])},
        allowed_tools=["mcp__t__lookup", "mcp__t__send"],
        max_turns=5,
        env={
            "ANTHROPIC_BASE_URL": base_url or os.environ["ANTHROPIC_BASE_URL"],
            "ANTHROPIC_AUTH_TOKEN": "scripted",
            "ANTHROPIC_API_KEY": "",
        },
    )


def flows() -> list[AgentSessionFlow]:
    return [AgentSessionFlow(ClaudeAgentRunner(options=options()), flow_type=FLOW_TYPE)]
