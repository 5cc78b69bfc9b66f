"""What runners' warm-ups share (`runner.WarmUpRunner`): loading, before a Worker reports
ready, what the first model call of an HTTP model client would load inside a RunModel.

Both load modules only: no request reaches a model, and nothing leaves the host.
"""

from __future__ import annotations

import asyncio
import socket

import anyio


async def load_async_http_stack() -> None:
    """Opens and closes one loopback TCP connection through anyio, which httpx (the HTTP
    client of the OpenAI SDK and others) connects with: its asyncio backend and socket
    streams are imported on a process's first connection otherwise."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        stream = await anyio.connect_tcp("127.0.0.1", port)
        await stream.aclose()


def load_openai_client(client: object) -> None:
    """Touches the Chat Completions and Responses resources of an `openai` SDK client, which
    the SDK imports on first access; anything else is left alone. Blocking: run it in a
    thread."""
    chat = getattr(client, "chat", None)
    getattr(chat, "completions", None)
    getattr(client, "responses", None)


async def load_openai_client_async(client: object) -> None:
    """`load_openai_client` in a thread, then `load_async_http_stack`."""
    await asyncio.to_thread(load_openai_client, client)
    await load_async_http_stack()
