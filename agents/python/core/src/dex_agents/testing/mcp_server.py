"""The features suite's MCP server (`features.feature_mcp_source()`), run over stdio:

    python -m dex_agents.testing.mcp_server

Two tools with MCP hints, so their effects come from the annotations as an adapter reads
them: `lookup_order(order_id)`, a read, and `refund_order(order_id)`, a destructive write
that is not idempotent (the suite's source asks approval for it). Each run records the tool
name, its argument and the idempotency key the session put in the request's `_meta` to the
`ToolRunLog` at $TOOL_LOG, so a test counts real runs outside the database. Needs the
`dex-agents[mcp]` extra.
"""

from __future__ import annotations

import os
from typing import Final

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

from ..mcp import IDEMPOTENCY_KEY_META
from .tool_log import ToolRunLog

SERVER_NAME: Final = "orders"
TOOL_LOG_ENV: Final = "TOOL_LOG"

server = MCPServer("dex-features")


def _record(tool: str, order_id: str, ctx: Context) -> None:
    meta = ctx.request_context.meta
    key = meta.get(IDEMPOTENCY_KEY_META) if isinstance(meta, dict) else None
    if key is None and meta is not None:
        key = getattr(meta, IDEMPOTENCY_KEY_META, None)
    ToolRunLog(os.environ[TOOL_LOG_ENV]).record(tool, order_id=order_id, key=key)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup_order(order_id: str, ctx: Context) -> str:
    """The status of an order."""
    _record("lookup_order", order_id, ctx)
    return f"order {order_id} is shipped"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, idempotent_hint=False))
def refund_order(order_id: str, ctx: Context) -> str:
    """Refund an order to the customer's card."""
    _record("refund_order", order_id, ctx)
    return f"order {order_id} is refunded"


def main() -> None:
    server.run("stdio")


if __name__ == "__main__":
    main()
