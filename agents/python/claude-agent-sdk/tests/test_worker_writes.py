"""Write calls as tool Steps through real Worker processes on the real database (SQLite, and
Postgres when DEX_AGENTS_TEST_POSTGRES_URL is set), the real Claude Code CLI and the scripted
Anthropic server: an approval wait survives a Worker restart, a rejected write never runs, a
SIGKILL inside the write records outcome_unknown without running it again, and cancel_turn
ends a turn that waits for an approval. Real tool runs are counted in the tool log, outside
the database."""

from __future__ import annotations

from collections.abc import Callable

from dex_agents import AgentClient, texts
from dex_agents.testing import (
    ScriptedAnthropicServer,
    ToolRunLog,
    WorkerProcess,
    anthropic_text,
    anthropic_tools,
    events_of,
    pending_interrupt,
    step_types,
    turns_done,
    wait_until,
)

from tests.apps.harness import FLOW_TYPE
from tests.test_writes import result_text, tool_result

MakeWorker = Callable[..., WorkerProcess]


async def test_an_approval_wait_survives_a_restart_then_the_write_runs_once(
    make_worker: MakeWorker,
    anthropic_model: ScriptedAnthropicServer,
    client: AgentClient,
    tool_log: ToolRunLog,
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "hello"})),
        anthropic_text("Sent hello."),
    )
    worker = make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url).start()
    session = await client.start_session(FLOW_TYPE, "Send hello.")
    await client.wait_for(session, pending_interrupt("toolu_1"), timeout=120)
    worker.kill()
    assert tool_log.count("send") == 0
    with make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url):
        assert await client.resolve_interrupt(session, "toolu_1", approved=True)
        snapshot = await client.wait_for(session, turns_done(1), timeout=120)

    assert [e["key"] for e in tool_log.entries("send")] == [f"{session}/turn-1/toolu_1"]
    # The approval wait ends in ResumeTurn; the write is its own single-attempt Step between
    # the two RunModel Steps of the turn.
    assert await step_types(client, session) == [
        "StartAgentSession", "RunModel", "AwaitToolApproval", "ResumeTurn",
        "CallSingleAttemptTool", "RunModel", "AwaitUserMessage",
    ]  # fmt: skip
    (finished,) = await events_of(client, session, "tool_call_finished")
    assert finished["status"] == "succeeded"
    block = tool_result(anthropic_model.requests[-1].messages, "toolu_1")
    assert result_text(block) == "sent hello" and not block.get("is_error")
    assert len(anthropic_model.requests) == 2
    assert [m.tool_output for m in snapshot.messages if m.role == "tool"] == ["sent hello"]
    assert snapshot.messages[-1].text == "Sent hello."


async def test_a_rejected_write_never_runs_and_the_model_reads_the_rejection(
    make_worker: MakeWorker,
    anthropic_model: ScriptedAnthropicServer,
    client: AgentClient,
    tool_log: ToolRunLog,
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "spam"})),
        anthropic_text("Not sent."),
    )
    with make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url):
        session = await client.start_session(FLOW_TYPE, "Spam everyone.")
        await client.wait_for(session, pending_interrupt("toolu_1"), timeout=120)
        assert await client.resolve_interrupt(session, "toolu_1", False, "No spam, please.")
        assert not await client.resolve_interrupt(session, "toolu_1", True)
        snapshot = await client.wait_for(session, turns_done(1), timeout=120)

    assert tool_log.count("send") == 0
    (finished,) = await events_of(client, session, "tool_call_finished")
    assert finished["status"] == "rejected"
    assert "CallSingleAttemptTool" not in await step_types(client, session)
    block = tool_result(anthropic_model.requests[-1].messages, "toolu_1")
    assert result_text(block) == "No spam, please." and block.get("is_error") is True
    assert snapshot.messages[-1].text == "Not sent."


async def test_sigkill_inside_the_write_records_outcome_unknown_and_never_reruns_it(
    make_worker: MakeWorker,
    anthropic_model: ScriptedAnthropicServer,
    client: AgentClient,
    tool_log: ToolRunLog,
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "slow"})),
        anthropic_text("It may have been sent."),
    )
    worker = make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url).start()
    session = await client.start_session(FLOW_TYPE, "Send slowly.")
    await client.wait_for(session, pending_interrupt("toolu_1"), timeout=120)
    assert await client.resolve_interrupt(session, "toolu_1", approved=True)
    wait_until(lambda: tool_log.count("send") == 1, timeout=60, what="the write to start")
    worker.kill()
    with make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url, SEND_SECONDS="0"):
        snapshot = await client.wait_for(session, turns_done(1), timeout=120)

    assert tool_log.count("send") == 1  # never run again
    (finished,) = await events_of(client, session, "tool_call_finished")
    assert finished["status"] == "outcome_unknown"
    block = tool_result(anthropic_model.requests[-1].messages, "toolu_1")
    assert result_text(block) == texts.OUTCOME_UNKNOWN_TEXT and block.get("is_error") is True
    assert snapshot.messages[-1].text == "It may have been sent."


async def test_cancel_turn_while_a_write_awaits_approval_ends_the_turn(
    make_worker: MakeWorker,
    anthropic_model: ScriptedAnthropicServer,
    client: AgentClient,
    tool_log: ToolRunLog,
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__send", {"text": "oops"})),
        anthropic_text("Stopped, nothing sent."),
    )
    with make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url):
        session = await client.start_session(FLOW_TYPE, "Send oops.")
        await client.wait_for(session, pending_interrupt("toolu_1"), timeout=120)
        assert await client.cancel_turn(session)
        await client.wait_for(session, turns_done(1), timeout=60)
        assert await client.send_user_message(session, "Never mind.")
        snapshot = await client.wait_for(session, turns_done(2), timeout=120)

    assert tool_log.count("send") == 0
    assert len(await events_of(client, session, "turn_cancelled")) == 1
    assert snapshot.messages[-1].text == "Stopped, nothing sent."
    # The cancelled turn left no transcript: the next turn's prompt is its user text, the
    # cancelled call's note, then the new message.
    prompt = anthropic_model.requests[-1].texts()[-3:]
    assert prompt[0] == "Send oops." and prompt[-1] == "Never mind."
    assert prompt[1].startswith(texts.CANCELLED_NOTE_HEADER)
    assert texts.TURN_CANCELLED_REJECTION in prompt[1]
    assert len(anthropic_model.requests) == 2
