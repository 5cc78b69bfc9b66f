"""Reading an MCP task: one `tasks/get` and what it means for the call.

`TaskPoller` serves both the session's PollToolTask (one read per Step, answers delivered
with `tasks/update`) and the tool Step's own wait for a task no other connection can poll.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import asdict, dataclass, replace
from typing import Any, Final

from mcp import Client

from .. import texts
from ..runner import (
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolTaskPending,
    ToolTaskPoll,
    ToolTaskPollOutcome,
)
from ..stepkit import NonRetryableError
from .connection import describe
from .questions import TaskQuestion, UnsupportedInput, read_question
from .results import result_of
from .tasks import TaskState, cancel_task, get_task, interval_seconds, update_task

# After tasks/update, the task may list the answered request a little longer; polls a second
# apart read it as working for this long.
DELIVERY_WINDOW_SECONDS: Final = 10.0
STATUS_EVENT: Final = "mcp.task_status"

log = logging.getLogger("dex_agents")


class McpTaskLostError(NonRetryableError):
    """The server no longer knows the task, or it cannot take a decline; the call is recorded
    by its effect."""


class McpTaskUnreachableError(Exception):
    """A task poll or cancellation that could not reach its server. A poll is tried again
    at its interval for the server's `task_outage_seconds` (`wait_out_outage`), then, as a
    cancellation at once, the Step's attempts retry it, and the failure route by effect
    follows the last."""


@dataclass(frozen=True)
class Continuation:
    """What one poll tells the next: the status it saw and the request it asked, answered or
    is waiting to see leave."""

    status: str | None = None
    key: str | None = None
    fingerprint: str | None = None
    sent_at: float | None = None
    sent: str | None = None
    # Since when the server could not be reached (a successful poll starts a new one).
    unreachable_since: float | None = None

    @classmethod
    def load(cls, text: str | None) -> Continuation:
        try:
            value = json.loads(text or "{}")
            return cls(**{k: v for k, v in value.items() if k in cls.__dataclass_fields__})
        except (ValueError, TypeError, AttributeError):
            return cls()

    def dump(self) -> str:
        return json.dumps({k: v for k, v in asdict(self).items() if v is not None})

    def names(self, question: TaskQuestion) -> bool:
        return (self.key, self.fingerprint) == (question.key, question.fingerprint)


def wait_out_outage(
    poll: ToolTaskPoll, failure: McpTaskUnreachableError, outage_seconds: float
) -> ToolTaskPending:
    """The next poll of a task whose server could not be reached, at the growing interval,
    while the outage is shorter than `outage_seconds`; then `failure`. A poll that was to
    deliver an answer fails its attempt instead, so the answer stays pending."""
    previous = Continuation.load(poll.tool_call.input_continuation)
    now = time.time()
    since = previous.unreachable_since or now
    if poll.pending_answer is not None or now - since >= outage_seconds:
        raise failure
    interval = interval_seconds(None, poll.tool_call.task_poll_interval_seconds)
    log.warning("%s; polling again in %g s", failure, interval)
    return ToolTaskPending(interval, replace(previous, unreachable_since=since).dump())


@dataclass(frozen=True)
class TaskPoller:
    """Reads task `task_id` of tool `tool` on server `server` over `client`."""

    client: Client
    server: str
    tool: str
    task_id: str

    def _text(self, template: str, **values: Any) -> str:
        return template.format(tool=self.tool, server=self.server, **values)

    async def read(self) -> TaskState:
        return await get_task(self.client, self.task_id)

    async def cancel_quietly(self) -> None:
        with contextlib.suppress(Exception):  # best-effort: the call is already failing
            await cancel_task(self.client, self.task_id)

    async def finished(self, state: TaskState, previous: Continuation) -> ToolExecutionResult:
        """The outcome of a task in a terminal state."""
        if state.status == "completed":
            if state.result is None:
                raise ToolExecutionError(self._text(texts.MCP_TASK_NO_RESULT))
            return result_of(self.server, self.tool, state.result)
        if state.status == "cancelled" and previous.sent == "decline":
            raise McpTaskLostError(f"task {self.task_id} was cancelled after a declined question")
        if state.status == "cancelled":
            raise ToolExecutionError(self._text(texts.MCP_TASK_CANCELLED))
        error = (state.error or {}).get("message") or state.status_message or "no detail"
        raise ToolExecutionError(self._text(texts.MCP_TASK_FAILED, error=error))

    async def question(self, state: TaskState) -> TaskQuestion:
        """The task's question; cancels the task and fails the call for any other input."""
        try:
            return read_question(state.input_requests or {}, state.requests())
        except UnsupportedInput as unsupported:
            await self.cancel_quietly()
            raise ToolExecutionError(
                self._text(texts.MCP_INPUT_NOT_SUPPORTED, requested=unsupported)
            ) from None

    async def poll(self, poll: ToolTaskPoll) -> ToolTaskPollOutcome:
        """One PollToolTask: one tasks/get, an event when the status changed, and the answer
        delivered when the task still lists the request it answers."""
        previous = Continuation.load(poll.tool_call.input_continuation)
        state = await self.read()
        poll.heartbeat()
        if state.status != previous.status:
            poll.events.write(
                STATUS_EVENT,
                {
                    "tool_call_id": poll.tool_call.tool_call_id,
                    "task_id": self.task_id,
                    "status": state.status,
                    "status_message": state.status_message,
                },
            )
        if state.status in ("completed", "failed", "cancelled"):
            return await self.finished(state, previous)
        seen = Continuation(status=state.status)
        if state.status != "input_required":
            interval = interval_seconds(
                state.poll_interval_ms, poll.tool_call.task_poll_interval_seconds
            )
            return ToolTaskPending(interval, seen.dump())
        return await self._input(poll, state, previous, await self.question(state))

    async def _input(
        self, poll: ToolTaskPoll, state: TaskState, previous: Continuation, asked: TaskQuestion
    ) -> ToolTaskPollOutcome:
        same = previous.names(asked)
        if poll.pending_answer is not None and same and poll.attempt <= 1:
            return await self._deliver(poll, asked)
        recent = previous.sent_at is not None and (
            time.time() - previous.sent_at < DELIVERY_WINDOW_SECONDS
        )
        if poll.pending_answer is None and same and recent:
            return ToolTaskPending(1, previous.dump())
        continuation = Continuation(state.status, asked.key, asked.fingerprint)
        return ToolInputRequested(
            question=asked.text,
            choices=tuple(asked.choices),
            allows_free_text=asked.allows_free_text,
            continuation=continuation.dump(),
        )

    async def _deliver(self, poll: ToolTaskPoll, asked: TaskQuestion) -> ToolTaskPending:
        assert poll.pending_answer is not None
        response = asked.response(poll.pending_answer)
        poll.heartbeat()
        try:
            await update_task(self.client, self.task_id, {asked.key: response})
        except Exception as error:
            if response["action"] != "decline":
                raise
            await self.cancel_quietly()
            raise McpTaskLostError(
                f"task {self.task_id} did not take the declined answer: {describe(error)}"
            ) from error
        sent = Continuation("input_required", asked.key, asked.fingerprint)
        return ToolTaskPending(
            1, replace(sent, sent_at=time.time(), sent=response["action"]).dump()
        )
