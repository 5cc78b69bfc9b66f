"""Spec matrix 5, 6 and 9, and SIGKILL inside each kind of Step: a crash repeats at most the
one call that was running, and a single-attempt write never runs twice."""

from __future__ import annotations

import time

from dex_agents import texts
from dex_agents.clock import parse_time
from dex_agents.testing import ScriptedReply, reply_text, reply_tools

from .helpers import (
    OUTCOME_UNKNOWN_TURN,
    events_of,
    step_types,
    tool_messages,
    turns_done,
    wait_until,
)


async def test_kill_during_single_attempt_tool_records_outcome_unknown_at_once_on_restart(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("w1", "slow_write", {"seconds": 30})),
        reply_text("The write may or may not have happened."),
    )
    worker = make_worker().start()
    session = await client.start_session("Assistant", "Write it.")
    wait_until(lambda: tool_log.count("slow_write") == 1, what="the write to start")
    worker.kill()
    worker.start()
    ready = time.time()
    await client.wait_for(session, turns_done(1))
    worker.stop()

    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started"]
    assert tool_messages(model, 1) == {"w1": texts.OUTCOME_UNKNOWN_TEXT}
    finished = await events_of(client, session, "tool_call_finished")
    assert finished == [
        {"tool_call_id": "w1", "tool_name": "slow_write", "status": "outcome_unknown"}
    ]
    history = await client.get_step_history(session)
    assert [s.step_type for s in history] == OUTCOME_UNKNOWN_TURN
    tool_step = history[2]
    assert (tool_step.status, tool_step.attempts) == ("failed", 1)
    assert "stopped" in (tool_step.error or "")
    # The restarted Worker (same ID) recovers the Step at launch: it ends at the first Step
    # queue poll after ready (some 0.2 s), not after a lease.
    assert tool_step.ended_at is not None
    assert parse_time(tool_step.ended_at).timestamp() - ready < 2.0


async def test_kill_during_run_model_reruns_only_that_model_call(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Kyiv"})),
        ScriptedReply(text="never delivered", hang=True),
        reply_text("Snow in Kyiv."),
    )
    worker = make_worker().start()
    session = await client.start_session("Assistant", "Weather in Kyiv?")
    model.wait_for_requests(2)
    worker.kill()
    worker.start()
    snapshot = await client.wait_for(session, turns_done(1))
    worker.stop()

    assert tool_log.count("get_weather") == 1
    assert len(model.requests) == 3
    # The rerun sends the same input the killed attempt sent.
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
    assert snapshot.messages[-1].text == "Snow in Kyiv."
    assert snapshot.usage.model_calls == 2


async def test_kill_during_call_tool_runs_the_read_again(make_worker, model, client, tool_log):
    model.enqueue(reply_tools(("r1", "slow_read", {"seconds": 2})), reply_text("Read it."))
    worker = make_worker().start()
    session = await client.start_session("Assistant", "Read slowly.")
    wait_until(lambda: tool_log.count("slow_read") == 1, what="the read to start")
    worker.kill()
    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.stop()

    assert [e["phase"] for e in tool_log.entries("slow_read")] == ["started", "started", "finished"]
    assert tool_messages(model, 1) == {"r1": "done"}
    history = await client.get_step_history(session)
    call = next(s for s in history if s.step_type == "CallTool")
    assert (call.status, call.attempts) == ("succeeded", 2)


async def test_idempotent_write_keeps_its_key_across_attempts(make_worker, model, client, tool_log):
    model.enqueue(reply_tools(("t1", "set_thermostat", {"celsius": 21})), reply_text("Set."))
    with make_worker():
        session = await client.start_session("Assistant", "Set 21 degrees.")
        await client.wait_for(session, turns_done(1))
    (entry,) = tool_log.entries("set_thermostat")
    assert entry["key"] == f"{session}/turn-1/t1"


async def test_a_recovered_worker_never_reruns_a_single_attempt_write(
    make_worker, model, client, tool_log
):
    """Killed right as the write returns, before or after its commit: either way the write
    ran once and the record is final."""
    model.enqueue(reply_tools(("w1", "slow_write", {"seconds": 0.5})), reply_text("Done."))
    worker = make_worker().start()
    session = await client.start_session("Assistant", "Write once.")
    wait_until(
        lambda: any(e["phase"] == "finished" for e in tool_log.entries("slow_write")),
        what="the write to finish",
    )
    worker.kill()
    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.kill()
    worker.start()  # a second recovery finds nothing left to run
    assert await client.send_user_message(session, "Thanks")
    model.enqueue(reply_text("You're welcome."))
    await client.wait_for(session, turns_done(2))
    worker.stop()

    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started", "finished"]
    finished = await events_of(client, session, "tool_call_finished")
    assert len(finished) == 1 and finished[0]["status"] in ("succeeded", "outcome_unknown")
    assert (await step_types(client, session)).count("CallSingleAttemptTool") == 1
