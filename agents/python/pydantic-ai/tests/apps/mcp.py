"""The Worker app of the shared MCP suite (`dex_agents.testing.mcp_source`, run by
test_mcp.py): a Pydantic AI agent whose runner takes the tools of the core's test MCP server
(agents/python/core/tests/mcp/server.py, over stdio) as a tool source.

The server appends one JSON line per real tool run, with the idempotency key it got in `_meta`,
to $TOOL_LOG, so the tests count runs outside the database.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from dex_agents import AgentSessionFlow, AgentSessionOptions, ToolPolicy
from dex_agents.mcp import McpToolSource, StdioServer
from dex_agents.testing import MODEL_URL_ENV
from pydantic_ai import Agent

from dex_agents_pydantic_ai import PydanticAiRunner

from .agents import scripted_model

SERVER = Path(__file__).resolve().parents[3] / "core" / "tests" / "mcp" / "server.py"

local = StdioServer(
    "local",
    command=sys.executable,
    args=[str(SERVER), "stdio"],
    env={"MCP_TEST_RUN_LOG": os.environ["TOOL_LOG"]},
)
agent = Agent(scripted_model(os.environ[MODEL_URL_ENV]), instructions="Use the tools.")


@agent.tool_plain(metadata={"effect": "read"})
def local_note(text: str) -> str:
    """Keeps a note (the agent's own tool, beside the MCP tools)."""
    return f"noted: {text}"


runner = PydanticAiRunner(agent, tool_sources=[McpToolSource([local])])
# Explicit policies: the session's win over the source's, which win over the annotations.
governed = McpToolSource(
    [local], policies={"local__delete_item": ToolPolicy(effect="idempotent_write")}
)
session_policies = {
    "local__lookup": ToolPolicy(effect="non_idempotent_write", requires_approval=False)
}
flows = [
    AgentSessionFlow(runner, flow_type="McpAgent"),
    AgentSessionFlow(
        PydanticAiRunner(agent, tool_sources=[governed]),
        flow_type="McpPolicies",
        options=AgentSessionOptions(tool_policies=session_policies),
    ),
]
