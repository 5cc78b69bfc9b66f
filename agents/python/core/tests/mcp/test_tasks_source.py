"""McpToolSource with tasks (io.modelcontextprotocol/tasks) against the real test server:
the handle saved before anything else, polls, questions and their delivery, cancellation,
and the in-Step wait for stdio tasks and for runners that do not poll. The server logs every
task creation, read, update and cancellation outside the database."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import anyio
import pytest

from dex_agents.errors import McpToolCallInterruptedError
from dex_agents.mcp import McpTaskLostError, McpTaskUnreachableError, McpToolSource
from dex_agents.mcp.task_poll import DELIVERY_WINDOW_SECONDS, Continuation
from dex_agents.runner import (
    DeferredToolExecution,
    ToolExecutionError,
    ToolExecutionResult,
    ToolInputRequested,
    ToolTaskCancellation,
    ToolTaskPending,
    ToolTaskPoll,
    ToolTaskStarted,
)
from dex_agents.types import AgentToolCall, QuestionAnswer

from .servers import HttpServerProcess, RunLog, stdio_server


class Recorder:
    """The events, heartbeats and checkpoints a tool Step would receive."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []
        self.beats = 0
        self.checkpoints: list[str] = []

    def write(self, type: str, payload: Mapping[str, Any]) -> None:
        self.events.append((type, dict(payload)))

    def beat(self) -> None:
        self.beats += 1

    async def save(self, checkpoint: str) -> None:
        self.checkpoints.append(checkpoint)


def record_of(source: McpToolSource, name: str, arguments: dict[str, Any]) -> AgentToolCall:
    call = source.deferred_tool_call("call-1", name, json.dumps(arguments))
    return AgentToolCall(
        tool_call_id="call-1",
        turn_id="turn-1",
        tool_name=name,
        arguments=call.arguments,
        effect=call.policy.effect or "read",
        requires_approval=False,
        status="approved",
        deferral_order=0,
        tool_source_reference=call.tool_source_reference,
    )


def execution(
    record: AgentToolCall,
    recorder: Recorder,
    *,
    polls: bool = True,
    checkpoint: str | None = None,
    attempt: int = 1,
) -> DeferredToolExecution:
    return DeferredToolExecution(
        flow_id="flow-1",
        turn_id="turn-1",
        step_execution_id="step-1",
        tool_call=record,
        idempotency_key="flow-1/turn-1/call-1",
        attempt=attempt,
        events=recorder,
        heartbeat=recorder.beat,
        save_heartbeat_checkpoint=recorder.save,
        heartbeat_checkpoint=checkpoint,
        supports_tool_tasks=polls,
    )


def poll_of(
    record: AgentToolCall,
    recorder: Recorder,
    *,
    attempt: int = 1,
    answer: QuestionAnswer | None = None,
) -> ToolTaskPoll:
    return ToolTaskPoll(
        flow_id="flow-1",
        tool_call=record,
        idempotency_key="flow-1/turn-1/call-1",
        attempt=attempt,
        input_answers=(answer,) if answer else (),
        events=recorder,
        heartbeat=recorder.beat,
        pending_answer=answer,
    )


def waiting(record: AgentToolCall, started: ToolTaskStarted) -> AgentToolCall:
    return record.model_copy(
        update={
            "status": "waiting_for_task",
            "task_id": started.task_id,
            "task_poll_interval_seconds": started.poll_interval_seconds,
        }
    )


def after(record: AgentToolCall, outcome: ToolTaskPending | ToolInputRequested) -> AgentToolCall:
    """The record as PollToolTask stores it after a pending poll or a question."""
    update: dict[str, Any] = {"input_continuation": outcome.continuation}
    if isinstance(outcome, ToolTaskPending):
        update["task_poll_interval_seconds"] = outcome.poll_interval_seconds
    return record.model_copy(update=update)


@pytest.fixture
async def remote(http_server: HttpServerProcess) -> McpToolSource:
    source = McpToolSource([http_server.config("remote")])
    await source.list_tools()
    return source


async def test_a_remote_task_is_saved_first_then_polled_once_per_step(
    remote: McpToolSource, run_log: RunLog
) -> None:
    recorder = Recorder()
    record = record_of(remote, "remote__report", {"topic": "sales", "seconds": 1.5})
    started = await remote.execute_deferred_tool_call(execution(record, recorder))

    assert isinstance(started, ToolTaskStarted)
    [created] = run_log.runs("task_created")
    assert (created["id"], created["key"]) == (started.task_id, "flow-1/turn-1/call-1")
    assert started.poll_interval_seconds == 1
    [checkpoint] = recorder.checkpoints
    assert json.loads(checkpoint)["task_id"] == started.task_id

    record = waiting(record, started)
    outcomes: list[Any] = []
    while not outcomes or isinstance(outcomes[-1], ToolTaskPending):
        outcome = await remote.poll_tool_task(poll_of(record, recorder))
        outcomes.append(outcome)
        if isinstance(outcome, ToolTaskPending):
            record = after(record, outcome)
            await _sleep(1)

    assert outcomes[-1] == ToolExecutionResult("report on sales is ready")
    assert len(run_log.runs("task_get")) == len(outcomes)
    # Each interval doubles the last one (the server asks for a second), up to a minute.
    pending = [outcome.poll_interval_seconds for outcome in outcomes[:-1]]
    assert pending == [2, 4, 8, 16][: len(pending)] and pending
    statuses = [payload["status"] for kind, payload in recorder.events if kind == "mcp.task_status"]
    assert statuses == ["working", "completed"]


async def test_a_retried_attempt_returns_the_saved_task_without_calling(
    remote: McpToolSource, run_log: RunLog
) -> None:
    recorder = Recorder()
    record = record_of(remote, "remote__report", {"topic": "q3"})
    started = await remote.execute_deferred_tool_call(execution(record, recorder))
    [saved] = recorder.checkpoints

    again = await remote.execute_deferred_tool_call(
        execution(record, recorder, checkpoint=saved, attempt=2)
    )
    assert again == started
    assert len(run_log.runs("task_created")) == 1
    # Another writer's checkpoint reads as none: the call is made.
    other = json.dumps({"task_id": started.task_id, "server": "remote"})
    third = await remote.execute_deferred_tool_call(
        execution(record, recorder, checkpoint=other, attempt=3)
    )
    assert isinstance(third, ToolTaskStarted) and third.task_id != started.task_id
    assert len(run_log.runs("task_created")) == 2


async def test_without_a_poller_the_step_polls_the_task_to_its_end(
    remote: McpToolSource, run_log: RunLog
) -> None:
    recorder = Recorder()
    record = record_of(remote, "remote__report", {"topic": "ops", "seconds": 1})
    result = await remote.execute_deferred_tool_call(execution(record, recorder, polls=False))

    assert result == ToolExecutionResult("report on ops is ready")
    gets = run_log.runs("task_get")
    assert len(gets) >= 1 and gets[-1]["status"] == "completed"
    assert recorder.beats >= 1 + len(gets)  # one before the call, one per poll
    # call_tool (no Step at all) waits the same way.
    text = await remote.call_tool("remote", "report", {"topic": "hr", "seconds": 0.5}, "k-2")
    assert text == ToolExecutionResult("report on hr is ready")


async def test_a_stdio_task_is_polled_in_the_step_for_a_bounded_wait(run_log: RunLog) -> None:
    local = McpToolSource([stdio_server("local", run_log, task_wait_seconds=2.5)])
    await local.list_tools()
    recorder = Recorder()
    record = record_of(local, "local__report", {"topic": "logs", "seconds": 1})
    result = await local.execute_deferred_tool_call(execution(record, recorder))
    assert result == ToolExecutionResult("report on logs is ready")
    assert recorder.checkpoints == []  # its task dies with the process: nothing to resume

    stuck = record_of(local, "local__long_job", {})
    with pytest.raises(McpToolCallInterruptedError, match=r"did not end within 2\.5 s"):
        await local.execute_deferred_tool_call(execution(stuck, recorder))
    assert [run["name"] for run in run_log.runs("task_cancelled")] == ["long_job"]


async def test_a_question_is_asked_answered_once_and_the_task_completes(
    remote: McpToolSource, run_log: RunLog
) -> None:
    recorder = Recorder()
    record = record_of(remote, "remote__ship", {"item": "lamp"})
    started = await remote.execute_deferred_tool_call(execution(record, recorder))
    assert isinstance(started, ToolTaskStarted)
    record = waiting(record, started)
    asked = await _poll_until(remote, record, recorder, ToolInputRequested)

    assert asked.question == "Ship lamp by express?"
    assert (asked.choices, asked.allows_free_text) == (("yes", "no"), False)
    continuation = Continuation.load(asked.continuation)
    assert continuation.key == "express" and len(continuation.fingerprint or "") == 64
    record = after(record, asked)
    answer = QuestionAnswer(interrupt_id="call-1-input-1", question=asked.question, answer="yes")

    # A retried attempt cannot tell whether the first one sent it: it asks again.
    again = await remote.poll_tool_task(poll_of(record, recorder, attempt=2, answer=answer))
    assert isinstance(again, ToolInputRequested) and run_log.runs("task_updated") == []

    sent = await remote.poll_tool_task(poll_of(record, recorder, answer=answer))
    assert isinstance(sent, ToolTaskPending) and sent.poll_interval_seconds == 1
    assert Continuation.load(sent.continuation).sent == "accept"
    [update] = run_log.runs("task_updated")
    assert update["responses"] == {"express": {"action": "accept", "content": {"express": "yes"}}}
    done = await _poll_until(remote, after(record, sent), recorder, ToolExecutionResult)
    assert done.output == "shipped lamp express=yes"
    assert len(run_log.runs("task_updated")) == 1


async def test_an_identical_later_request_is_a_new_question_after_the_window(
    remote: McpToolSource, run_log: RunLog
) -> None:
    recorder = Recorder()
    record = record_of(remote, "remote__batches", {})
    started = await remote.execute_deferred_tool_call(execution(record, recorder))
    assert isinstance(started, ToolTaskStarted)
    record = waiting(record, started)
    first = await _poll_until(remote, record, recorder, ToolInputRequested)
    assert (first.choices, first.allows_free_text) == (("yes", "no"), False)
    yes = QuestionAnswer(interrupt_id="call-1-input-1", question=first.question, answer="yes")
    sent = await remote.poll_tool_task(poll_of(after(record, first), recorder, answer=yes))
    assert isinstance(sent, ToolTaskPending)
    sent_at = time.monotonic()

    # The task asks the identical request for batch 2 at once; it reads as working until
    # 10 s after the send, then it is a new question.
    second = await _poll_until(remote, after(record, sent), recorder, ToolInputRequested)
    assert time.monotonic() - sent_at >= DELIVERY_WINDOW_SECONDS
    assert second.continuation == first.continuation
    [update] = run_log.runs("task_updated")
    assert update["responses"] == {"approve": {"action": "accept", "content": {"approve": True}}}

    # A passed deadline is sent as cancel.
    late = QuestionAnswer(
        interrupt_id="call-1-input-2",
        question=second.question,
        answer="question deadline passed",
        resolution="deadline_passed",
    )
    sent = await remote.poll_tool_task(poll_of(after(record, second), recorder, answer=late))
    assert isinstance(sent, ToolTaskPending)
    done = await _poll_until(remote, after(record, sent), recorder, ToolExecutionResult)
    assert done.output == "stopped at batch 2 (cancel)"


async def test_a_declined_question_is_delivered_as_decline(
    remote: McpToolSource, run_log: RunLog
) -> None:
    recorder = Recorder()
    record = record_of(remote, "remote__ship", {"item": "desk"})
    started = await remote.execute_deferred_tool_call(execution(record, recorder))
    assert isinstance(started, ToolTaskStarted)
    record = waiting(record, started)
    asked = await _poll_until(remote, record, recorder, ToolInputRequested)
    declined = QuestionAnswer(
        interrupt_id="call-1-input-1", question=asked.question, answer="no", resolution="declined"
    )
    sent = await remote.poll_tool_task(poll_of(after(record, asked), recorder, answer=declined))
    assert isinstance(sent, ToolTaskPending)
    done = await _poll_until(remote, after(record, sent), recorder, ToolExecutionResult)
    assert done.output == "not shipped (decline)"


async def test_any_other_input_request_fails_the_call_and_cancels_the_task(
    remote: McpToolSource, run_log: RunLog
) -> None:
    recorder = Recorder()
    record = record_of(remote, "remote__survey", {})
    started = await remote.execute_deferred_tool_call(execution(record, recorder))
    assert isinstance(started, ToolTaskStarted)
    with pytest.raises(ToolExecutionError) as failed:
        await _poll_until(remote, waiting(record, started), recorder, ToolExecutionResult)
    assert "a form asking name (string), age (number): 'Tell us'" in str(failed.value)
    assert [run["name"] for run in run_log.runs("task_cancelled")] == ["survey"]


async def test_an_input_required_answer_to_tools_call_fails_the_call(
    remote: McpToolSource, run_log: RunLog
) -> None:
    record = record_of(remote, "remote__confirm", {})
    with pytest.raises(ToolExecutionError) as failed:
        await remote.execute_deferred_tool_call(execution(record, Recorder()))
    assert str(failed.value) == (
        "MCP tool confirm of server remote asked for input the session cannot ask the user "
        "(a form asking proceed (boolean): 'Proceed?'), so the call was stopped"
    )
    assert len(run_log.runs("confirm")) == 1


async def test_lost_and_unreachable_tasks_and_cancellation(
    remote: McpToolSource, run_log: RunLog, http_server: HttpServerProcess
) -> None:
    recorder = Recorder()
    record = record_of(remote, "remote__long_job", {})
    started = await remote.execute_deferred_tool_call(execution(record, recorder))
    assert isinstance(started, ToolTaskStarted)
    record = waiting(record, started)
    cancellation = ToolTaskCancellation(
        flow_id="flow-1",
        tool_call=record,
        idempotency_key="flow-1/turn-1/call-1",
        attempt=1,
        heartbeat=recorder.beat,
    )
    await remote.cancel_tool_task(cancellation)
    await remote.cancel_tool_task(cancellation)  # idempotent: any answer counts as done
    assert len(run_log.runs("task_cancelled")) == 2
    with pytest.raises(ToolExecutionError, match="its task was cancelled"):
        await remote.poll_tool_task(poll_of(record, recorder))

    lost = record.model_copy(update={"task_id": "no-such-task"})
    with pytest.raises(McpTaskLostError, match="does not know task no-such-task"):
        await remote.poll_tool_task(poll_of(lost, recorder))
    impatient = McpToolSource([http_server.config("remote", task_outage_seconds=0)])
    await impatient.list_tools()
    http_server.stop()
    # A poll that cannot reach the server polls again later, for the server's
    # task_outage_seconds from the outage's first poll, then fails.
    first = await remote.poll_tool_task(poll_of(record, recorder))
    assert isinstance(first, ToolTaskPending)
    assert first.poll_interval_seconds == 2  # the record's 1 s, doubled
    second = await remote.poll_tool_task(poll_of(after(record, first), recorder))
    assert isinstance(second, ToolTaskPending)
    assert (
        json.loads(second.continuation or "")["unreachable_since"]
        == (json.loads(first.continuation or "")["unreachable_since"])
    )
    with pytest.raises(McpTaskUnreachableError, match="could not be reached to read"):
        await impatient.poll_tool_task(poll_of(record, recorder))
    # A poll that was to deliver an answer fails its attempt: the answer stays pending.
    answer = QuestionAnswer(interrupt_id="call-1-input-1", question="Ship?", answer="yes")
    with pytest.raises(McpTaskUnreachableError):
        await remote.poll_tool_task(poll_of(record, recorder, answer=answer))
    with pytest.raises(McpTaskUnreachableError, match="could not be reached to cancel"):
        await remote.cancel_tool_task(cancellation)


async def _poll_until(
    source: McpToolSource, record: AgentToolCall, recorder: Recorder, kind: type[Any]
) -> Any:
    for _ in range(60):
        outcome = await source.poll_tool_task(poll_of(record, recorder))
        if isinstance(outcome, kind):
            return outcome
        assert isinstance(outcome, ToolTaskPending), outcome
        record = after(record, replace(outcome, poll_interval_seconds=0.3))
        await _sleep(0.3)
    raise AssertionError(f"no {kind.__name__} after 60 polls")


async def _sleep(seconds: float) -> None:
    await anyio.sleep(seconds)
