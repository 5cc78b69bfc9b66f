"""The shop MCP server of tests/apps/mcp_server.py as an ADK `McpToolset`."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from google.adk.tools.mcp_tool.mcp_session_manager import StdioConnectionParams
from google.adk.tools.mcp_tool.mcp_toolset import McpToolset
from mcp import StdioServerParameters


def shop_toolset(**options: Any) -> McpToolset:
    """The shop MCP server (tests/apps/mcp_server.py) as an ADK toolset, started on first use
    over stdio with this process's environment (its $TOOL_LOG)."""
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tests.apps.mcp_server"],
        cwd=str(Path(__file__).parent.parent.parent),
        env=dict(os.environ),
    )
    params = StdioConnectionParams(server_params=server, timeout=30)
    return McpToolset(connection_params=params, **options)
