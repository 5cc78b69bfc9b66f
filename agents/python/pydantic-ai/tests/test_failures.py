"""Spec matrix 5, 6, 8 and 9 through real Worker processes killed with SIGKILL: a crash repeats
at most the one call that was running, and a single-attempt write never runs twice. And who
retries a failing model call: RunModel's attempts, each one HTTP request."""

from __future__ import annotations

from collections.abc import Callable

from dex_agents import AgentClient, texts
from dex_agents.testing import (
    ScriptedModelServer,
    ScriptedReply,
    ToolRunLog,
    WorkerProcess,
    reply_text,
    reply_tools,
)
from dex_agents.testing.scenarios import check_run_model_owns_retries

from .helpers import events_of, sent, step_types, tool_messages, turns_done, wait_until

MakeWorker = Callable[..., WorkerProcess]


async def test_kill_during_single_attempt_tool_records_outcome_unknown(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("c1", "charge_card", {"amount": 40})),
        reply_text("The charge may or may not have gone through."),
    )
    worker = make_worker(CHARGE_CARD_SECONDS="60").start()
    session = await client.start_session("TriageAgent", "Charge 40.")
    wait_until(lambda: tool_log.count("charge_card:start") == 1, what="the charge to start")
    worker.kill()
    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.stop()

    assert tool_log.count("charge_card:start") == 1
    assert tool_log.count("charge_card:done") == 0
    assert tool_messages(model, 1) == {"c1": texts.OUTCOME_UNKNOWN_TEXT}
    finished = await events_of(client, session, "tool_call_finished")
    assert finished == [
        {"tool_call_id": "c1", "tool_name": "charge_card", "status": "outcome_unknown"}
    ]
    history = await client.get_step_history(session)
    assert [s.step_type for s in history] == [
        "StartAgentSession",
        "RunModel",
        "CallSingleAttemptTool",
        "ResumeTurn",
        "RecordToolOutcomeUnknown",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert (history[2].status, history[2].attempts) == ("failed", 1)


async def test_kill_during_run_model_reruns_only_that_model_call(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Kyiv"})),
        ScriptedReply(text="never delivered", hang=True),
        reply_text("Sunny in Kyiv."),
    )
    worker = make_worker().start()
    session = await client.start_session("TriageAgent", "Weather in Kyiv?")
    model.wait_for_requests(2)
    worker.kill()
    worker.start()
    snapshot = await client.wait_for(session, turns_done(1))
    worker.stop()

    assert tool_log.count("get_weather") == 1
    assert len(model.requests) == 3
    # The rerun sends what the killed attempt sent: the same history, rebuilt from run state.
    assert model.requests[2].body["messages"] == model.requests[1].body["messages"]
    history = await client.get_step_history(session)
    assert [s.step_type for s in history] == [
        "StartAgentSession",
        "RunModel",
        "CallTool",
        "ResumeTurn",
        "RunModel",
        "AwaitUserMessage",
    ]
    assert [s.attempts for s in history if s.step_type == "RunModel"] == [1, 2]
    assert snapshot.messages[-1].text == "Sunny in Kyiv."
    assert snapshot.usage.model_calls == 2


async def test_failed_turn_leaves_the_failure_note_and_the_write_is_not_repeated(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    model.enqueue(
        reply_tools(("t1", "update_ticket", {"ticket_id": "T-7", "status": "closed"})),
        # A 400 is tried neither by the OpenAI client nor by RunModel: the turn fails at once.
        ScriptedReply(status=400, text="bad request"),
        reply_text("Ticket T-7 is already closed."),
    )
    with make_worker():
        session = await client.start_session("TriageAgent", "Close ticket T-7.")
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.state is not None and snapshot.state.last_turn_error
        assert await client.send_user_message(session, "Did it work?")
        snapshot = await client.wait_for(session, turns_done(2))

    assert [e["key"] for e in tool_log.entries("update_ticket")] == [f"{session}/turn-1/t1"]
    note = (
        f"{texts.TURN_FAILURE_NOTE_HEADER}\n"
        '- update_ticket {"ticket_id":"T-7","status":"closed"} -> succeeded: '
        "ticket T-7 is closed\n"
        f"{texts.NOTE_FOOTER}"
    )
    # The failed turn keeps its exact transcript (the runner's unfinished messages), then the note.
    assert [(m.role, m.text, m.tool_call_id) for m in snapshot.messages[:5]] == [
        ("user", "Close ticket T-7.", None),
        ("assistant", None, "t1"),
        ("tool", None, "t1"),
        ("user", note, None),
        ("user", "Did it work?", None),
    ]
    replayed = sent(model, 2)
    assert [m["role"] for m in replayed] == ["user", "assistant", "tool", "user", "user"]
    assert [m["content"] for m in replayed[2:]] == ["ticket T-7 is closed", note, "Did it work?"]
    history = await client.get_step_history(session)
    run_models = [(s.status, s.attempts) for s in history if s.step_type == "RunModel"]
    assert run_models == [("succeeded", 1), ("failed", 1), ("succeeded", 1)]
    assert "RecordTurnFailure" in [s.step_type for s in history]


async def test_a_recovered_worker_never_reruns_a_single_attempt_write(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient, tool_log: ToolRunLog
) -> None:
    """Killed right as the write returns, before or after its commit: either way the write
    ran once, and recovery (twice) never runs it again."""
    model.enqueue(reply_tools(("c1", "charge_card", {"amount": 9})), reply_text("Charged."))
    worker = make_worker(CHARGE_CARD_SECONDS="0.5").start()
    session = await client.start_session("TriageAgent", "Charge 9.")
    wait_until(lambda: tool_log.count("charge_card:done") == 1, what="the charge to finish")
    worker.kill()
    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.kill()
    worker.start()  # a second recovery finds nothing left to run
    model.enqueue(reply_text("You're welcome."))
    assert await client.send_user_message(session, "Thanks")
    await client.wait_for(session, turns_done(2))
    worker.stop()

    assert tool_log.count("charge_card:start") == 1
    finished = await events_of(client, session, "tool_call_finished")
    assert len(finished) == 1 and finished[0]["status"] in ("succeeded", "outcome_unknown")
    assert (await step_types(client, session)).count("CallSingleAttemptTool") == 1


async def test_run_model_attempts_are_the_only_retries_of_a_failing_model_call(
    make_worker: MakeWorker, model: ScriptedModelServer, client: AgentClient
) -> None:
    """The scripted model answers 500s, which the OpenAI client would retry twice by itself:
    the runner turns that off, so each RunModel attempt is exactly one request (counted by
    the server); `framework_retries=True` leaves the client's retries on."""
    with make_worker():
        await check_run_model_owns_retries(
            client,
            model,
            flow_type="TriageAgent",
            flow_type_with_framework_retries="TriageAgentClientRetries",
        )
