"""What an /api route checks before it reads a request's body, and what keeps a server
without auth from being driven by a web page.

`GuardedRoute`, the route class of every /api router, authenticates a request on its headers
and query alone, then lets the route read at most the application's `max_body_bytes`
(`app.state.dex_max_body_bytes`): a longer `Content-Length` is refused before any of the body
is read, and a body without one (chunked) as soon as it grows past the limit. Either gets
413 `body_too_large`, and the connection closes.

A server without auth (`allow_unauthenticated=True`, `dex-agents serve --no-auth`) trusts
whoever reaches its loopback port, and a browser can reach it: a page on attacker.example
that re-binds its DNS name to 127.0.0.1 makes same-origin requests to it (with
`Host: attacker.example`), and any page can send it simple cross-origin POSTs. So it answers
only requests whose `Host` is a loopback name (`localhost`, `*.localhost`,
`127.0.0.0/8`, `[::1]`, any port), and whose `Origin`, when a browser sends one, is a
loopback origin or one of the application's CORS origins; anything else gets 403.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from urllib.parse import urlsplit

from fastapi import Request
from fastapi.routing import APIRoute
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .auth import authenticate_before_body
from .errors import BodyTooLarge, error_response


class GuardedRoute(APIRoute):
    """An /api route: authenticated before its body is read, and its body bounded."""

    async def handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        await authenticate_before_body(request)
        limit = getattr(request.app.state, "dex_max_body_bytes", None)
        if self.body_field is not None and isinstance(limit, int):
            receive = bounded_receive(receive, limit, _content_length(scope))
        await super().handle(scope, receive, send)


def bounded_receive(receive: Receive, limit: int, declared: int | None) -> Receive:
    """`receive` that raises BodyTooLarge once the body is known to exceed `limit` bytes: at
    once for a longer declared length, else when what arrived passes it."""
    received = 0

    async def bounded() -> Message:
        nonlocal received
        if declared is not None and declared > limit:
            raise BodyTooLarge(limit)
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > limit:
                raise BodyTooLarge(limit)
        return message

    return bounded


def _content_length(scope: Scope) -> int | None:
    value = Headers(scope=scope).get("content-length", "")
    return int(value) if value.isascii() and value.isdigit() and len(value) < 20 else None


def is_loopback_name(name: str) -> bool:
    """Whether a host name (without port; an IPv6 address with or without brackets) can only
    mean this machine: `localhost`, a `*.localhost` name, or a loopback address."""
    name = name.lower().removeprefix("[").removesuffix("]")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(host: str) -> str:
    """A `Host` header's name without its port: `[::1]:8000` -> `[::1]`, `a:80` -> `a`."""
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


class LoopbackOnly:
    """ASGI middleware: 403 for a request whose Host is not a loopback name, or whose Origin
    is neither a loopback origin nor one of `origins`."""

    def __init__(self, app: ASGIApp, origins: Iterable[str] = ()) -> None:
        self.app = app
        self.origins = {origin.rstrip("/").lower() for origin in origins}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            refusal = self._refusal(Headers(scope=scope))
            if refusal is not None:
                code, message = refusal
                await error_response(403, code, message)(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, headers: Headers) -> tuple[str, str] | None:
        host = headers.get("host", "")
        if not is_loopback_name(host_name(host)):
            return "host_not_allowed", (
                f"this server runs without auth and answers only requests to a loopback name "
                f"(localhost, 127.0.0.1, [::1]), not Host {host[:100]!r}: open it through "
                "one, or run it with a token"
            )
        origin = headers.get("origin")
        if origin is not None and not self._origin_allowed(origin):
            return "origin_not_allowed", (
                f"this server runs without auth and refuses requests from the page at "
                f"{origin[:100]!r}: only loopback pages and --cors-origin origins may call it"
            )
        return None

    def _origin_allowed(self, origin: str) -> bool:
        if origin.rstrip("/").lower() in self.origins:
            return True
        try:
            parts = urlsplit(origin)
        except ValueError:
            return False
        return parts.scheme in ("http", "https") and is_loopback_name(parts.hostname or "")
