"""`dex-agents serve`: the web application under uvicorn, on one loopback socket by default.

uvicorn bounds header size (h11's 16 KiB) and closes idle keep-alive connections (5 s), but a
client that trickles its header lines or its body a byte at a time holds a connection, and
its file descriptor, for as long as it likes; enough of them and the process cannot accept.
`GuardedH11Protocol` (uvicorn's h11 protocol, which `serve` uses) adds what it lacks:
- the request line and headers must arrive within `header_timeout_seconds` of the
  connection's start or of the previous response's end, however they trickle;
- the body must arrive in full within `body_timeout_seconds` of the headers' end;
- past `max_connections` open connections a new one gets 503 and is closed at once, before
  it reads anything, so its descriptor is freed;
- a request answered before its body was read (401, 413) has the rest of its body dropped
  up to `max_body_bytes` more, then the connection closes.
A timed-out connection is closed without an answer.

It subclasses uvicorn's `H11Protocol` and uses its members `conn`, `transport`, `loop` and
`on_response_complete`, which are not public API: the `web` extra pins uvicorn to one minor
version, and tests/web/test_transport.py fails on a release that changed them.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import ipaddress
import logging
import signal
import socket
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import ClassVar

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ..client import AgentClient
from .app import MAX_BODY_BYTES, create_app

# How long a stop waits for open responses (event streams) before it closes them.
SHUTDOWN_GRACE_SECONDS = 3
# File descriptors the process keeps beside its connections (database, logs, wake feed).
RESERVED_DESCRIPTORS = 64


@dataclasses.dataclass(frozen=True)
class TransportLimits:
    """How much a client may take of the server (`dex-agents serve` options)."""

    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 30.0
    max_connections: int = 1000
    max_body_bytes: int = MAX_BODY_BYTES


_BUSY_BODY = (
    b'{"error":{"code":"server_busy","message":"the server has as many connections open as '
    b'it takes; try again shortly","field":null}}'
)
BUSY_RESPONSE = (
    b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
    b"retry-after: 1\r\nconnection: close\r\ncontent-length: "
    + str(len(_BUSY_BODY)).encode()
    + b"\r\n\r\n"
    + _BUSY_BODY
)


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with read timeouts and a connection cap (`limits`)."""

    limits: ClassVar[TransportLimits] = TransportLimits()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._timer: asyncio.TimerHandle | None = None
        self._watched: object = None
        self._discard_budget: int | None = None
        if len(self.connections) > self.limits.max_connections:
            transport.write(BUSY_RESPONSE)
            transport.close()
            return
        self._watch_reading()

    def data_received(self, data: bytes) -> None:
        if self._discard_budget is not None:
            self._discard_budget -= len(data)
            if self._discard_budget < 0:
                self.transport.close()
                return
        super().data_received(data)
        self._watch_reading()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.conn.their_state is h11.SEND_BODY:
            # Answered before its body was read (401, 413): the rest of the body is read and
            # dropped, up to the body limit and the body timeout, so that the client, still
            # sending, gets the answer rather than a reset; past either, the connection closes.
            self._discard_budget = self.limits.max_body_bytes
        self._watch_reading()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_timer()
        super().connection_lost(exc)

    def _watch_reading(self) -> None:
        """Times what the client is sending: its headers (h11 IDLE) or its body (SEND_BODY);
        a phase's clock starts when the phase does, not at each byte."""
        state = self.conn.their_state
        if state is self._watched:
            return
        self._stop_timer()
        self._watched = state
        if state is not h11.SEND_BODY:
            self._discard_budget = None
        seconds = {
            h11.IDLE: self.limits.header_timeout_seconds,
            h11.SEND_BODY: self.limits.body_timeout_seconds,
        }.get(state)
        if seconds is not None and not self.transport.is_closing():
            self._timer = self.loop.call_later(seconds, self._too_slow)

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _too_slow(self) -> None:
        self._timer = None
        if not self.transport.is_closing():
            self.transport.close()


def protocol_with(limits: TransportLimits) -> type[GuardedH11Protocol]:
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"limits": limits})


def fitted_to_open_file_limit(limits: TransportLimits) -> TransportLimits:
    """`limits` with `max_connections` lowered to what the open-file limit leaves, once
    raised as far as the hard limit allows (a warning says so)."""
    soft = raise_open_file_limit(limits.max_connections + RESERVED_DESCRIPTORS)
    fits = max(soft - RESERVED_DESCRIPTORS, 1)
    if fits >= limits.max_connections:
        return limits
    logging.getLogger(__name__).warning(
        "the open-file limit (%d; ulimit -n) leaves room for %d connections, not "
        "--max-connections %d: serving at most %d",
        soft,
        fits,
        limits.max_connections,
        fits,
    )
    return dataclasses.replace(limits, max_connections=fits)


def raise_open_file_limit(needed: int) -> int:
    """Raises this process's soft limit of open files towards `needed` (up to the hard
    limit); returns the soft limit now in force."""
    if sys.platform == "win32":
        return needed
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
            soft = wanted
    return soft


async def _metrics(client: AgentClient) -> Callable[[], tuple[bytes, str]]:
    """The server's metrics: what its database holds, and the outages it meets."""
    from ..metrics import process_metrics

    process = process_metrics(client.database_url, list)
    process.watch_database(await client._opened())
    return process.render


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
    limits: TransportLimits = TransportLimits(),
    metrics: bool = False,
) -> None:
    """Opens the database (creating its tables, as a Worker does), listens, calls
    `announce(port)` with the port it listens on, and serves until SIGINT or SIGTERM. Without a
    token, requests are not authenticated (and only loopback Host names are answered).
    `metrics`: Prometheus metrics at /metrics (the `metrics` extra)."""
    async with AgentClient(database_url) as client:
        await client.connect(create=True)
        render = await _metrics(client) if metrics else None
        app = create_app(
            metrics=render,
            client=client,
            token=token,
            allow_unauthenticated=token is None,
            cors_origins=cors_origins,
            heartbeat_seconds=heartbeat_seconds,
            max_body_bytes=limits.max_body_bytes,
        )
        sock = listen(host, port)
        config = uvicorn.Config(
            app,
            http=protocol_with(fitted_to_open_file_limit(limits)),
            log_level="warning",
            timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        )
        announce(sock.getsockname()[1])
        with sock:
            await _Server(config).serve(sockets=[sock])
