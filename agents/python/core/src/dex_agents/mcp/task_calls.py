"""A `tools/call` answered with a task: the handle saved as the attempt's heartbeat checkpoint,
and the tool Step's own bounded wait for a task that no later Step can poll."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

import anyio

from .. import texts
from ..errors import McpToolCallInterruptedError
from ..runner import ToolExecutionError, ToolExecutionResult
from .questions import describe_all
from .task_poll import Continuation, TaskPoller
from .tasks import interval_seconds

CHECKPOINT_WRITER: Final = "dex_agents.mcp/task"


@dataclass(frozen=True)
class TaskCheckpoint:
    """A started task's handle, as the attempt's heartbeat checkpoint."""

    server: str
    task_id: str
    poll_interval_seconds: float

    def dump(self) -> str:
        return json.dumps(
            {
                "writer": CHECKPOINT_WRITER,
                "server": self.server,
                "task_id": self.task_id,
                "poll_interval_seconds": self.poll_interval_seconds,
            }
        )

    @classmethod
    def load(cls, text: str | None) -> TaskCheckpoint | None:
        """The checkpoint this source wrote; another writer's reads as None."""
        try:
            value = json.loads(text or "")
            if value.get("writer") != CHECKPOINT_WRITER:
                return None
            return cls(
                str(value["server"]), str(value["task_id"]), float(value["poll_interval_seconds"])
            )
        except (ValueError, TypeError, KeyError, AttributeError):
            return None


async def wait_for_task(
    poller: TaskPoller,
    interval: float,
    wait_seconds: float,
    heartbeat: Callable[[], None],
) -> ToolExecutionResult:
    """Polls the task with tasks/get, a heartbeat per poll, until it ends or `wait_seconds`
    pass; a task that asks for input is cancelled, since nobody can answer it here."""
    with anyio.move_on_after(wait_seconds):
        while True:
            await anyio.sleep(interval)
            state = await poller.read()
            heartbeat()
            if state.status in ("completed", "failed", "cancelled"):
                return await poller.finished(state, Continuation())
            if state.status == "input_required":
                await poller.cancel_quietly()
                requested = describe_all(state.input_requests or {}, state.requests())
                raise ToolExecutionError(
                    texts.MCP_INPUT_NOT_SUPPORTED.format(
                        tool=poller.tool, server=poller.server, requested=requested
                    )
                )
            interval = interval_seconds(state.poll_interval_ms, interval)
    await poller.cancel_quietly()
    raise McpToolCallInterruptedError(
        f"MCP tool {poller.tool} of server {poller.server} started task {poller.task_id}, "
        f"which did not end within {wait_seconds:g} s; it was cancelled"
    )
