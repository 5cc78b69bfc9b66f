"""RemoteRunner against the scripted runner server, on an in-process Worker: a turn with a
tool, streamed events, the history delta, a runner that is down or dies, cancellation."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest

from dex_agents import AgentClient, AgentSessionOptions, Worker
from dex_agents.errors import FlowLoadError
from dex_agents.remote import (
    PendingRemoteFlow,
    RemoteRunner,
    remote_flow,
    remote_flow_or_pending,
)
from dex_agents.testing.remote_runner_server import (
    ScriptedRunnerServer,
    die_after_accept,
    final_text,
    hold_until_gone,
    refuse,
    tool_calls,
    tool_output,
)
from dex_agents.testing.sessions import events_of, step_types, turns_done
from dex_agents.testing.tool_log import ToolRunLog

from .conftest import FLOW


@pytest.fixture
async def worker(runner: ScriptedRunnerServer, database_url: str) -> AsyncIterator[Worker]:
    flow = remote_flow(runner.base_url, FLOW)
    async with Worker([flow], database_url=database_url) as running:
        yield running


async def _tool_status(client: AgentClient, session_id: str, name: str) -> list[str]:
    """The final statuses the session recorded for calls of tool `name` (its events)."""
    finished = await events_of(client, session_id, "tool_call_finished")
    return [e["status"] for e in finished if e["tool_name"] == name]


async def test_a_turn_runs_its_tool_at_the_runner_and_streams_events(
    runner: ScriptedRunnerServer, worker: Worker, client: AgentClient, tool_log: ToolRunLog
) -> None:
    runner.script("run_model_step", tool_calls(("c1", "lookup", '{"order": 7}'), effect="read"))
    runner.script("execute_deferred_tool_call", tool_output("order 7: shipped", log=tool_log))
    runner.script("run_model_step", final_text("It shipped."))
    session = await client.start_session(FLOW, "Where is order 7?")
    snapshot = await client.wait_for(session, turns_done(1), timeout=30)

    assert [m.text for m in snapshot.messages if m.role == "assistant"][-1] == "It shipped."
    assert await _tool_status(client, session, "lookup") == ["succeeded"]
    assert tool_log.count("lookup") == 1
    deltas = await events_of(client, session, "text_delta")
    assert "".join(d["delta"] for d in deltas) == "It shipped."
    # The user's message reached the runner as the neutral item, and the second model call
    # saw the tool's record.
    first, second = runner.bodies("run_model_step")
    assert (
        first["messages"][0]["framework_item"]
        == '{"kind": "user_text", "text": "Where is order 7?"}'
    )
    assert second["tool_calls"][0]["status"] == "succeeded"
    assert second["tool_calls"][0]["output"] == "order 7: shipped"
    assert (
        runner.bodies("execute_deferred_tool_call")[0]["tool_call"]["arguments"] == '{"order": 7}'
    )
    # Each call carries its Step attempt's deadline, in epoch ms: the attempt's start plus the
    # method timeout (15 minutes by default), so still ahead.
    now_ms = time.time() * 1000
    for body in (first, second, runner.bodies("execute_deferred_tool_call")[0]):
        assert now_ms < body["deadline"] <= now_ms + 15 * 60 * 1000


async def test_history_is_sent_once_and_again_when_the_runner_lost_it(
    runner: ScriptedRunnerServer, worker: Worker, client: AgentClient
) -> None:
    runner.script("run_model_step", final_text("One."), final_text("Two."), final_text("Three."))
    session = await client.start_session(FLOW, "first")
    await client.wait_for(session, turns_done(1), timeout=30)
    await client.send_user_message(session, "second")
    await client.wait_for(session, turns_done(2), timeout=30)
    runner.forget_history()  # a restarted runner process
    await client.send_user_message(session, "third")
    snapshot = await client.wait_for(session, turns_done(3), timeout=30)

    calls = runner.recorded("run_model_step")
    assert [c.outcome for c in calls] == ["result", "result", "need_history", "result"]
    first, second, asked, resent = (c.body for c in calls)
    assert first["history"]["messages_after"] == 0
    # The second turn sends only the messages after the first turn's last one.
    assert second["history"]["messages_after"] == first["history"]["last_sequence"]
    assert [m["text"] for m in second["messages"]] == ["One.", "second"][-len(second["messages"]) :]
    assert all(m["sequence"] > second["history"]["messages_after"] for m in second["messages"])
    # After need_history, every message from the first is sent again.
    assert asked["history"]["messages_after"] > 0
    assert resent["history"]["messages_after"] == 0
    assert [m["sequence"] for m in resent["messages"]] == [m.sequence for m in snapshot.messages][
        :-1
    ]


async def test_a_single_attempt_tool_waits_out_a_runner_that_is_down(
    runner: ScriptedRunnerServer, worker: Worker, client: AgentClient, tool_log: ToolRunLog
) -> None:
    runner.script(
        "run_model_step", tool_calls(("w1", "refund", "{}"), effect="non_idempotent_write")
    )
    runner.script(
        "execute_deferred_tool_call",
        refuse(503),
        refuse(502),
        tool_output("refunded", log=tool_log),
    )
    runner.script("run_model_step", final_text("Refunded."))
    session = await client.start_session(FLOW, "Refund me")
    await client.wait_for(session, turns_done(1), timeout=30)

    assert await _tool_status(client, session, "refund") == ["succeeded"]
    assert runner.bodies("run_model_step")[1]["tool_calls"][0]["output"] == "refunded"
    assert tool_log.count("refund") == 1
    types = await step_types(client, session)
    assert "RecordToolOutcomeUnknown" not in types
    # Each call the runner refused is a failed Step with the runner's answer; the last ran.
    calls = [
        s for s in await client.get_step_history(session) if s.step_type == "CallSingleAttemptTool"
    ]
    assert [(s.status, s.attempts) for s in calls] == [
        ("failed", 1),
        ("failed", 1),
        ("succeeded", 1),
    ]
    assert "did not start" in (calls[0].error or "") and "HTTP 503" in (calls[0].error or "")
    assert "HTTP 502" in (calls[1].error or "") and calls[2].error is None
    # tool_call_started only for the call that reached the runner.
    started = await events_of(client, session, "tool_call_started")
    assert started == [{"tool_call_id": "w1", "tool_name": "refund"}]


async def test_a_runner_that_dies_inside_a_single_attempt_write_gives_outcome_unknown(
    runner: ScriptedRunnerServer, worker: Worker, client: AgentClient, tool_log: ToolRunLog
) -> None:
    runner.script(
        "run_model_step", tool_calls(("w1", "refund", "{}"), effect="non_idempotent_write")
    )
    runner.script("execute_deferred_tool_call", die_after_accept(log=tool_log))
    runner.script("run_model_step", final_text("I could not confirm it."))
    session = await client.start_session(FLOW, "Refund me")
    await client.wait_for(session, turns_done(1), timeout=30)

    assert await _tool_status(client, session, "refund") == ["outcome_unknown"]
    assert tool_log.count("refund") == 1
    assert len(runner.bodies("execute_deferred_tool_call")) == 1


async def test_a_model_call_waits_out_a_runner_that_is_down(
    runner: ScriptedRunnerServer,
    worker: Worker,
    client: AgentClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="dex_agents.remote")
    runner.script("run_model_step", refuse(503), refuse(503), refuse(503), final_text("Back."))
    session = await client.start_session(FLOW, "hello")
    snapshot = await client.wait_for(session, turns_done(1), timeout=30)

    assert snapshot.state is not None and snapshot.state.last_turn_error is None
    assert [m.text for m in snapshot.messages][-1] == "Back."
    assert (await step_types(client, session)).count("RunModel") == 1
    said = [r.getMessage() for r in caplog.records if r.name == "dex_agents.remote"]
    assert sum("the runner is unavailable" in line for line in said) == 1  # not one per retry
    assert sum("the runner answered" in line for line in said) == 1


async def test_cancel_turn_closes_the_call(
    runner: ScriptedRunnerServer, worker: Worker, client: AgentClient
) -> None:
    started = threading.Event()
    runner.script("run_model_step", hold_until_gone(started=started))
    session = await client.start_session(FLOW, "take your time")
    assert await asyncio.to_thread(started.wait, 20)
    assert await client.cancel_turn(session)
    await client.wait_for(session, turns_done(1), timeout=30)
    for _ in range(200):
        if runner.disconnects:
            break
        await asyncio.sleep(0.05)
    assert runner.disconnects == 1
    assert [c.outcome for c in runner.recorded("run_model_step")] == ["disconnected"]


def test_describe_refuses_another_major_version() -> None:
    with ScriptedRunnerServer([FLOW], protocol_version=2) as server:
        url = server.base_url
        with pytest.raises(FlowLoadError, match=url) as raised:
            remote_flow(url, FLOW)
    assert "version 2" in str(raised.value)


def test_describe_refuses_a_flow_type_not_served(runner: ScriptedRunnerServer) -> None:
    with pytest.raises(FlowLoadError, match="does not serve flow type 'Other'"):
        remote_flow(runner.base_url, "Other")


def test_the_runners_session_options_fill_what_the_workers_leave_unset() -> None:
    with ScriptedRunnerServer([FLOW]) as server:
        server.flows[FLOW].session_options = {
            "interrupt_deadline_seconds": 90,
            "max_durable_wait_seconds": 0.5,
        }
        described = remote_flow(server.base_url, FLOW).options
        assert described.interrupt_deadline == timedelta(seconds=90)
        assert described.max_durable_wait == timedelta(milliseconds=500)
        own = AgentSessionOptions(
            interrupt_deadline=timedelta(seconds=5), default_tool_effect="read"
        )
        merged = remote_flow(server.base_url, FLOW, own).options
        assert merged.interrupt_deadline == timedelta(seconds=5)
        assert merged.max_durable_wait == timedelta(milliseconds=500)
        assert merged.default_tool_effect == "read"
        server.flows[FLOW].session_options = {"interrupt_deadline_seconds": "soon"}
        with pytest.raises(FlowLoadError, match="interrupt_deadline_seconds 'soon'"):
            remote_flow(server.base_url, FLOW)


def test_an_unreachable_runner_is_a_flow_load_error_after_the_retries(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with ScriptedRunnerServer([FLOW]) as server:
        url = server.base_url
    with pytest.raises(FlowLoadError, match="not reachable"):
        remote_flow(url, FLOW, attempts=3, retry_seconds=0.01)
    waits = [r for r in caplog.records if r.getMessage().startswith("waiting for the runner")]
    assert len(waits) == 1  # one line, not one per attempt


async def test_a_pending_flow_whose_runner_comes_refusing_it_stops_the_worker(
    database_url: str,
) -> None:
    with ScriptedRunnerServer([FLOW]) as server:
        url, port = server.base_url, int(server.base_url.rsplit(":", 1)[1])
    pending = remote_flow_or_pending(url, FLOW)
    assert isinstance(pending, PendingRemoteFlow)
    pending.retry_seconds = 0.05
    with pytest.raises(FlowLoadError, match="version 2"):
        async with Worker([pending], database_url=database_url) as worker:
            assert worker.launched and worker.pending_flows == [pending]
            with ScriptedRunnerServer([FLOW], port=port, protocol_version=2):
                for _ in range(600):
                    if not worker.launched:
                        break
                    await asyncio.sleep(0.05)


def test_the_runner_class_has_exactly_the_advertised_capabilities() -> None:
    from dex_agents.remote import RemoteCapabilities
    from dex_agents.runner import (
        ContextCompactionRunner,
        ToolTaskPoller,
        UnfinishedTurnMessageBuilder,
    )

    plain = RemoteRunner("http://127.0.0.1:1", FLOW)
    rich = RemoteRunner(
        "http://127.0.0.1:1",
        FLOW,
        capabilities=RemoteCapabilities(unfinished_turn_messages=True, context_compaction=True),
    )
    assert not isinstance(plain, UnfinishedTurnMessageBuilder | ContextCompactionRunner)
    assert isinstance(rich, UnfinishedTurnMessageBuilder)
    assert isinstance(rich, ContextCompactionRunner)
    assert not isinstance(rich, ToolTaskPoller)
    assert not getattr(plain, "supports_plan_mode", False)
