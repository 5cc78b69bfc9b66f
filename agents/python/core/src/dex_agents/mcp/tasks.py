"""The tasks extension (`io.modelcontextprotocol/tasks`) on the MCP SDK's client extension
mechanism, which the SDK does not implement itself.

A server that runs a tool as a task answers `tools/call` with `resultType: "task"` and the
task's state. `tasks/get` reads the task (its result when completed, its error when failed,
its input requests when input_required), `tasks/update` sends input responses, and
`tasks/cancel` cancels it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Final, Literal

from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.types import CallToolResult, InputRequest, Request, RequestParams, Result
from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, TypeAdapter

TASKS_EXTENSION: Final = "io.modelcontextprotocol/tasks"

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]


class TaskCreated(Result):
    """A `tools/call` answered with a task instead of its result."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    result_type: Literal["task"] = Field("task", alias="resultType")
    task_id: str = Field(alias="taskId")
    status: TaskStatus = "working"
    status_message: str | None = Field(None, alias="statusMessage")
    poll_interval_ms: int | None = Field(None, alias="pollInterval")


class TaskState(BaseModel):
    """A `tasks/get` answer."""

    model_config = ConfigDict(populate_by_name=True, extra="allow")

    task_id: str = Field(alias="taskId")
    status: TaskStatus
    status_message: str | None = Field(None, alias="statusMessage")
    poll_interval_ms: int | None = Field(None, alias="pollInterval")
    input_requests: dict[str, Any] | None = Field(None, alias="inputRequests")
    result: CallToolResult | None = None
    error: dict[str, Any] | None = None

    def requests(self) -> dict[str, InputRequest | None]:
        """The input requests by key; None for one this client cannot read."""
        return {key: _input_request(value) for key, value in (self.input_requests or {}).items()}


_INPUT_REQUEST: Final = TypeAdapter[InputRequest](InputRequest)


def _input_request(value: Any) -> InputRequest | None:
    try:
        return _INPUT_REQUEST.validate_python(value)
    except ValueError:
        return None


class _TaskParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True, extra="allow")

    task_id: str = Field(alias="taskId")


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class _TaskRequest(Request[SerializeAsAny[_TaskParams], str]):
    method: str
    params: SerializeAsAny[_TaskParams]


_STATE: Final = TypeAdapter[TaskState](TaskState)


class TasksExtension(ClientExtension):
    """Advertises the tasks extension and claims the `task` result of `tools/call`.

    The source calls with `allow_claimed=True` and handles the task itself, so the claim's
    resolver only serves a plain `Client.call_tool` by raising.
    """

    identifier = TASKS_EXTENSION

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return (ResultClaim(result_type="task", model=TaskCreated, resolve=_not_resolved),)


async def _not_resolved(created: TaskCreated, ctx: ClaimContext) -> CallToolResult:
    raise RuntimeError(f"MCP tool {ctx.tool_name} started task {created.task_id}; poll it")


async def get_task(client: Client, task_id: str) -> TaskState:
    request = _TaskRequest(method="tasks/get", params=_TaskParams(task_id=task_id))
    return await client.session.send_request(request, _STATE)


async def update_task(client: Client, task_id: str, responses: dict[str, Any]) -> None:
    params = _UpdateParams(task_id=task_id, input_responses=responses)
    request = _TaskRequest(method="tasks/update", params=params)
    await client.session.send_request(request, Result)


async def cancel_task(client: Client, task_id: str) -> None:
    request = _TaskRequest(method="tasks/cancel", params=_TaskParams(task_id=task_id))
    await client.session.send_request(request, Result)


def interval_seconds(server_ms: int | None, previous: float | None = None) -> float:
    """The next poll interval: the server's, rounded up to whole seconds, or, when that is
    shorter, double the previous interval, up to a minute."""
    server = max(1, math.ceil(server_ms / 1000)) if server_ms else 1
    if previous is None:
        return float(server)
    return float(max(server, min(2 * math.ceil(previous), 60)))
