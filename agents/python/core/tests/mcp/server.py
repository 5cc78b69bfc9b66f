"""An MCP server for the MCP tool source's tests, built with the MCP SDK's MCPServer.

    python server.py stdio
    python server.py http <port>

Each tool appends one JSON line per run to the file named by MCP_TEST_RUN_LOG (the tool's
name and the idempotency key from `_meta`), so tests count real runs outside the database.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    ElicitRequest,
    ElicitRequestFormParams,
    InputRequiredResult,
    ToolAnnotations,
)
from task_extension import JOBS, TasksServerExtension

KEY = "io.superdurable.dex/idempotencyKey"

TASKS = TasksServerExtension()
server = MCPServer("dex-test", extensions=[TASKS])


def _record(tool: str, ctx: Context, **extra: Any) -> Any:
    meta = ctx.request_context.meta or {}
    key = meta.get(KEY) if isinstance(meta, dict) else getattr(meta, KEY, None)
    line = json.dumps({"tool": tool, "key": key, **extra})
    with open(os.environ["MCP_TEST_RUN_LOG"], "a", encoding="utf-8") as log:
        log.write(line + "\n")
    return key


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup(city: str, ctx: Context) -> str:
    """The weather in a city."""
    _record("lookup", ctx, city=city)
    return f"sunny in {city}"


@server.tool(annotations=ToolAnnotations(idempotent_hint=True, destructive_hint=True))
def set_value(name: str, value: str, ctx: Context) -> str:
    """Sets a named value."""
    _record("set_value", ctx, name=name, value=value)
    return f"{name}={value}"


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def delete_item(item: str, ctx: Context) -> str:
    """Deletes an item."""
    _record("delete_item", ctx, item=item)
    return f"deleted {item}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def broken(ctx: Context) -> str:
    """Always fails."""
    _record("broken", ctx)
    raise ToolError("the broken tool broke")


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
async def hang(ctx: Context) -> str:
    """Never answers."""
    _record("hang", ctx)
    await asyncio.sleep(3600)
    return "too late"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow_read(ctx: Context) -> str:
    """A read that never answers the first time a key asks."""
    key = _record("slow_read", ctx)
    if sum(1 for line in _lines() if line["tool"] == "slow_read" and line["key"] == key) == 1:
        await asyncio.sleep(3600)
    return "read at last"


def _lines() -> list[dict[str, Any]]:
    with open(os.environ["MCP_TEST_RUN_LOG"], encoding="utf-8") as log:
        return [json.loads(line) for line in log if line.strip()]


@server.tool(name="x" * 70, annotations=ToolAnnotations(read_only_hint=True))
def long_name() -> str:
    """A tool whose agent name would be too long for model providers."""
    return "never offered"


# Task tools: listed here, answered with a task by the tasks extension (task_extension.py).
@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def report(topic: str, seconds: float = 2) -> str:
    """Writes a report on a topic, as a task."""
    raise ToolError("report runs as a task")


@server.tool(annotations=ToolAnnotations(idempotent_hint=True))
def ship(item: str) -> str:
    """Ships an item, asking whether to ship it express, as a task."""
    raise ToolError("ship runs as a task")


@server.tool(annotations=ToolAnnotations(idempotent_hint=True))
def batches() -> str:
    """Asks to approve each of two batches, as a task."""
    raise ToolError("batches runs as a task")


@server.tool(annotations=ToolAnnotations(idempotent_hint=True))
def long_job() -> str:
    """A job that runs until it is cancelled, as a task."""
    raise ToolError("long_job runs as a task")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def survey() -> str:
    """Asks a two-field form, as a task."""
    raise ToolError("survey runs as a task")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def confirm(ctx: Context) -> InputRequiredResult:
    """Answers tools/call itself with input_required."""
    _record("confirm", ctx)
    form = ElicitRequestFormParams(
        message="Proceed?",
        requested_schema={"type": "object", "properties": {"proceed": {"type": "boolean"}}},
    )
    return InputRequiredResult(input_requests={"proceed": ElicitRequest(params=form)})


assert set(JOBS) == {"report", "ship", "batches", "long_job", "survey"}


def forget_tasks(signum: int, frame: object) -> None:
    """SIGUSR1: the server forgets its tasks, as a restarted one would, with no moment
    in which it cannot be reached."""
    TASKS.tasks.clear()


UNAVAILABLE = False


def toggle_unavailable(signum: int, frame: object) -> None:
    """SIGUSR2: the server answers every HTTP request with 503 until the next SIGUSR2, as one
    in an outage would, keeping its tasks."""
    global UNAVAILABLE
    UNAVAILABLE = not UNAVAILABLE


def with_outages(app: Any) -> Any:
    async def serve(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and UNAVAILABLE:
            await send({"type": "http.response.start", "status": 503, "headers": []})
            await send({"type": "http.response.body", "body": b"unavailable"})
            return
        await app(scope, receive, send)

    return serve


if __name__ == "__main__":
    signal.signal(signal.SIGUSR1, forget_tasks)
    signal.signal(signal.SIGUSR2, toggle_unavailable)
    if sys.argv[1] == "stdio":
        server.run("stdio")
    else:
        import uvicorn

        app = with_outages(server.streamable_http_app(host="127.0.0.1"))
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
