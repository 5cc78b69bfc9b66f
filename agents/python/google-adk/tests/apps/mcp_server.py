"""An MCP server over stdio (the real `mcp` SDK's FastMCP) for the toolset tests: one tool
annotated read-only, one write tool with no hints. Each run appends a line (a place_order
run with the idempotency key its request's `_meta` carried) to the ToolRunLog
at $TOOL_LOG, so a test counts real runs outside the database.

    python -m tests.apps.mcp_server
"""

from __future__ import annotations

import os

from dex_agents.testing.tool_log import ToolRunLog
from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations

server = FastMCP("shop")
IDEMPOTENCY_KEY_META = "io.superdurable.dex/idempotencyKey"
STOCK = {"kettle": 3, "toaster": 0}


def _log() -> ToolRunLog:
    return ToolRunLog(os.environ["TOOL_LOG"])


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def get_stock(item: str) -> str:
    """How many of an item are in stock."""
    _log().record("get_stock", item=item)
    return f"{STOCK.get(item, 0)} {item} in stock"


@server.tool()
def place_order(item: str, quantity: int, ctx: Context) -> str:  # type: ignore[type-arg]
    """Order an item."""
    meta = ctx.request_context.meta
    key = (meta.model_extra or {}).get(IDEMPOTENCY_KEY_META) if meta else None
    _log().record("place_order", item=item, quantity=quantity, key=key)
    return f"ordered {quantity} {item}"


if __name__ == "__main__":
    server.run()
