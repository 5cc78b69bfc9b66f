"""Server configurations for McpToolSource. They come from the Worker's code only."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

DEFAULT_HANDSHAKE_TIMEOUT_SECONDS: Final = 30.0
# How long a tool Step waits for a task it polls itself (a stdio server's task, or any task
# when the runner does not poll tasks), per attempt.
DEFAULT_TASK_WAIT_SECONDS: Final = 600.0
# How long the session keeps polling a task whose server cannot be reached (PollToolTask, over
# Streamable HTTP) before the call goes to its failure route: a server restart or an outage
# shorter than this loses nothing.
DEFAULT_TASK_OUTAGE_SECONDS: Final = 3600.0

_SERVER_NAME: Final = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")


def _check(name: str, handshake_timeout_seconds: float, task_wait_seconds: float) -> None:
    if not _SERVER_NAME.match(name):
        raise ValueError(
            f"MCP server name {name!r} must be letters, digits, '-' and single '_' between "
            "them, so that '<server>__<tool>' names one server"
        )
    if handshake_timeout_seconds <= 0:
        raise ValueError(f"MCP server {name}: handshake_timeout_seconds must be positive")
    if task_wait_seconds <= 0:
        raise ValueError(f"MCP server {name}: task_wait_seconds must be positive")


@dataclass(frozen=True)
class StdioServer:
    """An MCP server the Worker starts as a subprocess for each request (stdio)."""

    name: str
    command: str
    args: Sequence[str] = ()
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    handshake_timeout_seconds: float = DEFAULT_HANDSHAKE_TIMEOUT_SECONDS
    task_wait_seconds: float = DEFAULT_TASK_WAIT_SECONDS

    def __post_init__(self) -> None:
        _check(self.name, self.handshake_timeout_seconds, self.task_wait_seconds)


@dataclass(frozen=True)
class HttpServer:
    """An MCP server reached over Streamable HTTP at `url`."""

    name: str
    url: str
    handshake_timeout_seconds: float = DEFAULT_HANDSHAKE_TIMEOUT_SECONDS
    headers: Mapping[str, str] = field(default_factory=dict)
    task_wait_seconds: float = DEFAULT_TASK_WAIT_SECONDS
    task_outage_seconds: float = DEFAULT_TASK_OUTAGE_SECONDS

    def __post_init__(self) -> None:
        _check(self.name, self.handshake_timeout_seconds, self.task_wait_seconds)
        if self.task_outage_seconds < 0:
            raise ValueError(f"MCP server {self.name}: task_outage_seconds must not be negative")
        if not self.url.startswith(("http://", "https://")):
            raise ValueError(f"MCP server {self.name}: url must start with http:// or https://")


McpServerConfig = StdioServer | HttpServer
