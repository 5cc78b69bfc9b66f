"""Tools from MCP servers (the `dex-agents[mcp]` extra).

    from dex_agents.mcp import HttpServer, McpToolSource, StdioServer

    source = McpToolSource([
        StdioServer("files", command="uvx", args=["some-mcp-server"]),
        HttpServer("search", url="http://127.0.0.1:8000/mcp"),
    ])

Each server's tools are listed once and offered as `<server>__<tool>`. Every call runs in the
call's tool Step, on a new connection, with the idempotency key in `_meta`.
"""

from ..errors import McpToolCallInterruptedError
from .config import DEFAULT_HANDSHAKE_TIMEOUT_SECONDS, HttpServer, McpServerConfig, StdioServer
from .policies import annotation_effect
from .source import IDEMPOTENCY_KEY_META, McpTool, McpToolSource

__all__ = [
    "DEFAULT_HANDSHAKE_TIMEOUT_SECONDS",
    "IDEMPOTENCY_KEY_META",
    "HttpServer",
    "McpServerConfig",
    "McpTool",
    "McpToolCallInterruptedError",
    "McpToolSource",
    "StdioServer",
    "annotation_effect",
]
