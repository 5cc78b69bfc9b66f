"""The tasks extension (`io.modelcontextprotocol/tasks`) for the test MCP server, on the SDK's
server extension mechanism: the task tools answer `tools/call` with a task, which lives in
the server process, and `tasks/get`, `tasks/update` and `tasks/cancel` serve it.

Every task creation, update and cancellation appends a JSON line to the run log
(`task_created`, `task_updated`, `task_cancelled`), so tests count them outside the database.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolRequestParams, RequestParams
from pydantic import ConfigDict, Field

KEY = "io.superdurable.dex/idempotencyKey"
POLL_MS = 1000


def log(line: dict[str, Any]) -> None:
    with open(os.environ["MCP_TEST_RUN_LOG"], "a", encoding="utf-8") as run_log:
        run_log.write(json.dumps(line) + "\n")


def choice_form(message: str, **properties: Any) -> dict[str, Any]:
    return {
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": {"type": "object", "properties": properties},
        },
    }


@dataclass
class ServerTask:
    task_id: str
    tool: str
    status: str = "working"
    input_requests: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    job: asyncio.Task[None] | None = None
    answer: asyncio.Future[dict[str, Any]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )

    def state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "taskId": self.task_id,
            "status": self.status,
            "pollInterval": POLL_MS,
        }
        if self.status == "input_required":
            state["inputRequests"] = self.input_requests
        if self.status == "completed":
            state["result"] = self.result
        return state

    def complete(self, text: str) -> None:
        self.status = "completed"
        self.result = {"content": [{"type": "text", "text": text}], "isError": False}

    async def ask(self, key: str, request: dict[str, Any]) -> dict[str, Any]:
        self.status, self.input_requests = "input_required", {key: request}
        response = (await self.answer)[key]
        self.answer = asyncio.get_running_loop().create_future()
        self.status, self.input_requests = "working", None
        return response


async def _report(task: ServerTask, arguments: dict[str, Any]) -> None:
    await asyncio.sleep(float(arguments.get("seconds", 2)))
    task.complete(f"report on {arguments.get('topic', '?')} is ready")


async def _ship(task: ServerTask, arguments: dict[str, Any]) -> None:
    form = choice_form(
        f"Ship {arguments.get('item', '?')} by express?",
        express={"type": "string", "enum": ["yes", "no"]},
    )
    response = await task.ask("express", form)
    if response.get("action") != "accept":
        task.complete(f"not shipped ({response.get('action')})")
        return
    task.complete(f"shipped {arguments.get('item')} express={response['content']['express']}")


async def _batches(task: ServerTask, arguments: dict[str, Any]) -> None:
    """Asks the identical request once per batch, as a new question each time."""
    form = choice_form("Approve the next batch?", approve={"type": "boolean"})
    for batch in (1, 2):
        response = await task.ask("approve", form)
        if response.get("action") != "accept":
            task.complete(f"stopped at batch {batch} ({response.get('action')})")
            return
    task.complete("approved 2 batches")


async def _long_job(task: ServerTask, arguments: dict[str, Any]) -> None:
    await asyncio.sleep(3600)


async def _survey(task: ServerTask, arguments: dict[str, Any]) -> None:
    form = choice_form("Tell us", name={"type": "string"}, age={"type": "number"})
    await task.ask("survey", form)
    task.complete("surveyed")


JOBS: dict[str, Callable[[ServerTask, dict[str, Any]], Awaitable[None]]] = {
    "report": _report,
    "ship": _ship,
    "batches": _batches,
    "long_job": _long_job,
    "survey": _survey,
}


class _TaskParams(RequestParams):
    model_config = ConfigDict(populate_by_name=True, extra="allow")
    task_id: str = Field(alias="taskId")


class _UpdateParams(_TaskParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class TasksServerExtension(Extension):
    identifier = "io.modelcontextprotocol/tasks"

    def __init__(self) -> None:
        self.tasks: dict[str, ServerTask] = {}

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", _TaskParams, self._get),
            MethodBinding("tasks/update", _UpdateParams, self._update),
            MethodBinding("tasks/cancel", _TaskParams, self._cancel),
        )

    async def intercept_tool_call(
        self,
        params: CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        job = JOBS.get(params.name)
        if job is None:
            return await call_next(ctx)
        task = ServerTask(task_id=str(uuid.uuid4()), tool=params.name)
        self.tasks[task.task_id] = task
        meta = dict(params.meta or {})
        log({"tool": "task_created", "name": params.name, "key": meta.get(KEY), "id": task.task_id})
        task.job = asyncio.create_task(job(task, params.arguments or {}))
        return {
            "resultType": "task",
            "taskId": task.task_id,
            "status": "working",
            "pollInterval": POLL_MS,
        }

    def _task(self, task_id: str) -> ServerTask:
        task = self.tasks.get(task_id)
        if task is None:
            raise MCPError(-32602, f"unknown task {task_id}")
        return task

    async def _get(self, ctx: ServerRequestContext[Any, Any], params: _TaskParams) -> HandlerResult:
        task = self._task(params.task_id)
        log({"tool": "task_get", "id": task.task_id, "status": task.status})
        return task.state()

    async def _update(
        self, ctx: ServerRequestContext[Any, Any], params: _UpdateParams
    ) -> HandlerResult:
        task = self._task(params.task_id)
        log({"tool": "task_updated", "id": task.task_id, "responses": params.input_responses})
        if task.status == "input_required" and not task.answer.done():
            task.answer.set_result(params.input_responses)
        return {}

    async def _cancel(
        self, ctx: ServerRequestContext[Any, Any], params: _TaskParams
    ) -> HandlerResult:
        task = self._task(params.task_id)
        log({"tool": "task_cancelled", "id": task.task_id, "name": task.tool})
        if task.status not in ("completed", "failed", "cancelled"):
            task.status = "cancelled"
            if task.job is not None:
                task.job.cancel()
        return task.state()
