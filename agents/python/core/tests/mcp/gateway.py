"""A gateway in front of the test MCP server that forwards every request and answers a
`tools/call` with HTTP 500 after the server ran it, as a failing proxy can."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .servers import free_port

_HOP_HEADERS = {"host", "content-length", "connection", "transfer-encoding"}


def _app(upstream: str) -> Starlette:
    async def forward(request: Request) -> Response:
        body = await request.body()
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_HEADERS}
        async with httpx.AsyncClient(timeout=30) as client:
            answer = await client.request(request.method, upstream, content=body, headers=headers)
        if body and json.loads(body).get("method") == "tools/call":
            return Response("upstream failed", status_code=500)
        kept = {k: v for k, v in answer.headers.items() if k.lower() not in _HOP_HEADERS}
        kept.pop("content-encoding", None)
        return Response(answer.content, status_code=answer.status_code, headers=kept)

    return Starlette(routes=[Route("/mcp", forward, methods=["GET", "POST", "DELETE"])])


@contextmanager
def failing_gateway(upstream: str) -> Iterator[str]:
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(_app(upstream), host="127.0.0.1", port=port, log_level="warning")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline:
            raise RuntimeError("the gateway did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        thread.join(10)
