"""The MCP client the official conformance suite drives: `python client.py <server-url>`, with
the scenario's name in MCP_CONFORMANCE_SCENARIO.

It is dex_agents.mcp as a Worker uses it: an McpToolSource lists the server's tools over
Streamable HTTP, then calls each tool a scenario needs through `call_tool`, on a new
connection with an idempotency key in `_meta`, as a tool Step would.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Mapping
from typing import Any, Final

from dex_agents.mcp import HttpServer, McpToolSource

SERVER: Final = "conformance"

# The arguments each scenario's tool takes; a scenario not named here only lists the tools.
CALLS: Final[Mapping[str, Mapping[str, dict[str, Any]]]] = {
    "tools_call": {"add_numbers": {"a": 5, "b": 3}},
    "sse-retry": {"test_reconnection": {}},
    # The client declines elicitation, so this scenario's checks fail (see the test).
    "elicitation-sep1034-client-defaults": {"test_client_elicitation_defaults": {}},
}


async def run(url: str, scenario: str) -> None:
    source = McpToolSource([HttpServer(SERVER, url=url, handshake_timeout_seconds=10)])
    listed = {tool.mcp_name: tool for tool in await source.list_tools()}
    if not listed and scenario in CALLS:
        raise SystemExit(f"scenario {scenario}: the server's tools could not be listed")
    for name, arguments in CALLS.get(scenario, {}).items():
        if name not in listed:
            raise SystemExit(f"scenario {scenario}: the server lists no tool {name!r}")
        key = f"conformance/{scenario}/{name}"
        result = await source.call_tool(SERVER, name, arguments, key)
        print(f"{name}: {result.output}")


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: client.py <server-url>")
    asyncio.run(run(sys.argv[1], os.environ.get("MCP_CONFORMANCE_SCENARIO", "")))


if __name__ == "__main__":
    main()
