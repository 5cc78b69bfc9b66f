"""One connection per request: a bounded handshake, then one request, then close."""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from .config import HttpServer, McpServerConfig
from .tasks import TasksExtension

# JSON-RPC errors the SDKs also use for an HTTP error status and an unreadable body; a
# gateway can send them after the server ran the call, so they count as no result.
NO_RESULT_CODES = frozenset({-32603, -32700})


class HandshakeFailed(Exception):
    """The connection or its handshake failed, so no request was sent."""


def _target(server: McpServerConfig) -> StdioServerParameters | str:
    if isinstance(server, HttpServer):
        return server.url
    return StdioServerParameters(
        command=server.command,
        args=list(server.args),
        env=dict(server.env) if server.env is not None else None,
        cwd=server.cwd,
    )


@asynccontextmanager
async def connect(server: McpServerConfig) -> AsyncIterator[Client]:
    """A new connection whose handshake must finish within the server's timeout; a failed or
    late handshake raises HandshakeFailed. The deadline is lifted once the handshake is done.
    """
    connected = False
    with anyio.CancelScope() as scope:
        scope.deadline = anyio.current_time() + server.handshake_timeout_seconds
        try:
            async with Client(_target(server), cache=None, extensions=[TasksExtension()]) as client:
                connected = True
                scope.deadline = math.inf
                yield client
        except Exception as error:
            if not connected:
                raise HandshakeFailed(_describe(error)) from error
            raise
    if scope.cancelled_caught and not connected:
        raise HandshakeFailed(
            f"the handshake took longer than {server.handshake_timeout_seconds:g} s"
        )


def mcp_error(error: BaseException) -> MCPError | None:
    """The JSON-RPC error inside `error`, which anyio may have wrapped in exception groups."""
    if isinstance(error, MCPError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = mcp_error(inner)
            if found is not None:
                return found
    cause = error.__cause__
    return mcp_error(cause) if cause is not None else None


def _describe(error: BaseException) -> str:
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    text = str(error) or type(error).__name__
    return f"{type(error).__name__}: {text}" if str(error) else text


def describe(error: BaseException) -> str:
    return _describe(error)


def as_json_object(value: Any) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError("arguments must be a JSON object")
    return value
