"""The session's built-in tools (`ask_user`, `durable_wait`, `write_todos`) as an in-process SDK
MCP server the runner adds to a CLI run.

The CLI offers SDK MCP tools to the model as `mcp__<server key>__<tool>`, so the model calls
`mcp__dex__ask_user`; the runner's hook defers every such call and reports it under the
built-in's own name (`ask_user`), which the core routes to the contract's built-in Steps. The
resumed run's call gets the recorded result from this server; the server never runs a
built-in itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from claude_agent_sdk import McpSdkServerConfig
from dex_agents.builtins import BUILT_IN_TOOL_DEFINITIONS, BUILT_IN_TOOL_NAMES
from dex_agents.runner import ToolPolicy
from mcp.server import Server
from mcp.types import CallToolRequestParams, CallToolResult, ListToolsResult, TextContent, Tool

from .texts import BUILT_IN_NOT_DEFERRED
from .tools import RecordedResults, full_name

SERVER_KEY: Final = "dex"
"""The `mcp_servers` key of the built-in tools' server (reserved: the options may not use it)."""

POLICY: Final = ToolPolicy(effect="read", requires_approval=False)
"""The policy a deferred built-in call carries (the core applies the built-in policy)."""

_PREFIX: Final = f"mcp__{SERVER_KEY}__"


def offered(enabled: Sequence[str], planning: bool) -> tuple[str, ...]:
    """The built-ins a run offers, in the contract's order: only `write_todos` when planning."""
    names = [name for name in BUILT_IN_TOOL_NAMES if name in enabled]
    return tuple(name for name in names if name == "write_todos" or not planning)


def model_name(built_in: str) -> str:
    """The name the model sees for a built-in: `mcp__dex__<name>`."""
    return full_name(SERVER_KEY, built_in)


def built_in_of(tool_name: str, offered: Sequence[str]) -> str | None:
    """The built-in a model-side tool name calls, if it is one of `offered`."""
    if not tool_name.startswith(_PREFIX):
        return None
    name = tool_name.removeprefix(_PREFIX)
    return name if name in offered else None


def server(offered: Sequence[str], recorded: RecordedResults) -> McpSdkServerConfig:
    """The built-ins' server for one run: it lists `offered` and answers a call with the
    result a Step recorded for it (handed over by the runner's hook)."""
    tools = [_tool(name) for name in offered]

    async def on_list_tools(ctx: Any, params: Any) -> ListToolsResult:
        return ListToolsResult(tools=tools)

    async def on_call_tool(ctx: Any, params: CallToolRequestParams) -> CallToolResult:
        found = recorded.take(full_name(SERVER_KEY, params.name), params.arguments or {})
        text, is_error = (found.text, found.is_error) if found else (BUILT_IN_NOT_DEFERRED, True)
        return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)

    instance = Server(SERVER_KEY, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    return McpSdkServerConfig(type="sdk", name=SERVER_KEY, instance=instance)


def _tool(name: str) -> Tool:
    function = BUILT_IN_TOOL_DEFINITIONS[name]["function"]  # type: ignore[index]
    return Tool(name=name, description=function["description"], input_schema=function["parameters"])
