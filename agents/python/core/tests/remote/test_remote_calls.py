"""RemoteRunner's calls one by one against the scripted runner server: what each stream
line does here, the failures before and after `accepted`, the history rules, and the
optional capabilities."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from dex_agents.errors import FlowLoadError, RemoteRunnerError, RunnerUnavailableError
from dex_agents.model_errors import model_call_retry_advice
from dex_agents.remote import RemoteCapabilities, RemoteRunner, select_cutoff
from dex_agents.runner import (
    AgentTurnContext,
    DeferredToolExecution,
    ToolExecutionError,
    ToolExecutionResult,
    ToolTaskPending,
    ToolTaskPoll,
    ToolTaskStarted,
    TurnCompleted,
)
from dex_agents.testing.driver import RecordingEvents
from dex_agents.testing.remote_runner_server import (
    RunnerCall,
    ScriptedRunnerServer,
    final_text,
    hold_until_gone,
    runner_error,
    tool_error,
    tool_output,
)
from dex_agents.types import AgentMessage, AgentToolCall

from .conftest import FLOW


@pytest.fixture
def server() -> Iterator[ScriptedRunnerServer]:
    with ScriptedRunnerServer([FLOW]) as running:
        yield running


def _message(sequence: int, text: str, role: Any = "user") -> AgentMessage:
    return AgentMessage(
        sequence=sequence,
        turn_id="turn-1",
        role=role,
        text=text,
        framework_item=f'{{"kind": "user_text", "text": "{text}"}}',
        created_at="2026-01-01T00:00:00Z",
    )


class Beats:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def _turn(messages: list[AgentMessage], events: RecordingEvents, beats: Beats) -> AgentTurnContext:
    return AgentTurnContext(
        flow_id="s1",
        turn_id="turn-1",
        attempt=1,
        step_execution_id="s1:RunModel:1",
        messages=messages,
        framework_run_state=None,
        tool_calls=(),
        events=events,
        heartbeat=beats,
        tool_policies={},
        default_tool_effect="unclassified",
    )


def _record() -> AgentToolCall:
    return AgentToolCall(
        tool_call_id="c1",
        turn_id="turn-1",
        tool_name="refund",
        arguments="{}",
        effect="non_idempotent_write",
        requires_approval=False,
        status="approved",
        deferral_order=0,
    )


def _execution(checkpoints: list[str]) -> DeferredToolExecution:
    async def save(checkpoint: str) -> None:
        checkpoints.append(checkpoint)

    return DeferredToolExecution(
        flow_id="s1",
        turn_id="turn-1",
        step_execution_id="s1:CallSingleAttemptTool:1",
        tool_call=_record(),
        idempotency_key="key-1",
        attempt=1,
        events=RecordingEvents(),
        heartbeat=Beats(),
        save_heartbeat_checkpoint=save,
    )


async def test_events_and_heartbeats_arrive_in_order(server: ScriptedRunnerServer) -> None:
    server.script("run_model_step", final_text("Hello there", deltas=3))
    events, beats = RecordingEvents(), Beats()
    outcome = await RemoteRunner(server.base_url, FLOW).run_model_step(
        _turn([_message(1, "hi")], events, beats)
    )
    assert isinstance(outcome, TurnCompleted)
    assert [m.text for m in outcome.new_messages] == ["Hello there"]
    assert outcome.usage is not None and outcome.usage.model_calls == 1
    assert "".join(p["delta"] for p in events.of_type("text_delta")) == "Hello there"
    assert beats.count == 1
    (body,) = server.bodies("run_model_step")
    assert body["flow_type"] == FLOW and body["history"] == {
        "first_sequence": 1,
        "last_sequence": 1,
        "messages_after": 0,
    }


async def test_a_tool_call_saves_checkpoints_and_returns_its_output(
    server: ScriptedRunnerServer,
) -> None:
    server.script("execute_deferred_tool_call", tool_output("done", checkpoint="page-2"))
    checkpoints: list[str] = []
    outcome = await RemoteRunner(server.base_url, FLOW).execute_deferred_tool_call(
        _execution(checkpoints)
    )
    assert outcome == ToolExecutionResult("done")
    assert checkpoints == ["page-2"]
    (body,) = server.bodies("execute_deferred_tool_call")
    assert body["idempotency_key"] == "key-1" and body["turn"] is None


async def test_error_lines_raise_the_tool_error_or_the_runner_error(
    server: ScriptedRunnerServer,
) -> None:
    server.script("execute_deferred_tool_call", tool_error("no such order"))
    server.script("run_model_step", runner_error("model exploded", stack="at x.js:3"))
    runner = RemoteRunner(server.base_url, FLOW)
    with pytest.raises(ToolExecutionError, match="no such order"):
        await runner.execute_deferred_tool_call(_execution([]))
    with pytest.raises(RemoteRunnerError, match="model exploded") as raised:
        await runner.run_model_step(_turn([], RecordingEvents(), Beats()))
    assert raised.value.stack == "at x.js:3"
    assert raised.value.status_code is None


async def test_a_providers_http_error_is_judged_as_a_model_error_in_this_process(
    server: ScriptedRunnerServer,
) -> None:
    """RunModel's retries read the status and Retry-After a runner sends with its error."""
    server.script(
        "run_model_step",
        runner_error("bad request", status_code=400),
        runner_error("slow down", status_code=429, response_headers={"retry-after": "2"}),
        runner_error("overloaded"),
    )
    runner = RemoteRunner(server.base_url, FLOW)
    advice = []
    for _ in range(3):
        with pytest.raises(RemoteRunnerError) as raised:
            await runner.run_model_step(_turn([], RecordingEvents(), Beats()))
        advice.append(model_call_retry_advice(raised.value))
    assert [(a.retry, a.delay) for a in advice] == [(False, None), (True, 2.0), (True, None)]
    assert advice[0].reason == "HTTP 400 is not retried"


async def test_a_refused_connection_is_runner_unavailable() -> None:
    with ScriptedRunnerServer([FLOW]) as server:
        url = server.base_url
    with pytest.raises(RunnerUnavailableError, match="cannot be reached"):
        await RemoteRunner(url, FLOW).execute_deferred_tool_call(_execution([]))


async def test_a_silent_runner_is_given_up(server: ScriptedRunnerServer) -> None:
    def silent(call: RunnerCall) -> None:
        call.send({"accepted": True})
        while not call.gone():
            threading.Event().wait(0.05)

    server.script("execute_deferred_tool_call", silent)
    runner = RemoteRunner(server.base_url, FLOW, silence_timeout=0.5)
    with pytest.raises(RemoteRunnerError, match="broke off after it started"):
        await runner.execute_deferred_tool_call(_execution([]))


async def test_a_second_need_history_is_runner_unavailable(server: ScriptedRunnerServer) -> None:
    def need(call: RunnerCall) -> None:
        call.send({"need_history": {"after_sequence": 0}})

    server.script("execute_deferred_tool_call", need, need)
    turn = _turn([_message(1, "a"), _message(2, "b")], RecordingEvents(), Beats())
    execution = dataclasses.replace(_execution([]), turn=turn)
    with pytest.raises(RunnerUnavailableError, match="asked twice"):
        await RemoteRunner(server.base_url, FLOW).execute_deferred_tool_call(execution)
    _, second = server.bodies("execute_deferred_tool_call")
    assert [m["sequence"] for m in second["turn"]["messages"]] == [1, 2]


async def test_messages_that_are_not_contiguous_are_all_sent(
    server: ScriptedRunnerServer,
) -> None:
    server.script("run_model_step", final_text("one"), final_text("two"))
    runner = RemoteRunner(server.base_url, FLOW)
    await runner.run_model_step(
        _turn([_message(1, "a"), _message(2, "b")], RecordingEvents(), Beats())
    )
    gap = [_message(1, "a"), _message(2, "b"), _message(4, "d")]
    await runner.run_model_step(_turn(gap, RecordingEvents(), Beats()))
    second = server.bodies("run_model_step")[1]
    assert second["history"]["messages_after"] == 0
    assert [m["sequence"] for m in second["messages"]] == [1, 2, 4]


async def test_tool_task_capabilities_poll_over_the_wire(server: ScriptedRunnerServer) -> None:
    def started(call: RunnerCall) -> None:
        call.send({"accepted": True})
        call.send(
            {"result": {"kind": "tool_task_started", "task_id": "t1", "poll_interval_seconds": 2}}
        )

    def pending(call: RunnerCall) -> None:
        call.send({"accepted": True})
        call.send(
            {
                "result": {
                    "kind": "tool_task_pending",
                    "poll_interval_seconds": 3,
                    "continuation": "c",
                }
            }
        )

    server.script("execute_deferred_tool_call", started)
    server.script("poll_tool_task", pending)
    runner = RemoteRunner(server.base_url, FLOW, capabilities=RemoteCapabilities(tool_tasks=True))
    assert await runner.execute_deferred_tool_call(_execution([])) == ToolTaskStarted("t1", 2.0)
    poll = ToolTaskPoll(
        flow_id="s1",
        tool_call=_record(),
        idempotency_key="key-1",
        attempt=1,
        input_answers=(),
        events=RecordingEvents(),
        heartbeat=Beats(),
    )
    assert await runner.poll_tool_task(poll) == ToolTaskPending(3.0, "c")  # type: ignore[attr-defined]
    assert server.bodies("poll_tool_task")[0]["tool_call"]["tool_call_id"] == "c1"


async def test_unfinished_turn_messages_over_the_wire(server: ScriptedRunnerServer) -> None:
    def partial(call: RunnerCall) -> None:
        call.send({"accepted": True})
        message = {"role": "assistant", "framework_item": "{}", "text": "partial"}
        call.send({"result": {"messages": [message]}})

    server.script("build_unfinished_turn_messages", partial)
    runner = RemoteRunner(
        server.base_url, FLOW, capabilities=RemoteCapabilities(unfinished_turn_messages=True)
    )
    turn = _turn([_message(1, "hi")], RecordingEvents(), Beats())
    messages = await runner.build_unfinished_turn_messages(turn)  # type: ignore[attr-defined]
    assert [m.text for m in messages] == ["partial"]


def test_the_cutoff_keeps_tool_calls_with_their_results() -> None:
    def msg(sequence: int, role: Any, text: str, call: str | None = None) -> AgentMessage:
        return _message(sequence, text, role).model_copy(update={"tool_call_id": call})

    history = [
        msg(1, "user", "x" * 400),
        msg(2, "assistant", "", call="c1"),
        msg(3, "tool", "y" * 400, call="c1"),
        msg(4, "assistant", "z" * 40),
        msg(5, "user", "w" * 40),
    ]
    # No cut between the call (2) and its result (3); the earliest cut that leaves at most
    # 30 tokens is after the result.
    assert select_cutoff(history, 30) == 3
    assert select_cutoff(history, 5) == 4
    assert select_cutoff(history, 10_000) == 1
    assert select_cutoff(history[:1], 10) is None


async def test_closing_the_call_is_seen_by_the_runner(server: ScriptedRunnerServer) -> None:
    import asyncio

    started = threading.Event()
    server.script("run_model_step", hold_until_gone(started=started))
    task = asyncio.ensure_future(
        RemoteRunner(server.base_url, FLOW).run_model_step(_turn([], RecordingEvents(), Beats()))
    )
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    for _ in range(100):
        if server.disconnects:
            break
        await asyncio.sleep(0.05)
    assert server.disconnects == 1


async def test_the_token_is_sent_and_required(monkeypatch: pytest.MonkeyPatch) -> None:
    from dex_agents.remote import remote_flow

    with ScriptedRunnerServer([FLOW], token="s3cret") as server:
        server.script("run_model_step", final_text("ok"))
        monkeypatch.setenv("DEX_AGENTS_RUNNER_TOKEN", "s3cret")
        flow = remote_flow(server.base_url, FLOW)
        outcome = await flow.runner.run_model_step(_turn([], RecordingEvents(), Beats()))
        assert isinstance(outcome, TurnCompleted)
        wrong = RemoteRunner(server.base_url, FLOW, token="guess")
        with pytest.raises(RemoteRunnerError, match="HTTP 401"):
            await wrong.execute_deferred_tool_call(_execution([]))
        monkeypatch.setenv("DEX_AGENTS_RUNNER_TOKEN", "guess")
        with pytest.raises(FlowLoadError, match="HTTP 401"):
            remote_flow(server.base_url, FLOW)


async def test_a_runner_that_reads_the_turn_gets_it_with_the_tool_call(
    server: ScriptedRunnerServer,
) -> None:
    server.script("execute_deferred_tool_call", tool_output("ok"), tool_output("ok"))
    runner = RemoteRunner(
        server.base_url, FLOW, capabilities=RemoteCapabilities(tool_steps_read_turn=True)
    )
    assert getattr(runner, "tool_steps_read_turn", False) is True
    turn = _turn([_message(1, "a"), _message(2, "b")], RecordingEvents(), Beats())
    execution = dataclasses.replace(_execution([]), turn=turn)
    await runner.execute_deferred_tool_call(execution)
    turn = _turn([_message(n, "m") for n in (1, 2, 3)], RecordingEvents(), Beats())
    await runner.execute_deferred_tool_call(dataclasses.replace(execution, turn=turn))
    first, second = (b["turn"] for b in server.bodies("execute_deferred_tool_call"))
    assert [m["sequence"] for m in first["messages"]] == [1, 2]
    # The second call sends only the message the runner has not seen.
    assert second["history"]["messages_after"] == 2
    assert [m["sequence"] for m in second["messages"]] == [3]
