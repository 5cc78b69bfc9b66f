"""The harness through real Worker processes on the real database (SQLite, and Postgres when
DEX_AGENTS_TEST_POSTGRES_URL is set), the real Claude Code CLI and the scripted Anthropic
server on loopback."""

from __future__ import annotations

from collections.abc import Callable

from dex_agents import AgentClient
from dex_agents.testing import (
    ScriptedAnthropicServer,
    ToolRunLog,
    WorkerProcess,
    anthropic_text,
    anthropic_tools,
    step_types,
    turns_done,
    wait_until,
)

from dex_agents_claude_agent_sdk.transcript import parse_turn
from tests.apps.harness import FLOW_TYPE

MakeWorker = Callable[..., WorkerProcess]


async def test_turns_resume_the_transcript_and_a_queued_message_runs_next(
    make_worker: MakeWorker,
    anthropic_model: ScriptedAnthropicServer,
    client: AgentClient,
    tool_log: ToolRunLog,
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__lookup", {"q": "oslo"}), hang=True),
        anthropic_text("Oslo is cold."),
        anthropic_text("It snows."),
    )
    with make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url):
        session = await client.start_session(FLOW_TYPE, "Weather in Oslo?")
        anthropic_model.wait_for_requests(1)
        # Sent while the first turn's harness runs: queued, it starts the next turn.
        assert await client.send_user_message(session, "Will it snow?")
        during = await client.get_agent_snapshot(session)
        assert during.queued_message_count == 1
        assert during.state is not None and during.state.turn_count == 0
        anthropic_model.release()
        snapshot = await client.wait_for(session, turns_done(2), timeout=120)

    assert await step_types(client, session) == [
        "StartAgentSession", "RunModel", "AwaitUserMessage", "RunModel", "AwaitUserMessage",
    ]  # fmt: skip
    assert [m.text for m in snapshot.messages if m.role == "assistant" and m.text] == [
        "Oslo is cold.",
        "It snows.",
    ]
    assert [m.tool_output for m in snapshot.messages if m.role == "tool"] == ["found oslo"]
    assert tool_log.count("lookup") == 1
    assert snapshot.usage.model_calls == 3
    # The second turn's CLI resumed the first turn's transcript from the session's records.
    second = anthropic_model.requests[-1].texts()
    assert "Weather in Oslo?" in second and "Oslo is cold." in second
    assert second[-1] == "Will it snow?"
    answers = [m for m in snapshot.messages if m.role == "assistant" and m.text]
    first, last = (parse_turn(m.framework_item) for m in answers)
    assert first is not None and last is not None and first.session_id == last.session_id


async def test_sigkill_during_the_harness_reruns_the_turn_and_its_read_tool(
    make_worker: MakeWorker,
    anthropic_model: ScriptedAnthropicServer,
    client: AgentClient,
    tool_log: ToolRunLog,
) -> None:
    anthropic_model.enqueue(
        anthropic_tools(("toolu_1", "mcp__t__lookup", {"q": "slow"})),
        anthropic_tools(("toolu_1", "mcp__t__lookup", {"q": "slow"})),
        anthropic_text("Found it."),
    )
    worker = make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url).start()
    session = await client.start_session(FLOW_TYPE, "Look it up.")
    wait_until(lambda: tool_log.count("lookup") == 1, timeout=60, what="the first lookup")
    worker.kill()
    restarted = make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url, LOOKUP_SECONDS="0")
    with restarted:
        snapshot = await client.wait_for(session, turns_done(1), timeout=120)

    # The turn ran again from its start: the read tool inside the harness ran twice.
    assert tool_log.count("lookup") == 2
    assert len({row["pid"] for row in tool_log.entries("lookup")}) == 2
    assert len(anthropic_model.requests) == 3
    history = await client.get_step_history(session)
    run_model = [s for s in history if s.step_type == "RunModel"]
    assert len(run_model) == 1 and run_model[0].status == "succeeded"
    assert [m.text for m in snapshot.messages if m.role == "assistant" and m.text] == ["Found it."]
    assert [m.tool_output for m in snapshot.messages if m.role == "tool"] == ["found slow"]


async def test_cancel_turn_ends_the_cli_run_and_the_session_goes_on(
    make_worker: MakeWorker,
    anthropic_model: ScriptedAnthropicServer,
    client: AgentClient,
) -> None:
    anthropic_model.enqueue(anthropic_text("A very long essay", hang=True), anthropic_text("Next."))
    with make_worker(ANTHROPIC_BASE_URL=anthropic_model.base_url):
        session = await client.start_session(FLOW_TYPE, "Write an essay")
        anthropic_model.wait_for_requests(1)
        assert await client.cancel_turn(session)
        anthropic_model.wait_for_dropped(1)  # the CLI's model call was really aborted
        await client.wait_for(session, turns_done(1), timeout=60)
        assert await client.send_user_message(session, "Short one")
        snapshot = await client.wait_for(session, turns_done(2), timeout=120)

    assert [m.text for m in snapshot.messages] == ["Write an essay", "Short one", "Next."]
    history = await client.get_step_history(session)
    assert [(s.step_type, s.status) for s in history[:2]] == [
        ("StartAgentSession", "succeeded"),
        ("RunModel", "cancelled"),
    ]
    # The next turn's CLI run starts a new CLI session: the cancelled turn left no transcript.
    # Its prompt is both user texts, each a text block of one user message.
    assert anthropic_model.requests[-1].texts()[-2:] == ["Write an essay", "Short one"]
