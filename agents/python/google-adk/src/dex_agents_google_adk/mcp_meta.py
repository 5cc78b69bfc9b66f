"""An ADK `McpTool` call that carries the tool Step's idempotency key in the MCP request's
`_meta`, as the core's `McpToolSource` sends it.

ADK's `McpTool` opens (or reuses) its MCP session through its session manager and calls
`session.call_tool(..., meta=<trace context>)`. The tool Step runs a shallow copy of the
listed tool whose session manager hands out sessions that add the key to that `meta`; the rest
of ADK's call (headers, progress, error handling, its one retry on a lost connection) is
ADK's own.
"""

from __future__ import annotations

from typing import Any, Final

from google.adk.tools.mcp_tool.mcp_tool import McpTool

from ._compat import with_session_manager

IDEMPOTENCY_KEY_META: Final = "io.superdurable.dex/idempotencyKey"
"""The `_meta` key of the idempotency key (the core's `dex_agents.mcp.IDEMPOTENCY_KEY_META`,
which this package cannot import: ADK 1.x pins the 1.x MCP SDK, the core's MCP path the
2.x)."""


class _KeyedSession:
    """An MCP `ClientSession` whose `call_tool` adds the key to `meta`."""

    def __init__(self, session: Any, key: str) -> None:
        self._session = session
        self._key = key

    async def call_tool(self, *args: Any, meta: dict[str, Any] | None = None, **kw: Any) -> Any:
        return await self._session.call_tool(
            *args, meta={**(meta or {}), IDEMPOTENCY_KEY_META: self._key}, **kw
        )

    def __getattr__(self, name: str) -> Any:
        return getattr(self._session, name)


class _KeyedSessionManager:
    """The tool's session manager, its sessions keyed."""

    def __init__(self, manager: Any, key: str) -> None:
        self._manager = manager
        self._key = key

    async def create_session(self, *args: Any, **kw: Any) -> _KeyedSession:
        return _KeyedSession(await self._manager.create_session(*args, **kw), self._key)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._manager, name)


def keyed_mcp_tool(tool: McpTool, idempotency_key: str) -> McpTool:
    """A copy of `tool` whose calls carry `idempotency_key` in `_meta`."""
    return with_session_manager(
        tool, lambda manager: _KeyedSessionManager(manager, idempotency_key)
    )
