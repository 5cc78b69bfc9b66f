"""`dex-agents serve`: the web application under uvicorn, on one loopback socket by default."""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import signal
import socket
from collections.abc import Callable, Iterable, Iterator

import uvicorn

from ..client import AgentClient
from .app import create_app

# How long a stop waits for open responses (event streams) before it closes them.
SHUTDOWN_GRACE_SECONDS = 3


def viewer_url(host: str, port: int, token: str | None) -> str:
    """The URL a person opens: the viewer, with the token in the fragment (which browsers
    never send to a server)."""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    with contextlib.suppress(ValueError):
        if ipaddress.ip_address(host).version == 6:
            host = f"[{host}]"
    fragment = f"#token={token}" if token else ""
    return f"http://{host}:{port}/{fragment}"


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: a free one); OSError when it is taken."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    return socket.create_server((host, port), family=family, backlog=2048)


class _Server(uvicorn.Server):
    """uvicorn stopping on SIGINT or SIGTERM through the event loop, without re-raising the
    signal afterwards, so the AgentClient closes cleanly. `handle_exit` (which sse-starlette
    wraps to end open event streams) decides: a second Ctrl-C stops at once."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.handle_exit, sig, None)
        try:
            yield
        finally:
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)


async def serve(
    *,
    host: str,
    port: int,
    database_url: str | None,
    token: str | None,
    cors_origins: Iterable[str],
    heartbeat_seconds: float,
    announce: Callable[[int], None],
) -> None:
    """Opens the database (creating its tables, as a Worker does), listens, calls
    `announce(port)` with the port it listens on, and serves until SIGINT or SIGTERM. Without a
    token, requests are not authenticated."""
    async with AgentClient(database_url) as client:
        await client.connect(create=True)
        app = create_app(
            client=client,
            token=token,
            allow_unauthenticated=token is None,
            cors_origins=cors_origins,
            heartbeat_seconds=heartbeat_seconds,
        )
        sock = listen(host, port)
        config = uvicorn.Config(
            app,
            log_level="warning",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
        announce(sock.getsockname()[1])
        with sock:
            await _Server(config).serve(sockets=[sock])
