"""The MCP client the official conformance suite drives: `python client.py <server-url>`, with
the scenario's name in MCP_CONFORMANCE_SCENARIO and its context (JSON) in
MCP_CONFORMANCE_CONTEXT.

It is dex_agents.mcp as a Worker uses it: an McpToolSource lists the server's tools over
Streamable HTTP, as for a model call, then calls the tools the scenario asks for through
`call_tool`, each on a new connection with an idempotency key in `_meta`, as a tool Step does.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable, Mapping
from typing import Any, Final

from dex_agents.mcp import HttpServer, McpTool, McpToolSource

SERVER: Final = "conformance"

Calls = dict[str, dict[str, Any]]
"""Tool name -> arguments, in calling order."""


def _every_listed(arguments: Mapping[str, dict[str, Any]]) -> Callable[[list[McpTool]], Calls]:
    """Calls every tool the source listed (the SDK drops invalid ones), with these arguments."""
    return lambda tools: {tool.mcp_name: arguments.get(tool.mcp_name, {}) for tool in tools}


def _echo_schema(tools: list[McpTool]) -> Calls:
    """Passes the focal tool's schema, as the model is offered it, back to the echo tool."""
    focal = next(tool for tool in tools if tool.mcp_name == "json_schema_2020_12_tool")
    return {"json_schema_echo": {"schema": focal.definition()["function"]["parameters"]}}


# The calls of each scenario whose context names none; any other scenario only lists.
SCENARIO_CALLS: Final[Mapping[str, Callable[[list[McpTool]], Calls]]] = {
    "tools_call": lambda tools: {"add_numbers": {"a": 5, "b": 3}},
    "sse-retry": lambda tools: {"test_reconnection": {}},
    "http-standard-headers": _every_listed({}),
    "http-invalid-tool-headers": _every_listed({"valid_tool": {"region": "us-west1"}}),
    "json-schema-2020-12-preservation": _echo_schema,
    # The client declines elicitation, so this scenario's checks fail (see the test).
    "elicitation-sep1034-client-defaults": lambda tools: {"test_client_elicitation_defaults": {}},
}


def _context_calls(context: Mapping[str, Any]) -> Calls | None:
    calls = context.get("toolCalls")
    if not isinstance(calls, list):
        return None
    return {str(call["name"]): dict(call.get("arguments") or {}) for call in calls}


async def run(url: str, scenario: str, context: Mapping[str, Any]) -> None:
    source = McpToolSource([HttpServer(SERVER, url=url, handshake_timeout_seconds=10)])
    tools = list(await source.list_tools())
    plan = SCENARIO_CALLS.get(scenario)
    calls = _context_calls(context) or (plan(tools) if plan else {})
    listed = {tool.mcp_name for tool in tools}
    for name, arguments in calls.items():
        if name not in listed:
            raise SystemExit(f"scenario {scenario}: the server lists no tool {name!r}")
        result = await source.call_tool(SERVER, name, arguments, f"conformance/{scenario}/{name}")
        print(f"{name}: {result.output}")


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: client.py <server-url>")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    asyncio.run(run(sys.argv[1], os.environ.get("MCP_CONFORMANCE_SCENARIO", ""), context))


if __name__ == "__main__":
    main()
