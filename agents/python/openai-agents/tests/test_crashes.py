"""Spec matrix 5, 6, 8 and 9 through real Worker processes killed with SIGKILL: a crash
repeats at most the one call that was running, and a single-attempt write never runs twice.
And who retries a failing model call: RunModel's attempts, each one HTTP request."""

from __future__ import annotations

import json

from dex_agents import texts
from dex_agents.testing import ScriptedReply, reply_text, reply_tools
from dex_agents.testing.scenarios import check_run_model_owns_retries

from .helpers import events_of, model_input, step_types, tool_outputs, turns_done, wait_until


async def test_kill_during_single_attempt_tool_records_outcome_unknown(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("w1", "slow_write", {"seconds": 60})),
        reply_text("The write may or may not have happened."),
    )
    worker = make_worker().start()
    session = await client.start_session("SupportAgent", "Write it.")
    wait_until(lambda: tool_log.count("slow_write") == 1, what="the write to start")
    worker.kill()
    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.stop()

    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started"]
    assert tool_outputs(model, 1) == {"w1": texts.OUTCOME_UNKNOWN_TEXT}
    assert await events_of(client, session, "tool_call_finished") == [
        {"tool_call_id": "w1", "tool_name": "slow_write", "status": "outcome_unknown"}
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
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("r1", "get_weather", {"city": "Kyiv"})),
        ScriptedReply(text="never delivered", hang=True),
        reply_text("Snow in Kyiv."),
    )
    worker = make_worker().start()
    session = await client.start_session("SupportAgent", "Weather in Kyiv?")
    model.wait_for_requests(2, timeout=60)
    worker.kill()
    worker.start()
    snapshot = await client.wait_for(session, turns_done(1))
    worker.stop()

    assert tool_log.count("get_weather") == 1
    assert len(model.requests) == 3
    # The rerun restored the same RunState and sent the same input.
    assert model_input(model, 2) == model_input(model, 1)
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


async def test_failed_turn_leaves_the_failure_note_and_the_write_is_not_repeated(
    make_worker, model, client, tool_log
):
    model.enqueue(
        reply_tools(("t1", "set_thermostat", {"celsius": 19})),
        ScriptedReply(status=500),
        ScriptedReply(status=500),
        ScriptedReply(status=500),
        reply_text("The thermostat is already at 19."),
    )
    with make_worker():
        session = await client.start_session("SupportAgent", "Set 19 degrees.")
        snapshot = await client.wait_for(session, turns_done(1))
        assert snapshot.state is not None and snapshot.state.last_turn_error
        assert await client.send_user_message(session, "Did it work?")
        snapshot = await client.wait_for(session, turns_done(2))

    assert tool_log.count("set_thermostat") == 1
    note = (
        "[Dex] The previous turn failed after these tool calls ran:\n"
        '- set_thermostat {"celsius": 19} -> succeeded: thermostat set to 19.0\n'
        "Do not repeat these tool calls unless the user asks again."
    )
    # The failed turn keeps its transcript from the run state, then the note.
    assert [(m.role, m.text, m.tool_call_id) for m in snapshot.messages[:4]] == [
        ("user", "Set 19 degrees.", None),
        ("assistant", None, "t1"),
        ("tool", None, "t1"),
        ("user", note, None),
    ]
    assert snapshot.messages[2].tool_output == "thermostat set to 19.0"
    # The next turn replays the call, its result and the note as SDK input items.
    replayed = model_input(model, 4)
    assert [i.get("type") for i in replayed[1:3]] == ["function_call", "function_call_output"]
    assert replayed[3] == {"role": "user", "content": note}
    history = await client.get_step_history(session)
    assert [(s.status, s.attempts) for s in history if s.step_type == "RunModel"] == [
        ("succeeded", 1),
        ("failed", 3),
        ("succeeded", 1),
    ]
    assert "RecordTurnFailure" in [s.step_type for s in history]


async def test_run_model_attempts_are_the_only_retries_of_a_failing_model_call(
    make_worker, model, client
):
    """The scripted model answers 500s, which the OpenAI client would retry twice by itself:
    the runner turns the SDK's and the client's retries off, so each RunModel attempt is
    exactly one request (counted by the server); `framework_retries=True` leaves them on."""
    # DefaultClientAgent runs on the SDK's default client, which reads these.
    with make_worker(OPENAI_BASE_URL=model.base_url, OPENAI_API_KEY="test"):
        await check_run_model_owns_retries(
            client,
            model,
            flow_type="DefaultClientAgent",
            flow_type_with_framework_retries="ClientRetriesAgent",
        )


async def test_a_recovered_worker_never_reruns_a_single_attempt_write(
    make_worker, model, client, tool_log
):
    """Killed right as the write returns, and again while the next model call runs: the
    write ran once, and the model sees its one result."""
    model.enqueue(
        reply_tools(("w1", "slow_write", {"seconds": 0.5})),
        ScriptedReply(text="never delivered", hang=True),
        reply_text("Done."),
    )
    worker = make_worker().start()
    session = await client.start_session("SupportAgent", "Write once.")
    wait_until(
        lambda: any(e["phase"] == "finished" for e in tool_log.entries("slow_write")),
        what="the write to finish",
    )
    worker.kill()
    worker.start()
    model.wait_for_requests(2, timeout=60)
    worker.kill()  # now inside the next RunModel
    worker.start()
    await client.wait_for(session, turns_done(1))
    worker.stop()

    assert [e["phase"] for e in tool_log.entries("slow_write")] == ["started", "finished"]
    finished = await events_of(client, session, "tool_call_finished")
    assert len(finished) == 1 and finished[0]["status"] in ("succeeded", "outcome_unknown")
    assert (await step_types(client, session)).count("CallSingleAttemptTool") == 1
    # Every model call after the write saw the same single result.
    visible = {"succeeded": "written", "outcome_unknown": texts.OUTCOME_UNKNOWN_TEXT}
    expected = visible[finished[0]["status"]]
    assert [tool_outputs(model, i) for i in range(1, len(model.requests))] == [{"w1": expected}] * (
        len(model.requests) - 1
    )
    assert json.loads(model.requests[-1].body["input"][1]["arguments"]) == {"seconds": 0.5}
