"""Tools from MCP servers (the `dex-agents[mcp]` extra).

    from dex_agents.mcp import HttpServer, McpToolSource, StdioServer

    source = McpToolSource([
        StdioServer("files", command="uvx", args=["some-mcp-server"]),
        HttpServer("search", url="http://127.0.0.1:8000/mcp"),
    ])

Each server's tools are listed once and offered as `<server>__<tool>`. Every call runs in the
call's tool Step, on a new connection, with the idempotency key in `_meta`. A tool that
answers with a task (the tasks extension, `io.modelcontextprotocol/tasks`) is polled by the
session (Streamable HTTP, for a runner with `poll_tool_task`) or inside its tool Step.
"""

from ..errors import McpToolCallInterruptedError
from .config import (
    DEFAULT_HANDSHAKE_TIMEOUT_SECONDS,
    DEFAULT_TASK_WAIT_SECONDS,
    HttpServer,
    McpServerConfig,
    StdioServer,
)
from .policies import annotation_effect
from .source import IDEMPOTENCY_KEY_META, McpTool, McpToolSource
from .task_poll import STATUS_EVENT, McpTaskLostError, McpTaskUnreachableError
from .tasks import TASKS_EXTENSION, TasksExtension

__all__ = [
    "DEFAULT_HANDSHAKE_TIMEOUT_SECONDS",
    "DEFAULT_TASK_WAIT_SECONDS",
    "IDEMPOTENCY_KEY_META",
    "STATUS_EVENT",
    "TASKS_EXTENSION",
    "HttpServer",
    "McpServerConfig",
    "McpTaskLostError",
    "McpTaskUnreachableError",
    "McpTool",
    "McpToolCallInterruptedError",
    "McpToolSource",
    "StdioServer",
    "TasksExtension",
    "annotation_effect",
]
